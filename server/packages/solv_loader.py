"""Find libsolv's Python bindings (the solver behind dnf and zypper) for the closure check.

Two builds exist and only one serves both package families:

* PyPI ``solv`` wheels are built without Debian support (no ``Repo.add_debpackages``), so they read
  rpm-md repositories but not Debian ``Packages`` indexes.
* Debian's ``python3-solv`` has both. It is built for Debian's ``python3.11``; CPython keeps the
  extension ABI stable within a minor version, so the same ``_solv.cpython-311-*.so`` loads in any
  3.11.x interpreter (our venv runs pyenv's 3.11.7). We load exactly ``solv.py`` and ``_solv*.so``
  from the system directory, never the whole ``dist-packages`` (which would shadow venv packages),
  and only when the interpreter's ABI tag matches the file's.

``load_solv()`` returns the module or None with the reason in ``solv_unavailable_reason()``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
import sysconfig
import threading
from pathlib import Path
from types import ModuleType

logger = logging.getLogger(__name__)

# Where Debian and Ubuntu put python3-solv; extra entries only widen the search, never the import path.
SYSTEM_DIRS = (Path("/usr/lib/python3/dist-packages"), Path("/usr/lib/python3.11/site-packages"))

_lock = threading.Lock()
_state: dict[str, object] = {}


def _usable(mod: ModuleType) -> str | None:
    """None when ``mod`` can read the repositories we need, else why not."""
    if not hasattr(mod, "Pool"):
        return "not libsolv's bindings"
    if not hasattr(mod.Repo, "add_debpackages"):
        return "this libsolv build has no Debian support (PyPI wheels lack it); install Debian's python3-solv"
    if not hasattr(mod.Repo, "add_rpmmd"):
        return "this libsolv build cannot read rpm-md repositories"
    return None


def _load_from(directory: Path) -> ModuleType | None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ""
    ext = directory / f"_solv{suffix}"
    py = directory / "solv.py"
    if not ext.is_file() or not py.is_file():
        return None
    # solv.py does "from . import _solv" or "import _solv" depending on the SWIG version; register
    # the extension under both names before running it.
    loader = importlib.machinery.ExtensionFileLoader("_solv", str(ext))
    spec = importlib.util.spec_from_file_location("_solv", ext, loader=loader)
    if spec is None:
        return None
    ext_mod = importlib.util.module_from_spec(spec)
    loader.exec_module(ext_mod)
    sys.modules["_solv"] = ext_mod
    pspec = importlib.util.spec_from_file_location("solv", py)
    if pspec is None or pspec.loader is None:
        return None
    mod = importlib.util.module_from_spec(pspec)
    sys.modules["solv"] = mod
    try:
        pspec.loader.exec_module(mod)
    except Exception:
        sys.modules.pop("solv", None)
        raise
    return mod


def load_solv() -> ModuleType | None:
    """libsolv's bindings with Debian and rpm-md support, or None (reason: ``solv_unavailable_reason``)."""
    with _lock:
        if "module" in _state:
            return _state["module"]  # type: ignore[return-value]
        mod: ModuleType | None = None
        reasons: list[str] = []
        try:
            import solv as mod  # type: ignore[import-not-found,no-redef]
        except ImportError:
            mod = None
        if mod is not None and (why := _usable(mod)):
            reasons.append(f"importable solv module: {why}")
            mod = None
        if mod is None:
            for d in SYSTEM_DIRS:
                try:
                    cand = _load_from(d)
                except (ImportError, OSError) as e:
                    reasons.append(f"{d}: {e}")
                    continue
                if cand is None:
                    continue
                why = _usable(cand)
                if why is None:
                    mod = cand
                    break
                reasons.append(f"{d}: {why}")
        if mod is None and not reasons:
            reasons.append(
                "libsolv's Python bindings are not installed (Debian/Ubuntu: apt-get install python3-solv)"
            )
        _state["module"] = mod
        _state["reason"] = "; ".join(reasons) if mod is None else None
        if mod is None:
            logger.info("closure check unavailable: %s", _state["reason"])
        return mod


def solv_unavailable_reason() -> str | None:
    load_solv()
    return _state.get("reason")  # type: ignore[return-value]


def solv_version(mod: ModuleType) -> str:
    return str(getattr(mod, "__version__", None) or getattr(mod, "VERSION", None) or "unknown")
