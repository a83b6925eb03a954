"""Ask where to move the display cursor: an event number or a time (`12.5s`).
Dismissed with what was parsed, or None when the person gave up."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...views.scrub import parse_position


class GotoScreen(ModalScreen[tuple[str, float] | None]):
    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen > Vertical {
        width: 60; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    GotoScreen #problem { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "give_up", "Cancel", id="goto.cancel")]

    def __init__(self) -> None:
        """One prompt per stream screen, shown again each time (`last_event`: the
        last event received, set before each showing)."""
        super().__init__()
        self.last_event = 0
        self.hint = Static(id="hint")
        self.where = Input(placeholder="31204 or 4.8s", id="where")
        self.problem = Static(id="problem")

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = Text("go to")
            yield self.hint
            yield self.where
            yield self.problem

    def on_screen_resume(self) -> None:
        """Shown (again): empty, saying the range of events there is now."""
        self.hint.update(Text(f"an event number (0 to {self.last_event:,}) or a time like 12.5s"))
        self.where.value = ""
        self.problem.update("")
        self.where.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        parsed = parse_position(event.value)
        if isinstance(parsed, str):
            self.problem.update(Text(parsed))
            return
        kind, value = parsed
        if kind == "event" and value > self.last_event:
            self.problem.update(Text(f"event {value:,} is past the last one ({self.last_event:,})"))
            return
        self.dismiss(parsed)

    def action_give_up(self) -> None:
        self.dismiss(None)
