"""Settings: defaults < config.yaml < environment < CLI flags.

Every ADR key keeps its name and default under ``ai:``. Environment variables
are derived from the key path (``ai.cache.dir`` -> ``OIC_AI_CACHE_DIR``), plus
the ADR's well-known names (``OLLAMA_HOST``, ``OPENAI_API_KEY``,
``OIC_AI_PROVIDER``). A bad value fails at start with the key, the value, where
it came from and what is allowed.
"""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from . import paths
from .yamlsafe import YamlError, load_mapping

BUNDLED_TEMPLATES = paths.bundled_templates_dir()
CONFIG_FILE_NAME = "config.yaml"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


class ConfigError(ValueError):
    """Configuration that cannot be used; the message names key, value and the fix."""


def parse_duration(value: Any) -> float:
    """'30m' -> 1800.0; plain numbers are seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"'{value}' is not a duration; use e.g. 90, 45s, 30m, 24h, 7d")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class OllamaSettings(_Section):
    base_url: str = "http://localhost:11434"
    model: str = "llama3.1:8b"
    embedding_model: str = "nomic-embed-text"
    timeout: float = Field(120.0, gt=0)


class OpenAISettings(_Section):
    model: str = "gpt-4o-mini"
    embedding_model: str = "text-embedding-3-small"
    timeout: float = Field(60.0, gt=0)
    base_url: str | None = None
    api_key: SecretStr | None = None


class CacheSettings(_Section):
    enabled: bool = True
    # The platform's user cache dir (~/.cache/mcp-server-image-composer on Linux), never the working
    # directory: clients launch servers from / or from $HOME.
    dir: str = Field(default_factory=lambda: str(paths.user_cache_dir()))


class ConversationSettings(_Section):
    max_history: int = Field(20, ge=1, le=1000)
    session_timeout: float = 1800.0
    max_age: float = 86400.0
    max_conversations: int = Field(1000, ge=1)

    @field_validator("session_timeout", "max_age", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


class ScoringSettings(_Section):
    semantic: float = Field(0.70, ge=0, le=1)
    keyword: float = Field(0.20, ge=0, le=1)
    package: float = Field(0.10, ge=0, le=1)
    # The ADR's 0.40 was tuned for another model; see server/library/search.py for how 0.30 was calibrated.
    min_score_threshold: float = Field(0.30, ge=0, le=1)


class ClassificationSettings(_Section):
    package_threshold: int = Field(2, ge=1)
    keyword_density: float = Field(0.5, ge=0, le=1)
    negation_penalty: float = Field(0.5, ge=0, le=1)


class AgentSettings(_Section):
    auto_validate: bool = True
    auto_fix: bool = True
    max_fix_attempts: int = Field(2, ge=0, le=10)
    verify_packages: bool = True
    # "Will it build?" (server/packages/build_check.py): closure, conflicts, disk fit. Off by default: it reads
    # full repository indexes, which is slow the first time and impossible offline.
    check_build: bool = False
    # How an LLM takes part: "plan" (it answers a RequestSpec / edit plan as schema-constrained JSON, the rules'
    # facts win and the composer writes the YAML) or "yaml" (it writes the template itself, then validate -> fix
    # -> repair). "plan" is the default: a small model's YAML is rarely valid, its plan is merged safely.
    llm_mode: Literal["plan", "yaml"] = "plan"
    require_valid_output: bool = True
    # "full": every grounding template in full; "compact": the best one in full, the others summarised
    # (for small local models with short context windows).
    prompt_style: Literal["full", "compact"] = "full"
    max_tokens: int = Field(2048, ge=256, le=32768)


class PackageSettings(_Section):
    sources: dict[str, list[str]] = Field(default_factory=dict)
    ttl: float = 86400.0
    timeout: float = Field(20.0, gt=0)
    offline: bool = False
    allow_template_repositories: bool = True

    @field_validator("ttl", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


def _split_list(value: Any) -> Any:
    # Environment variables carry lists as "a,b c".
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    return value


class ServerSettings(_Section):
    transport: Literal["stdio", "sse", "streamable-http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    # HTTP transports only (see server/transport/http.py).
    auth_token: SecretStr | None = None
    auth_token_file: str | None = None
    allow_remote: bool = False  # binding to a non-loopback address must be asked for
    require_auth: bool = False  # refuse to serve HTTP without a token (the container image turns it on)
    allowed_hosts: list[str] = Field(default_factory=list)  # extra Host header values, e.g. mcp.example.com:*
    allowed_origins: list[str] = Field(default_factory=list)
    stateless: bool = False  # streamable HTTP without server-side sessions
    json_response: bool = False  # streamable HTTP answers with JSON instead of an SSE stream
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    shutdown_timeout: float = 10.0  # how long in-flight requests may finish after SIGTERM/SIGINT
    # Connection and session limits (server/transport/http.py; README "Deploy remotely" and SECURITY).
    request_read_timeout: float = Field(15.0, gt=0)  # a whole request (headers + body) must arrive within this
    keep_alive_timeout: float = Field(5.0, gt=0)  # idle time between requests on a kept-alive connection
    max_connections: int = Field(256, ge=1)  # open connections; more are closed at once, requests beyond get 503
    max_header_bytes: int = Field(16 * 1024, ge=1024)  # request line + headers
    max_sessions: int = Field(256, ge=1)  # stateful streamable HTTP sessions; a new one beyond gets 503
    session_idle_timeout: float = Field(1800.0, gt=0)  # a session with no request in flight this long is closed

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _split_list(v)

    @field_validator("auth_token", mode="before")
    @classmethod
    def _token(cls, v: Any) -> Any:
        # A YAML number must not fail validation (the error would echo the token); blank means unset.
        if v is None or isinstance(v, SecretStr):
            return v
        text = str(v).strip()
        return text or None

    @field_validator("shutdown_timeout", "request_read_timeout", "keep_alive_timeout", "session_idle_timeout",
                     mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _one_token_source(self) -> ServerSettings:
        if self.auth_token is not None and self.auth_token_file:
            raise ValueError("set only one of auth_token (OIC_AI_AUTH_TOKEN) and auth_token_file "
                             "(OIC_AI_AUTH_TOKEN_FILE)")
        return self


class SearchSettings(_Section):
    default_top_k: int = Field(5, ge=1, le=50)
    max_top_k: int = Field(50, ge=1, le=500)
    max_query_chars: int = Field(2000, ge=10)
    fingerprint_interval: float = Field(2.0, ge=0)


class StorageSettings(_Section):
    """Object storage (S3 and compatibles: MinIO, Ceph, cloud buckets) for ``ai.index_uri`` and ``s3://`` template
    directories. Unset fields fall back to the usual AWS_* environment variables and instance credentials."""

    endpoint: str | None = None  # e.g. http://minio:9000; unset = AWS
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    allow_http: bool = False  # plain-HTTP endpoints (MinIO in a private network, tests)
    virtual_hosted_style: bool = False  # bucket.endpoint/key instead of endpoint/bucket/key
    options: dict[str, str] = Field(default_factory=dict)  # any other object_store option, passed through

    @field_validator("options", mode="before")
    @classmethod
    def _pairs(cls, v: Any) -> Any:
        # The environment carries them as "key=value,key=value".
        if isinstance(v, str):
            pairs = [p.partition("=") for p in re.split(r"[,\s]+", v) if p]
            bad = [k for k, eq, _ in pairs if not eq or not k]
            if bad:
                raise ValueError(f"expected key=value pairs separated by commas, got {bad[0]!r}")
            return {k: val for k, _, val in pairs}
        return v

    def lance_options(self) -> dict[str, str]:
        """LanceDB / object_store storage options (see server/storage/object_store.py for the file-system side)."""
        opts: dict[str, str] = {}
        if self.endpoint:
            opts["aws_endpoint"] = self.endpoint
        if self.region:
            opts["aws_region"] = self.region
        if self.access_key_id:
            opts["aws_access_key_id"] = self.access_key_id
        if self.secret_access_key is not None:
            opts["aws_secret_access_key"] = self.secret_access_key.get_secret_value()
        if self.session_token is not None:
            opts["aws_session_token"] = self.session_token.get_secret_value()
        if self.allow_http:
            opts["allow_http"] = "true"
        opts["aws_virtual_hosted_style_request"] = "true" if self.virtual_hosted_style else "false"
        opts.update(self.options)
        return opts


def is_object_uri(value: str) -> bool:
    return value.startswith(("s3://", "s3a://"))


def split_dirs(value: str) -> list[str]:
    """Template directories joined by os.pathsep; the ':' of 's3://' is not a separator."""
    parts = re.split(r":(?!//)", value) if os.pathsep == ":" else value.split(os.pathsep)
    return [p for p in parts if p.strip()]


class AISettings(_Section):
    provider: Literal["auto", "ollama", "openai", "sampling", "offline"] = "auto"
    embedding_provider: Literal["local", "ollama", "openai"] = "local"
    templates_dir: list[str] = Field(default_factory=lambda: [str(BUNDLED_TEMPLATES)])
    # Symlinks in a templates directory are followed only to regular files inside that directory (server/library/templates.py).
    templates_follow_external_symlinks: bool = False
    local_model_dir: str | None = None
    local_runtime: Literal["auto", "onnx", "numpy"] = "auto"  # auto: onnxruntime when installed
    # onnxruntime threads per embedding call; 0: two, or one on a one-core machine (embed_onnx.THREADS).
    local_threads: int = Field(default=0, ge=0, le=64)
    # Where save_as writes, indexed beside templates_dir. Never the bundled library unless set to it.
    save_dir: str = Field(default_factory=lambda: str(paths.user_templates_dir()))
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    classification: ClassificationSettings = Field(default_factory=ClassificationSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    packages: PackageSettings = Field(default_factory=PackageSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    # Team deployments (README, Deployment for teams): a shared index, shared conversations.
    index_uri: str | None = None  # default: <cache dir>/index.lance; or s3://bucket/prefix, or a local path
    index_refresh: float = Field(5.0, gt=0)  # how often a replica of a shared index syncs or follows it
    conversations_url: SecretStr | None = None  # postgresql://user:pass@host/db; default: SQLite in the cache dir
    storage: StorageSettings = Field(default_factory=StorageSettings)

    @field_validator("templates_dir", mode="before")
    @classmethod
    def _dirs(cls, v: Any) -> list[str]:
        if isinstance(v, str):
            return split_dirs(v)
        return v

    @field_validator("index_refresh", mode="before")
    @classmethod
    def _refresh(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("index_uri")
    @classmethod
    def _index_uri(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip()
        if "://" in v and not is_object_uri(v):
            raise ValueError("use s3://bucket/prefix (S3, MinIO, Ceph) or a local directory")
        if is_object_uri(v) and not v.split("://", 1)[1].split("/", 1)[0]:
            raise ValueError("the URI names no bucket; use s3://bucket/prefix")
        return v

    @field_validator("conversations_url", mode="before")
    @classmethod
    def _conversations_url(cls, v: Any) -> Any:
        if v is None or isinstance(v, SecretStr):
            return v
        text = str(v).strip()
        if not text:
            return None
        if not text.startswith(("postgresql://", "postgres://")):
            raise ValueError("use a postgresql://user:password@host:5432/database URL (unset = SQLite in the "
                             "cache dir)")
        return text

    @property
    def template_roots(self) -> list[Path]:
        """Local template directories (object-storage ones are in ``template_object_roots``)."""
        return [Path(p).expanduser().resolve() for p in self.templates_dir if not is_object_uri(p)]

    @property
    def template_object_roots(self) -> list[str]:
        return [p.rstrip("/") for p in self.templates_dir if is_object_uri(p)]

    @property
    def save_path(self) -> Path:
        return Path(self.save_dir).expanduser().resolve()

    @property
    def cache_path(self) -> Path:
        return Path(self.cache.dir).expanduser().resolve()


# Well-known names from the ADR, on top of the derived OIC_AI_* names.
ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "OLLAMA_HOST": ("ollama", "base_url"),
    "OPENAI_API_KEY": ("openai", "api_key"),
    "OPENAI_BASE_URL": ("openai", "base_url"),
    "OIC_AI_LOG_LEVEL": ("server", "log_level"),
    "OIC_AI_TRANSPORT": ("server", "transport"),
    "OIC_AI_HOST": ("server", "host"),
    "OIC_AI_PORT": ("server", "port"),
    "OIC_AI_AUTH_TOKEN": ("server", "auth_token"),
    "OIC_AI_AUTH_TOKEN_FILE": ("server", "auth_token_file"),
    "OIC_AI_ALLOW_REMOTE": ("server", "allow_remote"),
    "OIC_AI_REQUIRE_AUTH": ("server", "require_auth"),
    "OIC_AI_ALLOWED_HOSTS": ("server", "allowed_hosts"),
    "OIC_AI_ALLOWED_ORIGINS": ("server", "allowed_origins"),
    "OIC_AI_STATELESS": ("server", "stateless"),
    "OIC_AI_MAX_BODY_BYTES": ("server", "max_body_bytes"),
}

# Values of these keys never appear in error messages.
_SECRET_KEYS = re.compile(r"(?i)(token|api_key|password|secret|conversations_url)")


def _leaf_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    hints = typing.get_type_hints(model)
    for name in model.model_fields:
        hint = hints[name]
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            paths.extend(_leaf_paths(hint, (*prefix, name)))
        else:
            paths.append((*prefix, name))
    return paths


def env_names() -> dict[str, tuple[str, ...]]:
    """Every environment variable we read, mapped to its key path under ``ai``."""
    names = {"OIC_AI_" + "_".join(p).upper(): p for p in _leaf_paths(AISettings)}
    names.update(ENV_ALIASES)
    return names


def _set(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        node = tree.get(part)
        if not isinstance(node, dict):
            node = {}
            tree[part] = node
        tree = node
    tree[path[-1]] = value


def _describe_error(err: ErrorDetails, sources: dict[tuple[str, ...], str]) -> str:
    loc = tuple(str(p) for p in err["loc"])
    key = "ai." + ".".join(loc)
    source = (sources.get(loc) or next((s for p, s in sources.items() if loc[: len(p)] == p), None)
              or next((s for p, s in sources.items() if p[: len(loc)] == loc), "defaults"))
    value = err.get("input")
    if err["type"] == "extra_forbidden":
        return f"unknown key {key} (from {source}); check the spelling against the configuration reference in README.md"
    if isinstance(value, dict):  # a check across several keys: the message names them
        return f"{key} (from {source}): {err['msg']}"
    if _SECRET_KEYS.search(key):
        value = "[REDACTED]"
    msg = f"{key} = {value!r} (from {source}): {err['msg']}"
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        msg += f"; allowed values: {ctx['expected']}"
    return msg


def user_config_file() -> Path:
    """~/.config/mcp-server-image-composer/config.yaml on Linux (platform conventions elsewhere)."""
    return paths.user_config_dir() / CONFIG_FILE_NAME


def find_config_file(explicit: str | None, env: dict[str, str]) -> Path | None:
    """--config, then $OIC_AI_CONFIG, then ./config.yaml, then the user's config file."""
    if explicit:
        return Path(explicit)
    if env.get("OIC_AI_CONFIG"):
        return Path(env["OIC_AI_CONFIG"])
    for candidate in (Path(CONFIG_FILE_NAME), user_config_file()):
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    config_file: str | None = None,
    env: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> AISettings:
    """Build settings from every layer or raise :class:`ConfigError`."""
    env = dict(os.environ if env is None else env)
    tree: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}

    path = find_config_file(config_file, env)
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"configuration file {path} does not exist (from --config or OIC_AI_CONFIG)")
        try:
            parsed = load_mapping(path.read_bytes())
        except YamlError as exc:
            raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from None
        section = parsed.data.get("ai", {})
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: the 'ai' key must be a mapping of settings")
        tree = section
        for leaf in _leaf_paths(AISettings):
            sources[leaf] = str(path)
        base_dir = path.resolve().parent
        # Relative paths in a config file are relative to that file, not to the process's cwd.
        if "templates_dir" in tree:
            dirs = tree["templates_dir"]
            dirs = split_dirs(dirs) if isinstance(dirs, str) else dirs
            if isinstance(dirs, list):
                tree["templates_dir"] = [str(d) if is_object_uri(str(d))
                                         else str((base_dir / Path(str(d)).expanduser()).resolve()) for d in dirs]
        cache = tree.get("cache")
        if isinstance(cache, dict) and isinstance(cache.get("dir"), str):
            cache["dir"] = str((base_dir / Path(cache["dir"]).expanduser()).resolve())
        if isinstance(tree.get("save_dir"), str):
            tree["save_dir"] = str((base_dir / Path(tree["save_dir"]).expanduser()).resolve())

    for name, key_path in env_names().items():
        if name in env and env[name] != "":
            _set(tree, key_path, env[name])
            sources[key_path] = f"environment variable {name}"
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        key_path = tuple(dotted.split("."))
        _set(tree, key_path, value)
        sources[key_path] = "command line"
    try:
        return AISettings.model_validate(tree)
    except ValidationError as exc:
        problems = [_describe_error(e, sources) for e in exc.errors(include_url=False)]
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems)) from None
