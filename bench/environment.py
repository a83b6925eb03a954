"""What every benchmark's processes inherit: no API key of this machine's. With a
key set (OPENAI_API_KEY, …) a run reads its stream a second time to keep the key
out of everything it shows, so a figure would depend on who ran the bench; where
that cost is measured, a row says so and sets a key of its own."""

from __future__ import annotations

import os

from toolstream_tui.sources.key_variables import KEY_VARIABLES

# A key of the usual shape, set for the rows that measure what a key costs.
BENCH_KEY = "sk-proj-" + "Bench0Key1" * 16


def forget_keys() -> None:
    """Unset every variable a key is read from, for this process and its children."""
    for name in KEY_VARIABLES:
        os.environ.pop(name, None)


def with_key() -> dict[str, str]:
    """This environment with a key set, as a developer's usually is."""
    return {**os.environ, "OPENAI_API_KEY": BENCH_KEY}
