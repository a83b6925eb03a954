"""Model output is untrusted: make control and invisible characters inert and
visible before anything is drawn. Each character maps to exactly one character,
so buffer offsets (fragment boundaries, parse-error positions) stay valid.

A lone UTF-16 surrogate (see surrogates.py) is drawn as U+FFFD and escaped as
`\\udXXX` in JSON: UTF-8 cannot encode it, so printing it would fail."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from .surrogates import REPLACEMENT_TABLE

HIDDEN_MARK = "¤"


Tables = tuple[dict[int, str], dict[int, str], dict[int, str], dict[int, str]]


def _ascii_table() -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20)}  # ␀ … ␟, ␛ for ESC
    table[0x7F] = "\u2421"  # ␡
    return table


# Every format character (category Cf) of Unicode 15.1, as (first, last): bidi
# controls, zero-width characters, the BOM, and beyond the BMP the tag characters
# that spell invisible text. A table, not a scan of unicodedata: scanning the BMP
# took 15 ms, a tenth of a small headless run. tests/core/test_visible.py checks that
# it holds every Cf character of the running Python's Unicode.
FORMAT_CHARACTERS = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)


def _hidden_codes() -> Iterator[int]:
    """The characters shown as HIDDEN_MARK: the C1 controls and the format characters."""
    yield from range(0x80, 0xA0)
    for first, last in FORMAT_CHARACTERS:
        yield from range(first, last + 1)


def _build_table() -> dict[int, str]:
    table = _ascii_table()
    table.update(dict.fromkeys(_hidden_codes(), HIDDEN_MARK))
    table.update(REPLACEMENT_TABLE)
    return table


def _derived(inert_table: dict[int, str]) -> Tables:
    """The four tables from the one for `inert`: running text keeps newlines and
    tabs; JSON escapes what it leaves alone from DEL up; wrapped lines keep only
    newlines."""
    keep_lines = {code: mark for code, mark in inert_table.items() if chr(code) not in "\n\t"}
    escapes = {code: _json_escape(code) for code in inert_table if code >= 0x7F}
    keep_newlines = {code: mark for code, mark in inert_table.items() if chr(code) != "\n"}
    return inert_table, keep_lines, escapes, keep_newlines


def _json_escape(code: int) -> str:
    """The character as json.dumps escapes it (lower-case hex; beyond the BMP, the
    surrogate pair a \\u escape needs), without a json.dumps call for each of the
    2,300 characters of the table (a millisecond of a short run)."""
    if code < 0x10000:
        return f"\\u{code:04x}"
    offset = code - 0x10000
    return f"\\u{0xD800 | offset >> 10:04x}\\u{0xDC00 | offset & 0x3FF:04x}"


@cache
def _tables() -> Tables:
    """Built on first use: the first screen, whose text is ASCII, needs none of it."""
    return _derived(_build_table())


@cache
def _ascii_tables() -> Tables:
    return _derived(_ascii_table())


@cache
def _finders() -> list[re.Pattern[str]]:
    """For each table, a pattern that finds the runs of characters other than the
    ASCII ones it leaves alone: only those can be in the table."""
    patterns = []
    for table in _tables():
        kept = "".join(chr(code) for code in range(0x80) if code not in table)
        patterns.append(re.compile(f"[^{re.escape(kept)}]+"))
    return patterns


def _mapped(text: str, which: int) -> str:
    """`text.translate` with table `which` (ASCII text can only meet the tables'
    ASCII entries). On text that is not ASCII, translate looks every character up
    (over a second for an 11 MB report), so there it sees only the runs of
    characters that are not plain ASCII."""
    if text.isascii():
        return text.translate(_ascii_tables()[which])
    table = _tables()[which]
    return _finders()[which].sub(lambda run: run.group().translate(table), text)


def inert(text: str) -> str:
    """One line: every control character shown as its picture (␛, ␊, …)."""
    return _mapped(text, 0)


def inert_text(text: str) -> str:
    """Running text: newlines and tabs kept, every other control made visible."""
    return _mapped(text, 1)


def inert_wrapped(text: str) -> str:
    """Running text laid out by the app's own wrapper, which counts a character a
    cell: newlines kept (they break its lines), every other control made visible,
    a tab too (a terminal would widen it, moving every column after it)."""
    return _mapped(text, 3)


def json_inert(text: str) -> str:
    """JSON text that is safe to print: every character a terminal could act on or
    hide behind (DEL, C1 controls such as the one-byte CSI, bidi overrides,
    zero-width characters) as a \\u escape. The JSON still decodes to the same values."""
    return _mapped(text, 2)


@cache
def _utf8_escapes() -> tuple[dict[bytes, bytes], dict[int, list[bytes]]]:
    """`json_inert`'s table in UTF-8: the escape of each character's bytes, and those
    characters by the byte that begins them (eleven bytes). (A lone surrogate has no
    UTF-8 form: text holding one is never UTF-8, so the 2,048 of the whole table, and
    building it, are left out: a millisecond of a short run.)"""
    codes = [0x7F, *_hidden_codes()]  # the table's codes from DEL up, surrogates aside
    escapes = {chr(code).encode(): _json_escape(code).encode() for code in codes}
    by_lead: dict[int, list[bytes]] = {}
    for sequence in escapes:
        by_lead.setdefault(sequence[0], []).append(sequence)
    return escapes, by_lead


@cache
def _finder(lead: int) -> re.Pattern[bytes]:
    """A pattern that finds the characters to escape that begin with byte `lead`
    (compiled when a report first holds that byte)."""
    return re.compile(_alternatives(_utf8_escapes()[1][lead]))


def _alternatives(sequences: list[bytes]) -> bytes:
    """A pattern matching exactly `sequences` (UTF-8: none is the start of another), as
    a tree of their common beginnings, so a byte that begins other characters too (the
    first of every emoji's) is told apart in a step or two."""
    tree: dict[int, Any] = {}
    for sequence in sequences:
        node = tree
        for byte in sequence:
            node = node.setdefault(byte, {})
    return _branch(tree)


def _branch(node: dict[int, Any]) -> bytes:
    ends: dict[bytes, list[int]] = {}  # bytes that are followed by the same, together
    for byte, rest in sorted(node.items()):
        ends.setdefault(_branch(rest) if rest else b"", []).append(byte)
    options = [_one_of(bytes(first)) + rest for rest, first in ends.items()]
    return options[0] if len(options) == 1 else b"(?:" + b"|".join(options) + b")"


def _one_of(choices: bytes) -> bytes:
    if len(choices) == 1:
        return re.escape(choices)
    return b"[" + b"".join(b"\\x%02x" % byte for byte in choices) + b"]"


def json_inert_utf8(data: bytes) -> bytes:
    """`json_inert` on UTF-8 JSON text (`json_inert(data.decode()).encode()`), without
    decoding it: a search for each of the bytes that begin a character to escape (one
    memchr each: a translate of the whole text took four times as long) finds which are
    there, and for each a pattern finds those characters (an emoji's first byte is also
    that of characters to escape: 75,000 of them, looked at one by one, took three times
    as long)."""
    escapes, by_lead = _utf8_escapes()
    leads = [lead for lead in by_lead if lead in data]  # memchr, a byte at a time
    if not leads:
        return data
    found = [(at.start(), at.group()) for lead in leads for at in _finder(lead).finditer(data)]
    if not found:
        return data
    found.sort()
    out: list[bytes] = []
    done = 0
    for at, sequence in found:
        out += (data[done:at], escapes[sequence])
        done = at + len(sequence)
    out.append(data[done:])
    return b"".join(out)


def escaped(text: str) -> str:
    """Exact and unambiguous, for the fragment inspector: the text as a JSON string
    literal, with the invisible characters JSON leaves alone escaped too."""
    return json_inert(json.dumps(text, ensure_ascii=False))
