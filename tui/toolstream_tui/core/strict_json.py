"""Strict JSON decoding, fast and exact. orjson does the work, except where it
would differ from the JSON grammar as Python reads it: it turns integers beyond
64 bits into floats (silently losing digits) and refuses lone surrogate escapes.
Text with a run of 19 or more digits, or that orjson refuses, goes to the
standard library instead, so results are always those of `json.loads` — minus
NaN and Infinity, which are not JSON, numbers too large for a float, and nesting
too deep for Python to read (all refused with a ValueError)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(r"\d{19}")
_LONG_DIGITS_BYTES = re.compile(rb"\d{19}")


class TooDeep(ValueError):
    """Nested deeper than Python's recursion limit lets the standard library read."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range for a 64-bit float")
    return value


def _stdlib_loads(text: str | bytes) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
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


def loads(text: str | bytes) -> Any:
    pattern = _LONG_DIGITS_BYTES if isinstance(text, bytes) else _LONG_DIGITS
    if pattern.search(text) is None:  # type: ignore[arg-type]
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return _stdlib_loads(text)
