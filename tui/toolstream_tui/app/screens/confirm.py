"""A yes-or-no question before something is overwritten."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: auto; max-width: 80%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    /* A box as wide as its text: its lines are as wide as theirs (a line of the
       default 1fr width in it had none: an empty box) and no wider than the box
       may be, so a long question wraps. */
    ConfirmScreen > Vertical > Static { width: auto; max-width: 100%; }
    ConfirmScreen #keys { color: $text-muted; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question))
            yield Static(Text("y: yes · n: no"), id="keys")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
