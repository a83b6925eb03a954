"""json's compact text from orjson (`strict_json.compact`): the text json writes,
for any value, with orjson's floats below 1e-4 rewritten and what orjson refuses
written by json; strings that look like those floats are left alone."""

from __future__ import annotations

import enum
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.helpers.streaming import CHARS
from toolstream_tui.core.strict_json import compact

# Floats orjson writes otherwise than json (below 1e-4), and text that looks like them.
FLOATS = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e-9, max_value=2e-4)
    | st.floats(min_value=-2e-4, max_value=-1e-9)
    | st.sampled_from([1e-7, 1.5e-5, 1e-5, 10.00001, 0.0001, 1e16, 5e-324, -0.0, 1e-10])
)
LOOKALIKES = st.sampled_from(
    ["x:1e-7,", "[1.5e-7]", ",0.00001}", "\\", '\\"', '"', "\\\\", ':-1e-7,"', "e-", "0.0000"]
)
STRINGS = st.text(CHARS, max_size=8) | LOOKALIKES | st.text(max_size=3)  # with surrogates
SCALARS = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | FLOATS | STRINGS
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=12,
)
OBJECTS = st.dictionaries(STRINGS, VALUES, max_size=6)


def json_compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=400)
@given(VALUES)
@example({"a": "x:1e-7,", "b": [1e-7, "\\", 1.5e-5], '"': -1.5e-5})
@example(["\\\\", 2e-9, '\\"', 3e-7, 'a\\"b', 10.00001])
@example({"s": '",1e-7,"', "t": 2e-9, "u": [-0.00002]})
def test_compact_text_is_jsons(value: Any) -> None:
    assert compact(value) == json_compact(value)


def test_what_orjson_refuses_is_written_by_json() -> None:
    for value in ([2**70, 1e-7], ["\ud83d", 1e-7], {1: 2e-7}, [[[[]]]] * 2):
        assert compact(value) == json_compact(value)


def test_scalars_are_spelled_as_json_spells_them() -> None:
    """Numbers, true, false and null are written without json's encoder: the same
    text, bool never as an int, non-finite floats and int subclasses left to json."""

    class Level(enum.IntEnum):
        HIGH = 3

    values = [0, -1, 2**64, -(2**70), True, False, None, 0.1, -0.0, 1e-7, 1.5e-5, 5e-324]
    values += [1e16, 1e300, float("nan"), float("inf"), -float("inf"), Level.HIGH]
    for value in values:
        assert compact(value) == json_compact(value), value
