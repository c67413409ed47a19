"""The bundled template library (image-templates/): validity, coverage and search-friendliness.

These templates are the server's default corpus and the grounding for generation, so every
one must validate cleanly, and together they must span every OS family, architecture,
image type and use case a user is likely to ask for.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.validation import validator as validation

from bench import reference_checkout
from tests.upstream_schema import refusals

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "image-templates"
REFERENCE = reference_checkout()

TEMPLATE_PATHS = sorted(LIBRARY.glob("*.yml"))

OS_FAMILIES = {
    "azure-linux": {"azl3"},
    "edge-microvisor-toolkit": {"emt3"},
    "wind-river-elxr": {"elxr12"},
    "ubuntu": {"ubuntu24", "ubuntu26"},
    "debian": {"debian13"},
    "redhat-compatible-distro": {"el10"},
}
# Distributions whose upstream repositories serve aarch64 packages and have aarch64 examples.
AARCH64_DISTS = {"azl3", "elxr12", "ubuntu24", "debian13"}
USE_CASES = {
    "minimal-base", "cloud-vm", "edge-gateway", "immutable-edge", "real-time", "ai-vision",
    "robotics", "desktop", "kiosk", "virtualization", "network-boot", "installer", "web-server",
    "monitoring", "security-hardened", "developer",
}
ROOT_TYPE = {
    "x86_64": ("linux-root-amd64", "4f68bce3-e8cd-4db1-96e7-fbcaf984b709"),
    "aarch64": ("linux-root-arm64", "b921b045-1df0-41c3-af44-4c6f280d3fae"),
}
UPSTREAM_METADATA_KEYS = {"description", "use_cases", "keywords"}
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>")


def _load(path: Path) -> dict[str, Any]:
    return load_mapping(path.read_bytes()).data


@pytest.fixture(scope="module")
def library() -> dict[str, dict[str, Any]]:
    return {path.name: _load(path) for path in TEMPLATE_PATHS}


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


# ----------------------------------------------------------------------------- validity


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_template_validates_without_errors_or_warnings(path: Path) -> None:
    report = validation.validate_text(path.read_text(encoding="utf-8"), base_dir=path.parent)
    assert report.valid, report.summary()
    assert report.errors == [] and report.warnings == [], report.summary()


def test_every_template_loads_in_os_image_composer_unchanged(library: dict[str, dict[str, Any]]) -> None:
    """os-image-composer's own schema file, with plain jsonschema and nothing removed first: 40 of 40."""
    problems = {name: refusals(data) for name, data in library.items() if refusals(data)}
    assert problems == {}
    assert all(set(d["metadata"]) <= UPSTREAM_METADATA_KEYS for d in library.values())


# ----------------------------------------------------------------------------- coverage


def test_library_has_at_least_thirty_templates() -> None:
    assert len(TEMPLATE_PATHS) >= 30


def test_every_os_family_and_distribution_is_covered(library: dict[str, dict[str, Any]]) -> None:
    seen: dict[str, set[str]] = {}
    for data in library.values():
        seen.setdefault(data["target"]["os"], set()).add(data["target"]["dist"])
    assert seen == OS_FAMILIES


def test_both_architectures_and_aarch64_where_supported(library: dict[str, dict[str, Any]]) -> None:
    arches = {(d["target"]["dist"], d["target"]["arch"]) for d in library.values()}
    assert {a for _, a in arches} == {"x86_64", "aarch64"}
    missing = {dist for dist in AARCH64_DISTS if (dist, "aarch64") not in arches}
    assert missing == set(), f"no aarch64 template for {sorted(missing)}"


def test_every_image_type_is_used(library: dict[str, dict[str, Any]]) -> None:
    types = Counter(d["target"]["imageType"] for d in library.values())
    assert set(types) == {"raw", "iso", "img"}
    assert types["iso"] >= 2 and types["img"] >= 2


def test_every_use_case_category_is_covered(library: dict[str, dict[str, Any]]) -> None:
    categories = {d["metadata"]["use_cases"][0] for d in library.values()}
    assert categories == USE_CASES


# ----------------------------------------------------------------------------- metadata


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_metadata_is_complete(path: Path) -> None:
    meta = _load(path).get("metadata")
    assert isinstance(meta, dict), "metadata block missing"
    assert set(meta) == UPSTREAM_METADATA_KEYS, "only os-image-composer's own metadata fields"
    assert isinstance(meta.get("description"), str) and len(meta["description"]) >= 80
    # The library's category (the ADR's useCase) leads use_cases; the ADR's recommendedFor phrases follow
    # the use cases and its capabilities are among the keywords, so each list is richer than the minimum.
    assert meta["use_cases"][0] in USE_CASES
    for key, least in (("use_cases", 6), ("keywords", 10)):
        values = meta.get(key)
        assert isinstance(values, list) and len(values) >= least, f"metadata.{key} needs at least {least} entries"
        assert all(isinstance(v, str) and v.strip() for v in values), f"metadata.{key} has empty entries"
        assert len({v.lower() for v in values}) == len(values), f"metadata.{key} repeats an entry"


