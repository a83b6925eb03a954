"""The status bar at the cursor, its parts fitted to the terminal's width."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.state import StreamState
from ..core.upto import (
    bytes_upto,
    dialect_upto,
    is_over,
    shown_event,
)
from ..core.visible import inert
from .cursor import CallCounts, anomalies_upto, call_counts
from .words import human_bytes, plural, shortened


# -- the status bar ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StatusPart:
    text: str
    style: str  # a name the status bar turns into a style ("" for none)


@dataclass(frozen=True, slots=True)
class StatusView:
    source: str
    dialect: str
    state: str
    paused: bool
    shown_events: int
    received_events: int
    received_bytes: int
    first_event: float | None
    elapsed: float
    waiting: float | None  # seconds without data, when that is a stall worth saying
    anomalies: int
    failed_calls: int
    rejected_calls: int

    @property
    def position(self) -> str:
        """Where the display cursor is: `at event 31,204 of 217,383 · 4.81 s`."""
        return f"at event {self.shown_events:,} of {self.received_events:,} · {self.elapsed:.2f} s"

    def parts(self) -> list[StatusPart]:
        """Most important first: a narrow terminal cuts the status from the right."""
        parts = [StatusPart(self.state, f"state-{self.state}")]
        if self.paused:
            parts.append(StatusPart("PAUSED", "paused"))
            parts.append(StatusPart(self.position, "position"))
        if self.anomalies:
            text = f"⚠ {plural(self.anomalies, 'anomaly', 'anomalies')}"
            parts.append(StatusPart(text, "anomalies"))
        else:
            parts.append(StatusPart("no anomalies", "muted"))
        if self.failed_calls:
            parts.append(StatusPart(f"{plural(self.failed_calls, 'call')} not parsed", "bad"))
        if self.rejected_calls:
            text = f"{plural(self.rejected_calls, 'call')} against schema"
            parts.append(StatusPart(text, "warn"))
        if not self.paused:
            parts.append(StatusPart(f"{self.elapsed:.1f}s", ""))
        if self.waiting is not None:
            parts.append(StatusPart(f"no data for {self.waiting:.1f}s", "warn"))
        if not self.paused:
            parts.append(StatusPart(plural(self.received_events, "event"), ""))
        parts.append(StatusPart(human_bytes(self.received_bytes), ""))
        parts.append(StatusPart(self.dialect, ""))
        parts.append(StatusPart(inert(self.source), "source"))
        if self.first_event is not None:
            parts.append(StatusPart(f"first event {self.first_event:.3f}s", ""))
        return parts


MIN_CUT_PART = 8  # a part cut shorter than this says nothing; it is left out


def fit_parts(parts: list[StatusPart], width: int, separator: str = " · ") -> list[StatusPart]:
    """The leading parts that fit in `width` characters; the first that does not
    fit is cut (a source in the middle, so its end shows) if enough would show."""
    kept: list[StatusPart] = []
    used = 0
    for part in parts:
        gap = len(separator) if kept else 0
        if used + gap + len(part.text) <= width:
            kept.append(part)
            used += gap + len(part.text)
            continue
        room = width - used - gap
        if room >= MIN_CUT_PART:
            cut = shortened(part.text, room) if part.style == "source" else part.text[: room - 1]
            kept.append(StatusPart(cut if part.style == "source" else cut + "…", part.style))
        break
    return kept


def status_view(
    state: StreamState,
    upto: int,
    *,
    paused: bool,
    live_elapsed: float,
    quiet: float,
    counts: CallCounts | None = None,
) -> StatusView:
    """The status bar after wire event `upto`. `live_elapsed`: seconds since the
    request by the app's clock (shown while live); `quiet`: seconds since data
    last arrived (a stall, once over the stall threshold); `counts`: the calls at
    `upto`, if already counted."""
    over = is_over(state, upto)
    if over:
        stream_state = state.status.value
    elif state.http_status is None:
        stream_state = "connecting"
    else:
        stream_state = "streaming"
    shown = shown_event(state, upto)
    if over:
        elapsed = state.read_times[-1] if len(state.read_times) else live_elapsed
    elif paused:
        elapsed = state.event_time(shown) or 0.0
    else:
        elapsed = live_elapsed
    waiting = quiet if not over and not paused and quiet > state.stall_threshold else None
    counts = counts or call_counts(state, upto)
    return StatusView(
        source=state.source,
        dialect=dialect_upto(state, upto),
        state=stream_state,
        paused=paused,
        shown_events=shown,
        received_events=state.events,
        received_bytes=bytes_upto(state, upto) if paused else state.bytes_received,
        first_event=state.event_time(1) if shown >= 1 else None,
        elapsed=elapsed,
        waiting=waiting,
        anomalies=anomalies_upto(state, upto),
        failed_calls=counts.failed,
        rejected_calls=counts.rejected,
    )
