"""Model output is untrusted: make control and invisible characters inert and
visible before anything is drawn. Each character maps to exactly one character,
so buffer offsets (fragment boundaries, parse-error positions) stay valid."""

from __future__ import annotations

import json
import unicodedata

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
    for char in keep:
        table.pop(ord(char), None)
    return table


_INERT = _build_table(keep="")
_ESCAPE_INVISIBLE = {code: f"\\u{code:04x}" for code in _INERT if code >= 0x7F}
_INERT_KEEP_LINES = _build_table(keep="\n\t")


def inert(text: str) -> str:
    """One line: every control character shown as its picture (␛, ␊, …)."""
    return text.translate(_INERT)


def inert_text(text: str) -> str:
    """Running text: newlines and tabs kept, every other control made visible."""
    return text.translate(_INERT_KEEP_LINES)


def escaped(text: str) -> str:
    """Exact and unambiguous, for the fragment inspector: the text as a JSON string
    literal, with the invisible characters JSON leaves alone escaped too."""
    return json.dumps(text, ensure_ascii=False).translate(_ESCAPE_INVISIBLE)
