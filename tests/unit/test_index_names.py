"""Words a repository index may know by the distributions' naming conventions (server/composer/index_names.py)."""

from __future__ import annotations

from image_composer_mcp.server.composer.index_names import place, readings
from image_composer_mcp.server.composer.request_parser import parse_request


def _read(request: str, found: set[str]):
    spec = parse_request(request)
    candidates = readings(spec, request)
    place(spec, found, candidates)
    return spec, candidates


def test_a_library_named_beside_python_is_its_python3_package_and_is_said_to_be_read_so():
    spec, candidates = _read("ubuntu server with python3 and numpy, pandas, crunching",
                             {"python3-numpy", "python3-pandas"})
    assert {"numpy", "python3-numpy", "pandas", "python3-pandas"} <= set(candidates)
    assert {"python3-numpy", "python3-pandas"} <= set(spec.add_packages)
    assert "numpy" not in spec.unparsed and "pandas" not in spec.unparsed
    assert "numpy -> python3-numpy" in spec.corrected
    assert "crunching" in spec.unparsed  # nothing the index has: still reported


def test_without_python_in_the_request_a_word_is_not_taken_for_a_python_library():
    spec, candidates = _read("debian image with frobnitz", {"python3-frobnitz"})
    assert "python3-frobnitz" not in candidates and "python3-frobnitz" not in spec.add_packages
    assert "frobnitz" in spec.unparsed


def test_a_word_the_index_has_as_written_wins_over_its_python_package():
    spec, _ = _read("python3 with valkey", {"valkey", "python3-valkey"})
    assert "valkey" in spec.add_packages and "python3-valkey" not in spec.add_packages
    assert not any("valkey" in c for c in spec.corrected)


def test_a_version_the_release_packages_by_name_replaces_the_package_and_its_not_pinned_note():
    spec = parse_request("ubuntu 24.04 with postgresql 16")
    assert "postgresql" in spec.add_packages and any("version not pinned" in n for n in spec.notes)
    place(spec, {"postgresql-16"}, readings(spec, "ubuntu 24.04 with postgresql 16"))
    assert "postgresql-16" in spec.add_packages and "postgresql" not in spec.add_packages
    assert not any("version not pinned" in n for n in spec.notes)
    assert "postgresql 16 -> postgresql-16" in spec.corrected


def test_a_version_the_index_lacks_leaves_the_package_and_the_note():
    spec = parse_request("debian 13 with postgresql 16")
    place(spec, {"postgresql", "postgresql-17"}, readings(spec, "debian 13 with postgresql 16"))
    assert "postgresql" in spec.add_packages and "postgresql-16" not in spec.add_packages
    assert any("postgresql 16: version not pinned" in n for n in spec.notes)


def test_an_unknown_name_and_its_version_are_placed_together():
    spec = parse_request("ubuntu image with frobnitz 3")
    assert {"frobnitz", "3"} <= set(spec.unparsed)
    place(spec, {"frobnitz3"}, readings(spec, "ubuntu image with frobnitz 3"))
    assert "frobnitz3" in spec.add_packages and not {"frobnitz", "3"} & set(spec.unparsed)


def test_a_version_packaged_under_a_name_of_its_own_is_placed_by_each_familys_convention():
    request = "image with openjdk 17 and maven for a build agent"
    for index, name in (({"openjdk-17-jdk-headless", "openjdk-17-jre-headless", "maven"}, "openjdk-17-jdk-headless"),
                        ({"java-17-openjdk-devel", "java-17-openjdk", "maven"}, "java-17-openjdk-devel"),
                        ({"msopenjdk-17", "maven"}, "msopenjdk-17")):
        spec, _ = _read(request, index)
        assert name in spec.add_packages and {"maven"} <= set(spec.add_packages), index
        assert not {"openjdk", "17"} & set(spec.unparsed) and f"openjdk 17 -> {name}" in spec.corrected
    spec, _ = _read(request, {"openjdk-21-jdk-headless", "maven"})  # trixie: no 17
    assert {"openjdk", "17"} <= set(spec.unparsed) and not any(p.startswith("openjdk") for p in spec.add_packages)


def _unchecked(request: str):
    from image_composer_mcp.server.composer.index_names import unchecked

    spec = parse_request(request)
    unchecked(spec, readings(spec, request), "no index", frozenset({"routing", "and", "with"}), request)
    return spec


def test_a_name_no_index_could_check_listed_beside_packages_is_added_and_said_so():
    spec = _unchecked("ubuntu 24.04 server with htop, bmon and tmux")
    assert "bmon" in spec.add_packages and "bmon" not in spec.unparsed
    assert any(n.startswith("bmon: added as named among packages, unchecked (no index)") for n in spec.notes)


def test_a_name_no_index_could_check_with_no_package_beside_it_is_only_advised():
    spec = _unchecked("an elxr image for a router with frr routing and lldpd")
    assert "frr" not in spec.add_packages and any(u.startswith("frr (") for u in spec.unparsed)
    assert "routing" in spec.unparsed  # an English word is never added


def test_a_versioned_name_no_index_could_check_lists_the_names_it_may_have():
    spec = _unchecked("ubuntu with openjdk 17")
    (said,) = [u for u in spec.unparsed if u.startswith("openjdk 17 (")]
    assert "openjdk-17-jdk-headless" in said and "17" not in spec.unparsed


def test_a_counted_noun_in_a_list_is_no_package():
    spec = _unchecked("debian 13 router: two nics, nftables, dnsmasq for dhcp")
    assert "nics" not in spec.add_packages


def test_a_versioned_name_left_whole_as_an_item_of_a_list_lists_the_names_it_may_have():
    spec = _unchecked("ubuntu 26.04 image to run a game server, 4 cores, java 21")
    (said,) = [u for u in spec.unparsed if u.startswith("java 21 (")]
    assert "openjdk-21-jdk-headless" in said and "java-21-openjdk-devel" in said


def test_a_name_listed_beside_a_package_read_under_another_name_is_added():
    from image_composer_mcp.server.composer.index_names import unchecked
    from image_composer_mcp.server.library.embed_local import english_words

    spec = parse_request("azure linux build server with cmake, ninja, ccache")
    spec.add_packages = [*spec.add_packages, "ninja-build"]  # as the agent's known packages read "ninja"
    spec.unparsed = [u for u in spec.unparsed if u != "ninja"]
    unchecked(spec, readings(spec, "azure linux build server with cmake, ninja, ccache"), "no index",
              english_words(), "azure linux build server with cmake, ninja, ccache")
    assert "ccache" in spec.add_packages
