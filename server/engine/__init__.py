"""The composition root: one engine per process, built by ``build_engine(settings, providers)``.

Owns: the server's state (the index and its loading, the caches, the conversation store, the package
verifier) and which parts are injected (providers.py) or made from the settings. May import: every room
below it (never the transport, never ``mcp``). Its callers import the names below from here.
"""

from .composition import Engine, LibraryEmptyError, build_engine
from .providers import Providers

__all__ = ["Engine", "LibraryEmptyError", "Providers", "build_engine"]
