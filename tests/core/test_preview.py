"""The live preview of a call's arguments: what jiter's partial mode makes of
the text so far, re-parsed often enough to follow the stream but at a total
cost linear in the arguments' size."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.streaming import OBJECTS, cut
from toolstream_tui.core.preview import CATCH_UP_SECONDS, GROWTH, ArgumentsPreview


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def follow(preview: ArgumentsPreview, pieces: list[str]) -> str:
    text = ""
    for piece in pieces:
        text += piece
        if preview.due(len(text)):
            preview.update(text)
    return text


def test_a_cut_string_shows_what_arrived_and_a_cut_key_is_left_out() -> None:
    preview = ArgumentsPreview()
    preview.update('{"city": "Bei')
    assert preview.value == {"city": "Bei"}
    preview.update('{"city": "Beijing", "un')
    assert preview.value == {"city": "Beijing"}
    assert preview.error is None


def test_text_that_cannot_start_json_keeps_the_last_preview_and_says_why() -> None:
    preview = ArgumentsPreview()
    preview.update('{"a": 1')
    preview.update('{"a": 1, ]')
    assert preview.value == {"a": 1}
    assert preview.error is not None


def test_nothing_yet_is_no_value_and_no_error() -> None:
    preview = ArgumentsPreview()
    preview.update("  ")
    assert (preview.value, preview.error) == (None, None)


def test_parses_only_after_enough_growth_unless_time_has_passed() -> None:
    clock = ManualClock()
    preview = ArgumentsPreview(clock)
    preview.update("x" * 800)
    assert not preview.due(800 + int(800 * GROWTH) - 1)
    assert preview.due(800 + int(800 * GROWTH))
    clock.now += CATCH_UP_SECONDS
    assert preview.due(801), "a slow stream is caught up after a quiet moment"
    assert not preview.due(800), "nothing new, nothing to parse"
    assert preview.due(801, exact=True)


def test_following_a_megabyte_costs_a_constant_times_its_size() -> None:
    clock = ManualClock()
    preview = ArgumentsPreview(clock)
    body = json.dumps({f"k{n}": "文字" * 40 for n in range(6000)})
    text = follow(preview, [body[i : i + 17] for i in range(0, len(body), 17)])
    assert preview.length == len(text) or preview.length >= len(text) / (1 + GROWTH)
    bound = (1 + 1 / GROWTH) * len(text)
    assert preview.parsed_chars <= bound
    assert preview.parses < 200  # not one parse per fragment (there are ~35k)


@given(obj=OBJECTS, data=st.data())
def test_the_preview_at_the_end_is_the_value(obj: dict[str, object], data: st.DataObject) -> None:
    raw = json.dumps(obj)
    preview = ArgumentsPreview()
    follow(preview, data.draw(cut(raw)))
    if preview.length < len(raw):
        preview.update(raw)
    assert preview.value == obj
