"""When things arrived: the stream's milestones, its stalls, and per call the
start, each fragment, the gaps between them and when each top-level field of
the arguments became known. All times are seconds since the request was sent
(for a replay: as recorded)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

from .events import Channel
from .fields import FieldTiming
from .pieces import PieceTimes
from .records import FrozenRecord
from .state import CHANNEL_CODES, CallSlot, StreamState

MAX_GAPS = 100  # per list, so a report stays readable on a stream that limps
CONTENT_CODE = CHANNEL_CODES[Channel.CONTENT]


class Gap(FrozenRecord):
    __slots__ = ("after", "seconds", "start")

    def __init__(self, start: float, seconds: float, after: int) -> None:
        self.start = start
        self.seconds = seconds
        self.after = after  # the read (stream) or fragment (call) the silence followed, from 1

    def as_dict(self) -> dict[str, Any]:
        return {"after": self.after, "start": self.start, "seconds": self.seconds}


class TextRate(FrozenRecord):
    """Content text: deltas and characters, and deltas per second between the
    first and the last (a provider sends about one token per delta)."""

    __slots__ = ("chars", "deltas", "deltas_per_second", "seconds")

    def __init__(
        self, deltas: int, chars: int, seconds: float | None, deltas_per_second: float | None
    ) -> None:
        self.deltas = deltas
        self.chars = chars
        self.seconds = seconds  # from the first delta to the last
        # to a tenth; None under two deltas or no time between
        self.deltas_per_second = deltas_per_second

    def as_dict(self) -> dict[str, Any]:
        return {
            "deltas": self.deltas,
            "chars": self.chars,
            "seconds": self.seconds,
            "deltas_per_second": self.deltas_per_second,
        }


class CallTiming(FrozenRecord):
    """One call: when it started and was named, its fragments and the silences
    between them, and when each top-level field of its arguments became known."""

    __slots__ = (
        "fields",
        "first_fragment",
        "first_usable_field",
        "fragments",
        "gaps",
        "gaps_total",
        "index",
        "last_fragment",
        "name",
        "named",
        "started",
    )

    def __init__(
        self,
        index: int,
        name: str | None,
        started: float,
        named: float | None,
        first_fragment: float | None,
        last_fragment: float | None,
        fragments: int,
        gaps: tuple[Gap, ...],
        gaps_total: int,
        fields: tuple[FieldTiming, ...],
        first_usable_field: float | None,
    ) -> None:
        self.index = index
        self.name = name
        self.started = started
        self.named = named
        self.first_fragment = first_fragment
        self.last_fragment = last_fragment
        self.fragments = fragments
        self.gaps = gaps  # the first MAX_GAPS silences over the stall threshold
        self.gaps_total = gaps_total
        self.fields = fields
        self.first_usable_field = first_usable_field  # the first field whose value was complete

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "started": self.started,
            "named": self.named,
            "first_fragment": self.first_fragment,
            "last_fragment": self.last_fragment,
            "fragments": self.fragments,
            "gaps": [gap.as_dict() for gap in self.gaps],
            "gaps_total": self.gaps_total,
            "fields": [field.as_dict() for field in self.fields],
            "first_usable_field": self.first_usable_field,
        }


class StreamTiming(FrozenRecord):
    """The stream's milestones, its stalls and every call's timing (in index
    order). Every time is to the millisecond, so the report and the screen
    state the same numbers."""

    __slots__ = (
        "calls",
        "finish",
        "first_argument_byte",
        "first_byte",
        "first_text",
        "first_tool_name",
        "first_usable_field",
        "last_byte",
        "response",
        "stall_threshold",
        "stalls",
        "stalls_total",
        "text",
    )

    def __init__(
        self,
        *,
        response: float | None,  # the response head
        first_byte: float | None,
        first_text: float | None,
        first_tool_name: float | None,
        first_argument_byte: float | None,
        first_usable_field: float | None,
        finish: float | None,
        last_byte: float | None,
        text: TextRate,
        stall_threshold: float,
        stalls: tuple[Gap, ...],  # the first MAX_GAPS silences between reads over the threshold
        stalls_total: int,
        calls: tuple[CallTiming, ...],
    ) -> None:
        self.response = response
        self.first_byte = first_byte
        self.first_text = first_text
        self.first_tool_name = first_tool_name
        self.first_argument_byte = first_argument_byte
        self.first_usable_field = first_usable_field
        self.finish = finish
        self.last_byte = last_byte
        self.text = text
        self.stall_threshold = stall_threshold
        self.stalls = stalls
        self.stalls_total = stalls_total
        self.calls = calls

    def as_dict(self) -> dict[str, Any]:
        """The report's `timing` section."""
        return {
            "response": self.response,
            "first_byte": self.first_byte,
            "first_text": self.first_text,
            "first_tool_name": self.first_tool_name,
            "first_argument_byte": self.first_argument_byte,
            "first_usable_field": self.first_usable_field,
            "finish": self.finish,
            "last_byte": self.last_byte,
            "text": self.text.as_dict(),
            "stall_threshold": self.stall_threshold,
            "stalls": [stall.as_dict() for stall in self.stalls],
            "stalls_total": self.stalls_total,
            "calls": [call.as_dict() for call in self.calls],
        }


