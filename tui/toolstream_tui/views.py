"""What each part of the screen shows at the display cursor.

The display cursor is the last wire event shown: live it follows the stream,
paused it stays, a step moves it by one. Everything on screen is a function of
the core's state at the cursor, computed here with no Textual: a widget asks for
its view, compares it with the one it drew, and redraws only when it changed.
Views are frozen and comparable; they hold what is drawn, never the stream's
text itself (buffers are read from the core's pieces when drawn).
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .core.events import Anomaly
from .core.pieces import TextPieces
from .core.state import CallSlot, StreamState
from .core.strict_json import loads
from .core.upto import (
    bytes_upto,
    cursor_for_event,
    dialect_upto,
    event_at_time,
    is_over,
    is_settled,
    last_cursor,
    shown_event,
)
from .core.visible import escaped, inert

if TYPE_CHECKING:
    from .proxy.requests import RequestRecord

FIELDS_SHOWN = 12  # a lane's fields line has room for a dozen at most; all are in the report


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def human_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.2f} MB"


def shortened(text: str, width: int) -> str:
    """Text cut in the middle to `width` characters (a URL, a file path)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    keep = width - 1
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2) :]


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
    return [
        replace(anomaly, count=anomaly.count_upto(upto))
        for anomaly in state.anomalies
        if anomaly.stamps[0] <= upto
    ]


def parsed_upto(slot: CallSlot, upto: int) -> bool:
    return is_settled(slot, upto) and slot.parsed and slot.error is None


# -- a lane ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LaneView:
    index: int
    title: str
    state: str  # what the subtitle says: streaming, parsed, invalid JSON, truncated…
    tone: str  # the lane's border: streaming, parsed, failed, truncated or schema
    mode: str  # what the lane shows: raw, tree or preview
    fragments: int
    chars: int
    elapsed: float  # from the call's start to its latest fragment shown
    anomalies: int
    messages: tuple[str, ...] = ()  # the parse error, or the schema errors
    mark: int | None = None  # the parse error's position in the buffer
    fields: tuple[tuple[str, float | None], ...] = ()  # key, when its value was complete
    more_fields: int = 0

    @property
    def counter(self) -> str:
        return f"{plural(self.fragments, 'fragment')} · {self.chars} chars · {self.elapsed:.2f}s"

    @property
    def subtitle(self) -> str:
        preview = " · preview" if self.mode == "preview" else ""
        badge = f" · ⚠ {self.anomalies}" if self.anomalies else ""
        return f"{self.state}{preview}{badge}"


def lane_title(slot: CallSlot, upto: int) -> str:
    named = slot.name is not None and (slot.name_event or 0) <= upto
    has_id = slot.call_id is not None and (slot.id_event or 0) <= upto
    name = inert(slot.name) if named and slot.name else "?"
    call_id = inert(slot.call_id) if has_id and slot.call_id else "no id"
    item = f" · {inert(slot.item_id)}" if slot.item_id else ""
    return f"#{slot.index} {name} · {call_id}{item}{caller_note(slot)}{arrival_note(slot)}"


def caller_note(slot: CallSlot) -> str:
    """Which tool made the call, when it was not the model itself."""
    caller = slot.caller
    if caller is None or caller.is_direct:
        return ""
    tool_id = f" {inert(caller.tool_id)}" if caller.tool_id else ""
    return f" · by {inert(caller.type or '?')}{tool_id}"


def arrival_note(slot: CallSlot) -> str:
    """Where a call that arrived whole came from (its fragment's event says which one)."""
    return f" · in {inert(slot.started_in)}" if slot.started_in else ""


