"""The timeline: when the stream and each call's fragments arrived (being built)."""

from __future__ import annotations

from typing import Any

from textual.screen import ModalScreen


class TimelineScreen(ModalScreen[None]):
    def __init__(
        self, timing: dict[str, Any], arrivals: dict[int, list[float]], reads: list[float]
    ) -> None:
        super().__init__()
        self.timing = timing
        self.arrivals = arrivals
        self.reads = reads
