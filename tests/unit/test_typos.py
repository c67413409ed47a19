"""The spelling rule both readings share (server/knowledge/typos.py): slips of the fingers, not other words."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.knowledge.typos import derived_form, misspelling_of, slip_of


@pytest.mark.parametrize(("word", "known"), [("controller", "control"), ("exported", "exporter"),
                                             ("installer", "installed"), ("served", "server")])
def test_forms_of_one_stem_are_no_slips(word, known):
    assert derived_form(word, known) and not slip_of(word, known)


@pytest.mark.parametrize(("word", "known"), [("dokcer", "docker"), ("ubunut", "ubuntu"), ("mointoring", "monitoring")])
def test_slips_keep_the_first_letter_and_another_stem(word, known):
    assert slip_of(word, known) and misspelling_of(word, [known]) == known


@pytest.mark.parametrize(("word", "known"), [("frobtool2", "frobtool"), ("libssl3", "libssl1"), ("python2", "python3")])
def test_another_number_of_one_name_is_another_name_not_a_slip(word, known):
    assert not slip_of(word, known) and misspelling_of(word, [known]) is None


def test_a_slip_in_a_numbered_name_is_still_one_and_a_name_said_without_its_number_is_that_name():
    assert misspelling_of("pyhton3", ["python3"]) == "python3"
    assert misspelling_of("apache", ["apache2"]) == "apache2"


def test_a_first_letter_lost_is_another_word():
    assert not slip_of("flake", "lake") and misspelling_of("flake", ["lake"]) is None


def test_search_reads_no_other_form_of_a_word_as_its_slip(reference_engine):
    outcome = reference_engine.search("microvisor exported as VHD")
    assert not outcome.analysis.corrections
    assert reference_engine.search("dokcer edge").analysis.corrections == [("dokcer", "docker")]


def test_a_slip_of_a_name_software_goes_by_is_that_name():
    from image_composer_mcp.server.composer.request_parser import parse_request
    from image_composer_mcp.server.library.embed_local import english_words

    spec = parse_request("el10 with postgre", english=english_words())
    assert spec.add_packages == ["postgres"] and spec.corrected == ["postgre -> postgres"] and not spec.unparsed


def test_software_joined_by_a_plus_is_a_wish_reported_when_unread():
    from image_composer_mcp.server.composer.request_parser import parse_request
    from image_composer_mcp.server.library.embed_local import english_words

    assert "modbus" in parse_request("gateway, modbus + mqtt", english=english_words()).unparsed
