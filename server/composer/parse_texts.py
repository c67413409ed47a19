"""Reading the settings whose value is a text a person writes (system_settings.yaml value ``text``): "a motd saying
'authorized use only'", "ssh banner: Authorized use only". Read before anything else reads the text's words ("only"
is no firewall's, "quiet" no kernel parameter's)."""

from __future__ import annotations

from ..knowledge.system_settings import Setting, load_settings
from .phrasing import ParserState, alternatives

# What stands between a text setting's words and its text: "saying", "that says", "reading", "with the text", ":".
_SAYS = (r"(?:\s+(?:that\s+|which\s+)?(?:says|saying|reads|reading|shows|showing)|\s+(?:with\s+(?:the\s+)?(?:text|message)"
         r"|set\s+to|of|to|=|is)|\s*:)?\s*")
_BETWEEN = r"[\s_-]*"  # "message-of-the-day", "pre login banner"
_QUOTED = r"[\"“”'‘’`]([^\"“”‘’`]+?)[\"“”'‘’`](?![\w'])"


class TextPhrases(ParserState):
    """Text settings: a message of the day, a login banner."""

    def _texts(self) -> None:
        for setting in sorted((s for s in load_settings().values() if s.value == "text"),
                              key=lambda s: -max(map(len, s.words))):
            said = alternatives(setting.words, between=_BETWEEN)
            words = rf"\b(?:{said})\b"
            for m in self._each(rf"{words}{_SAYS}{_QUOTED}"
                                rf"|{words}(?:\s+(?:that\s+|which\s+)?(?:says|saying|reads|reading)|\s*:)\s*([^,.;\"“”]+)"):
                self._said(setting, (m.group(1) or m.group(2)).strip())
                self._mask(m.start(), m.end())
            for m in self._each(words):
                self.spec.unparsed.append(f"{setting.name}: no text said with it (e.g. '{setting.example}')")
                self._mask(m.start(), m.end())

    def _said(self, setting: Setting, text: str) -> None:
        entry = setting.configuration(" ".join(text.split()))
        if entry is not None:
            self.spec.configurations.append({**entry, "label": f"{setting.name} \"{text}\"",
                                             "packages": list(setting.packages)})


__all__ = ["TextPhrases"]
