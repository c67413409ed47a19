"""What the agent needs from the rest of the server, and nothing more.

The engine (server/engine/composition.py) satisfies this protocol; the agent never imports the engine, so the two are not
an import circle and a test can hand the agent any object with these members.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.config import AISettings
from ..library.index import TemplateIndex
from ..library.search import SearchEngine
from ..packages.build_check import BuildCheck
from ..packages.verifier import VerifyResult
from .conversations import ConversationStore

if TYPE_CHECKING:
    from ..llm.ollama_provider import OllamaProvider
    from ..llm.openai_provider import OpenAIProvider


class AgentServices(Protocol):
    settings: AISettings
    index: TemplateIndex | None
    searcher: SearchEngine | None

    @property
    def conversations(self) -> ConversationStore: ...

    def ready(self, timeout: float | None = None) -> None: ...

    def refresh(self) -> None: ...

    def chat_providers(self) -> tuple[OllamaProvider | None, OpenAIProvider | None]: ...

    def verify_packages(self, packages: list[str] | None = None, yaml: str | None = None, name: str | None = None,
                        os: str | None = None, dist: str | None = None, arch: str | None = None) -> VerifyResult: ...

    def check_build(self, yaml: str | None = None, name: str | None = None) -> BuildCheck: ...

    def check_save_name(self, save_as: str, overwrite: bool) -> Path: ...

    def save_template(self, text: str, save_as: str, overwrite: bool) -> Path: ...
