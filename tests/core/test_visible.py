"""Inert output: ASCII text takes a shortcut (the full tables cover all of Unicode), which
must draw every character exactly as the full tables do; other text maps only the runs of
characters a pattern finds, which must give what translating all of it gives."""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolstream_tui.core import visible
from toolstream_tui.core.visible import (
    FORMAT_CHARACTERS,
    HIDDEN_MARK,
    escaped,
    inert,
    inert_text,
    inert_wrapped,
    json_inert,
)

ASCII = "".join(map(chr, range(0x80)))
WIDE = "é"  # one non-ASCII character sends the text through the full tables


@pytest.mark.parametrize("show", [inert, inert_text, json_inert])
def test_ascii_text_is_drawn_as_the_full_tables_draw_it(show: Callable[[str], str]) -> None:
    assert show(ASCII + WIDE) == show(ASCII) + WIDE


@pytest.mark.parametrize("show", [inert, inert_text, inert_wrapped])
def test_each_character_stays_one_character(show: Callable[[str], str]) -> None:
    assert len(show(ASCII)) == len(ASCII)  # buffer offsets stay valid


def test_controls_are_visible_on_either_path() -> None:
    assert inert("a\x1b[2Jb") == "a\u241b[2Jb"
    assert inert("a\x1b[2Jb" + WIDE) == "a\u241b[2Jb" + WIDE
    assert inert_text("a\nb\tc\x7f") == "a\nb\tc\u2421"
    assert inert_wrapped("a\nb\tc\x7f") == "a\nb\u2409c\u2421"  # a tab a cell, as counted
    assert json_inert('"\x7f"') == '"\\u007f"'
    assert inert("\u202e" + WIDE) == "¤" + WIDE  # a bidi override, through the full tables


def test_escaped_ascii_decodes_back() -> None:
    literal = escaped(ASCII)
    assert json.loads(literal) == ASCII
    assert "\x7f" not in literal


def listed_format_characters() -> set[int]:
    return {code for first, last in FORMAT_CHARACTERS for code in range(first, last + 1)}


def test_the_table_holds_every_format_character_of_this_python() -> None:
    every = range(0x80, sys.maxunicode + 1)
    format_characters = {code for code in every if unicodedata.category(chr(code)) == "Cf"}
    assert format_characters <= listed_format_characters(), unicodedata.unidata_version


def test_the_table_hides_nothing_this_python_draws() -> None:
    """A newer Unicode may list a character an older Python has not assigned yet."""
    categories = {unicodedata.category(chr(code)) for code in listed_format_characters()}
    assert categories <= {"Cf", "Cn"}


def test_tag_characters_beyond_the_bmp_are_visible() -> None:
    smuggled = "ok" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf") + "\U000e007f"
    assert inert(smuggled) == "ok" + HIDDEN_MARK * 7
    printed = json_inert(json.dumps(smuggled, ensure_ascii=False))
    assert printed.isascii()  # each tag as the escaped surrogate pair JSON spells it with
    assert json.loads(printed) == smuggled
    assert json.loads(escaped(smuggled)) == smuggled


SHOWN_BY_TABLE = [(inert, 0), (inert_text, 1), (json_inert, 2), (inert_wrapped, 3)]
EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))  # surrogates too


@pytest.mark.parametrize(("show", "table"), SHOWN_BY_TABLE)
def test_every_character_maps_as_its_table_says(show: Callable[[str], str], table: int) -> None:
    assert show(EVERY_CHARACTER) == EVERY_CHARACTER.translate(visible._tables()[table])


MIXED = st.text(st.sampled_from("a \n\t\x1b\x7f\x9b\u202e\ud83d\U000e0041é中🚀"), max_size=40)


@given(MIXED)
def test_runs_of_text_map_as_the_whole_text_translated(text: str) -> None:
    for show, table in SHOWN_BY_TABLE:
        assert show(text) == text.translate(visible._tables()[table])


EVERY_ENCODABLE = "".join(
    chr(code) for code in range(sys.maxunicode + 1) if not 0xD800 <= code < 0xE000
)


def test_the_utf8_form_escapes_every_character_as_json_inert_does() -> None:
    assert visible.json_inert_utf8(EVERY_ENCODABLE.encode()) == json_inert(EVERY_ENCODABLE).encode()


@given(st.text(st.sampled_from('a "\\\x7f\x85\xad\u200d\u202e\ufeff\U000e0041\U000110bdé中🚀')))
def test_the_utf8_form_is_json_inert_encoded(text: str) -> None:
    assert visible.json_inert_utf8(text.encode()) == json_inert(text).encode()
