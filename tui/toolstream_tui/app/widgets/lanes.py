"""The column of lanes, one per tool-call index, scrollable past the screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from .lane import CallLane


class LaneColumn(VerticalScroll):
    DEFAULT_CSS = """
    LaneColumn { border: round $primary; padding: 0; }
    LaneColumn > #no-calls { color: $text-muted; padding: 0 1; }
    LaneColumn.-many > CallLane { height: 9; }
    """
    MANY = 3  # more lanes than this get a fixed height and scroll
    MANY_HEIGHT = 9  # keep in step with the CSS above

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = Text("tool calls")
        self.lanes: dict[int, CallLane] = {}
        self.placeholder = Static(Text("no tool calls yet"), id="no-calls")

    def compose(self) -> ComposeResult:
        yield self.placeholder

    def add_lane(self, lane: CallLane) -> None:
        self.lanes[lane.index] = lane
        self.placeholder.display = False
        later = [index for index in self.lanes if index > lane.index]
        before = self.lanes[min(later)] if later else None
        self.mount(lane, before=before)
        self.set_class(len(self.lanes) > self.MANY, "-many")

    def visible(self) -> list[CallLane]:
        """The lanes in view, from the column's own geometry (cheap: it is asked on
        every display tick, and asking the compositor per lane was not)."""
        lanes = self.ordered()
        if len(lanes) <= self.MANY:
            return lanes
        first = int(self.scroll_y) // self.MANY_HEIGHT
        last = (int(self.scroll_y) + self.size.height) // self.MANY_HEIGHT
        return lanes[first : last + 1]

    def mark_ended(self) -> None:
        if not self.lanes:
            self.placeholder.update(Text("no tool calls in this stream"))

    def clear(self) -> None:
        for lane in self.lanes.values():
            lane.remove()
        self.lanes.clear()
        self.placeholder.update(Text("no tool calls yet"))
        self.placeholder.display = True
        self.set_class(False, "-many")

    def ordered(self) -> list[CallLane]:
        return [self.lanes[index] for index in sorted(self.lanes)]
