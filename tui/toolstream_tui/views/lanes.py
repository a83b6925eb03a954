"""The lanes: one per call, its title, notes and fields at the cursor, and how the
column's height is shared between them. Views are frozen and comparable; they
hold what is drawn, never the stream's text itself (buffers are read from the
core's pieces when drawn)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.state import CallSlot, StreamState
from ..core.upto import (
    is_settled,
)
from ..core.visible import inert
from .words import plural

FIELDS_SHOWN = 12  # a lane's fields line has room for a dozen at most; all are in the report


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
    lines: bool = False  # the buffer is `path = value` lines, one a piece (Vertex AI)

    @property
    def counter(self) -> str:
        counts = f"{plural(self.fragments, 'fragment')} · {plural(self.chars, 'char')}"
        return f"{counts} · {self.elapsed:.2f}s"

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
    more_fields = max(0, clock.count_upto(chars) - FIELDS_SHOWN)
    elapsed = max(0.0, latest - slot.started_at)

    def view(
        state_text: str,
        tone: str,
        mode: str,
        messages: tuple[str, ...] = (),
        mark: int | None = None,
    ) -> LaneView:
        return LaneView(
            index=slot.index,
            title=lane_title(slot, upto),
            state=state_text,
            tone=tone,
            mode=mode,
            fragments=count,
            chars=chars,
            elapsed=elapsed,
            anomalies=seen,
            messages=messages,
            mark=mark,
            fields=fields,
            more_fields=more_fields,
            lines=slot.in_pieces,
        )

    if not is_settled(slot, upto):
        return view("streaming", "streaming", "preview" if previewing else "raw")
    if slot.parsed and slot.error is None:
        errors = slot.schema_errors
        mode = "raw" if raw else "tree"
        if errors:
            messages = tuple(f"{error.path}: {error.message}" for error in errors)
            return view(plural(len(errors), "schema error"), "schema", mode, messages)
        return view("parsed", "parsed", mode)
    messages = (slot.error,) if slot.error else ()
    if slot.parsed:
        # The error's position is in the text parsed: the buffer shown, unless the
        # server restated the arguments at the end (then there is nothing to mark).
        mark = slot.error_position if slot.final_raw is None else None
        return view("invalid JSON", "failed", "raw", messages, mark)
    return view(state.status.value, "truncated", "raw", messages)


# -- a lane's messages ----------------------------------------------------------------
SQUEEZED_MESSAGE_ROWS = 3  # what a lane short of rows keeps for its messages, before its content


def lane_rows(inner: int, content: int, messages: int, fields: bool) -> tuple[int, bool]:
    """How a lane shares the `inner` rows inside its frame: the rows for its
    messages (which want `messages`), and whether its fields line shows. The
    counter line always shows and the content (buffer or tree, wanting `content`)
    gets a row at least; the messages get all they want when everything fits,
    else what the content leaves them and at least SQUEEZED_MESSAGE_ROWS, for
    which the fields line makes way."""

    def share(fields_row: bool) -> int:
        room = inner - 1 - fields_row  # the counter's row, and the fields'
        leftover = room - max(1, content)
        return max(0, min(messages, room - 1, max(leftover, SQUEEZED_MESSAGE_ROWS)))

    rows = share(fields)
    if fields and rows < min(messages, SQUEEZED_MESSAGE_ROWS) and share(False) > rows:
        return share(False), False
    return rows, fields


def messages_listed(heights: list[int], rows: int) -> tuple[int, int]:
    """How a lane lists messages of `heights` rows each in `rows` rows: how many
    whole, and how many rows of the next one, cut. All of them when they fit;
    otherwise the last row is kept for `more_messages_note`, and the first message
    is cut when not even it fits whole (a lone message is cut to all the rows)."""
    if sum(heights) <= rows:
        return len(heights), 0
    if len(heights) == 1:
        return 0, rows
    room, whole = rows - 1, 0
    while room >= heights[whole]:
        room -= heights[whole]
        whole += 1
    return whole, (max(0, room) if whole == 0 else 0)


def more_messages_note(listed: int, count: int, tone: str) -> str:
    """The row under a lane's messages when only `listed` of `count` are shown: how
    many more, and where all of them are (the report, which `e` writes)."""
    noun = "schema error" if tone == "schema" else "error"
    more = "more " if listed else ""
    return f"… {plural(count - listed, more + noun)} (e: report)"


def call_row(state: StreamState, slot: CallSlot, upto: int) -> tuple[str, str]:
    """One line of the compact list of calls, and its tone."""
    view = lane_view(state, slot, upto)
    return f"{view.title} · {view.subtitle} · {plural(view.chars, 'char')}", view.tone


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
