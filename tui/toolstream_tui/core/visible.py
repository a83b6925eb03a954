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


def _build_table(keep: str) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        table[code] = chr(0x2400 + code)  # ␀ … ␟, ␛ for ESC
    table[0x7F] = "\u2421"  # ␡
    for code in range(0x80, 0xA0):
        table[code] = HIDDEN_MARK
    for code in range(0x00A0, 0x10000):
        if unicodedata.category(chr(code)) == "Cf":  # bidi overrides, zero-width, BOM
            table[code] = HIDDEN_MARK
    table.update(REPLACEMENT_TABLE)
    for char in keep:
        table.pop(ord(char), None)
    return table


@cache
def _tables() -> tuple[dict[int, str], dict[int, str], dict[int, str]]:
    """Built on first use (scanning the BMP takes a few ms a headless run needn't pay)."""
    inert_table = _build_table(keep="")
    keep_lines = _build_table(keep="\n\t")
    escapes = {code: f"\\u{code:04x}" for code in inert_table if code >= 0x7F}
    return inert_table, keep_lines, escapes


def inert(text: str) -> str:
    """One line: every control character shown as its picture (␛, ␊, …)."""
    return text.translate(_tables()[0])


def inert_text(text: str) -> str:
    """Running text: newlines and tabs kept, every other control made visible."""
    return text.translate(_tables()[1])


def json_inert(text: str) -> str:
    """JSON text that is safe to print: every character a terminal could act on or
    hide behind (DEL, C1 controls such as the one-byte CSI, bidi overrides,
    zero-width characters) as a \\u escape. The JSON still decodes to the same values."""
    return text.translate(_tables()[2])


def escaped(text: str) -> str:
    """Exact and unambiguous, for the fragment inspector: the text as a JSON string
    literal, with the invisible characters JSON leaves alone escaped too."""
    return json.dumps(text, ensure_ascii=False).translate(_tables()[2])
