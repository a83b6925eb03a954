"""Strict JSON decoding, fast and exact. orjson does the work, except where it
would differ from the JSON grammar as Python reads it: it turns integers beyond
64 bits into floats (silently losing digits) and refuses lone surrogate escapes.
Text with a run of 19 or more digits, or that orjson refuses, goes to the
standard library instead, so results are always those of `json.loads` — minus
NaN and Infinity, which are not JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(r"\d{19}")
_LONG_DIGITS_BYTES = re.compile(rb"\d{19}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_envelope(text: str | bytes) -> Any:
    """For the JSON that wraps a stream's fragments, read once per event: orjson
    alone, unless it refuses. Numbers there are metadata, so its 64-bit limit only
    matters where a value is passed on — decode those with `loads`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text, parse_constant=_refuse_constant)


def loads(text: str | bytes) -> Any:
    pattern = _LONG_DIGITS_BYTES if isinstance(text, bytes) else _LONG_DIGITS
    if pattern.search(text) is None:  # type: ignore[arg-type]
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, parse_constant=_refuse_constant)
