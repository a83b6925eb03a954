"""Every SSE event as received, numbered, with its arrival time."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from ...core.events import WireComment, WireEvent
from ...core.visible import inert
from .wrapped_view import WrappedView

NUMBER_TAG, DATA_TAG, COMMENT_TAG = 0, 1, 2


class RawLog(WrappedView):
    COMPONENT_CLASSES = {"raw-log--number", "raw-log--data", "raw-log--comment"}
    DEFAULT_CSS = """
    RawLog { height: 12; border: round $secondary; background: $surface; }
    RawLog > .raw-log--number { color: $accent; }
    RawLog > .raw-log--data { color: $text; }
    RawLog > .raw-log--comment { color: $text-muted; text-style: italic; }
    """
    _NAMES = ("number", "data", "comment")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = Text("raw events")
        self._unformatted: list[WireEvent | WireComment] = []

    def tag_style(self, tag: int) -> Style:
        return self.get_component_rich_style(f"raw-log--{self._NAMES[tag]}")

    def add(self, item: WireEvent | WireComment) -> None:
        """Kept as is; formatted only when the log is shown (it is hidden by default
        and a fast stream sends hundreds of thousands of events)."""
        self._unformatted.append(item)
        self._changed = True

    def clear(self) -> None:
        self._unformatted = []
        super().clear()

    def _catch_up(self) -> None:
        self._format_pending()
        super()._catch_up()

    def _format_pending(self) -> None:
        for item in self._unformatted:
            if isinstance(item, WireEvent):
                fields = f"event: {inert(item.event)} " if item.event else ""
                self.runs.append((f"#{item.number:<5} {item.t:8.3f}s ", NUMBER_TAG))
                self.runs.append((f"{fields}data: {inert(item.data)}\n", DATA_TAG))
            else:
                self.runs.append((f"{'':6} {item.t:8.3f}s ", NUMBER_TAG))
                self.runs.append((f":{inert(item.text)}\n", COMMENT_TAG))
        self._unformatted = []

    def add_trailing(self, trailing: str) -> None:
        self._format_pending()
        self.append(f"{'unterminated':<16}", NUMBER_TAG)
        self.append(f"{inert(trailing)}\n", COMMENT_TAG)
