"""When things arrived: the stream's milestones, its stalls, and per call the
start, each fragment, the gaps between them and when each top-level field of
the arguments became known. All times are seconds since the request was sent
(for a replay: as recorded)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .fields import FieldTiming
from .state import CallSlot, StreamState

MAX_GAPS = 100  # per list, so a report stays readable on a stream that limps


@dataclass(frozen=True, slots=True)
class Gap:
    start: float
    seconds: float
    after: int  # the read (stream) or fragment (call) the silence followed, from 1

    def as_dict(self) -> dict[str, Any]:
        return {"after": self.after, "start": _r(self.start), "seconds": _r(self.seconds)}


def gaps(times: Sequence[float], threshold: float, start: float | None = None) -> list[Gap]:
    """Silences longer than `threshold` between successive times (and before the
    first one, from `start`)."""
    found: list[Gap] = []
    previous = start
    for number, t in enumerate(times):
        if previous is not None and t - previous > threshold:
            found.append(Gap(previous, t - previous, number))
        previous = t
    return found


def field_timings(slot: CallSlot) -> list[FieldTiming]:
    return slot.fields().timings()


def call_timing(slot: CallSlot, threshold: float) -> dict[str, Any]:
    times = slot.pieces.times
    silences = gaps(times, threshold, slot.started_at)
    fields = field_timings(slot)
    return {
        "index": slot.index,
        "name": slot.name,
        "started": _r(slot.started_at),
        "named": _r(slot.named_at),
        "first_fragment": _r(times[0]) if times else None,
        "last_fragment": _r(times[-1]) if times else None,
        "fragments": len(times),
        "gaps": [gap.as_dict() for gap in silences[:MAX_GAPS]],
        "gaps_total": len(silences),
        "fields": [
            {"key": field.key, "named": _r(field.named), "complete": _r(field.complete)}
            for field in fields
        ],
        "first_usable_field": _r(_earliest(field.complete for field in fields)),
    }


def text_rate(state: StreamState) -> dict[str, Any]:
    """Content text: deltas and characters, and deltas per second between the
    first and the last (a provider sends about one token per delta)."""
    first, last = state.first_text_at, state.last_text_at
    seconds = (last - first) if first is not None and last is not None else None
    rate = (state.text_deltas - 1) / seconds if seconds and state.text_deltas > 1 else None
    return {
        "deltas": state.text_deltas,
        "chars": len(state.text),
        "seconds": _r(seconds),
        "deltas_per_second": None if rate is None else round(rate, 1),
    }


def stream_timing(state: StreamState) -> dict[str, Any]:
    threshold = state.stall_threshold
    slots = [state.calls[index] for index in sorted(state.calls)]
    reads = state.read_times
    stalls = gaps(reads, threshold, state.response_at)
    calls = [call_timing(slot, threshold) for slot in slots]
    return {
        "response": _r(state.response_at),
        "first_byte": _r(reads[0]) if reads else None,
        "first_text": _r(state.first_text_at),
        "first_tool_name": _r(_earliest(slot.named_at for slot in slots)),
        "first_argument_byte": _r(_earliest(_first(slot.pieces.times) for slot in slots)),
        "first_usable_field": _earliest(call["first_usable_field"] for call in calls),
        "finish": _r(state.finish_at),
        "last_byte": _r(reads[-1]) if reads else None,
        "text": text_rate(state),
        "stall_threshold": threshold,
        "stalls": [stall.as_dict() for stall in stalls[:MAX_GAPS]],
        "stalls_total": len(stalls),
        "calls": calls,
    }


def _first(times: Sequence[float]) -> float | None:
    return times[0] if times else None


def _earliest(times: Any) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _r(t: float | None) -> float | None:
    """Milliseconds are what a person reads; more digits only add noise."""
    return None if t is None else round(t, 3)
