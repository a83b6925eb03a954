"""Time travel's scrub bar, and the positions `g` takes (an event number or a time)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.events import Anomaly
from ..core.state import StreamState
from ..core.upto import (
    cursor_for_event,
    event_at_time,
    last_cursor,
)
from ..core.visible import inert


# -- moving the display cursor -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ScrubView:
    """A scrub bar: the column of the cursor, the columns where an anomaly was first
    seen, and the cursor each column stands for (a click or a drag goes there)."""

    at: int
    marks: frozenset[int]
    cursors: tuple[int, ...]


def scrub_view(state: StreamState, upto: int, width: int, end: float | None = None) -> ScrubView:
    """A bar of `width` columns over the whole stream: by event number, or with
    `end` by time from 0 to `end` seconds (lined up with the timeline's axis)."""
    width = max(1, width)
    last = last_cursor(state)
    if end is None:
        cursors = tuple(round(column * last / max(1, width - 1)) for column in range(width))
        at = round(min(upto, last) * (width - 1) / last) if last else 0
        return ScrubView(at, first_sighting_columns(state.anomalies, last, width), cursors)
    span = end if end > 0 else 1.0
    cursors = tuple(
        event_at_time(state, span * column / max(1, width - 1)) for column in range(width)
    )
    at = bisect_right(cursors, upto) - 1 if upto < last else width - 1
    marks = frozenset(
        max(0, bisect_right(cursors, min(anomaly.stamps[0], last)) - 1)
        for anomaly in state.anomalies
    )
    return ScrubView(max(0, at), marks, cursors)


def first_sighting_columns(anomalies: Sequence[Anomaly], last: int, width: int) -> frozenset[int]:
    """The columns of a bar of `width` over events 0..`last` where an anomaly was
    first seen. The state records anomalies as they are first seen, so their
    columns rise along the list: one bisection per marked column, where a step per
    anomaly cost the bar, drawn at every tick while live, ~2.6 ms with 10,000."""

    def column(anomaly: Anomaly) -> int:
        return round(min(anomaly.stamps[0], last) * (width - 1) / last) if last else 0

    marks: set[int] = set()
    at = 0
    while at < len(anomalies):
        marks.add(mark := column(anomalies[at]))
        at = bisect_right(anomalies, mark, lo=at, key=column)
    return frozenset(marks)


def parse_position(text: str) -> tuple[str, float] | str:
    """What a person typed to go somewhere: an event number (`31204`, `31,204`)
    as ("event", n), or a time since the request (`12.5s`) as ("time", seconds);
    otherwise what is wrong with it."""
    typed = text.strip().replace(",", "").replace("_", "")
    try:
        if typed.lower().endswith("s"):
            seconds = float(typed[:-1].strip())
            if seconds >= 0 and seconds != float("inf"):
                return ("time", seconds)
        elif typed.isdigit():
            return ("event", int(typed))
    except ValueError:
        pass
    return f"not an event number or a time like 12.5s: {inert(text.strip())!r}"


def cursor_for(state: StreamState, position: tuple[str, float]) -> int:
    """The cursor for a parsed position (see `parse_position`)."""
    kind, value = position
    if kind == "time":
        return event_at_time(state, value)
    return cursor_for_event(state, int(value))
