"""The engine: one object holding every piece of server state, built once per process.

It knows nothing of MCP; the CLI, the MCP tools and the tests all drive it.
Heavy work (importing LanceDB, loading the embedding model, the first index
sync) happens in a background thread started by :meth:`Engine.start`, so the
MCP handshake never waits for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import logging
import os
import re
import tempfile
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core import paths
from .core.config import AISettings

if TYPE_CHECKING:  # numpy, LanceDB and the scorer load in the background thread, not at import
    from .library.index import TemplateIndex
    from .library.index_sync import ProgressFn, SyncReport
    from .library.search import SearchEngine, SearchOutcome

log = logging.getLogger(__name__)

USER_CACHE = paths.user_cache_dir()


class LibraryEmptyError(ValueError):
    """No template is indexed: nothing to search or ground generation on. The message names the fix."""


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class LatencyBook:
    """Counts and recent latencies per label, for cache_stats."""

    window: int = 1000
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: dict[str, deque[float]] = field(default_factory=dict)

    def add(self, label: str, ms: float) -> None:
        self.counts[label] += 1
        self.samples.setdefault(label, deque(maxlen=self.window)).append(ms)

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for label, values in self.samples.items():
            ordered = sorted(values)
            out[label] = {"count": self.counts[label], "p50_ms": round(_quantile(ordered, 0.5), 2),
                          "p95_ms": round(_quantile(ordered, 0.95), 2),
                          "mean_ms": round(sum(ordered) / len(ordered), 2)}
        return out


def usable_cache_dir(preferred: Path) -> tuple[Path | None, list[str]]:
    """The first writable cache dir among the configured one and the user cache; None means in-memory."""
    warnings: list[str] = []
    for candidate in (preferred, USER_CACHE):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=candidate, prefix=".probe-", delete=True) as fh:
                fh.write(b"x" * 4096)
                fh.flush()
            if candidate != preferred:
                warnings.append(f"cache directory {preferred} is not writable; using {candidate} instead "
                                "(set OIC_AI_CACHE_DIR to choose another)")
            return candidate, warnings
        except OSError as exc:
            warnings.append(f"cache directory {candidate} unusable: {exc.strerror or exc}")
    warnings.append("no writable cache directory: the index lives in a temporary folder and is rebuilt each start")
    return None, warnings


def _remember_secrets(settings: AISettings) -> None:
    """Configured keys and URL credentials are removed from everything the server returns or stores
    (server/core/logs.py): an upstream error body may echo them in any shape."""
    from .core.logs import remember_secret, remember_url_credentials

    for secret in (settings.openai.api_key, settings.server.auth_token):
        remember_secret(secret.get_secret_value() if secret is not None else None)
    for url in (settings.openai.base_url, settings.ollama.base_url):
        remember_url_credentials(url)


class Engine:
    def __init__(self, settings: AISettings):
        self.settings = settings
        self.warnings: list[str] = []
        self.started_at = time.time()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.search_latency = LatencyBook()
        self.tool_latency = LatencyBook()
        self.first_sync: SyncReport | None = None
        self.cache_dir: Path | None = None
        self._cache_lock = threading.Lock()
        self._cache_resolved = False
        self._embedder: Any = None
        self.index: TemplateIndex | None = None
        self.searcher: SearchEngine | None = None
        self._verifier: Any = None
        self._conversations: Any = None
        self._agent: Any = None
        self._chat: tuple[Any, Any] | None = None
        self._verifier_lock = threading.Lock()
        self.validations = {"valid": 0, "invalid": 0}
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
    def embedder(self) -> Any:
        if self._embedder is None:
            from .library.embeddings import create_embedder

            s = self.settings
            if s.embedding_provider == "local":
                from .library.embed_local import KeywordOnlyEmbedder, local_model_missing

                why = local_model_missing(s.local_model_dir)
                if why is not None:
                    # Search still answers (BM25 + packages + target); say so once, here and in every result.
                    self.degraded = f"semantic search is off (ranking by keywords, packages and target only): {why}"
                    self.warnings.append(self.degraded)
                    log.warning("%s", self.degraded)
                    self._embedder = KeywordOnlyEmbedder()
                    return self._embedder
            self._embedder = create_embedder(
                s.embedding_provider,
                ollama_base_url=s.ollama.base_url,
                ollama_model=s.ollama.embedding_model,
                openai_model=s.openai.embedding_model,
                openai_api_key=s.openai.api_key.get_secret_value() if s.openai.api_key else None,
                openai_base_url=s.openai.base_url,
                timeout=min(s.ollama.timeout, 60.0) if s.embedding_provider == "ollama" else s.openai.timeout,
                local_model_dir=s.local_model_dir,
                local_runtime=s.local_runtime,
                # The ONNX graph depends only on the weights: one per user, so every cache dir (and every
                # warm start of a new one) reuses it instead of building it again (~1 s).
                local_graph_dir=paths.user_cache_dir() / "models",
            )
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
                    self.cache_dir, warnings = usable_cache_dir(self.settings.cache_path)
                    self.warnings.extend(warnings)
                    for w in warnings:
                        log.warning(w)
                self._cache_resolved = True
            return self.cache_dir

    def _load(self, progress: ProgressFn | None) -> None:
        preload = None
        if hasattr(self.embedder, "load"):
            # Reading the model (numpy, I/O, hashing) overlaps with importing LanceDB, the other slow start step.
            preload = threading.Thread(target=self._preload_model, name="model-load", daemon=True)
            preload.start()
        try:
            cache_dir = self._resolve_cache_dir()
            from .library.index import TemplateIndex
            from .library.search import SearchEngine

            roots = list(self.settings.template_roots)
            if self.save_dir not in roots and not self.shared_index:
                # Saved templates are searchable at once. Not in a shared index: a replica's own directory is
                # not readable by the others (publish saved templates to the shared library instead).
                roots.append(self.save_dir)
            index = TemplateIndex(cache_dir, roots, self.embedder, **self._shared_index_options())
            index.follow_external_symlinks = self.settings.templates_follow_external_symlinks
            index.open()
            self.first_sync = index.sync(progress=progress)
            self.index = index
            if not index.catalog:  # the CLI and every tool call say so; the server's log says it once
                log.info("%s", self.library_empty_message())
            self.searcher = SearchEngine(index, self.embedder, self.settings)
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

    @property
    def shared_index(self) -> bool:
        """An index several replicas share (``ai.index_uri``): kept current by a background thread."""
        return self.settings.index_uri is not None

    def _shared_index_options(self) -> dict[str, Any]:
        """Where the index lives, which template sources are buckets, and who may write (team deployments)."""
        s = self.settings
        options: dict[str, Any] = {"uri": s.index_uri, "storage_options": s.storage.lance_options()}
        if s.template_object_roots:
            from .library.templates import TEMPLATE_SUFFIXES
            from .storage.object_store import ObjectRoot

            options["object_roots"] = [ObjectRoot(uri, s.storage, TEMPLATE_SUFFIXES)
                                       for uri in s.template_object_roots]
        if self.shared_index and s.conversations_url is not None:
            from .storage.pg_lease import PgLease

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
            self.embedder.load()
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
        if self.index is not None:
            self.index.close()
            if self.index.lease is not None:
                self.index.lease.release()
        if self._verifier is not None:
            self._verifier.close()
        if self._conversations is not None:
            self._conversations.close()

    def _validation_stats(self) -> dict[str, float | int | None]:
        total = self.validations["valid"] + self.validations["invalid"]
        return {
            "checks": total,
            "valid": self.validations["valid"],
            "success_rate": round(self.validations["valid"] / total, 4) if total else None,
        }

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

    def search(self, query: str, top_k: int | None = None, **filters: str | None) -> SearchOutcome:
        self.ready()
        assert self.searcher is not None
        self.refresh()
        self.require_templates()
        outcome = self.searcher.search(query, self.settings.search.default_top_k if top_k is None else top_k, **filters)
        self.search_latency.add(outcome.query_type, outcome.latency_ms)
        if self.degraded:
            outcome = dataclasses.replace(outcome, notices=(self.degraded,))
        return outcome

    def reindex(self, progress: ProgressFn | None = None, force: bool = False) -> SyncReport:
        self.ready()
        assert self.index is not None
        return self.index.sync(progress=progress, force=force)

    def find_template(self, name: str) -> Any:
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

    def validate(self, yaml: str | None = None, name: str | None = None) -> tuple[Any, str | None]:
        from .validation.rules import validate_text

        text, base_dir, resolved = self.template_text(yaml, name)
        report = validate_text(text, base_dir=base_dir)
        self.validations["valid" if report.valid else "invalid"] += 1
        log.info(
            "validation %s: %d error(s), %d warning(s)",
            resolved or "<inline>",
            len(report.errors),
            len(report.warnings),
        )
        return report, resolved

    @property
    def verifier(self) -> Any:
        with self._verifier_lock:
            if self._verifier is None:
                from .packages.verifier import PackageVerifier

                cache_dir = self._resolve_cache_dir()
                base = cache_dir if cache_dir is not None else Path(tempfile.mkdtemp(prefix="oic-pkg-"))
                p = self.settings.packages
                self._verifier = PackageVerifier(
                    base / "packages",
                    sources=p.sources or None,
                    ttl_seconds=p.ttl,
                    timeout=p.timeout,
                    offline=p.offline,
                    allow_template_repositories=p.allow_template_repositories,
                )
            return self._verifier

    def verify_packages(
        self,
        packages: list[str] | None = None,
        yaml: str | None = None,
        name: str | None = None,
        os: str | None = None,
        dist: str | None = None,
        arch: str | None = None,
    ) -> Any:
        from .core.yamlsafe import YamlError, load_mapping
        from .packages.verifier import packages_from_template, repositories_from_template

        names = [p for p in (packages or []) if isinstance(p, str) and p.strip()]
        repositories: list[dict[str, Any]] = []
        if yaml is not None or name is not None:
            text, _base, _resolved = self.template_text(yaml, name)
            try:
                data = load_mapping(text).data
            except YamlError as exc:
                raise ValueError(f"the template is not valid YAML: {exc}") from None
            target = data.get("target") if isinstance(data.get("target"), dict) else {}
            os = os or target.get("os")
            dist = dist or target.get("dist")
            arch = arch or target.get("arch")
            names += [p for p in packages_from_template(data) if p not in names]
            repositories = repositories_from_template(data)
        if not names:
            raise ValueError("no packages to verify: pass packages=[...] or a template (yaml or name)")
        if not dist and not os:
            raise ValueError(
                "say which distribution to check against: dist (e.g. ubuntu24, azl3, elxr12) or a "
                "template whose target names it"
            )
        return self.verifier.verify(names, os=os, dist=dist, arch=arch, repositories=repositories or None)

    def check_build(self, yaml: str | None = None, name: str | None = None) -> Any:
        """Will it build? Install closure, conflicts and disk fit from the real repository indexes
        (server/packages/build_check.py). Slow on first use (index download); opt-in for callers."""
        from .packages.build_check import check_build

        text, _base, _resolved = self.template_text(yaml, name)
        return check_build(self.verifier, text)

    def check_closure(self, packages: list[str], *, os: str | None = None, dist: str | None = None,
                      arch: str | None = None) -> Any:
        """The install closure of a bare package list (no template, so no disk fit)."""
        from .packages.closure import checker_for

        return checker_for(self.verifier).check(packages, os=os, dist=dist, arch=arch)

    # ---- generation support -----------------------------------------------------
    @property
    def agent(self) -> Any:
        """The agent loop, imported on first use (validation, the composer and the LLM clients are heavy)."""
        with self._start_lock:
            if self._agent is None:
                from .agent.loop import Agent

                self._agent = Agent(self)
            return self._agent

    def chat_providers(self) -> tuple[Any, Any]:
        """(ollama, openai) providers built from settings; None where not configured at all."""
        if self._chat is None:
            from .llm.chat import OllamaProvider, OpenAIProvider

            s = self.settings
            key = s.openai.api_key.get_secret_value() if s.openai.api_key else None
            ollama = OllamaProvider(s.ollama.base_url, s.ollama.model, timeout=s.ollama.timeout)
            openai = OpenAIProvider(key, s.openai.model, base_url=s.openai.base_url, timeout=s.openai.timeout)
            self._chat = (ollama, openai)
        return self._chat

    @property
    def conversations(self) -> Any:
        cache_dir = self._resolve_cache_dir()
        with self._start_lock:
            if self._conversations is None:
                from .agent.stores import open_conversation_store

                self._conversations = open_conversation_store(self.settings, cache_dir)
                preferred = self.settings.cache_path
                if (self.settings.cache.enabled and cache_dir != preferred
                        and hasattr(self._conversations, "unknown_note")):
                    # Conversations of earlier runs live in the configured directory: say so, not just "unknown".
                    why = next((w for w in self.warnings if str(preferred) in w and "unusable" in w),
                               f"cache directory {preferred} is not usable")
                    path = (cache_dir / "conversations.sqlite3") if cache_dir else ":memory:"
                    self._conversations.unknown_note = (
                        f"in this run's conversation store ({path}): it moved because {why}; conversations kept "
                        f"in {preferred} come back once that directory is writable again (or set OIC_AI_CACHE_DIR)")
            return self._conversations

    @property
    def save_dir(self) -> Path:
        return self.settings.save_path

    def check_save_name(self, save_as: str, overwrite: bool) -> Path:
        """The path ``save_as`` would write to; ValueError for names that escape the directory or clobber."""
        name = save_as.strip()
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", name) or ".." in name:
            raise ValueError(f"save_as '{save_as}' is not a plain file name; use letters, digits, '.', '_' and '-' "
                             "(no directories), e.g. my-edge-image.yml")
        if not name.endswith((".yml", ".yaml")):
            name += ".yml"
        directory = self.save_dir
        path = (directory / name).resolve()
        if path.parent != directory.resolve():
            raise ValueError(f"save_as '{save_as}' would leave the save directory {directory}")
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise ValueError(f"refusing to write {path}: it is a symlink or not a regular file")
        if path.exists() and not overwrite:
            raise ValueError(f"{path.name} already exists in {directory}; pass overwrite=true to replace it")
        return path

    def save_template(self, text: str, save_as: str, overwrite: bool) -> Path:
        path = self.check_save_name(save_as, overwrite)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A fresh, randomly named temp file created with O_EXCL (mkstemp): nothing planted in the directory
        # (a symlink at a predictable temp name) can redirect the write. os.replace then renames the file
        # itself, atomically: readers never see half a template, and a symlink at the final name is replaced,
        # not followed.
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp_name, 0o644)  # mkstemp makes it 0600; a template is meant to be shared like the others
            os.replace(tmp_name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        if self.index is not None and path.parent in {r.resolve() for r in self.index.roots}:
            self.index.sync()
        log.info("saved template to %s", path)
        return path

    def stats(self) -> dict[str, Any]:
        self.ready()
        assert self.index is not None
        index = self.index
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
            "last_sync": s.last_sync,
            "last_sync_seconds": s.last_sync_seconds,
            "syncs": s.syncs,
            "skipped_files": [{"path": p.path, "reason": p.message} for p in index.problems],
            "queries": self.search_latency.summary(),
            "tools": self.tool_latency.summary(),
            "warnings": list(self.warnings),
            "validation": self._validation_stats(),
            "conversations": self._conversations.stats() if self._conversations is not None else {},
            "uptime_seconds": round(time.time() - self.started_at, 1),
        }
