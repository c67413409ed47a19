"""The shared index on object storage (moto's S3 server): LanceDB through storage options, template sources
in the bucket, one writer chosen by a PostgreSQL lease, followers that load the writer's table versions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import MINIMAL_TEMPLATE, HashEmbedder
from tests.services import S3Server, pg_unavailable_reason, postgres_server, s3_server, s3_unavailable_reason

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(s3_unavailable_reason() is not None, reason=str(s3_unavailable_reason()))]


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server("oic-index-test") as server:
        yield server


def _settings(s3: S3Server, prefix: str, **extra: str):
    from image_composer_mcp.server.core.config import load_settings

    return load_settings(env={**s3.env(), "OIC_AI_TEMPLATES_DIR": f"s3://{s3.bucket}/{prefix}/templates",
                              "OIC_AI_INDEX_URI": f"s3://{s3.bucket}/{prefix}/index", **extra})


def _put(s3: S3Server, prefix: str, name: str, description: str) -> None:
    body = MINIMAL_TEMPLATE.format(name=name, description=description, keywords="test", packages="openssh-server")
    s3.put(f"{prefix}/templates/{name}.yml", body.encode())


def _index(settings, lease=None):
    from image_composer_mcp.server.engine import build_engine
    from image_composer_mcp.server.library.index import TemplateIndex

    options = build_engine(settings)._shared_index_options()
    if lease is not None:
        options["lease"] = lease
    return TemplateIndex(None, settings.template_roots, HashEmbedder(), **options)


def test_settings_accept_object_storage(tmp_path: Path) -> None:
    from image_composer_mcp.server.core.config import ConfigError, load_settings

    s = load_settings(env={"OIC_AI_TEMPLATES_DIR": f"s3://bucket/a:{tmp_path}", "OIC_AI_INDEX_URI": "s3://bucket/idx",
                           "OIC_AI_STORAGE_ENDPOINT": "http://minio:9000", "OIC_AI_STORAGE_ALLOW_HTTP": "true",
                           "OIC_AI_STORAGE_OPTIONS": "aws_s3_express=false"})
    assert s.template_object_roots == ["s3://bucket/a"] and s.template_roots == [tmp_path.resolve()]
    assert s.storage.lance_options()["aws_endpoint"] == "http://minio:9000"
    assert s.storage.lance_options()["allow_http"] == "true"
    assert s.storage.lance_options()["aws_s3_express"] == "false"
    with pytest.raises(ConfigError, match="ai.index_uri.*s3://bucket/prefix"):
        load_settings(env={"OIC_AI_INDEX_URI": "gs://bucket/idx"})
    with pytest.raises(ConfigError, match="conversations_url.*REDACTED.*postgresql://"):
        load_settings(env={"OIC_AI_CONVERSATIONS_URL": "mysql://u:secret@h/db"})


def test_index_and_templates_in_a_bucket(s3: S3Server) -> None:
    _put(s3, "solo", "alpha", "an alpha image for testing")
    _put(s3, "solo", "beta", "a beta image for testing")
    s3.put("solo/templates/notes.txt", b"not a template")
    index = _index(_settings(s3, "solo"))
    try:
        index.open()
        report = index.sync()
        assert report.embedded == 2 and not report.problems
        rec = index.by_name("alpha")
        assert rec is not None and rec.root == f"s3://{s3.bucket}/solo/templates"
        assert "an alpha image" in index.read_text(rec)
        assert any(k.startswith("solo/index/") for k in s3.keys("solo/index/"))  # LanceDB wrote to the bucket
        # unchanged objects are cache hits; a changed one is re-embedded; a deleted one leaves the index
        assert index.sync().embedded == 0
        _put(s3, "solo", "beta", "a beta image, now changed")
        s3.client().delete_object(Bucket=s3.bucket, Key="solo/templates/alpha.yml")
        report = index.sync()
        assert report.embedded == 1 and report.removed == 1 and index.names() == ["beta"]
    finally:
        index.close()


@pytest.mark.skipif(pg_unavailable_reason() is not None, reason=str(pg_unavailable_reason()))
def test_one_writer_by_lease_and_followers_load_its_versions(s3: S3Server) -> None:
    from image_composer_mcp.server.storage.pg_lease import PgLease

    _put(s3, "team", "gamma", "a gamma image")
    with postgres_server() as pg:
        leader_lease, follower_lease = PgLease(pg.url), PgLease(pg.url)
        settings = _settings(s3, "team")
        leader, follower = _index(settings, leader_lease), _index(settings, follower_lease)
        try:
            leader.open()
            assert leader.sync().embedded == 1 and leader.is_writer
            follower.open()
            report = follower.sync()  # it does not write: another replica leads
            assert report.followed and report.embedded == 0 and not follower.is_writer
            assert follower.names() == ["gamma"]
            _put(s3, "team", "delta", "a delta image")
            assert follower.sync(wait=False).followed  # still not the writer: nothing new yet
            assert follower.names() == ["gamma"]
            assert not follower_lease.wait_for_change(0.2)  # nothing committed yet
            assert leader.sync(wait=False).embedded == 1
            assert follower_lease.wait_for_change(30)  # told by the leader's NOTIFY, not by polling
            assert follower.follow() and follower.names() == ["delta", "gamma"]
            # the leader goes away (its session ends): the follower takes over the writing
            leader_lease.release()
            _put(s3, "team", "epsilon", "an epsilon image")
            report = follower.sync(wait=False)
            assert not report.followed and report.embedded == 1 and follower.is_writer
        finally:
            leader.close()
            follower.close()
            leader_lease.release()
            follower_lease.release()


def test_engine_over_a_bucket_searches_validates_and_reports(s3: S3Server, tmp_path: Path) -> None:
    """The engine without PostgreSQL: the index and the templates in the bucket, the tools reading from it."""
    from image_composer_mcp.server.engine import build_engine
    from image_composer_mcp.tools.cache_stats import CacheStats

    _put(s3, "engine", "lidar-mapper", "lidar point cloud mapping appliance")
    _put(s3, "engine", "kiosk", "a kiosk display with a browser")
    engine = build_engine(_settings(s3, "engine", OIC_AI_CACHE_DIR=str(tmp_path)))
    try:
        engine.ready()
        assert engine.search("lidar point cloud mapping").results[0].record.name == "lidar-mapper"
        report, name = engine.validate(name="lidar-mapper")  # the text comes from the bucket
        assert name == "lidar-mapper" and report.valid, report.errors
        stats = engine.stats()
        assert stats["index_location"] == f"s3://{s3.bucket}/engine/index" and stats["index_size_bytes"] is None
        assert f"s3://{s3.bucket}/engine/templates" in stats["template_roots"]
        CacheStats.model_validate(stats)
        # save_as writes to this replica's own save dir (the user data dir by default), never into the bucket.
        target = engine.check_save_name("mine.yml", overwrite=False)
        assert target.parent == engine.save_dir and not str(target).startswith("s3:")
    finally:
        engine.close()
