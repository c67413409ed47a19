"""The words and shapes of requests the parser's parts share, and the state they work on.

Word classes here are English grammar (verbs that add or remove, words that carry no request); the domain
words (distributions, packages, groups, mounts, artifacts) come from the knowledge layer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable

from ..knowledge.loader import Capabilities
from .request_spec import RequestSpec

NB = r"(?<![\w.+/-])"  # start of a package-like word
NA = r"(?![\w+/-])"  # end of one ("docker," or "docker." still end it)
PACKAGE_SHAPE = re.compile(r"^[a-z0-9][a-z0-9+_.:~-]*$")
EDIT_VERBS = (
    "add|remove|drop|delete|install|uninstall|set|change|make|switch|use|enable|disable|increase|decrease|"
    "resize|rename|replace|include|exclude|append|create|convert|port|move|grow|shrink|put|turn|give|bump|"
    "extend|expand|swap|strip|purge|update|upgrade|downgrade|name|call|mount"
)
ADD_WORDS = {
    "add", "adds", "adding", "install", "installing", "include", "includes", "including", "with", "plus", "also",
    "enable", "need", "needs", "want", "wants", "require", "requires", "support", "supporting", "containing",
    "bundle", "ship", "put", "use", "using", "preinstall", "preinstalled", "pre-install", "pre-installed", "have",
    "has",
    # what an image holds, said of the image ("an image that ships X", "it carries Y", "bundles Z")
    "ships", "bundles", "bundled", "contain", "contains", "carry", "carries",
}  # fmt: skip
REMOVE_WORDS = {
    "remove", "removing", "uninstall", "drop", "delete", "without", "exclude", "excluding", "except", "no", "not",
    "minus", "disable", "purge", "strip", "omit", "skip", "lose", "ditch", "kill", "nuke", "scrap", "axe",
    "rm", "del", "w/o",  # a shell's and a note's way of writing it
    "forget", "scratch", "cancel", "nevermind",  # what is taken back ("forget about nginx", "scratch the htop")
}  # fmt: skip
STOPWORDS = {
    # conjunctions that begin a reason or a condition, never a name ("swap docker for podman since emt has it")
    "since", "because", "while", "whereas", "unless", "until", "cuz",
    "a", "an", "the", "and", "or", "of", "in", "into", "it", "its", "this", "that", "these", "those", "my", "our",
    "me", "us", "we", "i", "you", "please", "also", "some", "any", "all", "more", "few", "other", "too", "as",
    "be", "by", "at", "from", "then", "so", "but", "just", "only", "very", "really", "well", "up", "out", "off",
    "back", "anymore", "longer", "either",  # "put ssh back", "nginx is not needed anymore", "no longer need
    # wireguard", "we don't need tmux either"
    "another", "extra", "additional", "further",  # "another 10G partition": one more of what follows
    "open",  # "ports open": a verb, not the one package named open-* (open-iscsi)
    "package", "packages", "pkg", "pkgs", "tool", "tools", "utility", "utilities", "software", "stuff", "things",
    "image", "images", "template", "templates", "os", "system", "build", "version", "based", "ready", "new",
    "support", "capability", "capabilities", "feature", "features", "config", "configuration", "setup",
    "default", "defaults", "standard", "basic", "essential", "essentials", "common", "good", "nice", "latest",
    "one", "two", "like", "can", "could", "would", "will", "should", "must", "need", "needs", "want", "let",
    "lets", "let's", "give", "get", "create", "generate", "produce", "run", "running", "runs", "deploy",
    "deployment", "deployments", "device", "devices", "appliance", "appliances", "machine", "machines", "node", "nodes", "box", "host",
    "hosts", "platform", "platforms", "workload", "workloads", "use", "case", "cases", "purpose", "kind", "type",
    "flavor", "flavour", "variant", "distro", "distribution", "linux", "arch", "architecture", "target", "named",
    "called", "here", "there", "now", "instead", "rather", "than", "same", "again", "everything", "nothing",
    "something", "both", "each", "every", "much", "many", "x", "thing", "enabled", "installed", "included",
    "yes", "ok", "okay", "thanks", "thank", "what", "which", "how", "why", "where", "who", "when", "does", "do",
    "did", "are", "was", "were", "has", "have", "had", "if", "with", "without", "via", "per", "about", "around",
    "kernel", "cmdline", "partition", "partitions", "disk", "size", "user", "users", "hostname", "name", "lts",
    "least", "most", "minimum", "min", "maximum", "max", "approximately", "roughly",
    "split", "divided", "divide", "partitioned", "laid", "layout",  # "a 32 GB disk split into / (16G) and ..."
    # what a chatty request says around its wishes: greetings and interjections, discourse words, the people
    # it talks about and verbs of liking ("hi team, maybe vim too, we love vim lol")
    "hello", "hi", "hey", "hiya", "greetings", "oh", "ah", "uh", "um", "hmm", "lol", "haha", "wow", "cheers",
    "sorry", "great", "awesome", "cool", "actually", "basically", "honestly", "literally", "maybe", "perhaps",
    "probably", "though", "although", "anyway", "still", "even", "ever", "definitely", "certainly", "surely",
    "hopefully", "he", "she", "they", "his", "her", "their", "him", "them", "i'd", "i'm", "i've", "we'd",
    "we're", "we've", "you'd", "it's", "love", "loves", "loved", "likes", "liked", "prefer", "prefers", "wish",
    "wishes", "think", "guess", "believe", "hope", "team", "guys", "folks", "people", "colleagues", "boss",
    # spoken contractions and answers ("gimme a vhdx", "nah, call it gw-01", "pls add git")
    "gimme", "lemme", "wanna", "gonna", "gotta", "pls", "plz", "nah", "yeah", "yep", "yup", "nope",
    # the headings of a request written as a list ("Requirements: - OS: Ubuntu 24.04 - Packages: nginx")
    "requirements", "requirement", "specs", "specification", "specifications", "details",
}  # fmt: skip


# A user named in a phrase ("give ops ...", "revoke sudo from 'ops'", "ssh key ... to deploy"), and words in a
# user's place that name nobody.
WHO = r"[\"'`]?([a-z_][a-z0-9_-]*)[\"'`]?"
# A user's name after the word for a user, with the words that may introduce it ("user called deploy").
NAMED_WHO = rf"(?:(?:named|called)\s+)?+{WHO}"  # possessive: "named" is never the name
NOT_A_USER = frozenset({"has", "have", "had", "gets", "got", "is", "was", "are", "can", "could", "should", "would", "will",
                        "must", "may", "might", "needs", "with", "without", "and", "or", "shall",  # verbs after "user"
                        "user", "users", "everyone", "everybody", "nobody", "it", "image", "all", "me", "us", "them", "him",
                        "her", "you", "we", "i", "they", "this", "that", "default", "someone", "somebody", "anyone",
                        "who", "whom", "whose", "which",  # relative pronouns ("alice who is an admin")
                        # a negative contraction's first part, where a name would be ("the user doesn't need sudo")
                        "doesn", "don", "isn", "aren", "wasn", "weren", "won", "wouldn", "shouldn", "couldn",
                        "didn", "hasn", "haven", "hadn", "mustn", "needn", "shan", "ain"})


# The closed classes of English (determiners, pronouns, prepositions, conjunctions, auxiliaries, interjections):
# never an account's name, where other words the reading skips may be one ("give deploy passwordless sudo").
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "my", "our", "your", "their", "his", "her", "its", "some",
    "any", "all", "each", "every", "both", "either", "neither", "no", "more", "most", "few", "many", "much",
    "another", "other", "i", "me", "we", "us", "you", "he", "him", "she", "they", "them", "it", "it's", "i'd",
    "i'm", "i've", "we'd", "we're", "we've", "you'd", "who", "whom", "whose", "which", "what", "everyone",
    "everybody", "everything", "something", "nothing", "someone", "somebody", "anyone", "nobody", "of", "in",
    "into", "on", "onto", "at", "by", "for", "from", "to", "with", "without", "via", "per", "about", "around",
    "over", "under", "up", "out", "off", "than", "and", "or", "but", "nor", "so", "yet", "if", "then", "because",
    "since", "while", "whereas", "unless", "until", "though", "although", "cuz", "be", "is", "are", "was", "were",
    "been", "am", "do", "does", "did", "has", "have", "had", "can", "could", "may", "might", "must", "shall",
    "should", "will", "would", "also", "too", "just", "only", "very", "really", "well", "now", "here", "there",
    "again", "even", "ever", "still", "not", "yes", "please", "ah", "oh", "hey", "hi", "hello", "hiya", "hmm",
    "uh", "um", "ok", "okay", "lol", "haha", "wow", "thanks", "thank", "cheers", "sorry", "greetings"})


# Words that take back what was just said, before what replaces it ("apache, no wait, nginx", "20G, sorry, I meant
# 40G", "16 gigs, I mean 32").
# A bare "no" is one only before a value of the same kind ("50G. no, 40G"): before a name it takes the name out
# ("nginx, no apache").
CORRECTION = (r"(?:\bno\s*,?\s*(?:wait|sorry|i\s+meant?)|\bnope|\bwait|\bsorry(?:\s*,?\s*i\s+meant?)?|\bactually(?:\s*,?\s*no)?"
              r"|\bi\s+meant?|\bmake\s+(?:that|it)|\bor\s+rather|\brather|\bscratch\s+that)")


# Words of degree ("remove swap entirely", "drop nginx completely"): how much, never what.
DEGREE_WORDS = frozenset({"entirely", "completely", "altogether", "fully", "totally", "wholly"})


def looks_like_package(word: str) -> bool:
    """A word that cannot be English: digits, or -, ., +, _ inside ("libssl3", "mod_ssl", "g++")."""
    return bool(PACKAGE_SHAPE.match(word)) and bool(re.search(r"\d|[a-z][-.+_][a-z0-9]|\+\+$", word))



@functools.lru_cache(maxsize=4096)
def compiled(pattern: str, flags: int = re.I) -> re.Pattern[str]:
    """The parser's patterns, compiled once. Why not ``re``'s own cache: it holds 512 patterns, fewer than one
    reading of a request uses, so each reading evicted the next one's and compiled most of them again (a parse
    took about three times as long as with them kept)."""
    return re.compile(pattern, flags)


def alternatives(words: Iterable[str], between: str = r"\s+") -> str:
    """A regex alternation of words from the knowledge layer, longest first so that a match never stops inside
    a longer word; the parts of a several-word word match with ``between`` ("live usb", "systemd-boot")."""
    return "|".join(between.join(re.escape(p) for p in w.split()) for w in sorted(words, key=len, reverse=True))


class ParserState:
    """The request text being read (understood spans blanked out) and the spec being filled."""

    def __init__(self, caps: Capabilities, spec: RequestSpec, text: str, known: Iterable[str],
                 english: Collection[str] = ()):
        self.caps = caps
        self.spec = spec
        self.work = text  # spans already understood are blanked out (same length keeps offsets)
        self.said = text  # as written, at the same offsets until _typos rewrites misspelt words
        self.english = english  # common English words: never misspellings (parse_request)
        # Real package names (knowledge plus the caller's index) win over one-word capability
        # triggers ("add tcpdump" adds tcpdump, not every network tool); mere aliases
        # ("docker", "ssh") do not.
        self.real = {k.lower() for k in known if k} | {k.lower() for k in caps.known_packages()}
        self.known = self.real | {a.lower() for a in caps.alias_names()}
        self.unsupported_target: str | None = None  # closest supported dist for an unsupported OS
        self.unsupported_arch = False
        self.vendor_instead_of: set[str] = set()  # groups a named vendor's own stack stands in for
        self.removed_by_word: dict[str, str] = {}  # group -> the first word that removed it ("qemu")

    def _mask(self, start: int, end: int) -> None:
        self.work = self.work[:start] + " " * (end - start) + self.work[end:]

    def _each(self, pattern: str, flags: int = re.I) -> list[re.Match[str]]:
        return list(compiled(pattern, flags).finditer(self.work))

    def _known_word(self, word: str) -> bool:
        """A distribution, architecture, package or capability word, or an operating system we cannot build."""
        return bool(word in self.known or self.caps.group_for_word(word) or self.caps.family_of(word)
                    or self.caps.arch_of(word) or word in self.caps.unsupported_os)

    def _is_os_or_arch(self, phrase: str) -> bool:
        return bool(
            self.caps.family_of(phrase)
            or self.caps.arch_of(phrase)
            or phrase.lower() in ("iso", "raw", "img")
        )
