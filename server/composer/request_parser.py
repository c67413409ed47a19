"""Turn a plain-words request or edit instruction into a :class:`RequestSpec`.

Deterministic and offline: regular expressions for the facets that have a shape
(sizes, partitions, hostnames, kernel command lines, users), the capability knowledge
for distributions, architectures and capability groups, and a small mode scanner for
"add ... / without ..." package lists. Whatever it cannot place lands in ``unparsed``
so the caller can tell the user (or hand the request to an LLM).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..knowledge.loader import Capabilities, load_capabilities, normalize_phrase
from ..knowledge.sizes import CASUAL_SIZE, casual_mib, fmt_size
from ..knowledge.template_format import load_template_format

# A size as people write it: "8GiB", "8 GB", "512M", "1.5 gib", "8 gigs", "half a terabyte".
_SIZE = CASUAL_SIZE
_NB = r"(?<![\w.+/-])"  # start of a package-like word
_NA = r"(?![\w+/-])"  # end of one ("docker," or "docker." still end it)
_FS = r"(ext4|ext3|xfs|btrfs|vfat|fat32)"
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+_.:~-]*$")
_HOST = re.compile(
    r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$", re.I
)
_CMDLINE_WORDS = (
    r"(?:kernel\s+)?(?:cmdline|cmd\s*line|command[\s-]*line|boot\s+(?:args|arguments|parameters|params|options)"
    r"|kernel\s+(?:args|arguments|parameters|params|options))"
)
_EDIT_VERBS = (
    "add|remove|drop|delete|install|uninstall|set|change|make|switch|use|enable|disable|increase|decrease|"
    "resize|rename|replace|include|exclude|append|create|convert|port|move|grow|shrink|put|turn|give|bump|"
    "extend|expand|swap|strip|purge|update|upgrade|downgrade|name|call|mount"
)
_QUESTION_START = re.compile(
    r"^\s*(?:what|what's|whats|which|how|why|where|who|when|does|do(?!\s+not\b)|did|is|are|was|were|has|have|can\s+i|"
    r"explain|summari[sz]e|describe|show|list|tell\s+me|give\s+me\s+(?:an?\s+)?(?:overview|summary|rundown)|"
    r"overview|summary)\b",
    re.I,
)
_POLITE_EDIT = re.compile(
    rf"^\s*(?:please\s+)?(?:can|could|would|will)\s+(?:you|we)\s+(?:please\s+)?(?:also\s+)?(?:{_EDIT_VERBS})\b",
    re.I,
)

_ADD_WORDS = {
    "add", "adds", "adding", "install", "installing", "include", "includes", "including", "with", "plus", "also",
    "enable", "need", "needs", "want", "wants", "require", "requires", "support", "supporting", "containing",
    "bundle", "ship", "put", "use", "using", "preinstall", "preinstalled", "have", "has",
}  # fmt: skip
_WEAK_ADD = {"need", "needs", "want", "wants", "use", "using", "have", "has"}
_STRONG_ADD = {
    "add",
    "adds",
    "adding",
    "install",
    "installing",
    "include",
    "includes",
    "including",
    "preinstall",
}
_REMOVE_WORDS = {
    "remove", "removing", "uninstall", "drop", "delete", "without", "exclude", "excluding", "except", "no", "not",
    "minus", "disable", "purge", "strip", "omit", "skip", "lose", "ditch",
}  # fmt: skip
_NEUTRAL_WORDS = {
    "set",
    "change",
    "make",
    "switch",
    "convert",
    "port",
    "move",
    "for",
    "on",
    "to",
    "keep",
    "is",
}
_STOPWORDS = {
    "a", "an", "the", "and", "or", "of", "in", "into", "it", "its", "this", "that", "these", "those", "my", "our",
    "me", "us", "we", "i", "you", "please", "also", "some", "any", "all", "more", "few", "other", "too", "as",
    "be", "by", "at", "from", "then", "so", "but", "just", "only", "very", "really", "well", "up", "out", "off",
    "package", "packages", "pkg", "pkgs", "tool", "tools", "utility", "utilities", "software", "stuff", "things",
    "image", "images", "template", "templates", "os", "system", "build", "version", "based", "ready", "new",
    "support", "capability", "capabilities", "feature", "features", "config", "configuration", "setup",
    "default", "defaults", "standard", "basic", "essential", "essentials", "common", "good", "nice", "latest",
    "one", "two", "like", "can", "could", "would", "will", "should", "must", "need", "needs", "want", "let",
    "lets", "let's", "give", "get", "create", "generate", "produce", "run", "running", "runs", "deploy",
    "deployment", "deployments", "device", "devices", "machine", "machines", "node", "nodes", "box", "host",
    "hosts", "platform", "platforms", "workload", "workloads", "use", "case", "cases", "purpose", "kind", "type",
    "flavor", "flavour", "variant", "distro", "distribution", "linux", "arch", "architecture", "target", "named",
    "called", "here", "there", "now", "instead", "rather", "than", "same", "again", "everything", "nothing",
    "something", "both", "each", "every", "much", "many", "x", "thing", "enabled", "installed", "included",
    "yes", "ok", "okay", "thanks", "thank", "what", "which", "how", "why", "where", "who", "when", "does", "do",
    "did", "are", "was", "were", "has", "have", "had", "if", "with", "without", "via", "per", "about", "around",
    "kernel", "cmdline", "partition", "partitions", "disk", "size", "user", "users", "hostname", "name", "lts",
}  # fmt: skip
# What a short name usually leaves off ("wireguard" is packaged as wireguard-tools), most likely first.
_NAME_SUFFIXES = ("tools", "utils", "server", "daemon", "client", "bin", "core")


def looks_like_package(word: str) -> bool:
    """A word that cannot be English: digits, or -, ., +, _ inside ("libssl3", "mod_ssl", "g++")."""
    return bool(_PACKAGE.match(word)) and bool(re.search(r"\d|[a-z][-.+_][a-z0-9]|\+\+$", word))


_IMAGE_TYPES = [
    (r"\b(?:iso|installer|install(?:ation)?\s+media|live\s+(?:usb|cd|image)|bootable\s+usb)\b", "iso"),
    (r"\b(?:initrd|initramfs|img|pxe|netboot|network[\s-]boot)\b", "img"),
    (r"\b(?:raw|disk\s+image)\b", "raw"),
]
_ARTIFACTS = ("qcow2", "vhdx", "vhd", "vmdk", "vdi")
_COMPRESSIONS = ("gzip", "gz", "xz", "zstd", "bz2")
_NAMED_MOUNTS = {
    "root": "/", "rootfs": "/", "data": "/data", "home": "/home", "var": "/var", "srv": "/srv", "opt": "/opt",
    "tmp": "/tmp", "log": "/var/log", "logs": "/var/log", "efi": "/boot/efi", "esp": "/boot/efi", "boot": "/boot",
    "swap": "swap", "userdata": "/opt", "persistent": "/opt",
}  # fmt: skip
_MOUNT = r"(/[\w./-]*|root|rootfs|data|home|var|srv|opt|tmp|logs?|swap|efi|esp|boot|userdata|persistent)"


@dataclass
class RequestSpec:
    """What a plain-words request or instruction states. Unset means "not mentioned"."""

    os: str | None = None
    dist: str | None = None
    arch: str | None = None
    image_type: str | None = None
    add_packages: list[str] = field(default_factory=list)
    remove_packages: list[str] = field(default_factory=list)
    add_groups: list[str] = field(default_factory=list)
    remove_groups: list[str] = field(default_factory=list)
    disk_size: str | None = None
    # {"action": "add"|"remove"|"resize", "mountPoint": "/data", "size": "4GiB"|None, "fsType": str|None, "fill": bool}
    partitions: list[dict] = field(default_factory=list)
    hostname: str | None = None
    kernel_version: str | None = None
    kernel_cmdline: str | None = None
    kernel_cmdline_append: list[str] = field(default_factory=list)
    # {"action": "add"|"remove", "name": str, "sudo": bool?, "groups": [...], "shell": str?, "home": str?}
    users: list[dict] = field(default_factory=list)
    immutability: bool | None = None
    secure_boot: bool | None = None
    artifacts: list[str] = field(default_factory=list)
    name: str | None = None
    is_question: bool = False
    unparsed: list[str] = field(default_factory=list)
    # Additions beyond the first agreed API (all optional, defaults keep callers working).
    kernel_cmdline_remove: list[str] = field(default_factory=list)
    disk_size_delta: str | None = None  # "+2GiB", "-1GiB" or "x2"
    remove_artifacts: list[str] = field(default_factory=list)
    artifact_compression: str | None = None
    bootloader: str | None = None  # grub | systemd-boot
    boot_type: str | None = None  # efi | legacy
    use_cases: list[str] = field(default_factory=list)  # use-case ids (edge, iot, ...) for names and metadata
    notes: list[str] = field(default_factory=list)  # things understood but deliberately not applied
    # Targets named that cannot be built, each with the closest supported choice ("fedora 40 is not supported ...").
    unsupported: list[str] = field(default_factory=list)
    minimal: bool = False  # "minimal", "bare", "slim": start from the target's minimal base
    corrected: list[str] = field(default_factory=list)  # spelling fixes applied ("dokcer -> docker")
    arch_named: bool = False  # the text or the caller named the architecture (else x86_64 is a default)

    def is_empty(self) -> bool:
        """True when the text asked for nothing the composer can act on."""
        ignore = {"is_question", "unparsed", "use_cases", "notes", "unsupported", "minimal", "corrected",
                  "arch_named"}
        return not any(
            value is not None if isinstance(value, bool) or value is None else bool(value)
            for key, value in asdict(self).items()
            if key not in ignore
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_question(text: str) -> bool:
    """An explanation question ("what packages are included?") rather than an edit."""
    stripped = text.strip()
    if not stripped:
        return False
    if _POLITE_EDIT.match(stripped):
        return False
    if _QUESTION_START.match(stripped):
        # "show me ... and add docker" style mixes are rare; an explicit imperative later wins.
        return not re.search(
            rf"[,;.]\s*(?:and\s+)?(?:then\s+)?(?:please\s+)?(?:{_EDIT_VERBS})\b", stripped, re.I
        )
    if stripped.endswith("?"):
        return not re.match(rf"^\s*(?:please\s+)?(?:{_EDIT_VERBS})\b", stripped, re.I)
    return False


def parse_request(text: str, *, known_packages: Iterable[str] = ()) -> RequestSpec:
    """Parse a request ("ubuntu edge image with docker, 8GiB disk") or an edit instruction."""
    caps = load_capabilities()
    spec = RequestSpec()
    original = " ".join((text or "").split())
    if not original:
        return spec
    spec.is_question = is_question(original)
    parser = _Parser(caps, spec, original, known_packages)
    parser.run()
    return spec


class _Parser:
    def __init__(self, caps: Capabilities, spec: RequestSpec, text: str, known: Iterable[str]):
        self.caps = caps
        self.spec = spec
        self.work = text  # spans already understood are blanked out (same length keeps offsets)
        # Real package names (knowledge plus the caller's index) win over one-word capability
        # triggers ("add tcpdump" adds tcpdump, not every network tool); mere aliases
        # ("docker", "ssh") do not.
        self.real = {k.lower() for k in known if k} | {k.lower() for k in caps.known_packages()}
        self.known = self.real | {a.lower() for a in caps.alias_names()}
        self.unsupported_target: str | None = None  # closest supported dist for an unsupported OS
        self.unsupported_arch = False

    # ------------------------------------------------------------------ helpers

    def _mask(self, start: int, end: int) -> None:
        self.work = self.work[:start] + " " * (end - start) + self.work[end:]

    def _each(self, pattern: str, flags: int = re.I) -> list[re.Match[str]]:
        return list(re.finditer(pattern, self.work, flags))

    def run(self) -> None:
        # Order matters: shaped facets first (they contain words that would otherwise read
        # as packages), then distributions and the free package/group scan.
        self._cmdline()
        self._hostname()
        self._name()
        self._users()
        self._partitions()
        self._disk_size()
        self._kernel_version()
        self._artifacts()
        self._bootloader()
        self._secure_boot()  # before immutability: "turn off immutability and secure boot"
        self._immutability()
        self._typos()
        self._replacements()
        self._from_to()
        self._unsupported()
        self._distribution()
        self._architecture()
        self._image_type()
        self._scan()
        self._dedupe()

    # ------------------------------------------------------------------ kernel command line

    def _cmdline(self) -> None:
        for m in self._each(
            rf"\b(?:set|change|replace|make|update)\s+(?:the\s+)?{_CMDLINE_WORDS}\s*(?:to|=|:|as|with)\s*(.+?)\s*(?=;|$)"
        ):
            self.spec.kernel_cmdline = _unquote(m.group(1))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:remove|drop|delete|strip)\s+((?:(?!,\s|\b(?:remove|drop|delete|strip)\b)[^;])+?)\s+from\s+(?:the\s+)?{_CMDLINE_WORDS}"
        ):
            self.spec.kernel_cmdline_remove += _params(m.group(1))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:add|append|include|put|pass)\s+((?:(?!,\s|\b(?:add|append|include|put|pass)\b)[^;])+?)\s+(?:to|in|into|on)\s+(?:the\s+)?{_CMDLINE_WORDS}"
        ):
            self.spec.kernel_cmdline_append += _params(m.group(1))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"{_CMDLINE_WORDS}\s*(?:(?::|=|of)\s*(\"[^\"]*\"|'[^']*'|\S+(?:\s+\S+=\S+)*)|(\"[^\"]*\"|'[^']*'|\S+=\S+(?:\s+\S+=\S+)*))"
        ):
            value = m.group(1) or m.group(2)
            self.spec.kernel_cmdline_append += _params(value)
            self._mask(m.start(), m.end())
        # Bare key=value tokens only ever mean kernel parameters in a template request.
        for m in self._each(r"(?<![\w/.-])([a-z][a-z0-9_.-]*=[^\s,;'\"]+(?:,[^\s,;'\"]+)*)", re.I):
            key = m.group(1).split("=", 1)[0].lower()
            if key in ("hostname", "name", "user", "size", "disk"):
                continue
            self.spec.kernel_cmdline_append.append(m.group(1))
            self._mask(m.start(), m.end())

    # ------------------------------------------------------------------ hostname, name

    def _hostname(self) -> None:
        patterns = [
            r"\bhost\s*-?\s*name\s*(?:to|=|:|as|of|is|should\s+be|will\s+be|be)?\s*[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
            r"\b(?:call|name)\s+the\s+(?:host|machine|device|system|box)\s+[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                value = m.group(1).rstrip(".-")
                if _HOST.match(value) and value.lower() not in ("to", "of", "is", "as", "be"):
                    self.spec.hostname = value
                else:
                    self.spec.unparsed.append(f"hostname {value!r} is not a valid host name")
                self._mask(m.start(), m.end())

    def _name(self) -> None:
        patterns = [
            r"\b(?:rename|re-name)\s+(?:the\s+|this\s+)?(?:image|template)?\s*(?:to|as)\s+[\"'`]?([A-Za-z0-9][\w.-]*)",
            r"\b(?:name|call)\s+(?:it|the\s+image|this\s+image|the\s+template|this\s+template)\s+(?:to\s+|as\s+)?[\"'`]?([A-Za-z0-9][\w.-]*)",
            r"\bimage\s+name\s*(?:to|=|:|as|of|is|should\s+be)?\s*[\"'`]?([A-Za-z0-9][\w.-]*)",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                slug = re.sub(r"[^A-Za-z0-9_-]+", "-", m.group(1)).strip("-_")
                if slug:
                    self.spec.name = slug
                self._mask(m.start(), m.end())

    # ------------------------------------------------------------------ users

    def _users(self) -> None:
        remove = [
            r"\b(?:remove|delete|drop)\s+(?:the\s+)?(?:user|account|login)\s+(?:named\s+|called\s+)?[\"'`]?([a-z_][a-z0-9_-]*)",
            r"\b(?:remove|delete|drop)\s+(?:the\s+)?[\"'`]?([a-z_][a-z0-9_-]*)[\"'`]?\s+(?:user|account)\b",
        ]
        for pattern in remove:
            for m in self._each(pattern):
                self.spec.users.append({"action": "remove", "name": m.group(1)})
                self._mask(m.start(), m.end())
        add = (
            r"\b(?:add|create|with|include|need|want|plus|and|set\s+up|configure)\s+(?:a\s+|an\s+|the\s+|one\s+)?(?:new\s+)?"
            r"(?:(admin|administrator|sudo|sudoer|privileged|non-root|regular|normal|service|system|default|login)\s+)?"
            r"(?:user|account|login)(?!\w|\s+data|\s+space|\s*partition)"
            r"(?:\s+(?:named|called|with\s+(?:the\s+)?name|name)?\s*[\"'`]?([a-z_][a-z0-9_-]*)[\"'`]?)?"
        )
        boundary = re.compile(rf"[;.,]|\s+and\s+(?:then\s+)?(?:{_EDIT_VERBS})\b", re.I)
        group_list_tail = re.compile(
            r"\b(?:groups?|in|into|member\s+of)\s+(?:the\s+)?[a-z_][\w-]*(?:\s*,\s*[a-z_][\w-]*)*$", re.I
        )
        for m in self._each(add):
            qualifier, name = (m.group(1) or "").lower(), m.group(2)
            if name and name.lower() in ("with", "that", "who", "for", "and", "in", "to", "as", "having"):
                name = None
            rest_start = m.end() if name else m.end(2) if m.group(2) else m.end()
            tail = self.work[rest_start:]
            stop = boundary.search(tail)
            end = stop.start() if stop else len(tail)
            # A comma inside "in groups docker, video" continues the user's clause.
            while stop and tail[end] == "," and group_list_tail.search(tail[:end]):
                follow = re.match(
                    r",\s*(?:and\s+)?([a-z_][\w-]*)(?=\s*(?:,|and\b|groups?\b|$|with\b))", tail[end:], re.I
                )
                if not follow or follow.group(1).lower() in _EDIT_VERBS.split("|"):
                    break
                stop = boundary.search(tail, end + 1)
                end = stop.start() if stop else len(tail)
            clause_end = rest_start + end
            clause = self.work[rest_start:clause_end]
            user: dict[str, Any] = {"action": "add"}
            if not name:
                if qualifier in ("admin", "administrator"):
                    name = "admin"
                else:
                    self.spec.unparsed.append("a user without a name (say e.g. 'add user ops with sudo')")
                    self._mask(m.start(), clause_end)
                    continue
            user["name"] = name
            if qualifier in ("admin", "administrator", "sudo", "sudoer", "privileged") or re.search(
                r"\b(?:sudo|admin(?:istrator)?\s+(?:rights|privileges|access)|root\s+(?:rights|privileges|access)|wheel|sudoer)\b",
                clause,
                re.I,
            ):
                user["sudo"] = True
            if re.search(r"\b(?:no|without)\s+sudo\b", clause, re.I):
                user["sudo"] = False
            groups = re.search(
                r"\b(?:in|to|into|member\s+of)\s+(?:the\s+)?(?:groups?\s+)?([a-z_][\w-]*(?:\s*(?:,|and)\s*[a-z_][\w-]*)*)\s*(?:groups?)?",
                clause,
                re.I,
            )
            if groups and not re.match(r"(?:the\s+)?(?:home|shell)\b", groups.group(1), re.I):
                names = [
                    g
                    for g in re.split(r"\s*(?:,|\band\b)\s*", groups.group(1))
                    if g and g.lower() not in _STOPWORDS
                ]
                if names:
                    user["groups"] = names
            shell = re.search(r"\bshell\s*(?:=|:|of|is)?\s*(/[\w/.-]+|bash|zsh|sh|fish)", clause, re.I)
            if shell:
                value = shell.group(1)
                user["shell"] = value if value.startswith("/") else f"/bin/{value}"
            home = re.search(r"\bhome(?:\s+dir(?:ectory)?)?\s*(?:=|:|at|in|is)?\s*(/[\w/.-]+)", clause, re.I)
            if home:
                user["home"] = home.group(1)
            if re.search(r"\bpassword\b", clause, re.I):
                self.spec.notes.append(
                    f"password for user {name} not stored: plain-text passwords do not belong in a template; "
                    "set a hashed password (password + hash_algo) or use SSH keys"
                )
            self.spec.users.append(user)
            self._mask(m.start(), clause_end)

    # ------------------------------------------------------------------ disk and partitions

    def _partitions(self) -> None:
        spec = self.spec
        for m in self._each(
            rf"\b(?:remove|drop|delete|get\s+rid\s+of)\s+(?:the\s+)?(?:separate\s+|extra\s+)?{_MOUNT}\s+partition\b"
            rf"|\b(?:remove|drop|delete)\s+(?:the\s+)?partition\s+(?:for|mounted\s+(?:at|on)|at|on)\s+(/[\w./-]*)"
        ):
            spec.partitions.append({"action": "remove", "mountPoint": _mount(m.group(1) or m.group(2))})
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:resize|grow|shrink|make|set|change|extend|increase|decrease|enlarge|reduce)\s+(?:the\s+)?"
            rf"(?:size\s+of\s+(?:the\s+)?)?{_MOUNT}\s+(?:partition|filesystem|file\s+system|fs|volume)(?:'s)?\s+"
            rf"(?:size\s+)?(?:to\s+|=\s*|be\s+)?{_SIZE}"
        ):
            spec.partitions.append(
                {"action": "resize", "mountPoint": _mount(m.group(1)), "size": _size(m.group(2), m.group(3))}
            )
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:make|change|set|format|convert|reformat)\s+(?:the\s+)?{_MOUNT}\s+(?:partition|filesystem|fs)\s+"
            rf"(?:to\s+|as\s+|into\s+|with\s+)?(?:(?:{_FS})|{_SIZE})(?:\s+(?:and|,)\s+(?:(?:{_FS})|{_SIZE}))?"
        ):
            g = m.groups()
            size = _size(g[2], g[3]) if g[2] else _size(g[5], g[6]) if g[5] else None
            fs = g[1] or g[4]
            spec.partitions.append(
                {"action": "resize", "mountPoint": _mount(g[0]), "size": size, "fsType": _fs(fs)}
            )
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:give|put)\s+{_MOUNT}\s+(?:on\s+)?(?:its\s+own|a\s+separate|a\s+dedicated|an?)\s+(?:{_SIZE}\s+)?"
            rf"(?:{_FS}\s+)?partition(?:\s+(?:of|with)\s+{_SIZE})?"
        ):
            g = m.groups()
            size = _size(g[1], g[2]) if g[1] else _size(g[4], g[5]) if g[4] else None
            spec.partitions.append(
                {
                    "action": "add",
                    "mountPoint": _mount(g[0]),
                    "size": size,
                    "fsType": _fs(g[3]),
                    "fill": False,
                }
            )
            self._mask(m.start(), m.end())
        add_patterns = [
            # "a separate 4GiB xfs /data partition of 4GiB formatted as xfs"
            rf"(?:(?:separate|dedicated|new|extra|additional|own|its\s+own)\s+)?"
            rf"(?:{_SIZE}\s+)?(?:{_FS}\s+)?(?:separate\s+|dedicated\s+|new\s+|extra\s+|additional\s+|own\s+|its\s+own\s+)?"
            rf"(?:{_FS}\s+)?{_MOUNT}\s+partition(?!\s+table)"
            rf"(?:\s+(?:of|with|sized?|at|that\s+is|:)?\s*{_SIZE})?"
            rf"(?:\s+(?:formatted\s+)?(?:as|with|using|in)\s+{_FS})?",
            rf"\bpartition\s+(?:for|mounted\s+(?:at|on)|at|on)\s+(/[\w./-]*)(?:\s+(?:of|with|sized?)\s+{_SIZE})?",
            rf"\b{_SIZE}\s+(?:of\s+)?swap\b",
            rf"\bswap\s+(?:space\s+)?(?:of\s+)?{_SIZE}",
        ]
        for index, pattern in enumerate(add_patterns):
            for m in self._each(pattern):
                g = m.groups()
                if index == 0:
                    size = _size(g[0], g[1]) if g[0] else _size(g[5], g[6]) if g[5] else None
                    fs = g[2] or g[3] or g[7]
                    mount = _mount(g[4])
                elif index == 1:
                    mount, size, fs = _mount(g[0]), _size(g[1], g[2]) if g[1] else None, None
                else:
                    mount, size, fs = "swap", _size(g[0], g[1]), None
                tail = self.work[m.end() : m.end() + 60]
                fill = bool(
                    re.match(
                        r"\s*(?:that\s+|which\s+)?(?:uses|using|fills?|filling|takes?|taking|with)\s+(?:up\s+)?(?:the\s+)?(?:rest|remaining|remainder|all\s+remaining|free)",
                        tail,
                        re.I,
                    )
                )
                if fill:
                    fill_m = re.match(r"\s*\S+(?:\s+\S+){0,5}?\s+(?:space|disk|of\s+the\s+disk)", tail, re.I)
                    self._mask(m.end(), m.end() + (fill_m.end() if fill_m else 0))
                spec.partitions.append(
                    {"action": "add", "mountPoint": mount, "size": size, "fsType": _fs(fs), "fill": fill}
                )
                # "... partition for logs": the purpose describes the partition, it asks for no software.
                purpose = re.match(r"\s+for\s+(?:the\s+|my\s+|our\s+|its\s+)?[a-z][\w-]*(?:\s+(?:data|files|storage))?",
                                   self.work[m.end():], re.I)
                self._mask(m.start(), m.end() + (purpose.end() if purpose else 0))

    def _disk_size(self) -> None:
        spec = self.spec
        delta = self._each(
            rf"\b(increase|grow|expand|enlarge|extend|bump|decrease|shrink|reduce)\s+(?:the\s+)?(?:disk|image|drive)"
            rf"(?:\s+size)?\s+by\s+{_SIZE}"
        )
        for m in delta:
            sign = "-" if m.group(1).lower() in ("decrease", "shrink", "reduce") else "+"
            spec.disk_size_delta = sign + _size(m.group(2), m.group(3))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(add|give|remove|take)\s+(?:another\s+|an\s+extra\s+|extra\s+)?{_SIZE}\s+(?:more\s+)?"
            rf"(?:to|from)\s+(?:the\s+)?(?:disk|image|drive)(?:\s+size)?"
        ):
            sign = "-" if m.group(1).lower() in ("remove", "take") else "+"
            spec.disk_size_delta = sign + _size(m.group(2), m.group(3))
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:double)\s+(?:the\s+)?(?:disk|image)(?:\s+size)?"):
            spec.disk_size_delta = "x2"
            self._mask(m.start(), m.end())
        patterns = [
            rf"\b(?:disk|drive|storage|image)(?:\s+image)?(?:\s+size)?\s*(?:to|=|:|of|at|is|should\s+be|be|with)?\s*{_SIZE}",
            rf"\bsize\s+(?:of\s+(?:the\s+)?)?(?:disk|image|drive)?\s*(?:to|=|:|of|at|is)?\s*{_SIZE}",
            rf"\b{_SIZE}\s+(?:raw\s+)?(?:disk|drive|storage|image|raw)\b",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                spec.disk_size = _size(m.group(1), m.group(2))
                self._mask(m.start(), m.end())
        if spec.disk_size is None and not spec.disk_size_delta:
            # A lone size ("edge image with docker, 32GiB") can only mean the disk; memory sizes are not ours.
            for m in self._each(rf"(?<![\w/.]){_SIZE}(?!\s*(?:of\s+)?(?:ram|memory|swap|partition))"):
                spec.disk_size = _size(m.group(1), m.group(2))
                self._mask(m.start(), m.end())

    # ------------------------------------------------------------------ kernel version, artifacts, boot

    def _kernel_version(self) -> None:
        patterns = [
            r"\bkernel\s*(?:version)?\s*(?:to|=|:|of|is|at|v)?\s*v?(\d+\.\d+(?:\.\d+)?)\b",
            r"\b(?:linux\s+)?v?(\d+\.\d+(?:\.\d+)?)\s+(?:kernel|lts\s+kernel)\b",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                version = m.group(1)
                major, minor = (int(x) for x in version.split(".")[:2])
                if 3 <= major <= 9 and minor <= 40:
                    self.spec.kernel_version = version
                    self._mask(m.start(), m.end())

    def _artifacts(self) -> None:
        names = "|".join(_ARTIFACTS)
        comp = "|".join(_COMPRESSIONS)
        for m in self._each(
            rf"\b(?:remove|drop|delete|no|without)\s+(?:the\s+)?({names})(?:\s+(?:artifact|output|format|file))?\b"
        ):
            self.spec.remove_artifacts.append(m.group(1).lower())
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:compress(?:ed|ion)?\s+(?:the\s+)?(?:image|output|outputs|artifacts?|disk)?\s*(?:with|using|as|in|to|:)?\s*({comp})"
            rf"|({comp})[\s-]+compress(?:ed|ion)?)\b"
        ):
            value = (m.group(1) or m.group(2)).lower()
            value = "gz" if value == "gzip" else value
            compressions = load_template_format().build_compressions  # the build's own list
            if value in compressions:
                self.spec.artifact_compression = value
            else:  # the schema allows it, the build refuses it: say so instead of writing it
                self.spec.unsupported.append(f"{value} compression: os-image-composer's build does not support it; "
                                             f"closest supported: {', '.join(compressions)}")
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b({names})\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+(?:the\s+)?({names})\b"
            rf"|\breplace\s+(?:the\s+)?({names})\s+(?:artifact\s+|output\s+)?(?:with|by)\s+({names})\b"
        ):
            new, old = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            self.spec.artifacts.append(new.lower())
            self.spec.remove_artifacts.append(old.lower())
            self._mask(m.start(), m.end())
        for m in self._each(rf"\bonly\s+(?:an?\s+)?({names})\b|\b({names})\s+only\b"):
            self.spec.artifacts.append((m.group(1) or m.group(2)).lower())
            self.spec.remove_artifacts.append("*")  # every other artifact goes
            self._mask(m.start(), m.end())
        for m in self._each(rf"\b({names})\b"):
            self.spec.artifacts.append(m.group(1).lower())
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:artifacts?|outputs?|formats?)\b"):
            self._mask(m.start(), m.end())

    def _bootloader(self) -> None:
        for m in self._each(
            rf"{_NB}(grub2?|systemd[\s-]boot|sd[\s-]boot){_NA}(?:\s+(?:bootloader|boot\s+loader))?"
        ):
            value = m.group(1).lower()
            if re.search(
                r"(?:remove|drop|without|no|not)\s+(?:the\s+)?$",
                self.work[max(0, m.start() - 20) : m.start()],
                re.I,
            ):
                continue
            self.spec.bootloader = "grub" if value.startswith("grub") else "systemd-boot"
            self._mask(m.start(), m.end())
        for m in self._each(
            r"\b(?:legacy|bios)(?:\s+(?:bios|boot|mode))+\b|\bboot\s+(?:in\s+)?(?:legacy|bios)\s+mode\b"
        ):
            self.spec.boot_type = "legacy"
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:uefi|efi)(?:\s+(?:boot|mode))?\b"):
            self.spec.boot_type = "efi"
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:boot\s*loader|bootloader)\b"):
            self._mask(m.start(), m.end())

    def _immutability(self) -> None:
        pattern = (
            r"(?<![\w-])(non-?\s*)?(immutab(?:le|ility)|read[\s-]only\s+(?:root\s*(?:fs|file\s*system)?|rootfs|system|os)"
            r"|(?:root\s*(?:fs|file\s*system|partition)?|rootfs|system|os|image)\s+(?:is\s+|be\s+|to\s+be\s+|as\s+)?"
            r"read[\s-]only"
            r"|dm-verity|verity|mutable|writ(?:e)?able\s+(?:root\s*(?:fs|file\s*system)?|rootfs|system))(?![\w-])"
        )
        for m in self._each(pattern):
            word = m.group(2).lower()
            before = self.work[max(0, m.start() - 30) : m.start()].lower()
            negated = bool(m.group(1)) or bool(
                re.search(
                    r"\b(?:disable|disabled|without|no|not|turn\s+off|switch\s+off|remove|drop|stop\s+being)\s+(?:the\s+|an?\s+)?$",
                    before,
                )
            )
            value = (
                not word.startswith(("mutable", "writ"))
                if not negated
                else word.startswith(("mutable", "writ"))
            )
            self.spec.immutability = value
            start = m.start()
            verb = re.search(
                r"\b(?:enable|disable|turn\s+(?:on|off)|make\s+(?:it|the\s+\w+)?|without|with|no|not)\s+(?:the\s+|an?\s+)?$",
                before,
            )
            if verb:
                start = m.start() - (len(before) - verb.start())
            self._mask(start, m.end())

    def _secure_boot(self) -> None:
        for m in self._each(r"(?<![\w-])secure[\s-]?boot(?![\w-])"):
            before = self.work[max(0, m.start() - 45) : m.start()].lower()
            negated = bool(
                re.search(
                    r"\b(?:disable|disabled|without|no|not|turn\s+off|switch\s+off|remove|drop)\s+(?:the\s+|uefi\s+)?$",
                    before,
                )
                or re.search(
                    r"\b(?:disable|turn\s+off|switch\s+off|without|remove|drop)\s+[\w\s-]{0,30}?\band\s+(?:the\s+|uefi\s+)?$",
                    before,
                )
            )
            self.spec.secure_boot = not negated
            self._mask(m.start(), m.end())

    # ------------------------------------------------------------------ replacements, distributions

    def _replacements(self) -> None:
        """'replace X with Y' and 'Y instead of X' become a removal plus an addition."""
        word = r"([a-z0-9][\w.+:~-]*(?:\s+[a-z0-9][\w.+:~-]*)?)"
        patterns = [
            (rf"\b(?:replace|swap|substitute)\s+{word}\s+(?:with|by|for)\s+{word}", 1, 2),
            (rf"\b(?:use\s+)?{word}\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+{word}", 2, 1),
        ]
        for pattern, old_i, new_i in patterns:
            for m in self._each(pattern):
                old, new = m.group(old_i), m.group(new_i)
                if self._is_os_or_arch(old) or self._is_os_or_arch(new):
                    continue  # "ubuntu instead of debian" is a distribution switch, handled below
                for part in old.split():
                    self._classify(part, mode="remove", strength="strong")
                for part in new.split():
                    if self._classify(part, mode="add", strength="strong") == "unknown-strong":
                        self.spec.add_packages.append(part.lower())
                self._mask(m.start(), m.end())

    def _is_os_or_arch(self, phrase: str) -> bool:
        return bool(
            self.caps.family_of(phrase)
            or self.caps.arch_of(phrase)
            or phrase.lower() in ("iso", "raw", "img")
        )

    def _from_to(self) -> None:
        """In 'switch from ubuntu to debian' only the destination counts."""
        for m in self._each(r"\bfrom\s+(?:an?\s+|the\s+)?([\w.-]+(?:\s+[\w.-]+){0,2}?)\s+(?=to\b|into\b)"):
            if self._is_os_or_arch(m.group(1)) or self.caps.dist_of(m.group(1)):
                self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:instead\s+of|rather\s+than)\s+([\w.-]+(?:\s+[\w.-]+){0,2})"):
            if self._is_os_or_arch(m.group(1)):
                self._mask(m.start(), m.end())

    def _typos(self) -> None:
        """Correct misspelt distribution, capability and package words ("ubunut", "dokcer").

        A word is corrected only when it is unknown, at least five letters long, and one known word is
        clearly the closest (difflib ratio >= 0.8 and the same first letter): a rule about spelling, not
        a list of typos. Ordinary words stay as they are because they are far from every known name.
        """
        vocabulary = self._vocabulary()
        # Right to left, so that a correction of another length leaves earlier offsets valid.
        for m in reversed(self._each(r"(?<![\w./-])([a-z][a-z0-9]{4,})(?![\w/-])")):
            word = m.group(1).lower()
            if word in vocabulary or word in _STOPWORDS or word in _ADD_WORDS or word in _REMOVE_WORDS:
                continue
            close = [c for c in difflib.get_close_matches(word, vocabulary, n=2, cutoff=0.8) if c[0] == word[0]]
            if not close or (len(close) > 1 and difflib.SequenceMatcher(None, word, close[1]).ratio()
                             >= difflib.SequenceMatcher(None, word, close[0]).ratio()):
                continue
            fixed = close[0]
            self.spec.corrected.insert(0, f"{m.group(1)} -> {fixed}")
            self.work = self.work[: m.start()] + fixed + self.work[m.end():]

    def _vocabulary(self) -> set[str]:
        # Whole package names and their first word ("wireguard" of wireguard-tools), which resolve() completes.
        words = {w for name in self.real for w in (name, re.split(r"[-.+_]", name)[0])
                 if re.fullmatch(r"[a-z][a-z0-9]{4,}", w)}
        for phrase in list(self.caps.triggers()) + [w for f in self.caps.families.values() for w in f.words]:
            words |= {w for w in re.split(r"[\s_-]+", phrase.lower()) if re.fullmatch(r"[a-z][a-z0-9]{4,}", w)}
        words |= {w for uc in self.caps.use_cases.values() for p in uc.words for w in p.lower().split()}
        words |= set(self.caps.unsupported_os) | {"image", "images", "minimal", "server", "install", "instead",
                                                    "remove", "partition", "hostname", "kernel", "gateway"}
        return words

    def _unsupported(self) -> None:
        """Operating systems and architectures the composer cannot build: named, with the closest choices."""
        caps = self.caps
        for phrase in sorted(caps.unsupported_os, key=len, reverse=True):
            words = [re.escape(w) for w in re.split(r"[\s_-]+", phrase) if w]
            for m in self._each(_NB + r"[\s_-]*".join(words) + r"(?:\s*(?:linux\s*)?(\d+(?:\.\d+)?))?" + _NA):
                info = caps.unsupported_os[phrase]
                closest = [str(c) for c in info.get("closest") or ()]
                named = info.get("label", phrase) + (f" {m.group(1)}" if m.group(1) else "")
                self.spec.unsupported.append(
                    f"{named}: operating system not supported; closest supported: {', '.join(closest)}")
                if closest and not self.unsupported_target:
                    self.unsupported_target = closest[0]
                self._mask(m.start(), m.end())
        for word in sorted(caps.unsupported_arch, key=len, reverse=True):
            for m in self._each(_NB + re.escape(word) + _NA):
                label = caps.unsupported_arch[word].get("label", word)
                self.spec.unsupported.append(
                    f"architecture {label}: not supported; closest supported: x86_64, aarch64 (using x86_64)")
                self.unsupported_arch = True
                self._mask(m.start(), m.end())

    def _distribution(self) -> None:
        caps = self.caps
        phrases: list[tuple[str, str, str]] = []  # (phrase, family, dist or "")
        for dist in caps.dists.values():
            phrases += [(w, dist.family, dist.id) for w in dist.words]
            phrases.append((dist.id, dist.family, dist.id))
        for family in caps.families.values():
            phrases += [(w, family.id, "") for w in family.words]
            phrases.append((family.id, family.id, ""))
        phrases.sort(key=lambda p: -len(p[0]))
        found: list[tuple[int, str, str]] = []
        for phrase, family, dist in phrases:
            words = [re.escape(w) for w in re.split(r"[\s_-]+", phrase.lower()) if w]
            pattern = _NB + r"[\s_-]*".join(words) + _NA
            for m in self._each(pattern):
                found.append((m.start(), family, dist))
                self._mask(m.start(), m.end())
        if not found:
            return
        for n, (pos, fam_id, dist_id) in enumerate(found):
            after = re.match(r"(\d+(?:\.\d+)?)\b", self._after(pos))
            if dist_id or not after:
                continue
            family = caps.families[fam_id]
            number = after.group(1)
            same = [d.id for d in family.dists.values()
                    if number in (str(getattr(d, "release", "") or ""), re.sub(r"^\D+", "", d.id))]
            if same:
                found[n] = (pos, fam_id, same[0])  # "rocky 10", "azure linux 3": the release is supported
            else:
                self.spec.unsupported.append(
                    f"{family.label} {number}: release not supported; closest supported: "
                    f"{', '.join(dict.fromkeys([family.default_dist, *family.dists]))}")
        preferred = [
            f
            for f in found
            if re.search(
                r"\b(?:to|into|for|on|with)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
            )
        ]
        chosen_pos, family, dist = (preferred or sorted(found))[-1]
        # A dist mention next to the chosen family mention ("ubuntu 24.04") refines it.
        same_family = [f for f in found if f[1] == family and f[2]]
        self.spec.os = family
        self.spec.dist = dist or (same_family[-1][2] if same_family else None)
        others = {f[1] for f in found} - {family}
        if others:
            self.spec.notes.append(f"several distributions mentioned; using {family}")

    def _after(self, start: int) -> str:
        """The text right after a masked span that begins at ``start``."""
        rest = self.work[start:]
        stripped = rest.lstrip(" ")
        return stripped[:20]

    def _architecture(self) -> None:
        found: list[tuple[int, str]] = []
        for arch, info in self.caps.arch_info.items():
            for alias in sorted({arch, *(str(a) for a in info.get("aliases") or ())}, key=len, reverse=True):
                for m in self._each(_NB + re.escape(alias) + _NA):
                    found.append((m.start(), arch))
                    self._mask(m.start(), m.end())
        if found:
            preferred = [
                f
                for f in found
                if re.search(
                    r"\b(?:to|into|for|on)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
                )
            ]
            self.spec.arch = (preferred or sorted(found))[-1][1]

    def _image_type(self) -> None:
        found: list[tuple[int, str]] = []
        for pattern, kind in _IMAGE_TYPES:
            for m in self._each(pattern):
                found.append((m.start(), kind))
                self._mask(m.start(), m.end())
        if found:
            preferred = [
                f
                for f in found
                if re.search(
                    r"\b(?:to|into|as)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
                )
            ]
            self.spec.image_type = (preferred or sorted(found))[-1][1]

    # ------------------------------------------------------------------ packages and groups

    def _scan(self) -> None:
        """Walk the remaining words with a mode (add / remove / neutral) and classify them.

        Strength of an add: "strong" after add/install/include (unknown package-like words are
        taken as package names), "with" after with/plus/also (unknown words are reported),
        "quiet" after need/want/use/have (unknown words are ignored: they are usually prose).
        """
        text = self.work.lower()
        triggers = self.caps.triggers()
        max_words = max((len(t.split()) for t in triggers), default=1)
        use_case_words = {
            normalize_phrase(w): uid for uid, uc in self.caps.use_cases.items() for w in uc.words
        }
        for clause in re.split(r"[;.!?\n]+(?:\s|$)|\bthen\b", text):
            mode: str | None = None
            strength = ""
            negate = False  # "don't", "do not", "never": the next add verb means remove
            found = [
                (m.group(0).rstrip(".,:'"), m.start(), m.end())
                for m in re.finditer(r"[a-z0-9][a-z0-9+_.:~/'-]*", clause)
            ]
            tokens = [t for t, _, _ in found]
            run: list[str] = []  # adjacent unknown words after a strong add ("the nvidia driver")
            last_end = -1

            i = 0
            while i < len(tokens):
                token = tokens[i]
                if run and (clause[last_end : found[i][1]].strip() or token in self.known):
                    self._flush_run(run)
                two = " ".join(tokens[i : i + 2])
                if token in ("don't", "dont", "never", "without") or two in ("do not", "no need", "not want"):
                    negate = True
                    mode, strength = "remove", "strong"
                    i += 2 if two in ("do not", "no need", "not want") else 1
                    continue
                three = " ".join(tokens[i : i + 3])
                if three in ("get rid of", "leave out of") or two in ("get rid", "leave out", "take out"):
                    mode, strength = "remove", "strong"
                    i += 3 if three in ("get rid of", "leave out of") else 2
                    continue
                if token in _REMOVE_WORDS:
                    mode, strength, negate = "remove", "strong", False
                    i += 1
                    continue
                if token in _ADD_WORDS:
                    if negate or (token in _WEAK_ADD and mode == "remove"):
                        negate = False  # "don't want", "do not include": stays a removal
                    elif token in _WEAK_ADD:
                        mode, strength = "add", "quiet"
                    else:
                        mode, strength = "add", "strong" if token in _STRONG_ADD else "with"
                    i += 1
                    continue
                negate = False
                if token in _NEUTRAL_WORDS:
                    if token not in ("for", "on", "to", "is") or mode is None:
                        mode, strength = None, ""
                    i += 1
                    continue
                # Longest capability trigger starting here (exact package names win over one-word triggers).
                matched = False
                for size in range(min(max_words, len(tokens) - i), 0, -1):
                    phrase = normalize_phrase(" ".join(tokens[i : i + size]))
                    group = triggers.get(phrase)
                    if not group:
                        continue
                    if size == 1 and tokens[i] in self.real:
                        break
                    if mode == "remove":
                        self.spec.remove_groups.append(group)
                    else:
                        self.spec.add_groups.append(group)
                        if phrase in use_case_words:
                            self.spec.use_cases.append(use_case_words[phrase])
                    i += size
                    matched = True
                    break
                if not matched:
                    for size in (3, 2, 1):
                        if i + size > len(tokens):
                            continue  # a shorter phrase would match under a longer size and overrun
                        phrase = normalize_phrase(" ".join(tokens[i : i + size]))
                        if phrase in use_case_words and (size > 1 or tokens[i] not in self.known):
                            if mode != "remove":
                                self.spec.use_cases.append(use_case_words[phrase])
                            i += size
                            matched = True
                            break
                if matched:
                    last_end = found[i - 1][2]
                    continue
                verdict = self._classify(token, mode=mode, strength=strength)
                if verdict == "unknown-strong":
                    run.append(token)
                elif run:
                    self._flush_run(run)
                last_end = found[i][2]
                i += 1
            self._flush_run(run)

    def _flush_run(self, run: list[str]) -> None:
        """One unknown word after "add" is a package name only when it is shaped like one ("libfoo-dev",
        "python3", "mod_ssl"); a plain word ("separate", "logs") is English until the repository index says
        otherwise, so it is reported as not placed. Several in a row are prose ("the nvidia driver")."""
        if len(run) == 1 and looks_like_package(run[0]):
            self.spec.add_packages.append(run[0])
        elif run:
            self.spec.unparsed.append(" ".join(run))
        run.clear()

    def resolve(self, token: str) -> str | None:
        """The real package a word names: itself, or the one package spelt ``<word>-tools`` / ``-utils`` ...
        ("wireguard" -> wireguard-tools). None when no real package fits."""
        if token in self.real:
            return token
        family = [r for r in self.real if r.startswith(token + "-") and r.count("-") == token.count("-") + 1]
        for suffix in _NAME_SUFFIXES:
            if token + "-" + suffix in family:
                return token + "-" + suffix
        return family[0] if len(family) == 1 else None

    def _classify(self, token: str, *, mode: str | None, strength: str) -> str:
        token = token.strip().strip("'\"`").lower()
        if not token:
            return "skip"
        group = self.caps.group_for_word(token)
        is_known = token in self.known
        if group and token not in self.real:
            (self.spec.remove_groups if mode == "remove" else self.spec.add_groups).append(group)
            return "group"
        if (
            token in _STOPWORDS
            or token in _ADD_WORDS
            or token in _REMOVE_WORDS
            or re.fullmatch(r"[\d.]+[a-z]{0,3}", token)
        ):
            return "skip"
        looks_like = bool(_PACKAGE.match(token)) and len(token) > 1 and "/" not in token
        if not looks_like:
            return "skip"
        resolved = self.resolve(token) if not is_known else None
        if resolved:
            token, is_known = resolved, True
        if mode == "remove":
            self.spec.remove_packages.append(token)
        elif mode == "add" and is_known:
            self.spec.add_packages.append(token)
        elif mode == "add" and strength == "strong":
            return "unknown-strong"
        elif mode == "add" and strength == "with":
            self.spec.unparsed.append(token)
        elif mode is None and is_known:
            self.spec.add_packages.append(token)
        return "done"

    def _dedupe(self) -> None:
        spec = self.spec
        for name in ("add_packages", "remove_packages", "add_groups", "remove_groups", "kernel_cmdline_append",
                     "kernel_cmdline_remove", "artifacts", "remove_artifacts", "use_cases", "unparsed", "notes"):  # fmt: skip
            setattr(spec, name, list(dict.fromkeys(getattr(spec, name))))
        # Asking to add and remove the same thing: the removal is the later, more specific wish.
        spec.add_groups = [g for g in spec.add_groups if g not in spec.remove_groups]
        spec.add_packages = [p for p in spec.add_packages if p not in spec.remove_packages]
        spec.artifacts = [a for a in spec.artifacts if a not in spec.remove_artifacts]
        if not spec.os and not spec.dist and self.unsupported_target:
            spec.dist = self.unsupported_target  # the closest supported choice, named in spec.unsupported
        if self.unsupported_arch and not spec.arch:
            spec.arch = "x86_64"
        if spec.dist and not spec.os:
            spec.os = self.caps.family_of(spec.dist)
        spec.minimal = spec.minimal or "minimal" in spec.use_cases
        spec.unsupported = list(dict.fromkeys(spec.unsupported))


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1].strip()
    return value.strip("\"'` ")


def _params(text: str) -> list[str]:
    """Kernel parameters from a phrase: quoted text, or words split on spaces, ', ' and ' and '."""
    text = _unquote(text)
    parts = re.split(r"\s*,\s+|\s+and\s+|\s+", text)
    return [
        p.strip("\"'`,")
        for p in parts
        if p.strip("\"'`,")
        and p.lower()
        not in ("the", "a", "an", "parameter", "parameters", "option", "options", "flag", "flags")
    ]


def _size(number: str, unit: str) -> str:
    """A request's size normalised to what upstream accepts (server.sizes decides the units)."""
    mib = casual_mib(number, unit)
    return fmt_size(mib) if mib else f"{number}{unit}"


def _mount(word: str | None) -> str:
    word = (word or "").strip().lower()
    if word.startswith("/"):
        return word.rstrip("/") or "/"
    return _NAMED_MOUNTS.get(word, f"/{word}")


def _fs(word: str | None) -> str | None:
    if not word:
        return None
    word = word.lower()
    return "fat32" if word == "vfat" else word


__all__ = ["RequestSpec", "is_question", "parse_request"]
