"""Strict JSON decoding, fast and exact. orjson does the work, except where it
would differ from the JSON grammar as Python reads it: it turns integers beyond
64 bits into floats (silently losing digits) and refuses lone surrogate escapes.
Text with a run of 19 or more digits, or that orjson refuses, or longer than
`ORJSON_MOST` (to spare memory), goes to the standard library instead, so
results are always those of `json.loads` — minus NaN and Infinity, which are not
JSON, numbers too large for a float, integers of more than `MAX_INTEGER_DIGITS`
digits, and nesting too deep for Python to read
(all refused with a ValueError).

Integers are exact at any length up to that bound. Python refuses to turn an
integer of more than 4,300 digits into text or back (`sys.int_info`), a guard
against conversions that take time quadratic in the digits; valid JSON has no
such limit, so this module raises Python's limit to its own bound for the whole
process, and every output (json.dumps, repr, jsonschema's messages) can print
any integer it returns. At 20,000 digits, reading and printing a megabyte of
such numbers takes about a second on Python 3.11 (3.12 converts faster)."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import orjson

MAX_INTEGER_DIGITS = 20_000
# A run of 19 digits may be an integer orjson cannot keep exact. It is found by
# turning every ASCII digit into "0" and every other byte into " " (bytes.translate
# runs at memory speed; a regular expression took longer than orjson's parse), a
# window at a time so a 10 MB text is never copied whole.
_LONG_RUN = b"0" * 19
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_WINDOW = 1 << 16  # characters: a slice of a 4-byte-a-character string is 4 times that
# Past this many characters, the standard library reads a text, not orjson: orjson
# holds its own document beside the values it builds (on 10 MB of arguments, 29 MB
# more at the peak, and 8 MB more after, its UTF-8 copy kept on the string), while
# the standard library builds the values directly, in about twice the time.
ORJSON_MOST = 1 << 22


def _allow_long_integers() -> None:
    limit = sys.get_int_max_str_digits()
    if 0 < limit < MAX_INTEGER_DIGITS:  # 0: no limit at all
        sys.set_int_max_str_digits(MAX_INTEGER_DIGITS)


_allow_long_integers()


class TooDeep(ValueError):
    """Nested deeper than Python's recursion limit lets the standard library read."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range for a 64-bit float")
    return value


def _integer(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INTEGER_DIGITS:
        raise ValueError(
            f"an integer of {digits} digits is longer than the limit of {MAX_INTEGER_DIGITS}"
        )
    return int(text)


def _stdlib_loads(text: str | bytes) -> Any:
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite, parse_int=_integer
        )
    except RecursionError:
        raise TooDeep("JSON nested too deeply to read") from None


def loads_envelope(text: str | bytes) -> Any:
    """For the JSON that wraps a stream's fragments, read once per event: orjson
    alone, unless it refuses. Numbers there are metadata, so its 64-bit limit only
    matters where a value is passed on — decode those with `loads`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _stdlib_loads(text)


def has_long_digit_run(text: str | bytes | bytearray) -> bool:
    """Whether 19 ASCII digits follow one another anywhere in `text`."""
    if len(text) <= _WINDOW:  # one window: no slicing (most events are this short)
        if isinstance(text, str):
            text = text.encode("utf-8", "surrogatepass")
        return _LONG_RUN in text.translate(_DIGITS_AS_ZEROS)
    overlap = len(_LONG_RUN) - 1
    for start in range(0, len(text), _WINDOW):
        window = text[max(0, start - overlap) : start + _WINDOW]
        if isinstance(window, str):
            window = window.encode("utf-8", "surrogatepass")
        if _LONG_RUN in window.translate(_DIGITS_AS_ZEROS):
            return True
    return False


def loads(text: str | bytes, long_digit_runs: bool = True) -> Any:
    """`long_digit_runs=False`: the caller found no run of 19 digits in a text that
    holds this one (a framer looks at each read once, not at each of its events)."""
    if long_digit_runs and has_long_digit_run(text):
        return _stdlib_loads(text)
    if len(text) <= ORJSON_MOST:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return _stdlib_loads(text)
    try:
        return _stdlib_loads(text)
    except TooDeep:  # orjson reads a little deeper: what it reads, it reads the same
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            raise TooDeep("JSON nested too deeply to read") from None


def _dropped(_: object) -> None:
    return None


# json's own grammar and errors, but every object and number is dropped as soon as
# it is read: a list of them keeps one None each, nothing else is built.
_SKIPPER = json.JSONDecoder(object_pairs_hook=_dropped, parse_float=_dropped, parse_int=_dropped)


def value_end(text: str, start: int = 0) -> int:
    """Where the JSON value that begins at `start` ends, as `json.JSONDecoder().raw_decode`
    finds it (raising what it raises), without building the value: passing over the
    10 MB arguments of a call costs no second copy of them."""
    return _SKIPPER.raw_decode(text, start)[1]


# -- writing: json's compact text, from orjson where it writes the same -------------------

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# orjson refuses, instead of writing its own way, what json writes otherwise or not at
# all: dataclasses, datetimes, subclasses of str, int, dict and list (and it refuses
# integers past 64 bits, lone surrogates, non-string keys and nesting past 255).
ORJSON_REFUSES_ODD = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# orjson writes each float as repr does (json's way) but two kinds, both below 1e-4:
# a one-digit negative exponent (1e-7; repr: 1e-07), and from 1e-5 to under 1e-4 it
# writes no exponent (0.000015; repr: 1.5e-05). What it writes reads back as the same
# float, so repr of that is json's text. The report rewrites its indented text by
# these; compact text here, read backwards: the short exponent's `-e` is a literal to
# search for, then the mantissa and what comes before the number (`[`, `:` or `,`).
_SHORT_EXPONENT_BACKWARDS = re.compile(rb"-e(?<=[,\]}][1-9]-e)(?:[0-9]+\.)?[1-9]-?[\[:,]")
_FIXED_TINY = re.compile(rb"0\.0000[1-9][0-9]*(?=[,\]}])")


def float_as_json(orjson_text: bytes) -> bytes:
    """A float as json writes it, from orjson's text of it."""
    return float.__repr__(float(orjson_text)).encode()


