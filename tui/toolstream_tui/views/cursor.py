"""What the stream holds at the display cursor, for every screen: the calls begun
by then, how many have a name, are parsed or broken, and the anomalies seen."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..core.events import Anomaly
from ..core.state import CallSlot, StreamState
from ..core.upto import (
    is_settled,
)


# -- the stream at the cursor ---------------------------------------------------------
def calls_upto(state: StreamState, upto: int) -> list[int]:
    """The indexes of the calls that had started by wire event `upto`, in order."""
    return sorted(index for index, slot in state.calls.items() if slot.started_event <= upto)


@dataclass(frozen=True, slots=True)
class CallCounts:
    """The calls at a cursor: those started (their indexes, in order), and how many
    of the settled ones did not parse or broke their schema."""

    started: list[int]
    failed: int
    rejected: int


class CallsAt:
    """`CallCounts` at a cursor, counted again only when the cursor or the state
    moved: counting walks every call, and a key on a finished stream of ten
    thousand calls must not."""

    def __init__(self) -> None:
        self._counted_for: tuple[int, int, int, int, bool] | None = None
        self._counts = CallCounts([], 0, 0)

    def at(self, state: StreamState, upto: int) -> CallCounts:
        moved = (id(state), upto, state.events, state.now, state.ended)
        if moved != self._counted_for:
            self._counted_for, self._counts = moved, call_counts(state, upto)
        return self._counts


def call_counts(state: StreamState, upto: int) -> CallCounts:
    failed = rejected = 0
    for slot in state.calls.values():
        if is_settled(slot, upto):
            failed += not (slot.parsed and slot.error is None)
            rejected += bool(slot.schema_errors)
    return CallCounts(calls_upto(state, upto), failed, rejected)


def anomalies_upto(state: StreamState, upto: int) -> int:
    """How many distinct anomalies had been seen by wire event `upto` (they are
    recorded in the order first seen)."""
    return bisect_right(state.anomalies, upto, key=lambda anomaly: anomaly.stamps[0])


def anomalies_seen(state: StreamState, upto: int) -> list[Anomaly]:
    """The anomalies the list shows at wire event `upto`: those seen by then, each
    counted as it was then."""
    return [anomaly.as_counted_at(upto) for anomaly in state.anomalies if anomaly.stamps[0] <= upto]


def parsed_upto(slot: CallSlot, upto: int) -> bool:
    return is_settled(slot, upto) and slot.parsed and slot.error is None