def lane_view(
    state: StreamState, slot: CallSlot, upto: int, *, raw: bool = False, previewing: bool = False
) -> LaneView:
    """Call `slot` as it stood after wire event `upto`. `raw`: the person asked for
    the raw buffer of a parsed call; `previewing`: streaming calls show a preview."""
    pieces = slot.pieces
    count = pieces.count_upto(upto)
    chars = pieces.ends[count - 1] if count else 0
    latest = pieces.times[count - 1] if count else slot.started_at
    seen = sum(1 for anomaly in state.call_anomalies(slot.index) if anomaly.stamps[0] <= upto)
    clock = slot.fields()
    fields = tuple(
        (inert(field.key), field.complete) for field in clock.timings(FIELDS_SHOWN, chars)
    )
    common = {
        "index": slot.index,
        "title": lane_title(slot, upto),
        "fragments": count,
        "chars": chars,
        "elapsed": max(0.0, latest - slot.started_at),
        "anomalies": seen,
        "fields": fields,
        "more_fields": max(0, clock.count_upto(chars) - FIELDS_SHOWN),
    }
    if not is_settled(slot, upto):
        mode = "preview" if previewing else "raw"
        return LaneView(state="streaming", tone="streaming", mode=mode, **common)
    if slot.parsed and slot.error is None:
        errors = slot.schema_errors
        mode = "raw" if raw else "tree"
        if errors:
            messages = tuple(f"{error.path}: {error.message}" for error in errors)
            state_text = plural(len(errors), "schema error")
            return LaneView(state=state_text, tone="schema", mode=mode, messages=messages, **common)
        return LaneView(state="parsed", tone="parsed", mode=mode, **common)
    messages = (slot.error,) if slot.error else ()
    if slot.parsed:
        # The error's position is in the text parsed: the buffer shown, unless the
        # server restated the arguments at the end (then there is nothing to mark).
        mark = slot.error_position if slot.final_raw is None else None
        return LaneView(
            state="invalid JSON", tone="failed", mode="raw", messages=messages, mark=mark, **common
        )
    return LaneView(
        state=state.status.value, tone="truncated", mode="raw", messages=messages, **common
    )


def call_row(state: StreamState, slot: CallSlot, upto: int) -> tuple[str, str]:
    """One line of the compact list of calls, and its tone."""
    view = lane_view(state, slot, upto)
    return f"{view.title} · {view.subtitle} · {view.chars} chars", view.tone


# -- lane heights -----------------------------------------------------------------------
def lane_heights(needs: list[int], room: int, least: int) -> list[int]:
    """Rows for lanes that need `needs` rows each, in `room` rows: every lane gets
    what it needs if all fit; otherwise every lane gets at least `least` (or what
    it needs, if less) and the rest is shared out so that no lane gets more than
    a lane needing more (the short ones are not squeezed for the long ones)."""
    if sum(needs) <= room:
        return list(needs)
    floors = [min(need, least) for need in needs]
    spare = room - sum(floors)
    if spare <= 0:
        return floors
    cap = _water_level(needs, floors, spare)
    heights = [max(floor, min(need, cap)) for need, floor in zip(needs, floors, strict=True)]
    leftover = room - sum(heights)
    for number, need in enumerate(needs):  # whole rows left by the level: to the first ones
        if leftover <= 0:
            break
        if heights[number] < need:
            heights[number] += 1
            leftover -= 1
    return heights


def _water_level(needs: list[int], floors: list[int], spare: int) -> int:
    """The highest cap such that raising every lane to min(need, cap) fits in `spare`."""
    low, high = 0, max(needs)
    while low < high:
        middle = (low + high + 1) // 2
        cost = sum(
            max(0, min(need, middle) - floor) for need, floor in zip(needs, floors, strict=True)
        )
        if cost <= spare:
            low = middle
        else:
            high = middle - 1
    return low


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


# -- the proxy's request list ---------------------------------------------------------
REQUEST_COLUMNS = (  # title, width (0: what is left), right-aligned
    ("time", 12, False),
    ("request", 0, False),
    ("model", 18, False),
    ("dialect", 16, False),
    ("HTTP", 4, True),
    ("state", 10, False),
    ("calls", 5, True),
    ("anomalies", 9, True),
    ("duration", 8, True),
    ("bytes", 9, True),
)


@dataclass(frozen=True, slots=True)
class RequestRow:
    cells: tuple[str, ...]  # one per REQUEST_COLUMNS entry
    tone: str  # streaming, finished, truncated, error or anomalies


def request_row(record: RequestRecord, now: float) -> RequestRow:
    """One request as the list shows it; `now` (time.monotonic) times a live one."""
    state = record.session.state
    anomalies = len(state.anomalies)
    if record.http_status is None and not record.over:
        stream_state = "waiting"
    else:
        stream_state = state.status.value
    clock = time.strftime("%H:%M:%S", time.localtime(record.started_at))
    millis = int(record.started_at % 1 * 1000)
    request = f"{record.method} {record.path}"
    if why := request_why(record):
        request += f" · {why}"
    cells = (
        f"{clock}.{millis:03d}",
        inert(request),
        inert(record.model or "—"),
        state.dialect,
        "—" if record.http_status is None else str(record.http_status),
        stream_state,
        str(len(state.calls)),
        f"⚠ {anomalies}" if anomalies else "",
        f"{record.elapsed(now):.2f}s",
        human_bytes(state.bytes_received),
    )
    tone = "anomalies" if anomalies and stream_state == "finished" else stream_state
    return RequestRow(cells, tone)


