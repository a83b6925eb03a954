"""The stream as it stood after wire event N, answered from the stamps the state
keeps (see `state`), never by reading the stream again: the report cut there,
where to jump (anomalies, the moments calls started, got their name, settled),
and which event had arrived by a given time.

A cursor is a wire event number: 0 before the first event, `state.events` after
the last, and `state.end_event` (the event after the last) once the stream's
end is known — the only cursor at which the stream is over.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from .events import Channel
from .report import build_report, call_report, printable_pieces
from .state import CallSlot, StreamState
from .surrogates import rejoin_pairs
from .timing import reads_upto, stream_timing

STREAMING = "streaming"


def is_over(state: StreamState, upto: int) -> bool:
    """Has a display at wire event `upto` reached the end of the stream?"""
    return state.end_event is not None and upto >= state.end_event


def last_cursor(state: StreamState) -> int:
    """The furthest cursor: the end once it is known, else the last event."""
    return state.end_event if state.end_event is not None else state.events


def cursor_for_event(state: StreamState, number: int) -> int:
    """The cursor showing the stream after event `number`: past the last event,
    the stream as it ended."""
    return last_cursor(state) if number >= state.events else max(0, number)


def event_at_time(state: StreamState, seconds: float) -> int:
    """The cursor showing what had arrived `seconds` after the request: the last
    event completed by a read at or before then."""
    read = bisect_right(state.read_times, seconds)
    if read >= len(state.read_times) and state.read_times:
        return last_cursor(state)
    return state.read_events[read - 1] if read else 0


def shown_event(state: StreamState, upto: int) -> int:
    """The event number a person is told for cursor `upto` (the end is the last event)."""
    return min(upto, state.events)


def bytes_upto(state: StreamState, upto: int) -> int:
    """Bytes of the reads that had arrived by wire event `upto`."""
    count = reads_upto(state, upto)
    if count >= len(state.read_bytes):
        return state.bytes_received
    return state.read_bytes[count - 1] if count else 0


def is_settled(slot: CallSlot, upto: int) -> bool:
    """Was the call parsed (or found unfinished at the end) by wire event `upto`?"""
    return slot.settled_event is not None and slot.settled_event <= upto


# -- where to jump ----------------------------------------------------------------------
def next_anomaly(state: StreamState, upto: int) -> int | None:
    """The first event after `upto` at which an anomaly was seen (a first sighting
    or a repeat), None if none."""
    found = (anomaly.stamps[bisect_right(anomaly.stamps, upto)] for anomaly in _later(state, upto))
    return min(found, default=None)


def previous_anomaly(state: StreamState, upto: int) -> int | None:
    """The last event before `upto` at which an anomaly was seen, None if none."""
    found = (
        anomaly.stamps[seen - 1]
        for anomaly in state.anomalies
        if (seen := bisect_left(anomaly.stamps, upto))
    )
    return max(found, default=None)


def _later(state: StreamState, upto: int) -> list[Any]:
    return [anomaly for anomaly in state.anomalies if anomaly.stamps[-1] > upto]


def call_moments(slot: CallSlot) -> tuple[int, ...]:
    """The events at which a call started, got its name and settled."""
    moments = (slot.started_event, slot.name_event, slot.settled_event)
    return tuple(moment for moment in moments if moment is not None)


def next_call_moment(state: StreamState, upto: int, index: int | None = None) -> int | None:
    """The first event after `upto` at which a call (call `index` alone, if given)
    started, got its name or settled."""
    later = (moment for slot in _slots(state, index) for moment in call_moments(slot))
    return min((moment for moment in later if moment > upto), default=None)


def previous_call_moment(state: StreamState, upto: int, index: int | None = None) -> int | None:
    earlier = (moment for slot in _slots(state, index) for moment in call_moments(slot))
    return max((moment for moment in earlier if moment < upto), default=None)


def _slots(state: StreamState, index: int | None) -> list[CallSlot]:
    if index is None:
        return list(state.calls.values())
    slot = state.calls.get(index)
    return [] if slot is None else [slot]


# -- the report cut at a cursor -----------------------------------------------------------
def as_of(state: StreamState, upto: int) -> dict[str, Any]:
    """What a report cut at `upto` says about where it was cut."""
    shown = shown_event(state, upto)
    return {
        "event": shown,
        "events": state.events,
        "time": None if (t := state.event_time(shown)) is None else round(t, 3),
        "ended": is_over(state, upto),
    }


def report_upto(state: StreamState, upto: int) -> dict[str, Any]:
    """The report as it stood after wire event `upto`, marked `as_of` that event.
    At the end it is the whole report; before it, the stream is still streaming:
    what arrives or is decided at the end (a body, an error, the trailing bytes,
    calls left unfinished) is not known yet, and a call is parsed only once it
    settled."""
    if is_over(state, upto):
        return {"as_of": as_of(state, upto), **build_report(state)}
    finished = state.finish_event is not None and state.finish_event <= upto
    text = state.channel_text(Channel.CONTENT, upto)
    report: dict[str, Any] = {
        "as_of": as_of(state, upto),
        "source": state.source,
        "dialect": dialect_upto(state, upto),
        "status": STREAMING,
        "finish_reason": state.finish_reason if (state.finish_reason_event or 0) <= upto else None,
        "text": state.final_text if finished and state.final_text is not None else text,
    }
    if finished and state.final_text is not None and state.final_text != text:
        report["text_streamed"] = text
    calls = sorted(index for index, slot in state.calls.items() if slot.started_event <= upto)
    report |= {
        "reasoning": state.channel_text(Channel.REASONING, upto),
        "refusal": state.channel_text(Channel.REFUSAL, upto),
        "declared_tools": None if state.tools is None else list(state.tools.schemas),
        "tool_calls": [call_report_upto(state.calls[index], upto) for index in calls],
        "anomalies": anomalies_upto(state, upto),
        "events": shown_event(state, upto),
        "bytes": bytes_upto(state, upto),
        "http_status": state.http_status,
        "body": None,
        "body_chars": None,
        "trailing": "",
        "trailing_chars": 0,
        "error": state.error if (state.error_event or 0) <= upto else None,
        "timing": stream_timing(state, upto).as_dict(),
    }
    return report


def dialect_upto(state: StreamState, upto: int) -> str:
    """The dialect as known after wire event `upto` (given, or detected by then)."""
    known = state.dialect_event is not None and state.dialect_event <= upto
    return state.dialect if known else "detecting"


def report_upto_json(state: StreamState, upto: int) -> str:
    """`report_upto` as the headless report prints it."""
    return "".join(printable_pieces(report_upto(state, upto)))


def anomalies_upto(state: StreamState, upto: int) -> list[dict[str, Any]]:
    """The anomalies seen by wire event `upto`, each counted as it was then."""
    return [
        {**anomaly.as_dict(), "count": anomaly.count_upto(upto)}
        for anomaly in state.anomalies
        if anomaly.stamps[0] <= upto
    ]


def call_report_upto(slot: CallSlot, upto: int) -> dict[str, Any]:
    """A call's report as it stood after wire event `upto`: before it settled, its
    fragments so far and no verdict."""
    if is_settled(slot, upto):
        return call_report(slot)
    report = call_report_unsettled(slot)
    pieces = slot.pieces
    count = pieces.count_upto(upto)
    named = slot.name_event is not None and slot.name_event <= upto
    identified = slot.id_event is not None and slot.id_event <= upto
    report |= {
        "id": slot.call_id if identified else None,
        "name": slot.name if named else None,
        "arguments_raw": rejoin_pairs(pieces.slice(0, pieces.ends[count - 1] if count else 0)),
        "fragments": count,
    }
    return report


def call_report_unsettled(slot: CallSlot) -> dict[str, Any]:
    """`call_report`'s keys in its order, for a call not settled yet (its buffer is
    not joined here: the caller sets what had arrived)."""
    report = call_report(_unsettled_twin(slot))
    report.pop("arguments_streamed", None)
    return report


def _unsettled_twin(slot: CallSlot) -> CallSlot:
    """A call with `slot`'s identity and no fragments or verdict."""
    return CallSlot(
        index=slot.index,
        call_id=slot.call_id,
        name=slot.name,
        started_at=slot.started_at,
        item_id=slot.item_id,
        caller=slot.caller,
        started_in=slot.started_in,
        started_event=slot.started_event,
    )
