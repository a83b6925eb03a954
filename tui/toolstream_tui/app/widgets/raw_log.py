"""Every SSE event as received: one line each, numbered, with its arrival time.

Lines are formatted only when they scroll into view, so the log costs nothing
while hidden and opening it on 200k events costs what the screen shows. Data
spanning several `data:` lines shows its line breaks as ␊; long lines scroll
sideways.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...core.events import WireComment, WireEvent
from ...core.visible import inert
from .wrapped_view import grow

PREFIX_WIDTH = 17  # "#12345  1234.567s "


class Unterminated(NamedTuple):
    text: str


LogItem = WireEvent | WireComment | Unterminated


def line_parts(item: LogItem) -> tuple[str, str, str]:
    """The line for one item: its prefix, its text, and the style name of the text."""
    if isinstance(item, WireEvent):
        fields = f"event: {inert(item.event)} " if item.event else ""
        return f"#{item.number:<6} {item.t:8.3f}s ", f"{fields}data: {inert(item.data)}", "data"
    if isinstance(item, WireComment):
        return f"{'':7} {item.t:8.3f}s ", f":{inert(item.text)}", "comment"
    return f"{'unterminated':<17}", inert(item.text), "comment"


def line_width(item: LogItem) -> int:
    """The width of an item's line, for the horizontal scroll range."""
    if isinstance(item, WireEvent):
        return PREFIX_WIDTH + 14 + len(item.data) + len(item.event)
    extra = PREFIX_WIDTH if isinstance(item, Unterminated) else PREFIX_WIDTH + 14
    return extra + len(item.text)


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
        self.border_title = Text("raw events")
        self.items: list[LogItem] = []
        self._widest = 0
        self._measured = 0  # items whose width is in _widest; the rest wait until shown
        self._changed = False

    def add(self, item: WireEvent | WireComment) -> None:
        self.items.append(item)
        self._changed = True

    def add_trailing(self, text: str) -> None:
        self.items.append(Unterminated(text))
        self._changed = True

    def clear(self) -> None:
        self.items = []
        self._widest = self._measured = 0
        self._changed = True
        self.flush()

    def flush(self) -> None:
        if self._changed and self.display:
            self._changed = False
            widest = max(map(line_width, self.items[self._measured :]), default=0)
            self._widest = max(self._widest, widest)
            self._measured = len(self.items)
            grow(self, Size(self._widest, len(self.items)))

    def plain_lines(self) -> list[str]:
        return ["".join(line_parts(item)[:2]) for item in self.items]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        base = self.rich_style
        width = self.size.width
        if number >= len(self.items):
            return Strip.blank(width, base)
        prefix, text, kind = line_parts(self.items[number])
        segments = [
            Segment(prefix, base + self._style("number")),
            Segment(text, base + self._style(kind)),
        ]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"raw-log--{name}")
