"""The views at a display cursor, computed with no Textual."""

from __future__ import annotations

from tests.helpers.sse import sse
from tests.helpers.streaming import chunk, tc
from toolstream_tui.core import StreamSession
from toolstream_tui.views.cursor import CallsAt, call_counts
from toolstream_tui.views.lanes import LaneView
from toolstream_tui.views.status import status_view

BODY = sse(
    chunk(tc(0, "call_a", "get_time", "{}")),
    chunk(tc(1, "call_b", "search", '{"q": ')),  # never finished: it fails at the end
    chunk(finish="tool_calls"),
    "[DONE]",
)


def fed(events: int | None = None) -> StreamSession:
    """A session fed the whole body; `events`: only that many wire events of it."""
    session = StreamSession("test", "openai-chat", live=False)
    session.open(200, "text/event-stream")
    parts = BODY.split(b"\n\n")
    kept = parts if events is None else parts[:events]
    session.feed(b"\n\n".join(kept) + b"\n\n", 0.0)
    return session


def test_call_counts_at_a_cursor() -> None:
    state = fed().state
    before = call_counts(state, 1)
    assert (before.started, before.failed) == ([0], 0)
    state_at_end = fed().state
    counts = call_counts(state_at_end, state_at_end.now)
    assert counts.started == [0, 1] and counts.failed == 1 and counts.rejected == 0


def test_calls_at_counts_again_only_when_the_cursor_or_the_stream_moved() -> None:
    session = fed(events=1)
    state, calls_at = session.state, CallsAt()
    first = calls_at.at(state, state.now)
    assert first.started == [0]
    assert calls_at.at(state, state.now) is first, "nothing moved: not counted again"
    session.feed(BODY.split(b"\n\n", 1)[1], 1.0)
    moved = calls_at.at(state, state.now)
    assert moved is not first and moved.started == [0, 1] and moved.failed == 1
    assert calls_at.at(state, 1).started == [0], "the cursor moved back"


def test_the_status_bar_says_what_the_counts_say() -> None:
    state = fed().state
    counts = call_counts(state, state.now)
    view = status_view(state, state.now, paused=False, live_elapsed=0.0, quiet=0.0)
    assert view.failed_calls == counts.failed == 1
    given = status_view(state, state.now, paused=False, live_elapsed=0.0, quiet=0.0, counts=counts)
    assert given == view


def test_a_lanes_counter_groups_thousands_as_the_rest_of_the_screen_does() -> None:
    """'12,002 fragments · 517792 chars' read oddly beside each other."""
    view = LaneView(0, "#0 f", "streaming", "streaming", "raw", 12_002, 517_792, 1.5, 0)
    assert view.counter == "12,002 fragments · 517,792 chars · 1.50s"
    assert LaneView(0, "#0 f", "parsed", "parsed", "raw", 1, 1, 0.0, 0).counter == (
        "1 fragment · 1 char · 0.00s"
    )
