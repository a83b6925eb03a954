"""The goals of issues 12 and 34, in one place: each names a figure of the app benchmark's
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
    stream: str = ""  # the stream measured, if one
    presses: int = 0  # key latency: at least this many answered presses per key

    def text(self) -> str:
        limit = f"{self.limit:g}{'' if self.unit == 'x' else ' '}{self.unit}"
        at_least = f" over ≥ {self.presses} presses per key" if self.presses else ""
        return f"{self.statistic} ≤ {limit}{at_least}"


KEY_PRESSES = 300  # per key, on parallel-64 (issue 34)
KEY_PRESSES_MANY_CALLS = 50  # per key, on 10,000 calls (issue 12)
BIG_1M, PARALLEL, BIG_10M, CALLS = "big-args-1m", "parallel-64", "big-args-10m", "calls-10k"

GOALS = (
    Goal("app ÷ headless: big-args 1 MB", f"whole.{BIG_1M}.ratio", "median", 1.3, "x", BIG_1M),
    Goal("app ÷ headless: parallel-64", f"whole.{PARALLEL}.ratio", "median", 1.3, "x", PARALLEL),
    Goal("app ÷ headless: big-args 10 MB", f"whole.{BIG_10M}.ratio", "median", 1.5, "x", BIG_10M),
    Goal(
        "app ÷ headless: 10,000 parallel calls", f"whole.{CALLS}.ratio", "median", 1.5, "x", CALLS
    ),
    Goal(
        "key → frame: parallel-64 at `--speed 0`",
        "keys.speed-0",
        "max",
        100,
        "ms",
        PARALLEL,
        KEY_PRESSES,
    ),
    Goal("key → frame: parallel-64 paced", "keys.paced", "max", 100, "ms", PARALLEL, KEY_PRESSES),
    Goal(
        "key → frame: parallel-64 after its end (`t` too)",
        "keys.finished",
        "max",
        100,
        "ms",
        PARALLEL,
        KEY_PRESSES,
    ),
    Goal(
        "key → frame: 10,000 calls at `--speed 0`",
        "keys.calls-10k",
        "max",
        100,
        "ms",
        CALLS,
        KEY_PRESSES_MANY_CALLS,
    ),
    Goal("peak RSS, headless: big-args 10 MB", "rss.headless", "max", 160, "MB", BIG_10M),
    Goal("peak RSS, app: big-args 10 MB", "rss.app", "max", 250, "MB", BIG_10M),
    Goal(
        "launch → first frame with content (`toolstream-tui`, the demo)",
        "startup.app",
        "median",
        0.4,
        "s",
    ),
    Goal(
        "launch → first frame, beyond a minimal Textual app's (paired rounds)",
        "startup.over_minimal",
        "median",
        0.15,
        "s",
    ),
    Goal(
        "headless startup (`--headless` on a tiny replay)", "startup.headless", "median", 0.15, "s"
    ),
    Goal(
        "`q` → process gone, after big-args 10 MB", f"quit.{BIG_10M}", "median", 0.3, "s", BIG_10M
    ),
    Goal("jump → frame: End / Home, parallel-64", "jumps.start-end", "max", 0.1, "s", PARALLEL),
    Goal("jump → frame: `g N` to a random event", "jumps.random-event", "max", 0.1, "s", PARALLEL),
    Goal("jump → frame: `]` to the next anomaly", "jumps.next-anomaly", "max", 0.1, "s", PARALLEL),
    Goal("resident set: growth over 400 more jumps", "jumps.rss_growth", "max", 5, "MB", PARALLEL),
)
