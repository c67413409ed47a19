"""What the serving path imports before the first search: the handshake and the first result wait for it."""

import os
import subprocess
import sys

# Heavy modules only generation, validation, the LLM clients or a remote embedder use (jsonschema alone is ~35 ms).
NOT_AT_START = ("jsonschema", "image_composer_mcp.server.agent.spec_plan", "image_composer_mcp.server.composer",
                "image_composer_mcp.server.validation.upstream", "image_composer_mcp.server.library.embed_remote",
                "openai", "ollama")


def test_creating_the_app_leaves_generation_and_validation_unloaded(tmp_path):
    code = ("import sys; from image_composer_mcp.server.core.config import load_settings; "
            "from image_composer_mcp.server.transport.app import create_app; settings = load_settings(None); "
            "create_app(settings).engine.embedder; "
            f"print(sorted(m for m in sys.modules if m.startswith({NOT_AT_START!r})))")
    env = {**os.environ, "OIC_AI_PROVIDER": "offline", "OIC_AI_TEMPLATES_DIR": str(tmp_path),
           "OIC_AI_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
