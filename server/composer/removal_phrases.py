"""How people say a removal or a keep around its object ("ros not needed", "leave cockpit out", "turn selinux
off", "podman is fine"), turned into the package scan's own form ("without ros;", "keep podman;") before it reads
the words, and what says nothing about the wish ("if present", "everything related to", "for now") blanked out."""

from __future__ import annotations

import functools
import re

from ..knowledge.request_words import load_request_words
from .phrasing import alternatives

# "ROS not needed", "docker is unnecessary", "selinux disabled": a negation after its object. The object runs
# back to the start of its phrase (punctuation, "but", "with", or an item stated present and joined by "and":
# "k3s preinstalled and swap disabled" switches off swap alone). A thing switched off is left out: the composer
# writes packages, not service states, and says what it removed.
_STATED_PRESENT_AND = (r"\b(?:pre-?installed|installed|included|enabled|added|bundled|present|running|configured"
                       r"|set\s+up|on)\s+and\b")
_POSTFIX_NEGATION = re.compile(
    rf"(^|[,;:(]|\bbut\b|\bwith\b|{_STATED_PRESENT_AND})((?:(?!\bbut\b|\bwith\b|{_STATED_PRESENT_AND})[^,;:(])*?)"
    r"\s+(?:(?:is|are|be)\s+)?(?:(?:not|n't|isn't|aren't)\s+"
    r"(?:needed|required|wanted|necessary|used)|unnecessary|unneeded|unwanted|not\s+a\s+requirement"
    r"|disabled|turned\s+off|switched\s+off|left\s+out|excluded|omitted|removed|uninstalled|deleted|dropped|purged"
    r"|taken\s+out|stripped(?:\s+out)?|ripped\s+out|gone)\b"
)


# "podman is fine", "nano stays", "without docker, ssh allowed": an item affirmed after a removal is kept (or
# taken), not removed.
_AFFIRMED = re.compile(r"(^|[,;:(]|\bbut\b)\s*([a-z0-9][\w.+-]*)\s+(?:is|are)\s+(?:fine|ok|okay|good|enough|welcome)\b"
                       r"|(^|[,;:(]|\bbut\b)\s*([a-z0-9][\w.+-]*)\s+(?:stays|can\s+stay|(?:is\s+|are\s+)?(?:allowed|permitted|"
                       r"kept))\b")


# "changed my mind about docker", "change of mind on ssh": a wish taken back, a removal of what follows
CHANGED_MIND = re.compile(r"(?:changed|change)\s+(?:my|our)\s+minds?\s+(?:about|on)\b|change\s+of\s+mind\s+(?:about|on)\b"
                          r"|never\s+mind(?:\s+(?:about|on))?\b|forget\s+(?:about\s+)?(?=the\b)")


# "remove nano if present": a condition on the wish that changes nothing a template can say (blanked out).
_CONDITION = re.compile(r"\b(?:if|when|where)\s+(?:it\s+is\s+|they\s+are\s+|it's\s+)?(?:present|installed|there|"
                        r"any|available|included|found|exists?)\b")


# "make nginx go away", "have telnet removed": a causative verb, the items, then what happens to them
_CAUSED_REMOVAL = re.compile(r"\b(?:make|have|let|get)\s+((?:the\s+)?[a-z0-9][\w.+-]*(?:\s*(?:,|and)\s*[a-z0-9][\w.+-]*)*)"
                             r"\s+(?:go\s+away|gone|disappear|vanish|removed|uninstalled|deleted|dropped)\b")


# "remove everything related to debugging", "all the stuff for docker": the whole of what follows (blanked out).
_RELATED = re.compile(r"\b(?:everything|anything|all(?:\s+the)?\s+(?:stuff|things|bits|packages)|all|whatever(?:\s+is)?"
                      r"|stuff|things)\s+(?:related|relating|connected|linked|pertaining|belonging|having\s+to\s+do)"
                      r"\s+(?:to|with)\b")


@functools.cache
def _asides() -> re.Pattern[str]:
    """request_words.yaml ``asides``: "after all", "for now" (blanked out)."""
    return re.compile(rf"\b(?:{alternatives(load_request_words().asides)})\b")


# "leave cockpit out", "keep telnet and rsh out of it", "turn selinux off": a removal whose particle follows its
# object.
_SPLIT_PARTICLE = re.compile(r"\b(?:(?:leave|keep|take|rip|strip|throw|cut)\s+(?P<out>(?:the\s+)?[a-z0-9][\w.+-]*"
                             r"(?:\s*(?:,|\band\b|\bor\b)\s*[a-z0-9][\w.+-]*)*)\s+out\b(?:\s+of\s+(?:it|this|the\s+image))?"
                             r"|(?:turn|switch|shut)\s+(?P<off>(?:the\s+)?[a-z0-9][\w.+-]*"
                             r"(?:\s*(?:,|\band\b|\bor\b)\s*[a-z0-9][\w.+-]*)*)\s+off\b)")


def negations_first(text: str) -> str:
    """Postfix negations turned around ("ros not needed" -> "without ros;"), each ending its phrase so that
    the removal does not run on into the next item; an affirmed item is its own phrase ("; keep podman;")."""
    text = _CONDITION.sub(lambda m: " " * len(m.group(0)), text)
    text = _RELATED.sub(lambda m: " " * len(m.group(0)), text)
    text = _asides().sub(lambda m: " " * len(m.group(0)), text)
    text = _CAUSED_REMOVAL.sub(lambda m: f"without {m.group(1)};", text)
    text = _AFFIRMED.sub(lambda m: f"{m.group(1) or m.group(3) or ''}; keep {m.group(2) or m.group(4)}; ", text)
    text = _SPLIT_PARTICLE.sub(lambda m: f"without {m.group('out') or m.group('off')};", text)
    return _POSTFIX_NEGATION.sub(lambda m: f"{m.group(1)} without {m.group(2).strip()}; ", text)