def compact(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, raising what it
    raises, for a value decoded here (plain JSON values; no NaN or Infinity, which
    orjson writes as null): orjson writes a list or dict several times faster, and
    what it writes otherwise (floats below 1e-4) is rewritten; what it refuses goes
    to json. A number, true, false or null is spelled here as json spells it."""
    if type(value) is dict or type(value) is list:
        return compact_from_orjson(value) or _COMPACT.encode(value)
    return _scalar_text(value) or _COMPACT.encode(value)


def _scalar_text(value: Any) -> str | None:
    """json's text of an int, a finite float, true, false or null; None for anything
    else. json's encoder writes a scalar by making its iterator for the one value
    (about 1.7 us a value; Vertex AI sends a number or bool piece by piece)."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)  # past sys's digit limit it raises, as json does
    if kind is float:
        return float.__repr__(value) if math.isfinite(value) else None
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    return None


def compact_from_orjson(value: Any) -> str | None:
    """`compact(value)` from orjson, or None where orjson refuses the value (or it is
    not a list or dict: a scalar is written by json as fast)."""
    if type(value) is not dict and type(value) is not list:
        return None
    try:
        text = orjson.dumps(value, option=ORJSON_REFUSES_ODD)
    except orjson.JSONEncodeError:
        return None
    return _floats_as_json(text).decode()


def _floats_as_json(text: bytes) -> bytes:
    """orjson's compact text with its floats as json writes them. Each one rewritten
    is a whole number (a value begins after `[`, `:` or `,` and ends before `,`, `]`
    or `}`) outside every string (an even number of quotes before it, escaped
    quotes left out)."""
    size = len(text)
    edits = [
        (size - found.start(), size - found.start(), b"0")  # e-7: e-07
        for found in _SHORT_EXPONENT_BACKWARDS.finditer(text[::-1])
    ]
    edits.reverse()
    if b"0.0000" in text:
        edits += _fixed_tiny_edits(text)
        edits.sort()
    if not edits:
        return text
    masked = text.replace(b"\\\\", b"__").replace(b'\\"', b"__")  # only real quotes left
    out: list[bytes] = []
    done = counted = quotes = 0
    for start, end, written in edits:
        quotes += masked.count(b'"', counted, start)
        counted = start
        if quotes % 2 == 0:
            out += (text[done:start], written)
            done = end
    out.append(text[done:])
    return b"".join(out)


def _fixed_tiny_edits(text: bytes) -> list[tuple[int, int, bytes]]:
    """0.000015 as 1.5e-05, where it is a whole number (not the end of 10.000015)."""
    edits = []
    for found in _FIXED_TINY.finditer(text):
        start = found.start()
        before = text[start - 2 : start] if start >= 2 else b" " + text[:start]
        if before[-1:] in (b"[", b":", b",") or before in (b"[-", b":-", b",-"):
            edits.append((start, found.end(), float_as_json(found.group())))
    return edits
