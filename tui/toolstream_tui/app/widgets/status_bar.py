"""One line of what matters most: the stream's state, the anomaly count, calls
that failed, elapsed time; then counts, dialect and source. A narrow terminal
cuts it from the right, so the least important facts go first."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...views.status import StatusView, fit_parts

SEPARATOR = " · "
STYLES = {
    "state-connecting": "yellow",
    "state-streaming": "cyan",
    "state-finished": "bold green",
    "state-truncated": "bold yellow",
    "state-error": "bold red",
    "paused": "bold reverse",
    "anomalies": "yellow",
    "bad": "bold red",
    "warn": "bold yellow",
    "muted": "dim",
    "source": "bold",
}


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: StatusView | None = None
        self._drawn: tuple[StatusView | None, int] = (None, -1)

    def show(self, view: StatusView) -> None:
        self.view = view
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.content_region.width or 120
        if self.view is None or self._drawn == (self.view, width):
            return
        self._drawn = (self.view, width)
        line = Text(no_wrap=True, overflow="ellipsis")
        for number, part in enumerate(fit_parts(self.view.parts(), width, SEPARATOR)):
            line.append(SEPARATOR if number else "")
            line.append(part.text, STYLES.get(part.style, ""))
        self.update(line, layout=False)