def request_why(record: RequestRecord) -> str:
    """Why a request ended in error or truncated, for its row: the stream's error,
    what the proxy noted (its own 502, a client that left), or else the first
    anomaly's kind."""
    state = record.session.state
    if state.status.value not in ("error", "truncated"):
        return ""
    reasons = [state.error] if state.error else []
    reasons += [note for note in record.notes if note not in reasons]
    if not reasons and state.anomalies:
        reasons.append(state.anomalies[0].kind)
    return " · ".join(reasons)


def column_widths(width: int, gap: int = 1) -> list[int]:
    """The request list's column widths for a line of `width` cells: the fixed ones
    as they are, the request's path whatever is left (at least 12)."""
    fixed = sum(size for _, size, _ in REQUEST_COLUMNS) + gap * (len(REQUEST_COLUMNS) - 1)
    return [size or max(12, width - fixed) for _, size, _ in REQUEST_COLUMNS]


# -- the fragment inspector -------------------------------------------------------------
FRAGMENT_COLUMNS = (  # title, least width, right-aligned; the fragment last, in what is left
    ("#", 1, True),
    ("event", 5, True),
    ("arrived", 7, True),
    ("len", 3, True),
    ("alone", 6, False),
    ("fragment (exact, escaped)", 0, False),
)


def parses_alone(fragment: str) -> bool:
    """Would this fragment parse as JSON by itself? (Almost never — which is why
    fragments are accumulated and parsed once, at the finish.) The same parser as
    the call's own parse, so a call sent whole says it parses here too."""
    try:
        loads(fragment)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class FragmentRow:
    number: int  # from 1
    event: int  # the wire event that carried it
    arrived: float  # seconds since the request
    length: int  # characters
    parses_alone: bool
    text: str  # the fragment as a JSON string literal (see `escaped`)
    cut: bool  # `text` is only its start


class FragmentRows:
    """One call's fragments as the inspector's rows, each made when asked for: the
    inspector draws the rows in view, never all of them, so a call of millions of
    fragments costs what a call of ten does. Whether a fragment parses alone is
    remembered once found (fragments never change; a big one is slow to parse)."""

    def __init__(self, pieces: TextPieces) -> None:
        self.pieces = pieces
        self._alone: dict[int, bool] = {}

    def count_upto(self, upto: int) -> int:
        return self.pieces.count_upto(upto)

    def row(self, number: int, limit: int | None = None) -> FragmentRow:
        """Fragment `number` (from 1). `limit`: at most that many characters of its
        text, which is then the start of the whole (each character is escaped on
        its own, so only what is kept needs escaping)."""
        pieces = self.pieces
        index = number - 1
        fragment = pieces.piece(index)
        alone = self._alone.get(number)
        if alone is None:
            alone = self._alone[number] = parses_alone(fragment)
        if limit is None:
            text, cut = escaped(fragment), False
        else:
            text = escaped(fragment[:limit])
            cut = len(text) > limit  # always so when the fragment is longer than `limit`
            text = text[:limit] if cut else text
        return FragmentRow(
            number, pieces.events[index], pieces.times[index], len(fragment), alone, text, cut
        )

    def widths(self, count: int, width: int, gap: int = 2) -> list[int]:
        """Column widths for the first `count` fragments in `width` cells, found
        without reading them: events and times only grow, and no fragment is longer
        than all of them together."""
        pieces = self.pieces
        last = count - 1
        widest = (
            (len(str(count)), len(str(pieces.events[last])), len(f"{pieces.times[last]:.3f}s"))
            if count
            else (0, 0, 0)
        )
        length = len(str(pieces.ends[last])) if count else 0
        needs = [*widest, length, 0, 0]
        widths = [
            max(least, need) for (_, least, _), need in zip(FRAGMENT_COLUMNS, needs, strict=True)
        ]
        widths[-1] = max(1, width - sum(widths) - gap * (len(widths) - 1))
        return widths


def fragment_cells(row: FragmentRow) -> tuple[str, ...]:
    """The row's cells but the fragment, in FRAGMENT_COLUMNS order."""
    alone = "parses" if row.parses_alone else "no"
    return (str(row.number), str(row.event), f"{row.arrived:.3f}s", str(row.length), alone)


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
        marks = frozenset(
            round(min(anomaly.stamps[0], last) * (width - 1) / last) if last else 0
            for anomaly in state.anomalies
        )
        return ScrubView(at, marks, cursors)
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
