"""Every wire event as received, up to the display cursor: one line each,
numbered, with its arrival time (an SSE event, an NDJSON line, a JSON-array
element, an event-stream frame with its event type; SSE comments too). By
default a line shows the part of the event that changes (the delta); `v` shows
the whole envelope.

The lines come from the watch's `WireEvents`, which decodes the tape again only
while the log is open, a batch per display tick until it has caught up, so the
log fills on its own while the rest of the screen stands still, and keys stay
answered between batches. A line is read and formatted only when it scrolls
into view, so the log costs nothing while hidden and opening it on two million
events costs what the screen shows.
"""

from __future__ import annotations

import asyncio

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from ...core.visible import inert
from ...core.wire import essence
from ...watching.wire_events import WireEvents, WireLine
from .content_size import set_content_size

PREFIX_WIDTH = 17  # "#12345  1234.567s "
INDEX_BUDGET = 0.008  # seconds of decoding per batch, so keys stay answered
INDEX_PAUSE = 1 / 30  # seconds between two batches: the display tick's


def line_parts(line: WireLine, envelope: bool) -> tuple[str, str, str]:
    """The line for one event or comment: its prefix, its text, and the style
    name of the text."""
    if line.comment:
        return f"{'':7} {line.t:8.3f}s ", f":{inert(line.data)}", "comment"
    fields = f"event: {inert(line.event)} " if line.event else ""
    data = line.data if envelope else essence(line.data)
    return f"#{line.number:<6} {line.t:8.3f}s ", f"{fields}{inert(data)}", "data"


class RawLog(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"raw-log--number", "raw-log--data", "raw-log--comment"}
    DEFAULT_CSS = """
    RawLog { height: 12; border: round $secondary; background: $surface; }
    RawLog > .raw-log--number { color: $accent; }
    RawLog > .raw-log--data { color: $text; }
    RawLog > .raw-log--comment { color: $text-muted; text-style: italic; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.wire: WireEvents | None = None
        self.envelope = False
        self.trailing = ""  # an unterminated last event, once the stream is over
        self.lines = 0
        # What the screen asked for last: the cursor, whether the tape is complete,
        # the trailing text (the batches after it show the same)
        self._asked = (0, False, "")
        self._next_batch: Timer | None = None
        # Set when a batch found all the tape held decoded (tests wait on it)
        self.caught_up = asyncio.Event()
        self._title()

    def show(self, wire: WireEvents, upto: int, *, complete: bool, trailing: str) -> None:
        """The lines that had arrived by wire event `upto`, decoding more of the
        tape if needed, a batch now and the rest on the next ticks. `complete`:
        the tape will not grow; `trailing`: the text of an event that never
        ended, shown last once the stream is over."""
        if wire is not self.wire:
            self.wire, self.lines, self.trailing = wire, 0, ""
            self.caught_up.clear()
        self._asked = (upto, complete, trailing)
        if self._next_batch is None:
            self._decode_batch()
        else:
            self._show_lines()

    def _decode_batch(self) -> None:
        """Decode a batch of the tape and show the lines; while the tape holds
        more, the next batch is due in a tick (a hidden log decodes nothing)."""
        self._next_batch = None
        wire = self.wire
        if wire is None or not self.display:
            return
        _, complete, _ = self._asked
        if wire.index(INDEX_BUDGET, complete=complete):
            self.caught_up.set()
        else:
            self.caught_up.clear()
            self._next_batch = self.set_timer(INDEX_PAUSE, self._decode_batch)
        self._show_lines()

    def _show_lines(self) -> None:
        wire = self.wire
        if wire is None:
            return
        upto, _, trailing = self._asked
        lines = wire.lines_upto(upto)
        if (lines, trailing) == (self.lines, self.trailing):
            return
        self.lines, self.trailing = lines, trailing
        self._title()
        size = Size(PREFIX_WIDTH + wire.widest + 16, lines + bool(trailing))
        set_content_size(self, size, follow=self.is_vertical_scroll_end)
        self.refresh()

    def toggle_envelope(self) -> None:
        self.envelope = not self.envelope
        self._title()
        self.refresh()

    def _title(self) -> None:
        what = "whole events" if self.envelope else "deltas · v: whole events"
        self.border_title = Text(f"raw events · {what}")

    def plain_lines(self) -> list[str]:
        if self.wire is None:
            return []
        lines = [
            "".join(line_parts(self.wire.line(n), self.envelope)[:2]) for n in range(self.lines)
        ]
        if self.trailing:
            lines.append(f"{'unterminated':<17}{inert(self.trailing)}")
        return lines

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        base = self.rich_style
        width = self.size.width
        if self.wire is None or number > self.lines or (number == self.lines and not self.trailing):
            return Strip.blank(width, base)
        if number == self.lines:
            prefix, text, kind = f"{'unterminated':<17}", inert(self.trailing), "comment"
        else:
            prefix, text, kind = line_parts(self.wire.line(number), self.envelope)
        segments = [
            Segment(prefix, base + self._style("number")),
            Segment(text, base + self._style(kind)),
        ]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"raw-log--{name}")
