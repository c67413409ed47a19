"""Reading the output artifacts of a request: the image formats written, taken out or swapped, and their
compression."""

from __future__ import annotations

from ..knowledge.request_words import load_request_words
from ..knowledge.template_format import load_template_format
from .phrasing import ParserState, alternatives

_WORDS = load_request_words()


class ArtifactPhrases(ParserState):
    """The artifact and compression phrases of a request."""

    def _artifacts(self) -> None:
        names = alternatives(_WORDS.artifacts)
        comp = alternatives(_WORDS.compressions)
        compressions = load_template_format().build_compressions  # the build's own list
        for m in self._each(
            rf"\b(?:remove|drop|delete|no|without)\s+(?:the\s+)?({names})(?:\s+(?:artifact|output|format|file))?\b"
        ):
            self.spec.remove_artifacts.append(m.group(1).lower())
            self._mask(m.start(), m.end())
        for m in self._each(
            # "compress the raw image with zstd": the artifact may be named by its format
            rf"\b(?:compress(?:ed|ion)?\s+(?:the\s+)?(?:(?:{names}|raw|iso|img)\s+)?(?:image|output|outputs|artifacts?|disk)?\s*"
            rf"(?:with|using|as|in|to|:)?\s*({comp})"
            rf"|({comp})[\s-]+compress(?:ed|ion)?)\b"
        ):
            value = (m.group(1) or m.group(2)).lower()
            value = _WORDS.compressions.get(value, value)
            if value in compressions:
                self.spec.artifact_compression = value
            else:  # the schema allows it, the build refuses it: say so instead of writing it
                self.spec.unsupported.append(f"{value} compression: os-image-composer's build does not support it; "
                                             f"closest supported: {', '.join(compressions)}")
            self._mask(m.start(), m.end())
        for m in self._each(
            # the raw disk is an artifact to replace as well ("a qcow2 instead of raw"), though no format to add alone
            rf"\b({names})\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+(?:the\s+|a\s+)?({names}|raw)\b"
            rf"(?:\s+(?:image|disk|file|artifact|output))?"
            rf"|\breplace\s+(?:the\s+)?({names}|raw)\s+(?:image\s+|disk\s+|artifact\s+|output\s+)?(?:with|by)\s+(?:an?\s+)?({names})\b"
        ):
            new, old = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            self.spec.artifacts.append(new.lower())
            self.spec.remove_artifacts.append(old.lower())
            self._mask(m.start(), m.end())
        for m in self._each(rf"\bonly\s+(?:an?\s+)?({names})\b|\b({names})\s+only\b"):
            self.spec.artifacts.append((m.group(1) or m.group(2)).lower())
            self.spec.remove_artifacts.append("*")  # every other artifact goes
            self._mask(m.start(), m.end())
        # "export it as a vhd", "exported as vhdx", "write a qcow2 too": the verb says only that it is an output
        for m in self._each(rf"(?:\b(?:export|output|emit|write|wrote|written|save|deliver|publish)(?:s|ed|ted|ing)?"
                            rf"\s+(?:it\s+|this\s+|them\s+|the\s+(?:image|disk)\s+)?(?:also\s+)?(?:(?:as|to|in|into)\s+)?"
                            rf"(?:an?\s+)?)?\b({names})\b"):
            self.spec.artifacts.append(m.group(1).lower())
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:artifacts?|outputs?|formats?)\b"):
            self._mask(m.start(), m.end())
