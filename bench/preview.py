"""What the live preview costs on the stub's `huge-args` scenario:
`python -m bench preview`.

1. Worst case: the preview re-checked after every fragment (as a lane that is
   always in view and redrawn per fragment would), against one strict parse and
   against parsing after every fragment (sampled and extrapolated).
2. The app until settled on a recording of huge-args, with and without previews.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jiter

from toolstream_tui.core import StreamSession
from toolstream_tui.core.preview import ArgumentsPreview
from toolstream_tui.core.state import CallSlot

from . import consumers

SAMPLES = 200
REPEAT = 3


def record_huge_args(path: Path) -> None:
    command = [sys.executable, "-m", "toolstream_tui", "--headless", "--scenario", "huge-args"]
    subprocess.run([*command, "--speed", "0", "--record", path], check=True, capture_output=True)


def huge_args_slot(path: Path) -> CallSlot:
    session = StreamSession("bench", live=False)
    session.open(200, "text/event-stream")
    session.feed(path.read_bytes(), 0.0)
    session.close(0.0)
    return session.state.calls[0]


def follow_every_fragment(slot: CallSlot) -> tuple[float, ArgumentsPreview]:
    preview = ArgumentsPreview(clock=lambda: 0.0)  # no catch-up: the throttle alone
    raw, length = slot.arguments_raw, 0
    start = time.perf_counter()
    for fragment in slot.fragments():
        length += len(fragment)
        if preview.due(length):
            preview.update(raw[:length])
    return time.perf_counter() - start, preview


def naive_estimate(slot: CallSlot) -> float:
    """Seconds to parse the buffer after every fragment, from a sample."""
    raw, ends, length = slot.arguments_raw, [], 0
    for fragment in slot.fragments():
        length += len(fragment)
        ends.append(length)
    sample = ends[:: max(1, len(ends) // SAMPLES)]
    start = time.perf_counter()
    for end in sample:
        jiter.from_json(raw[:end].encode(), partial_mode="trailing-strings", cache_mode="none")
    return (time.perf_counter() - start) * len(ends) / len(sample)


def app_seconds(path: Path, preview: bool) -> float:
    runs = [asyncio.run(consumers.app_settle_seconds(path, preview=preview)) for _ in range(REPEAT)]
    return min(runs)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "huge-args.sse"
        record_huge_args(path)
        slot = huge_args_slot(path)
        start = time.perf_counter()
        json.loads(slot.arguments_raw)
        strict = time.perf_counter() - start
        seconds, preview = follow_every_fragment(slot)
        print(f"huge-args: {slot.fragment_count:,} fragments, {slot.length:,} chars")
        print(f"  one strict parse:               {strict * 1000:8.1f} ms")
        print(
            f"  preview after every fragment:   {seconds * 1000:8.1f} ms, {preview.parses} parses "
            f"reading {preview.parsed_chars / slot.length:.1f} x the text"
        )
        print(f"  parse after every fragment:     {naive_estimate(slot):8.1f} s (estimated)")
        without, with_preview = app_seconds(path, False), app_seconds(path, True)
        print(
            f"  app until settled, best of {REPEAT}: {without:.3f} s without previews, "
            f"{with_preview:.3f} s with ({with_preview / without:.2f} x)"
        )


if __name__ == "__main__":
    main()
