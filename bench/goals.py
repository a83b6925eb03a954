"""The goals of issue 12, in one place: each names a figure of the app benchmark's
results, the statistic compared and its limit. The report marks each met or not."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Goal:
    row: str  # what a user sees
    figure: str  # a key of the results' "figures"
    statistic: str  # which of the figure's statistics is held to the limit
    limit: float
    unit: str  # "x", "s", "ms" or "MB"
    presses: int = 0  # key latency: at least this many answered presses per key

    def text(self) -> str:
        limit = f"{self.limit:g}{'' if self.unit == 'x' else ' '}{self.unit}"
        at_least = f" over ≥ {self.presses} presses per key" if self.presses else ""
        return f"{self.statistic} ≤ {limit}{at_least}"


KEY_PRESSES = 50

GOALS = (
    Goal("big-args 1 MB: app ÷ headless", "whole.big-args-1m.ratio", "median", 1.3, "x"),
    Goal("parallel-64: app ÷ headless", "whole.parallel-64.ratio", "median", 1.3, "x"),
    Goal("big-args 10 MB: app ÷ headless", "whole.big-args-10m.ratio", "median", 1.5, "x"),
    Goal("10,000 parallel calls: app ÷ headless", "whole.calls-10k.ratio", "median", 1.5, "x"),
    Goal("key → frame, parallel-64 at --speed 0", "keys.speed-0", "max", 100, "ms", KEY_PRESSES),
    Goal("key → frame, parallel-64 paced", "keys.paced", "max", 100, "ms", KEY_PRESSES),
    Goal("key → frame, 10,000 calls at --speed 0", "keys.calls-10k", "max", 100, "ms", KEY_PRESSES),
    Goal("peak RSS, big-args 10 MB, headless", "rss.headless", "max", 160, "MB"),
    Goal("peak RSS, big-args 10 MB, app", "rss.app", "max", 250, "MB"),
    Goal("launch → first frame with content (demo)", "startup.app", "median", 0.4, "s"),
    Goal("headless startup (tiny replay)", "startup.headless", "median", 0.15, "s"),
    Goal("`q` → process gone, after big-args 10 MB", "quit.big-args-10m", "median", 0.3, "s"),
)
