"""Where things live: the one module that knows the bundled data's location and the per-user directories.

Bundled data (the template library, the JSON Schema, the knowledge YAML files) is read through
``importlib.resources``, so it works the same from a checkout, an editable install and a wheel.
Per-user state (the index, conversations, saved templates) follows the platform's conventions through
``platformdirs``: ~/.cache and ~/.local/share on Linux (or $XDG_CACHE_HOME / $XDG_DATA_HOME), ~/Library on
macOS, %LOCALAPPDATA% on Windows. Nothing depends on the process's working directory.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import platformdirs

APP_NAME = "mcp-server-image-composer"

# The one import name: the checkout root is the package (pyproject's package-dir mapping), so image-templates/
# and resources/ sit inside it both in a checkout and in an installed wheel.
TOP_PACKAGE = __package__.split(".")[0]  # "image_composer_mcp"
RESOURCES_PACKAGE = f"{TOP_PACKAGE}.resources"
TEMPLATES_FOLDER = "image-templates"


def resource(name: str) -> Traversable:
    """A file shipped in resources/ (template-schema.json, capabilities.yaml, ...)."""
    return resources.files(RESOURCES_PACKAGE).joinpath(name)


def resource_text(name: str) -> str:
    return resource(name).read_text(encoding="utf-8")


def resource_path(name: str) -> Path:
    """resource() as a filesystem path: installs are unpacked (pip never runs from a zip), so it is one."""
    return Path(str(resource(name)))


def bundled_templates_dir() -> Path:
    """The template library shipped with the server (may be missing in a broken install; callers report it)."""
    return Path(str(resources.files(TOP_PACKAGE).joinpath(TEMPLATES_FOLDER)))


def user_cache_dir() -> Path:
    """Default cache: the template index, package-index downloads (recreated when deleted)."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def user_data_dir() -> Path:
    """Default home of what the user made: conversations and saved templates."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def user_templates_dir() -> Path:
    """Where save_as writes by default; indexed beside the bundled library."""
    return user_data_dir() / "templates"


def package_version() -> str:
    """The installed distribution's version; from pyproject.toml when running from a bare checkout."""
    from importlib import metadata

    try:
        return metadata.version(APP_NAME)
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text("utf-8"))["project"]["version"]) + "+checkout"
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
