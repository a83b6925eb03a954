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

    def tag_style(self, tag: int) -> Style:
        return self.get_component_rich_style(f"raw-log--{self._NAMES[tag]}")

    def add_event(self, event: WireEvent) -> None:
        fields = f"event: {inert(event.event)} " if event.event else ""
        self.append(f"#{event.number:<5} {event.t:8.3f}s ", NUMBER_TAG)
        self.append(f"{fields}data: {inert(event.data)}\n", DATA_TAG)

    def add_comment(self, comment: WireComment) -> None:
        self.append(f"{'':6} {comment.t:8.3f}s ", NUMBER_TAG)
        self.append(f":{inert(comment.text)}\n", COMMENT_TAG)

    def add_trailing(self, trailing: str) -> None:
        self.append(f"{'unterminated':<16}", NUMBER_TAG)
        self.append(f"{inert(trailing)}\n", COMMENT_TAG)
