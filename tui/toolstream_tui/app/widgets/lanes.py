"""The tool calls: a lane for each call in view, and, when there are more calls
than fit, a compact list of every call above them that jumps between them.

Lanes are virtual: only the calls in the window are widgets, so ten thousand
parallel calls cost what a screenful does. The window holds as many lanes as fit
at their least height and always shows the selected call; lanes get the rows
their content needs when all fit, and share the rows fairly when not, so every
lane's header stays in view.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Vertical
from textual.css.scalar import Scalar
from textual.events import Click, DescendantBlur, DescendantFocus, MouseScrollDown, MouseScrollUp
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from ...core.state import CallSlot, StreamState
from ...core.visible import inert
from ...views.lanes import LaneView, lane_heights
from .content_size import set_content_size
from .lane import LEAST_ROWS, CallLane

LIST_ROWS = 6  # the compact list's height when it is shown (less in a short terminal)
WINDOW_LANE_ROWS = 8  # with more calls than fit, a lane's share: frame, 4 lines, fields, counter
NO_STYLE = Style()
SELECTED = Style(reverse=True)
TONE_STYLES = {
    "parsed": Style(color="green"),
    "failed": Style(color="red"),
    "truncated": Style(color="red"),
    "schema": Style(color="yellow"),
}


class CallList(ScrollView, can_focus=False):
    """One line per call, drawn only when in view: the calls in the window are
    marked, the selected one highlighted; a click selects."""

    DEFAULT_CSS = """
    CallList {
        height: 6; border-bottom: solid $secondary; scrollbar-gutter: stable; overflow-x: hidden;
    }
    """

    class Picked(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.indexes: list[int] = []
        self.window: range = range(0)
        self.selected: int | None = None
        self.row: Callable[[int], tuple[str, str]] = lambda index: ("", "")
        self._drawn: tuple[object, ...] = ()

    def show(
        self,
        indexes: list[int],
        window: range,
        selected: int | None,
        row: Callable[[int], tuple[str, str]],
        stamp: object,
    ) -> None:
        """`row(index)`: a call's line and tone; `stamp` changes when any row may have."""
        self.indexes, self.window, self.selected, self.row = indexes, window, selected, row
        if self._drawn == (len(indexes), window, selected, stamp):
            return
        self._drawn = (len(indexes), window, selected, stamp)
        set_content_size(self, Size(self.size.width, len(indexes)))
        if selected in indexes:
            position = indexes.index(selected)
            top, height = int(self.scroll_y), max(1, self.size.height)
            if not top <= position < top + height:
                self.scroll_to(y=max(0, position - height // 2), animate=False, immediate=True)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        number = int(self.scroll_y) + y
        width = self.size.width
        base = self.rich_style
        if number >= len(self.indexes):
            return Strip.blank(width, base)
        index = self.indexes[number]
        text, tone = self.row(index)
        style = base + TONE_STYLES.get(tone, NO_STYLE)
        if index == self.selected:
            style += SELECTED
        marker = "▌" if number in self.window else " "
        return Strip([Segment(marker, base), Segment(inert(text), style)]).crop_extend(
            0, width, base
        )

    def on_click(self, event: Click) -> None:
        number = int(self.scroll_y) + event.y
        if 0 <= number < len(self.indexes):
            self.post_message(self.Picked(self.indexes[number]))


class LaneColumn(Vertical, can_focus=True):
    """The calls' lanes; its frame shows when it or anything in it has focus."""

    COMPONENT_CLASSES = {"lane-column--focused"}
    DEFAULT_CSS = """
    LaneColumn { border: round $primary; padding: 0; }
    LaneColumn > .lane-column--focused { color: $accent; }
    LaneColumn > #no-calls { color: $text-muted; padding: 0 1; }
    LaneColumn > #deck { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = Text("tool calls")
        self.placeholder = Static(Text("no tool calls yet"), id="no-calls")
        self.call_list = CallList(id="call-list")
        self.call_list.display = False
        self.deck = Vertical(id="deck")
        self.lanes: dict[int, CallLane] = {}  # the lanes in the window, by call index
        # Lanes out of use, hidden (the display cursor went back before the calls
        # began): shown again for the calls that come back, not composed anew.
        self.idle: list[CallLane] = []
        self.indexes: list[int] = []  # the calls shown, in order
        self.first = 0  # position of the window's first call in `indexes`
        self._sized_for: tuple[int, dict[int, int]] = (0, {})  # rows, what each lane wanted

    def compose(self) -> ComposeResult:
        yield self.placeholder
        yield self.call_list
        yield self.deck

    def watch_has_focus(self, has_focus: bool) -> None:
        """Replaces Textual's watcher, which restyles the focused widget and all it
        holds (every lane and its parts: ~100 ms of a 120x40 screen, at each Tab
        and again at quit) for `:focus` rules; the column's one such rule is its
        frame, set here on the column alone."""
        self._frame_focus()

    def on_descendant_focus(self, _event: DescendantFocus) -> None:
        self._frame_focus()

    def on_descendant_blur(self, _event: DescendantBlur) -> None:
        self._frame_focus()

    def _frame_focus(self) -> None:
        if not (self.has_focus or self.has_focus_within):
            self.styles.border = None  # the stylesheet's frame
            return
        color = self.get_component_rich_style("lane-column--focused").color
        self.styles.border = ("round", Color.from_rich_color(color))

    # -- the window -----------------------------------------------------------------
    def list_rows(self) -> int:
        """The compact list's height: a quarter of the column, 3 to LIST_ROWS rows."""
        return max(3, min(LIST_ROWS, self.content_region.height // 4))

    def capacity(self) -> int:
        """How many lanes the window holds beside the compact list: each gets room
        for a few lines (the list is there to jump to the others), and two lanes
        show side by side in time whenever they fit at their least height."""
        rows = self.content_region.height - (self.list_rows() if self.call_list.display else 0)
        return max(1, min(2, rows // LEAST_ROWS), rows // WINDOW_LANE_ROWS)

    def window(self, selected: int | None) -> range:
        """Positions of the calls to show as lanes, keeping `selected` in view."""
        count = len(self.indexes)
        if count <= self.capacity_all():
            self.first = 0
            return range(count)
        size = self.capacity()
        if selected in self.indexes:
            position = self.indexes.index(selected)
            if position < self.first:
                self.first = position
            elif position >= self.first + size:
                self.first = position - size + 1
        self.first = max(0, min(self.first, count - size))
        return range(self.first, self.first + size)

    def capacity_all(self) -> int:
        """How many lanes fit, at their least height, without the compact list."""
        return max(1, self.content_region.height // LEAST_ROWS)

    def scroll_window(self, step: int) -> None:
        self.first = max(0, self.first + step)

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        self.scroll_window(1)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.scroll_window(-1)

    # -- drawing ----------------------------------------------------------------------
    def show(
        self,
        state: StreamState,
        indexes: list[int],
        selected: int | None,
        lane_view: Callable[[CallSlot], LaneView],
        row: Callable[[int], tuple[str, str]],
        *,
        over: bool,
        exact_preview: bool,
        stamp: object,
    ) -> None:
        """The calls `indexes` (those started at the cursor), each drawn from
        `lane_view`, and in the compact list from `row`; `over`: the stream has
        ended; `stamp` changes whenever a call's row may have."""
        self.indexes = indexes
        self._show_placeholder(indexes, over)
        many = len(indexes) > self.capacity_all()
        self.call_list.display = many
        if many and self.call_list.styles.height != Scalar.from_number(self.list_rows()):
            self.call_list.styles.height = self.list_rows()
        window = self.window(selected)
        shown = [indexes[position] for position in window]
        self._mount_window(state, shown)
        for index in shown:
            lane = self.lanes[index]
            lane.show(lane_view(lane.slot), index == selected, exact_preview)
        self._size_lanes(shown)
        if many:
            self.call_list.show(indexes, window, selected, row, stamp)
        total = f" · {window.start + 1}-{window.stop} of {len(indexes)}" if many else ""
        title = f"tool calls{total}"
        if str(self.border_title) != title:  # setting it refreshes, even to the same
            self.border_title = Text(title)

    def _show_placeholder(self, indexes: list[int], over: bool) -> None:
        self.placeholder.display = not indexes
        if not indexes:
            text = "no tool calls in this stream" if over else "no tool calls yet"
            if str(self.placeholder.content) != text:  # an update lays the screen out
                self.placeholder.update(Text(text))

    def _mount_window(self, state: StreamState, shown: list[int]) -> None:
        """A lane for each call in `shown`, in order: the lanes of calls that left the
        window show the calls that entered it; only the lanes missing are new."""
        spare = [self.lanes.pop(index) for index in list(self.lanes) if index not in shown]
        for position, index in enumerate(shown):
            if index in self.lanes:
                continue
            later = [self.lanes[i] for i in shown[position + 1 :] if i in self.lanes]
            if not spare and self.idle:
                spare.append(self.idle.pop())
                spare[-1].display = True
            if spare:
                lane = spare.pop()
                lane.show_call(state.calls[index])
                if later:
                    self.deck.move_child(lane, before=later[0])
                elif self.deck.children and self.deck.children[-1] is not lane:
                    self.deck.move_child(lane, after=self.deck.children[-1])
            else:
                lane = CallLane(state.calls[index])
                self.deck.mount(lane, before=later[0] if later else None)
            self.lanes[index] = lane
        for lane in spare:
            lane.display = False
        self.idle += spare

    def _rows_and_wanted(self) -> tuple[int, dict[int, int]]:
        rows = self.deck.content_region.height or self.content_region.height
        return rows, {index: lane.rows_wanted() for index, lane in self.lanes.items()}

    def at_rest(self) -> bool:
        """Every lane is mounted and sized for what it wants now. What a lane wants
        is known once it is laid out at its width, and the room once the compact
        list is: until then the lanes must be shown again."""
        laid_out = all(lane.is_mounted and lane.wrapped_to_fit() for lane in self.lanes.values())
        return laid_out and self._rows_and_wanted() == self._sized_for

    def _size_lanes(self, shown: list[int]) -> None:
        lanes = [self.lanes[index] for index in shown]
        self._sized_for = rows, wanted = self._rows_and_wanted()
        heights = lane_heights([wanted[index] for index in shown], rows, LEAST_ROWS)
        for lane, height in zip(lanes, heights, strict=True):
            if lane.styles.height is None or lane.styles.height.value != height:
                lane.styles.height = height

    def clear(self) -> None:
        for lane in [*self.lanes.values(), *self.idle]:
            lane.remove()
        self.lanes.clear()
        self.idle.clear()
        self.indexes = []
        self.first = 0