def gaps(times: Sequence[float], threshold: float, start: float | None = None) -> list[Gap]:
    """Silences longer than `threshold` between successive times (and before the
    first one, from `start`). A call's pieces are looked at run by run (the pieces
    of one read share its time, so no silence can end inside a run): 48k pieces in
    155 reads are 155 steps."""
    numbered = times.runs() if type(times) is PieceTimes and threshold >= 0 else enumerate(times)
    found: list[Gap] = []
    previous = start
    for number, t in numbered:
        if previous is not None and t - previous > threshold:
            found.append(Gap(previous, t - previous, number))
        previous = t
    return found


def call_timing(slot: CallSlot, threshold: float, upto: int | None = None) -> CallTiming:
    """The call's timing, as it stood after wire event `upto` (at the end by default)."""
    pieces = slot.pieces
    count = len(pieces) if upto is None else pieces.count_upto(upto)
    times = pieces.times[:count] if count < len(pieces) else pieces.times
    silences = gaps(times, threshold, slot.started_at)
    chars = None if upto is None else (pieces.ends[count - 1] if count else 0)
    fields = tuple(
        FieldTiming(field.key, _ms(field.named), _ms_or_none(field.complete))
        for field in slot.fields().timings(None, chars)
    )
    named = upto is None or (slot.name_event is not None and slot.name_event <= upto)
    return CallTiming(
        index=slot.index,
        name=slot.name if named else None,
        started=_ms(slot.started_at),
        named=_ms_or_none(slot.named_at) if named else None,
        first_fragment=_ms_or_none(_first(times)),
        last_fragment=_ms_or_none(_last(times)),
        fragments=len(times),
        gaps=_listed(silences),
        gaps_total=len(silences),
        fields=fields,
        first_usable_field=_earliest(field.complete for field in fields),
    )


def text_rate(state: StreamState, upto: int | None = None) -> TextRate:
    if upto is None:
        first, last, deltas = state.first_text_at, state.last_text_at, state.text_deltas
    else:
        first, last, deltas = content_times_upto(state, upto)
    seconds = (last - first) if first is not None and last is not None else None
    rate = (deltas - 1) / seconds if seconds and deltas > 1 else None
    text = state.text if upto is None else state.channel_text(Channel.CONTENT, upto)
    return TextRate(
        deltas=deltas,
        chars=len(text),
        seconds=_ms_or_none(seconds),
        deltas_per_second=None if rate is None else round(rate, 1),
    )


def content_times_upto(state: StreamState, upto: int) -> tuple[float | None, float | None, int]:
    """The first and the last content deltas' arrival times, and how many there were,
    among the text pieces that had arrived by wire event `upto`."""
    count = state.text_pieces.count_upto(upto)
    codes = state.text_channels[:count]
    deltas = codes.count(CONTENT_CODE)
    if not deltas:
        return None, None, 0
    times = state.text_pieces.times
    first = codes.index(CONTENT_CODE)
    codes.reverse()
    last = count - 1 - codes.index(CONTENT_CODE)
    return times[first], times[last], deltas


def reads_upto(state: StreamState, upto: int | None) -> int:
    """How many reads had arrived by wire event `upto`: those up to the one that
    completed it (all of them once the stream is over, or with no `upto`)."""
    events, count = state.read_events, len(state.read_events)
    if upto is None or (state.end_event is not None and upto >= state.end_event):
        return count
    if upto <= 0:
        return 0
    return min(count, bisect_left(events, upto) + 1)


def stream_timing(state: StreamState, upto: int | None = None) -> StreamTiming:
    """The stream's timing, as it stood after wire event `upto` (at the end by
    default): what had not arrived by then is None, or left out."""
    threshold = state.stall_threshold
    indexes = sorted(
        index for index, slot in state.calls.items() if upto is None or slot.started_event <= upto
    )
    calls = tuple(call_timing(state.calls[index], threshold, upto) for index in indexes)
    count = reads_upto(state, upto)
    reads = state.read_times[:count] if count < len(state.read_times) else state.read_times
    stalls = gaps(reads, threshold, state.response_at)
    finished = upto is None or (state.finish_event is not None and state.finish_event <= upto)
    text = text_rate(state, upto)
    return StreamTiming(
        response=_ms_or_none(state.response_at),
        first_byte=_ms_or_none(_first(reads)),
        first_text=_ms_or_none(state.first_text_at if upto is None else _first_text(state, upto)),
        first_tool_name=_earliest(call.named for call in calls),
        first_argument_byte=_earliest(call.first_fragment for call in calls),
        first_usable_field=_earliest(call.first_usable_field for call in calls),
        finish=_ms_or_none(state.finish_at) if finished else None,
        last_byte=_ms_or_none(_last(reads)),
        text=text,
        stall_threshold=threshold,
        stalls=_listed(stalls),
        stalls_total=len(stalls),
        calls=calls,
    )


def _first_text(state: StreamState, upto: int) -> float | None:
    return content_times_upto(state, upto)[0]


def _listed(found: list[Gap]) -> tuple[Gap, ...]:
    """The first MAX_GAPS of the silences found, to the millisecond."""
    return tuple(Gap(_ms(gap.start), _ms(gap.seconds), gap.after) for gap in found[:MAX_GAPS])


def _first(times: Sequence[float]) -> float | None:
    return times[0] if times else None


def _last(times: Sequence[float]) -> float | None:
    return times[-1] if times else None


def _earliest(times: Iterable[float | None]) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _ms(t: float) -> float:
    """Milliseconds are what a person reads; more digits only add noise."""
    return round(t, 3)


def _ms_or_none(t: float | None) -> float | None:
    return None if t is None else _ms(t)
