from __future__ import annotations

import os
from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import (
    BUNDLED_TEMPLATES,
    ConfigError,
    env_names,
    load_settings,
    parse_duration,
)
from image_composer_mcp.server.core.paths import APP_NAME as APP


def test_defaults_match_the_adr():
    s = load_settings(env={})
    assert s.provider == "auto"
    assert s.embedding_provider == "local"
    assert s.template_roots == [BUNDLED_TEMPLATES.resolve()]
    assert s.ollama.base_url == "http://localhost:11434"
    assert s.ollama.model == "llama3.1:8b" and s.ollama.embedding_model == "nomic-embed-text"
    assert s.ollama.timeout == 120 and s.openai.timeout == 60
    assert s.openai.model == "gpt-4o-mini" and s.openai.embedding_model == "text-embedding-3-small"
    # Platform dirs, never the working directory (conftest points XDG_* at a temporary home).
    assert s.cache.enabled is True and s.cache_path == (Path(os.environ["XDG_CACHE_HOME"]) / APP).resolve()
    assert s.save_path == (Path(os.environ["XDG_DATA_HOME"]) / APP / "templates").resolve()
    assert s.conversation.max_history == 20 and s.conversation.session_timeout == 1800
    assert (s.scoring.semantic, s.scoring.keyword, s.scoring.package) == (0.70, 0.20, 0.10)
    assert s.classification.package_threshold == 2
    assert s.classification.keyword_density == 0.5 and s.classification.negation_penalty == 0.5
    assert s.agent.max_fix_attempts == 2 and s.agent.auto_validate and s.agent.require_valid_output


def test_file_then_environment_precedence(tmp_path: Path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("ai:\n  provider: openai\n  cache:\n    dir: cache-here\n  conversation:\n    session_timeout: 10m\n"
                   "  scoring:\n    semantic: 0.6\n")
    s = load_settings(str(cfg), env={})
    assert s.provider == "openai"
    assert s.conversation.session_timeout == 600
    assert s.scoring.semantic == 0.6
    # relative paths in a config file are relative to the file
    assert s.cache_path == (tmp_path / "cache-here").resolve()
    s = load_settings(str(cfg), env={"OIC_AI_PROVIDER": "ollama", "OIC_AI_SCORING_SEMANTIC": "0.5"})
    assert s.provider == "ollama" and s.scoring.semantic == 0.5


def test_config_path_from_environment(tmp_path: Path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("ai:\n  embedding_provider: ollama\n")
    assert load_settings(env={"OIC_AI_CONFIG": str(cfg)}).embedding_provider == "ollama"


def test_well_known_environment_names(tmp_path: Path):
    env = {
        "OIC_AI_TEMPLATES_DIR": os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]),
        "OIC_AI_CACHE_DIR": str(tmp_path / "cache"),
        "OIC_AI_EMBEDDING_PROVIDER": "openai",
        "OLLAMA_HOST": "http://gpu-box:11434",
        "OPENAI_API_KEY": "sk-test-123456789",
    }
    s = load_settings(env=env)
    assert s.template_roots == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    assert s.cache_path == (tmp_path / "cache").resolve()
    assert s.embedding_provider == "openai"
    assert s.ollama.base_url == "http://gpu-box:11434"
    assert s.openai.api_key.get_secret_value() == "sk-test-123456789"
    assert "sk-test" not in repr(s)


def test_every_adr_key_has_an_environment_variable():
    names = env_names()
    for expected in ("OIC_AI_PROVIDER", "OIC_AI_TEMPLATES_DIR", "OIC_AI_CACHE_DIR", "OIC_AI_CACHE_ENABLED",
                     "OIC_AI_OLLAMA_MODEL", "OIC_AI_OPENAI_TIMEOUT", "OIC_AI_CONVERSATION_MAX_HISTORY",
                     "OIC_AI_SCORING_MIN_SCORE_THRESHOLD", "OIC_AI_CLASSIFICATION_NEGATION_PENALTY",
                     "OIC_AI_AGENT_MAX_FIX_ATTEMPTS", "OIC_AI_EMBEDDING_PROVIDER"):
        assert expected in names


def test_invalid_value_names_key_value_source_and_allowed_values():
    with pytest.raises(ConfigError) as err:
        load_settings(env={"OIC_AI_PROVIDER": "gpt5"})
    text = str(err.value)
    assert "ai.provider" in text and "'gpt5'" in text and "OIC_AI_PROVIDER" in text
    assert "ollama" in text and "offline" in text


def test_invalid_file_values_and_unknown_keys(tmp_path: Path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("ai:\n  scoring:\n    semantic: 3\n  cache:\n    dri: x\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(cfg), env={})
    text = str(err.value)
    assert "ai.scoring.semantic" in text and str(cfg) in text
    assert "unknown key ai.cache.dri" in text


def test_missing_or_broken_config_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(str(tmp_path / "nope.yaml"), env={})
    bad = tmp_path / "bad.yaml"
    bad.write_text("ai: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(str(bad), env={})


def test_durations():
    assert parse_duration("30m") == 1800
    assert parse_duration("24h") == 86400
    assert parse_duration(45) == 45
    with pytest.raises(ValueError):
        parse_duration("soon")
