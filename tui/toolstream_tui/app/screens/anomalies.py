"""Every deviation from the textbook stream, with where it happened. The table
shows each detail on one line, cut with an ellipsis; the highlighted row's
detail is shown whole below it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ...core.events import Anomaly
from ...core.visible import inert
from ..widgets.key_footer import KeyFooter

DETAIL_WIDTH = 60  # the detail column's width in the table (the whole detail is below)


def one_line(text: str, width: int) -> Text:
    shown = Text(inert(text), no_wrap=True, overflow="ellipsis")
    shown.truncate(width, overflow="ellipsis")
    return shown


class AnomaliesScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    AnomaliesScreen { align: center middle; }
    AnomaliesScreen > Vertical {
        width: 90%; height: 75%; border: round $warning; background: $surface; padding: 0 1;
    }
    AnomaliesScreen DataTable { height: 1fr; }
    AnomaliesScreen #detail {
        height: auto; max-height: 6; border-top: solid $warning; color: $text;
    }
    """
    BINDINGS = [Binding("escape,q,a", "dismiss", "Close", id="anomalies.close")]

    def __init__(self, anomalies: list[Anomaly]) -> None:
        super().__init__()
        self.anomalies = anomalies
        self.detail = Static(id="detail")

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = Text(f"anomalies ({len(self.anomalies)})")
            if not self.anomalies:
                yield Static(Text("The stream followed the textbook shape: no anomalies."))
            yield DataTable(zebra_stripes=True, cursor_type="row")
            yield self.detail
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("kind", "lane", "event", "count", "detail")
        table.add_rows(
            (
                Text(anomaly.kind, "yellow"),
                "-" if anomaly.index is None else anomaly.index,
                "-" if anomaly.event is None else anomaly.event,
                anomaly.count,
                one_line(anomaly.detail, DETAIL_WIDTH),
            )
            for anomaly in self.anomalies
        )
        self.detail.display = bool(self.anomalies)
        table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        anomaly = self.anomalies[event.cursor_row]
        self.detail.update(Text(f"{anomaly.kind}: {inert(anomaly.detail)}"))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
