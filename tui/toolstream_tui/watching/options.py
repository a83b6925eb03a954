"""The command line's choices for watching a stream, in one object the app takes
(and a test builds). Textual-free, so the command line can make it cheaply."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..sources.base import Clock, monotonic
from ..sources.pump import Limits

if TYPE_CHECKING:
    from ..otlp.export import OtlpExport


@dataclass(frozen=True, slots=True)
class WatchOptions:
    limits: Limits = field(default_factory=Limits)
    dialect: str | None = None  # None: detected from the stream
    record: Path | None = None  # record what arrives to this file
    bundle: Path | None = None  # write a repro bundle here once the stream is on screen
    typing_cps: float | None = None  # reveal text at this many characters a second
    preview: bool = False  # start with live previews of streaming arguments
    start_paused: bool = False
    start_at: int | None = None  # open paused at this wire event (--at), once it has arrived
    notice: str | None = None  # a warning to show at start
    output_dir: Path | None = None  # where exports, screenshots and bundles go (default: cwd)
    theme: str = "textual-dark"
    clock: Clock = monotonic  # every time shown, injectable for tests
    otlp: OtlpExport | None = None  # --otlp: each stream that ends is sent as a span

    @property
    def output(self) -> Path:
        return self.output_dir or Path.cwd()
