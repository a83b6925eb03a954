"""UTF-16 surrogates in decoded text.

JavaScript servers cut strings in UTF-16 code units, so one event's JSON string
may end with the escape `\\ud83c` and the next begin with `\\udf38`. Each decodes
to a lone surrogate; joined, they are one character again (`🌸`) once the pair is
rejoined. A surrogate that never meets its other half stays lone: Python keeps
it, but UTF-8 cannot encode it, so every output must treat it. Here:

- `rejoin_pairs`: concatenated pieces with split pairs made whole (the report's
  text, a call's `arguments_raw`, the diff's text, a line of a lane as drawn);
- `lone_offsets`, `lone_in_value`, `lone_places`: where lone surrogates remain,
  for the `lone-surrogate` anomaly;
- `REPLACEMENT_TABLE`: a lone surrogate on screen is U+FFFD (`visible.py` adds it to
  its tables, and so its JSON escaping writes a lone surrogate as `\\udXXX`,
  which decodes back to the same string);
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from .json_path import ROOT, child_path

REPLACEMENT = "\ufffd"
SURROGATES = range(0xD800, 0xE000)
REPLACEMENT_TABLE = dict.fromkeys(SURROGATES, REPLACEMENT)  # for str.translate
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_PAIR_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
PLACES_SHOWN = 6
_LONE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def may_hold_surrogates(text: str) -> bool:
    """False when `text` surely holds none (ASCII, or encodable as UTF-8)."""
    if text.isascii():  # constant time in CPython
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def is_high_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


def is_low_surrogate(char: str) -> bool:
    return "\udc00" <= char <= "\udfff"


def rejoin_pairs(text: str) -> str:
    """Every high surrogate followed by a low one made into the one character they
    encode; lone surrogates are left as they are."""
    if not may_hold_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def well_formed(text: str) -> str:
    """`text` as UTF-8 can encode it: pairs rejoined, lone halves as U+FFFD (for a
    value that is only shown, such as a preview)."""
    return rejoin_pairs(text).translate(REPLACEMENT_TABLE)


def lone_offsets(text: str) -> list[int]:
    """Where `text` holds a surrogate that is not half of a pair."""
    if not may_hold_surrogates(text):
        return []
    return [found.start() for found in _LONE.finditer(text)]


def spells_surrogate_escape(json_text: str) -> bool:
    """Whether the JSON text holds an escape of a surrogate (`\\ud…`)."""
    return "\\ud" in json_text or "\\uD" in json_text


def cannot_hold_surrogates(json_text: str, *texts: str | None) -> bool:
    """True when none of the texts holds a surrogate and the JSON text spells
    none as an escape: the common case, told with one look each."""
    if spells_surrogate_escape(json_text) or may_hold_surrogates(json_text):
        return False
    return not any(text and may_hold_surrogates(text) for text in texts)


def may_decode_to_lone_surrogates(json_text: str) -> bool:
    """Could this JSON text decode to a string holding a lone surrogate? (A quick
    look at the text, so a decoded value is walked only when it could.)"""
    if lone_offsets(json_text):
        return True
    if not spells_surrogate_escape(json_text):
        return False
    # every escape half of a pair, or not: two counts, no loop in Python
    pairs = len(_SURROGATE_PAIR_ESCAPE.findall(json_text))
    return 2 * pairs != len(_SURROGATE_ESCAPE.findall(json_text))


def lone_in_value(value: Any, path: str = ROOT) -> Iterator[tuple[str, str]]:
    """(JSON path, the text holding it) for every string or key of a decoded JSON
    value that holds a lone surrogate; a key is named by the path it leads to.
    An explicit stack: values nest deeply."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if lone_offsets(item):
                yield where, item
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((child_path(where, key), child))
                if lone_offsets(key):
                    stack.append((f"{child_path(where, key)} (the key)", key))
        elif isinstance(item, list):
            stack.extend(
                (child_path(where, i), child) for i, child in reversed(list(enumerate(item)))
            )


def lone_places(
    texts: Mapping[str, str | None], value: Any = None, value_name: str = "arguments"
) -> tuple[str, int] | None:
    """Where lone surrogates are, as one line, and how many: in each named text,
    and in the strings and keys of a decoded JSON `value`. None if nowhere."""
    places: list[str] = []
    count = 0
    found = [(name, text) for name, text in texts.items() if text]
    found += [(f"{value_name} at {path}", text) for path, text in lone_in_value(value)]
    for name, text in found:
        offsets = lone_offsets(text)
        if offsets:
            places.append(f"{name} ({_described(text, offsets)})")
            count += len(offsets)
    if not places:
        return None
    shown = ", ".join(places[:PLACES_SHOWN])
    more = f" and {len(places) - PLACES_SHOWN} more" if len(places) > PLACES_SHOWN else ""
    return f"half a UTF-16 pair never completed, shown as U+FFFD, in {shown}{more}", count


def _described(text: str, offsets: list[int]) -> str:
    first = f"U+{ord(text[offsets[0]]):04X} at char {offsets[0]}"
    return first if len(offsets) == 1 else f"{first} and {len(offsets) - 1} more"
