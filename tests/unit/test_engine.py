"""Engine start-up in bad environments: the server keeps running and says what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.engine import LibraryEmptyError, Providers, build_engine

from tests.conftest import write_template


def test_unusable_cache_dir_falls_back_with_a_warning(tmp_path: Path):
    templates = tmp_path / "t"
    templates.mkdir()
    write_template(templates, "one")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(blocker / "cache")})
    engine = build_engine(settings, Providers(fallback_cache_dir=tmp_path / "user-cache"))
    try:
        engine.ready()
        assert engine.cache_dir == tmp_path / "user-cache"
        stats = engine.stats()
        assert any("not writable" in w and "OIC_AI_CACHE_DIR" in w for w in stats["warnings"])
        assert engine.search("test image").results
    finally:
        engine.close()


def test_no_writable_cache_at_all_uses_a_temporary_index(tmp_path: Path):
    templates = tmp_path / "t"
    templates.mkdir()
    write_template(templates, "one")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(blocker / "c")})
    engine = build_engine(settings, Providers(fallback_cache_dir=blocker / "also-blocked"))
    try:
        engine.ready()
        assert engine.cache_dir is None
        assert any("temporary" in w for w in engine.stats()["warnings"])
        assert engine.search("test image").results
    finally:
        engine.close()


def test_missing_templates_dir_is_reported_and_an_empty_library_is_an_error(tmp_path: Path):
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(tmp_path / "nowhere"),
                                  "OIC_AI_CACHE_DIR": str(tmp_path / "c")})
    engine = build_engine(settings)
    try:
        engine.ready()  # the server still starts (cache_stats can explain) ...
        stats = engine.stats()
        assert stats["templates_indexed"] == 0
        assert any("does not exist" in w and "OIC_AI_TEMPLATES_DIR" in w for w in stats["warnings"])
        # ... but searching nothing is an error that names the folders and the setting, not "nothing found"
        with pytest.raises(LibraryEmptyError, match=r"library is empty.*nowhere \(missing\).*OIC_AI_TEMPLATES_DIR"):
            engine.search("anything at all")
    finally:
        engine.close()


def test_saved_templates_alone_make_a_library(tmp_path: Path):
    saved = tmp_path / "saved"
    saved.mkdir()
    write_template(saved, "mine", "my own robot image", "robot")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(tmp_path / "nowhere"),
                                  "OIC_AI_CACHE_DIR": str(tmp_path / "c"), "OIC_AI_SAVE_DIR": str(saved)})
    engine = build_engine(settings)
    try:
        assert [r.record.name for r in engine.search("robot image").results] == ["mine"]
    finally:
        engine.close()


def test_edits_on_disk_are_picked_up_without_restart(tmp_path: Path):
    templates = tmp_path / "t"
    templates.mkdir()
    write_template(templates, "alpha", "minimal base image", "minimal")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(tmp_path / "c"),
                                  "OIC_AI_SEARCH_FINGERPRINT_INTERVAL": "0"})
    engine = build_engine(settings)
    try:
        engine.ready()
        assert {r.record.name for r in engine.search("robotics ros2 robot", use_threshold=False).results} == {"alpha"}
        write_template(templates, "robot", "ROS 2 robotics image for mobile robots", "robotics, ros2",
                       "ros-jazzy-desktop")
        names = [r.record.name for r in engine.search("robotics ros2 robot").results]
        assert names[0] == "robot"
        (templates / "robot.yml").unlink()
        assert "robot" not in [r.record.name for r in engine.search("robotics ros2 robot", use_threshold=False).results]
        stats = engine.stats()
        assert stats["embedded_this_run"] == 2
    finally:
        engine.close()
