"""image_composer_mcp.server.knowledge.sizes: the one size reader for requests, templates and the composer."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.sizes import (
    casual_mib,
    fmt_bytes,
    fmt_size,
    parse_casual,
    template_bytes,
    template_mib,
)


@pytest.mark.parametrize(("text", "mib"), [
    ("8 gigs", 8192), ("8G", 8192), ("8 GB", 8192), ("8GiB", 8192), ("half a terabyte", 512 * 1024),
    ("1.5 tb", 1536 * 1024), ("512M", 512), ("two gigabytes", 2048), ("a 20 gig disk", 20480),
])
def test_casual_sizes(text, mib):
    assert parse_casual(text) == mib


@pytest.mark.parametrize("text", ["8", "done the task", "a m", "one more thing"])
def test_a_bare_number_or_prose_is_no_size(text):
    assert parse_casual(text) is None


@pytest.mark.parametrize(("text", "mib"), [
    ("around twenty gigabytes", 20 * 1024), ("twenty-five gigs", 25 * 1024), ("a hundred gigs", 100 * 1024),
    ("three hundred and fifty gigabytes", 350 * 1024), ("ten gigs", 10 * 1024), ("quarter of a terabyte", 256 * 1024),
])
def test_numbers_in_words_before_a_spelled_out_unit(text, mib):
    assert parse_casual(text) == mib


@pytest.mark.parametrize(("text", "mib"), [("10 giga", 10 * 1024), ("15 Go", 15 * 1024), ("512 Mo", 512),
                                           ("2 Gio", 2048), ("3 megas", 3)])
def test_units_as_other_languages_and_short_forms_write_them(text, mib):
    assert parse_casual(text) == mib


@pytest.mark.parametrize("text", ["one g", "let it go", "from 10 to 20", "twenty"])
def test_number_words_and_octet_units_need_each_other(text):
    assert parse_casual(text) is None


def test_template_sizes_and_the_bare_number_rule():
    assert template_mib("513MiB") == 513 and template_mib("4GiB") == 4096 and template_mib("8G") == 8192
    assert template_mib("0") is None and template_mib("lots") is None
    # A bare number is no template size (upstream wants a unit; only "0" goes without one) ...
    assert template_mib(8) is None and template_mib("8") is None
    assert template_bytes("8") == (None, 'add a unit, e.g. 8MiB; only "0" may be written without one')
    # ... nor a request's size (the two readers agree on that, and differ on case and decimal units).
    assert parse_casual("8") is None
    assert template_bytes("8GB") == (8 * 10**9, None) and parse_casual("8 GB") == 8192
    assert template_bytes("8gb")[0] is None and parse_casual("8gb") == 8192
    assert fmt_bytes(4 << 30) == "4GiB" and fmt_bytes(1536 << 20) == "1.50GiB" and fmt_bytes(12) == "12 bytes"
    assert fmt_size(8192) == "8GiB" and fmt_size(1536) == "1536MiB"
    assert casual_mib("half a", "terabyte") == 512 * 1024


@pytest.mark.parametrize(("text", "size", "delta"), [
    ("make the disk 8 gigs", "8GiB", None), ("add 4 GB to the disk", None, "+4GiB"),
    ("double the disk", None, "x2"), ("shrink the disk by 2G", None, "-2GiB"),
])
def test_the_parser_reads_sizes_through_the_one_module(text, size, delta):
    spec = parse_request(text)
    assert (spec.disk_size, spec.disk_size_delta) == (size, delta)
