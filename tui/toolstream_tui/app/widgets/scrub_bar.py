"""A one-row bar over the whole stream with the display cursor on it: what is
behind the cursor filled, where anomalies were first seen marked; a click or a
drag asks to move the cursor to the event under the mouse. It draws a
`ScrubView` (computed in `views`) and keeps nothing else."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from ...views.scrub import ScrubView

FILLED, EMPTY, CURSOR, ANOMALY = "━", "─", "●", "▲"


class ScrubBar(Widget):
    COMPONENT_CLASSES = {"scrub-bar--filled", "scrub-bar--empty", "scrub-bar--anomaly"}
    DEFAULT_CSS = """
    ScrubBar { height: 1; background: $panel; padding: 0 1; }
    ScrubBar > .scrub-bar--filled { color: $accent; }
    ScrubBar > .scrub-bar--empty { color: $text-muted; }
    ScrubBar > .scrub-bar--anomaly { color: $warning; }
    """

    class Scrubbed(Message):
        """The person clicked or dragged to the event `cursor`."""

        def __init__(self, bar: ScrubBar, cursor: int) -> None:
            super().__init__()
            self.bar = bar
            self.cursor = cursor

    def __init__(
        self, view: Callable[[int], ScrubView], *, id: str | None = None, classes: str = ""
    ) -> None:
        """`view(width)`: the bar for a width, at the cursor as it is now."""
        super().__init__(id=id, classes=classes)
        self._view = view
        self._shown: ScrubView | None = None
        self._dragging = False

    def redraw(self) -> None:
        """The cursor may have moved: draw again if the bar changed."""
        view = self._view(self.content_region.width)
        if view != self._shown:
            self._shown = view
            self.refresh()

    def render(self) -> Text:
        view = self._shown = self._view(self.content_region.width)
        style = self.get_component_rich_style
        filled, empty = style("scrub-bar--filled"), style("scrub-bar--empty")
        anomaly = style("scrub-bar--anomaly")
        line = Text(no_wrap=True, overflow="crop")
        for column in range(len(view.cursors)):
            if column == view.at:
                line.append(CURSOR, filled)
            elif column in view.marks:
                line.append(ANOMALY, anomaly)
            else:
                line.append(
                    FILLED if column < view.at else EMPTY, filled if column < view.at else empty
                )
        return line

    def _scrub_to(self, x: int) -> None:
        view = self._shown or self._view(self.content_region.width)
        if view.cursors:
            column = max(0, min(x - self.styles.padding.left, len(view.cursors) - 1))
            self.post_message(self.Scrubbed(self, view.cursors[column]))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._dragging = True
        self.capture_mouse()
        self._scrub_to(event.x)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self._scrub_to(event.x)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
