"""Inert output: ASCII text takes a shortcut (the full tables scan the BMP), which
must draw every character exactly as the full tables do."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from toolstream_tui.core.visible import escaped, inert, inert_text, json_inert

ASCII = "".join(map(chr, range(0x80)))
WIDE = "é"  # one non-ASCII character sends the text through the full tables


@pytest.mark.parametrize("show", [inert, inert_text, json_inert])
def test_ascii_text_is_drawn_as_the_full_tables_draw_it(show: Callable[[str], str]) -> None:
    assert show(ASCII + WIDE) == show(ASCII) + WIDE


@pytest.mark.parametrize("show", [inert, inert_text])
def test_each_character_stays_one_character(show: Callable[[str], str]) -> None:
    assert len(show(ASCII)) == len(ASCII)  # buffer offsets stay valid


def test_controls_are_visible_on_either_path() -> None:
    assert inert("a\x1b[2Jb") == "a\u241b[2Jb"
    assert inert("a\x1b[2Jb" + WIDE) == "a\u241b[2Jb" + WIDE
    assert inert_text("a\nb\tc\x7f") == "a\nb\tc\u2421"
    assert json_inert('"\x7f"') == '"\\u007f"'
    assert inert("\u202e" + WIDE) == "¤" + WIDE  # a bidi override, through the full tables


def test_escaped_ascii_decodes_back() -> None:
    literal = escaped(ASCII)
    assert json.loads(literal) == ASCII
    assert "\x7f" not in literal
