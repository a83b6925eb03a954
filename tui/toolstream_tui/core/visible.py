"""Model output is untrusted: make control and invisible characters inert and
visible before anything is drawn. Each character maps to exactly one character,
so buffer offsets (fragment boundaries, parse-error positions) stay valid.

A lone UTF-16 surrogate (see surrogates.py) is drawn as U+FFFD and escaped as
`\\udXXX` in JSON: UTF-8 cannot encode it, so printing it would fail."""

from __future__ import annotations

import json
import unicodedata
from functools import cache

from .surrogates import REPLACEMENT_TABLE

HIDDEN_MARK = "¤"


Tables = tuple[dict[int, str], dict[int, str], dict[int, str]]


def _ascii_table() -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20)}  # ␀ … ␟, ␛ for ESC
    table[0x7F] = "\u2421"  # ␡
    return table


def _build_table() -> dict[int, str]:
    table = _ascii_table()
    for code in range(0x80, 0xA0):
        table[code] = HIDDEN_MARK
    for code in range(0x00A0, 0x10000):
        if unicodedata.category(chr(code)) == "Cf":  # bidi overrides, zero-width, BOM
            table[code] = HIDDEN_MARK
    table.update(REPLACEMENT_TABLE)
    return table


def _derived(inert_table: dict[int, str]) -> Tables:
    """The three tables from the one for `inert`: running text keeps newlines and
    tabs; JSON escapes what it leaves alone from DEL up."""
    keep_lines = {code: mark for code, mark in inert_table.items() if chr(code) not in "\n\t"}
    escapes = {code: f"\\u{code:04x}" for code in inert_table if code >= 0x7F}
    return inert_table, keep_lines, escapes


@cache
def _tables() -> Tables:
    """Built on first use: scanning the BMP costs more than the rest of a headless
    report, and the first screen, whose text is ASCII, needs none of it."""
    return _derived(_build_table())


@cache
def _ascii_tables() -> Tables:
    return _derived(_ascii_table())


def _tables_for(text: str) -> Tables:
    """ASCII text can only meet the tables' ASCII entries."""
    return _ascii_tables() if text.isascii() else _tables()


def inert(text: str) -> str:
    """One line: every control character shown as its picture (␛, ␊, …)."""
    return text.translate(_tables_for(text)[0])


def inert_text(text: str) -> str:
    """Running text: newlines and tabs kept, every other control made visible."""
    return text.translate(_tables_for(text)[1])


def json_inert(text: str) -> str:
    """JSON text that is safe to print: every character a terminal could act on or
    hide behind (DEL, C1 controls such as the one-byte CSI, bidi overrides,
    zero-width characters) as a \\u escape. The JSON still decodes to the same values."""
    return text.translate(_tables_for(text)[2])


def escaped(text: str) -> str:
    """Exact and unambiguous, for the fragment inspector: the text as a JSON string
    literal, with the invisible characters JSON leaves alone escaped too."""
    literal = json.dumps(text, ensure_ascii=False)
    return literal.translate(_tables_for(literal)[2])
