"""One line: source, dialect, connection state, end state, counts and times."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from ...core.visible import inert

STALL_SHOWN_AFTER = 1.0  # seconds without data before the status bar says so
STATE_STYLES = {
    "connecting": "yellow",
    "streaming": "cyan",
    "finished": "bold green",
    "truncated": "bold yellow",
    "error": "bold red",
}


SOURCE_WIDTH = 40


def shortened(text: str, width: int = SOURCE_WIDTH) -> str:
    """A long source (a URL, a file path) cut in the middle, so the state stays in view."""
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2) :]


def human_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.2f} MB"


@dataclass(slots=True)
class StatusFacts:
    source: str = ""
    dialect: str = "detecting"
    state: str = "connecting"
    paused: bool = False
    events: int = 0
    bytes: int = 0
    first_event: float | None = None
    elapsed: float = 0.0
    anomalies: int = 0
    failed_calls: int = 0
    rejected_calls: int = 0  # parsed, but their tool's schema rejects them
    waiting: float = 0.0  # seconds since the last data, while streaming


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(self, facts: StatusFacts) -> None:
        line = Text()
        line.append(shortened(inert(facts.source)), "bold")
        line.append(f" · {facts.dialect} · ")
        line.append(facts.state, STATE_STYLES.get(facts.state, ""))
        if facts.failed_calls:
            plural = "s" if facts.failed_calls > 1 else ""
            line.append(f" · {facts.failed_calls} call{plural} not parsed", "bold red")
        if facts.rejected_calls:
            plural = "s" if facts.rejected_calls > 1 else ""
            line.append(f" · {facts.rejected_calls} call{plural} against schema", "bold yellow")
        if facts.paused:
            line.append(" ")
            line.append(" PAUSED ", "bold reverse")
        line.append(f" · {facts.events} events · {human_bytes(facts.bytes)}")
        if facts.first_event is not None:
            line.append(f" · first event {facts.first_event:.3f}s")
        line.append(f" · {facts.elapsed:.1f}s")
        if facts.state == "streaming" and facts.waiting >= STALL_SHOWN_AFTER:
            line.append(f" · no data for {facts.waiting:.1f}s", "bold yellow")
        if facts.anomalies:
            line.append(f" · ⚠ {facts.anomalies} anomalies", "yellow")
        self.update(line, layout=False)
