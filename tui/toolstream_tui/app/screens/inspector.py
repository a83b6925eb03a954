"""A lane's fragments, one row each: exactly how the provider cut the arguments."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from ...core.visible import inert

ROW_LIMIT = 5000


class InspectorScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    InspectorScreen { align: center middle; }
    InspectorScreen > Vertical {
        width: 90%; height: 85%; border: round $accent; background: $surface; padding: 0 1;
    }
    InspectorScreen #summary { height: auto; color: $text-muted; }
    InspectorScreen DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,i", "dismiss", "Close", id="inspector.close")]

    def __init__(self, title: str, rows: list[dict[str, Any]], total: int) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows
        self.total = total

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = Text(inert(self.title_text))
            yield Static(self._summary(), id="summary")
            yield DataTable(zebra_stripes=True, cursor_type="row")
        yield Footer()

    def _summary(self) -> Text:
        alone = sum(1 for row in self.rows if row["parses_alone"])
        shown = f" (first {len(self.rows)} shown)" if len(self.rows) < self.total else ""
        return Text(
            f"{self.total} fragments{shown}; {alone} of {len(self.rows)} parse as JSON "
            "on their own. Arguments are only valid once every fragment is joined."
        )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "event", "arrived", "len", "fragment (exact, escaped)", "alone")
        table.add_rows(
            (
                row["number"],
                row["event"],
                f"{row['t']:.3f}s",
                row["length"],
                Text(row["text"]),
                Text("parses", "green") if row["parses_alone"] else Text("no", "dim"),
            )
            for row in self.rows
        )
        table.focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
