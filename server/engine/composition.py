"""The engine: one object holding every piece of server state, built once per process.

It knows nothing of MCP; the CLI, the MCP tools and the tests all drive it.
Heavy work (importing LanceDB, loading the embedding model, the first index
sync) happens in a background thread started by :meth:`Engine.start`, so the
MCP handshake never waits for it.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import startup_gc
from ..core.config import AISettings
from ..library.outside import outside_message, outside_targets
from .packages import PackageChecks
from .providers import (
    Providers,
    chat_from_settings,
    embedder_from_settings,
    usable_cache_dir,
    verifier_from_settings,
)
from .saving import TemplateSaver
from .stats import LatencyBook, ValidationCounts

if TYPE_CHECKING:  # numpy, LanceDB, the scorer and the LLM clients load in the background or on first use
    from ..agent.conversations import ConversationStore
    from ..agent.loop import Agent
    from ..library.embedder import Embedder
    from ..library.index import TemplateIndex
    from ..library.index_sync import ProgressFn, SyncReport
    from ..library.search import SearchEngine, SearchOutcome
    from ..library.templates import TemplateRecord
    from ..packages.build_check import BuildCheck
    from ..packages.closure import ClosureResult
    from ..packages.verifier import PackageVerifier, VerifyResult
    from ..validation.report import ValidationReport
    from .providers import ChatPair

log = logging.getLogger(__name__)


class LibraryEmptyError(ValueError):
    """No template is indexed: nothing to search or ground generation on. The message names the fix."""


def _remember_secrets(settings: AISettings) -> None:
    """Configured keys and URL credentials are removed from everything the server returns or stores
    (server/core/logs.py): an upstream error body may echo them in any shape."""
    from ..core.logs import remember_secret, remember_url_credentials

    for secret in (settings.openai.api_key, settings.server.auth_token):
        remember_secret(secret.get_secret_value() if secret is not None else None)
    for url in (settings.openai.base_url, settings.ollama.base_url):
        remember_url_credentials(url)


class Engine:
    """Built by :func:`build_engine` (the one place that decides which parts are injected and which are made
    from the settings)."""

    def __init__(self, settings: AISettings, providers: Providers):
        self.settings = settings
        self.providers = providers
        self.clock = providers.clock or time.time
        self.warnings: list[str] = []
        self.started_at = self.clock()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.search_latency = LatencyBook()
        self.tool_latency = LatencyBook()
        self.validations = ValidationCounts()
        self.first_sync: SyncReport | None = None
        self.cache_dir: Path | None = None
        self._cache_lock = threading.Lock()
        self._cache_resolved = False
        self._embedder: Embedder | None = providers.embedder
        self.index: TemplateIndex | None = None
        self.searcher: SearchEngine | None = None
        self._conversations: ConversationStore | None = providers.conversations
        self._agent: Agent | None = None
        self._chat: ChatPair | None = providers.chat
        self.packages = PackageChecks(self._make_verifier, self.template_text)
        self.saver = TemplateSaver(settings.save_path, self._index_saved)
        _remember_secrets(settings)
        self._follower: threading.Thread | None = None  # keeps a shared index current (team deployments)
        self._closing = threading.Event()
        self.degraded: str | None = None  # why search runs without vectors (keyword-only), if it does
        missing = [str(r) for r in settings.template_roots if not r.is_dir()]
        for root in missing:
            self.warnings.append(f"templates directory {root} does not exist: set OIC_AI_TEMPLATES_DIR "
                                 "(ai.templates_dir, --templates-dir) to a folder of *.yml templates")
            log.warning("%s", self.warnings[-1])

    # ---- lifecycle -----------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            embedder, degraded = embedder_from_settings(self.settings)
            if degraded is not None:
                # Search still answers (BM25 + packages + target); say so once, here and in every result.
                self.degraded = degraded
                self.warnings.append(degraded)
                log.warning("%s", degraded)
            self._embedder = embedder
        return self._embedder

    def start(self, progress: ProgressFn | None = None) -> None:
        """Begin loading in the background (idempotent)."""
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, args=(progress,), name="engine-load", daemon=True)
                self._thread.start()

    def _resolve_cache_dir(self) -> Path | None:
        """Choose the cache dir once (cheap); the index, the conversations and the package cache share it."""
        with self._cache_lock:
            if not self._cache_resolved:
                if self.settings.cache.enabled:
                    self.cache_dir, warnings = usable_cache_dir(self.settings.cache_path,
                                                                self.providers.fallback_cache_dir)
                    self.warnings.extend(warnings)
                    for w in warnings:
                        log.warning(w)
                self._cache_resolved = True
            return self.cache_dir

    def _load(self, progress: ProgressFn | None) -> None:
        # A warm start over stdio (48 templates, 2 cores, ~1.15 s to the first result on a quiet machine): Python
        # and the settings 0.2 s, the MCP SDK 0.45 s and the tools' registration 0.08 s (the handshake, ~0.75 s);
        # then here the embedder and index modules ~0.12 s beside the model load ~0.11 s (onnxruntime's session
        # 60-80 ms, the tokenizer 20-30 ms), the mirror on disk ~4 ms (snapshot.py: LanceDB's import alone took
        # 0.45-0.55 s), the concept labels from their cache (label_cache.py: 75 ms to embed), the first query
        # ~20 ms. Nearly all of it holds the GIL: starting this thread before the SDK import was measured twice
        # (with LanceDB's import in it, and after snapshot.py) and the first result came no sooner.
        preload = None
        if hasattr(self.embedder, "load"):
            # Reading the model (I/O, onnxruntime's session) overlaps with the index and the scorer's start.
            preload = threading.Thread(target=self._preload_model, name="model-load", daemon=True)
            preload.start()
        try:
            cache_dir = self._resolve_cache_dir()
            from ..library import label_cache, term_counts
            from ..library.index import TemplateIndex
            from ..library.search import SearchEngine

            roots = list(self.settings.template_roots)
            if self.save_dir not in roots and not self.shared_index:
                # Saved templates are searchable at once. Not in a shared index: a replica's own directory is
                # not readable by the others (publish saved templates to the shared library instead).
                roots.append(self.save_dir)
            index = TemplateIndex(cache_dir, roots, self.embedder, **self._shared_index_options())
            index.follow_external_symlinks = self.settings.templates_follow_external_symlinks
            self.first_sync = index.start(progress=progress)
            self.index = index
            if not index.catalog:  # the CLI and every tool call say so; the server's log says it once
                log.info("%s", self.library_empty_message())
            labels = cache_dir / label_cache.FILE if cache_dir is not None else None
            # Kept beside the index's mirror (a local index), and cleared with it.
            counts = index.snapshot_path.parent / term_counts.FILE if index.snapshot_path is not None else None
            self.searcher = SearchEngine(index, self.embedder, self.settings, label_cache=labels, term_counts=counts)
            if self.shared_index:
                self._follower = threading.Thread(target=self._follow_shared_index, name="index-follow",
                                                  daemon=True)
                self._follower.start()
            if preload is not None:
                preload.join()
        except BaseException as exc:  # noqa: BLE001 - reported to every caller of ready()
            self._start_error = exc
            log.error("engine failed to start: %s", exc)
        finally:
            self._ready.set()
            startup_gc.release()  # the server has started: what it made lives on (core/startup_gc.py)

    @property
    def shared_index(self) -> bool:
        """An index several replicas share (``ai.index_uri``): kept current by a background thread."""
        return self.settings.index_uri is not None

    def _shared_index_options(self) -> dict[str, Any]:
        """Where the index lives, which template sources are buckets, and who may write (team deployments)."""
        s = self.settings
        options: dict[str, Any] = {"uri": s.index_uri, "storage_options": s.storage.lance_options()}
        if s.template_object_roots:
            from ..library.templates import TEMPLATE_SUFFIXES
            from ..storage.object_store import ObjectRoot

            options["object_roots"] = [ObjectRoot(uri, s.storage, TEMPLATE_SUFFIXES)
                                       for uri in s.template_object_roots]
        if self.shared_index and s.conversations_url is not None:
            from ..storage.pg_lease import PgLease

            # One sync leader among the replicas: a PostgreSQL advisory lock in the conversations database.
            options["lease"] = PgLease(s.conversations_url.get_secret_value())
        return options

    def _follow_shared_index(self) -> None:
        """Every ``ai.index_refresh``: the leader syncs the template sources into the shared index; the others
        load the latest table version. Never on the search path (listing a bucket takes a round trip)."""
        refresh = self.settings.index_refresh
        while not self._closing.is_set():
            index = self.index
            if index is None:
                return
            wait_for_change = getattr(index.lease, "wait_for_change", None)
            if wait_for_change is not None and not index.is_writer:
                wait_for_change(refresh)  # the leader's NOTIFY after a commit, or the poll interval
            else:
                self._closing.wait(refresh)
            if self._closing.is_set():
                return
            try:
                index.sync(wait=False)
            except Exception as exc:  # noqa: BLE001 - a failed round (bucket unreachable) is retried next time
                log.warning("shared index refresh failed (retrying in %.0fs): %s", refresh, exc)

    def readiness(self) -> dict[str, Any]:
        """For /healthz/ready: whether this replica can answer (index loaded, conversation store reachable)."""
        checks: dict[str, Any] = {"index": self.state}
        ready = self.is_ready
        index = self.index
        if index is not None:
            checks.update(index_version=index.version, templates=len(index.catalog), index_writer=index.is_writer)
        try:
            store = self.conversations
            ping = getattr(store, "ping", None)
            if ping is not None:
                ping()
            else:
                store.stats()
            checks["conversations"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised: a health check must answer
            # The endpoint is unauthenticated: the body says what failed, the log says where and why.
            log.warning("not ready: conversation store unreachable: %s", exc)
            checks["conversations"] = "unreachable"
            ready = False
        return {"ready": ready, **checks}

    def _preload_model(self) -> None:
        try:
            getattr(self.embedder, "load")()  # noqa: B009 - only local embedders have it (checked in _load)
        except Exception as exc:  # noqa: BLE001 - the first embed call raises it again, with its advice
            log.debug("model preload failed: %s", exc)

    def ready(self, timeout: float | None = None) -> None:
        """Block until loaded; raise the start-up error (with its advice) if loading failed."""
        self.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the template index is still being built; try again in a few seconds")
        if self._start_error is not None:
            raise RuntimeError(str(self._start_error)) from self._start_error

    @property
    def state(self) -> str:
        """loading, ready, or error (loading finished and failed): for health checks."""
        if not self._ready.is_set():
            return "loading"
        return "ready" if self._start_error is None else "error"

    @property
    def is_ready(self) -> bool:
        return self._ready.is_set() and self._start_error is None

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._ready.wait(30)
        if self._follower is not None:
            self._follower.join(30)
        if self.searcher is not None:
            self.searcher.close()
        if self.index is not None:
            self.index.close()
            if self.index.lease is not None:
                self.index.lease.release()
        self.packages.close()
        if self._conversations is not None:
            self._conversations.close()

    # ---- operations ----------------------------------------------------------
    def refresh(self) -> None:
        assert self.index is not None
        if self.shared_index:
            return  # _follow_shared_index keeps it current
        self.index.refresh_if_stale(self.settings.search.fingerprint_interval)

    def library_empty_message(self) -> str:
        roots = [*self.settings.template_roots, self.save_dir]
        where = ", ".join(f"{r}{'' if r.is_dir() else ' (missing)'}" for r in roots)
        return (f"the template library is empty: no *.yml templates in {where}. Point OIC_AI_TEMPLATES_DIR "
                "(ai.templates_dir, --templates-dir) at a folder of OS Image Composer templates, or reinstall "
                "the package to restore its bundled library")

    def require_templates(self) -> None:
        """Raise LibraryEmptyError when nothing is indexed (searching it would only say 'nothing found')."""
        assert self.index is not None
        if not self.index.catalog:
            raise LibraryEmptyError(self.library_empty_message())

    def search(self, query: str, top_k: int | None = None, *, os: str | None = None, dist: str | None = None,
               arch: str | None = None, image_type: str | None = None, use_threshold: bool = True) -> SearchOutcome:
        self.ready()
        assert self.searcher is not None
        self.refresh()
        self.require_templates()
        outcome = self.searcher.search(query, self.settings.search.default_top_k if top_k is None else top_k,
                                       os=os, dist=dist, arch=arch, image_type=image_type,
                                       use_threshold=use_threshold)
        self.search_latency.add(outcome.query_type, outcome.latency_ms)
        outside = outside_targets(query, outcome.analysis) if use_threshold and not (os or dist or arch) else []
        if outside:  # templates sharing its other words would answer a question nobody asked
            outcome = dataclasses.replace(outcome, results=[], message=outside_message(outside))
        if self.degraded:
            outcome = dataclasses.replace(outcome, notices=(self.degraded,))
        return outcome

    def reindex(self, progress: ProgressFn | None = None, force: bool = False) -> SyncReport:
        self.ready()
        assert self.index is not None
        report = self.index.sync(progress=progress, force=force)
        assert report is not None  # a waiting sync always reports
        return report

    def find_template(self, name: str) -> TemplateRecord:
        """An indexed template by name (file name or resource name), or a ValueError naming close matches."""
        self.ready()
        assert self.index is not None
        self.refresh()
        rec = self.index.by_name(name.strip().removeprefix("template://"))
        if rec is None:
            close = difflib.get_close_matches(name, self.index.names(), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else "; list them with search_templates"
            raise ValueError(f"no indexed template named '{name}'{hint}")
        return rec

    def template_text(self, yaml: str | None, name: str | None) -> tuple[str, Path | None, str | None]:
        """The template text to check, from exactly one of ``yaml`` or ``name``, and its directory."""
        if (yaml is None) == (name is None):
            raise ValueError("pass exactly one of: yaml (the template text) or name (an indexed template)")
        if yaml is not None:
            return yaml, None, None
        rec = self.find_template(name or "")
        assert self.index is not None
        try:
            local = rec.root not in self.index.object_roots
            return self.index.read_text(rec), rec.path.parent if local else None, rec.name
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f"template '{name}' is indexed but cannot be read: {reason}") from exc

    def validate(self, yaml: str | None = None, name: str | None = None) -> tuple[ValidationReport, str | None]:
        from ..validation.validator import validate_text

        text, base_dir, resolved = self.template_text(yaml, name)
        report = validate_text(text, base_dir=base_dir)
        self.validations.add(report.valid)
        log.info(
            "validation %s: %d error(s), %d warning(s)",
            resolved or "<inline>",
            len(report.errors),
            len(report.warnings),
        )
        return report, resolved

    def _make_verifier(self) -> PackageVerifier:
        if self.providers.verifier is not None:
            return self.providers.verifier
        return verifier_from_settings(self.settings, self._resolve_cache_dir(), self.providers.clock)

    @property
    def verifier(self) -> PackageVerifier:
        return self.packages.verifier

    def verify_packages(self, packages: list[str] | None = None, yaml: str | None = None, name: str | None = None,
                        os: str | None = None, dist: str | None = None, arch: str | None = None) -> VerifyResult:
        return self.packages.verify(packages, yaml, name, os, dist, arch)

    def check_build(self, yaml: str | None = None, name: str | None = None) -> BuildCheck:
        return self.packages.check_build(yaml, name)

    def check_closure(self, packages: list[str], *, os: str | None = None, dist: str | None = None,
                      arch: str | None = None) -> ClosureResult:
        return self.packages.check_closure(packages, os=os, dist=dist, arch=arch)

    # ---- generation support -----------------------------------------------------
    @property
    def agent(self) -> Agent:
        """The agent loop, imported on first use (validation, the composer and the LLM clients are heavy)."""
        with self._start_lock:
            if self._agent is None:
                from ..agent.loop import Agent

                self._agent = Agent(self)
            return self._agent

    def chat_providers(self) -> ChatPair:
        """(ollama, openai) providers built from settings; None where not configured at all."""
        if self._chat is None:
            self._chat = chat_from_settings(self.settings)
        return self._chat

    @property
    def conversations(self) -> ConversationStore:
        cache_dir = self._resolve_cache_dir()
        with self._start_lock:
            if self._conversations is None:
                from ..agent.stores import open_conversation_store

                self._conversations = store = open_conversation_store(self.settings, cache_dir, self.clock)
                preferred = self.settings.cache_path
                if self.settings.cache.enabled and cache_dir != preferred:
                    # Conversations of earlier runs live in the configured directory: say so, not just "unknown".
                    why = next((w for w in self.warnings if str(preferred) in w and "unusable" in w),
                               f"cache directory {preferred} is not usable")
                    path = (cache_dir / "conversations.sqlite3") if cache_dir else ":memory:"
                    store.unknown_note = (
                        f"in this run's conversation store ({path}): it moved because {why}; conversations kept "
                        f"in {preferred} come back once that directory is writable again (or set OIC_AI_CACHE_DIR)")
            return self._conversations

    @property
    def save_dir(self) -> Path:
        return self.settings.save_path

    def check_save_name(self, save_as: str, overwrite: bool) -> Path:
        """The path ``save_as`` would write to; ValueError for names that escape the directory or clobber."""
        return self.saver.check_name(save_as, overwrite)

    def save_template(self, text: str, save_as: str, overwrite: bool) -> Path:
        return self.saver.save(text, save_as, overwrite)

    def _index_saved(self, path: Path) -> None:
        """Saved templates are searchable at once when the save directory is one the index reads."""
        if self.index is not None and path.parent in {r.resolve() for r in self.index.roots}:
            self.index.sync()

    def stats(self) -> dict[str, Any]:
        self.ready()
        assert self.index is not None
        index = self.index
        index.wait_for_table()  # a new index's table is being written: its size and state in a moment
        s = index.stats
        lookups = s.cache_hits + s.cache_misses
        return {
            "templates_indexed": len(index.catalog),
            "template_roots": [str(r) for r in self.settings.template_roots] + self.settings.template_object_roots,
            "embedded_this_run": s.embedded_total,
            "cache_hits": s.cache_hits,
            "cache_misses": s.cache_misses,
            "cache_hit_rate": round(s.cache_hits / lookups, 4) if lookups else None,
            "save_dir": str(self.save_dir),
            "embedding_provider": self.settings.embedding_provider,
            "semantic_search": "off" if self.degraded else "on",
            "model_id": self.embedder.model_id,
            "dimensions": self.embedder.dimensions,
            "index_location": index.uri,
            "index_size_bytes": index.size_bytes(),
            "index_source": index.source,
            "last_sync": s.last_sync,
            "last_sync_seconds": s.last_sync_seconds,
            "syncs": s.syncs,
            "skipped_files": [{"path": p.path, "reason": p.message} for p in index.problems],
            "queries": self.search_latency.summary(),
            "tools": self.tool_latency.summary(),
            "warnings": list(self.warnings),
            "validation": self.validations.summary(),
            "conversations": self._conversations.stats() if self._conversations is not None else {},
            "uptime_seconds": round(self.clock() - self.started_at, 1),
        }


def build_engine(settings: AISettings, providers: Providers | None = None) -> Engine:
    """The engine for these settings: every part not in ``providers`` is made from the settings, on first use."""
    return Engine(settings, providers or Providers())