def test_descriptions_and_keyword_sets_are_distinct(library: dict[str, dict[str, Any]]) -> None:
    """Search can only tell templates apart if their texts differ."""
    descriptions = Counter(d["metadata"]["description"] for d in library.values())
    assert [text for text, n in descriptions.items() if n > 1] == []
    keyword_sets = Counter(frozenset(k.lower() for k in d["metadata"]["keywords"]) for d in library.values())
    assert [sorted(ks) for ks, n in keyword_sets.items() if n > 1] == []


def test_description_names_the_distribution(library: dict[str, dict[str, Any]]) -> None:
    words = {"azl3": "azure linux", "emt3": "edge microvisor toolkit", "elxr12": "elxr",
             "ubuntu24": "ubuntu 24.04", "ubuntu26": "ubuntu 26.04", "debian13": "debian 13",
             "el10": "enterprise linux 10"}
    wrong = [name for name, d in library.items()
             if words[d["target"]["dist"]] not in d["metadata"]["description"].lower()]
    assert wrong == []


# ----------------------------------------------------------------------------- naming


def test_image_names_are_unique(library: dict[str, dict[str, Any]]) -> None:
    names = Counter(d["image"]["name"] for d in library.values())
    assert [n for n, c in names.items() if c > 1] == []


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_file_name_follows_dist_arch_usecase_type(path: Path) -> None:
    data = _load(path)
    target = data["target"]
    stem = path.stem
    assert stem.startswith(f"{target['dist']}-{target['arch']}-"), "file name must start with <dist>-<arch>-"
    assert stem.endswith(f"-{target['imageType']}"), "file name must end with -<imageType>"
    assert data["image"]["name"] == stem.removesuffix(f"-{target['imageType']}")


def test_no_file_or_image_name_clashes_with_upstream(library: dict[str, dict[str, Any]]) -> None:
    """Users index an os-image-composer checkout next to this library; ids must not collide."""
    ref_dir = REFERENCE / "image-templates"
    if not ref_dir.is_dir():
        pytest.skip(f"upstream templates not available at {ref_dir}")
    ref_files = {p.name for p in ref_dir.glob("*.yml")}
    assert sorted(set(library) & ref_files) == []
    ref_names = set()
    for p in ref_dir.glob("*.yml"):
        image = _load(p).get("image")
        if isinstance(image, dict):
            ref_names.add(image.get("name"))
    assert sorted({d["image"]["name"] for d in library.values()} & ref_names) == []


def test_templates_are_not_copies_of_upstream_files() -> None:
    ref_dir = REFERENCE / "image-templates"
    if not ref_dir.is_dir():
        pytest.skip(f"upstream templates not available at {ref_dir}")

    def norm(path: Path) -> str:
        return re.sub(r"\s+", " ", path.read_text(encoding="utf-8")).strip()

    upstream = {norm(p) for p in ref_dir.rglob("*.yml")}
    assert [p.name for p in TEMPLATE_PATHS if norm(p) in upstream] == []


# ----------------------------------------------------------------------------- realism


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_root_partition_type_matches_architecture(path: Path) -> None:
    data = _load(path)
    partitions = (data.get("disk") or {}).get("partitions") or []
    if not partitions:
        assert data["target"]["imageType"] == "img", "raw and iso templates describe their disk layout"
        return
    roots = [p for p in partitions if p.get("mountPoint") == "/"]
    assert len(roots) == 1
    want_type, want_guid = ROOT_TYPE[data["target"]["arch"]]
    assert roots[0]["type"] == want_type
    assert roots[0].get("typeUUID", want_guid).lower() == want_guid


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_every_template_sets_kernel_and_bootloader(path: Path) -> None:
    system = _load(path)["systemConfig"]
    assert system["bootloader"]["bootType"] in ("efi", "legacy")
    assert system["bootloader"]["provider"] in ("grub", "systemd-boot")
    kernel = system["kernel"]
    assert kernel.get("version") and kernel.get("cmdline") and kernel.get("packages")
    assert system.get("packages"), "each template adds the packages its use case needs"


def test_immutable_templates_have_a_verity_hash_partition(library: dict[str, dict[str, Any]]) -> None:
    immutable = {name: d for name, d in library.items()
                 if (d["systemConfig"].get("immutability") or {}).get("enabled")}
    assert immutable, "the library includes immutable (dm-verity) images"
    for name, data in immutable.items():
        ids = {p.get("id") for p in data["disk"]["partitions"]}
        assert "roothashmap" in ids, name
        assert data["systemConfig"]["bootloader"]["provider"] == "systemd-boot", name


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_no_placeholders_or_plaintext_passwords(path: Path) -> None:
    data = _load(path)
    assert [s for s in _strings(data) if PLACEHOLDER.search(s)] == []
    for user in data["systemConfig"].get("users") or []:
        password = user.get("password")
        assert password is None or password.startswith("$"), f"user {user['name']} has a plain-text password"


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_additional_files_exist_in_the_library(path: Path) -> None:
    for entry in _load(path)["systemConfig"].get("additionalFiles") or []:
        assert (path.parent / entry["local"]).is_file(), entry["local"]


def test_readme_lists_the_library_up_to_date() -> None:
    from devtools.library_doc import START, library_table, render

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert START in readme
    assert render(readme, library_table()) == readme, "README template table is stale: run `make docs`"
