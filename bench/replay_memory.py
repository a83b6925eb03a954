"""What a replay holds in memory beyond what the core keeps:
`python bench/replay_memory.py [--reads N]` (default 2,000,000 reads: a 688 MB
body with a 69 MB timing file; it takes minutes).

The recording is mostly comment events, which the core does not keep, so the
core's own memory is its per-read times. The replay is run as a headless
subprocess; the baseline is a subprocess feeding the same events to a session
from memory. Goal: the replay peaks less than 100 MB above the baseline.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVENT = b": " + b"x" * 340 + b"\n\n"  # 344 bytes
FINISH = (
    b'data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
BLOCK = 1000
GOAL_MB = 100

BASELINE = """
import resource, sys
from toolstream_tui.core import StreamSession
reads = int(sys.argv[1])
session = StreamSession("baseline", live=False)
session.open(200, "text/event-stream")
event = b": " + b"x" * 340 + b"\\n\\n"
for number in range(reads):
    session.feed(event, number * 1e-5)
session.feed(sys.stdin.buffer.read(), 20.0)
session.close(20.0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_recording(path: Path, reads: int) -> None:
    timing = path.with_name(path.name + ".timing.jsonl")
    with path.open("wb") as body, timing.open("w") as lines:
        lines.write(json.dumps({"format": "toolstream-recording/2", "source": "bench"}) + "\n")
        lines.write(json.dumps({"status": 200, "content_type": "text/event-stream"}) + "\n")
        end = 0
        for block in range(reads // BLOCK):
            body.write(EVENT * BLOCK)
            out = []
            for number in range(block * BLOCK, (block + 1) * BLOCK):
                end += len(EVENT)
                out.append(f'{{"end": {end}, "t": {number * 1e-5:.6f}}}\n')
            lines.write("".join(out))
        body.write(FINISH)
        lines.write(json.dumps({"end": end + len(FINISH), "t": 20.0}) + "\n")


def peak_of_replay(path: Path) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    command = [sys.executable, "-m", "toolstream_tui", "--headless", "--replay", str(path)]
    result = subprocess.run([*command, "--speed", "0"], capture_output=True, check=False)
    seconds = time.perf_counter() - start
    report = json.loads(result.stdout)
    assert report["status"] == "finished", report["error"]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak > before, "run the replay before the baseline: ru_maxrss is a maximum"
    return seconds, peak


def peak_of_core(reads: int) -> int:
    result = subprocess.run(
        [sys.executable, "-c", BASELINE, str(reads)],
        input=FINISH,
        capture_output=True,
        check=True,
    )
    return int(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=2_000_000)
    reads = parser.parse_args().reads // BLOCK * BLOCK
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "big.sse"
        write_recording(path, reads)
        size = path.stat().st_size
        seconds, replay_kb = peak_of_replay(path)
    core_kb = peak_of_core(reads)
    beyond = (replay_kb - core_kb) / 1024
    print(f"{reads} reads, {size / 1e6:.0f} MB body, replayed in {seconds:.1f} s")
    print(f"peak RSS: replay {replay_kb / 1024:.0f} MB, core alone {core_kb / 1024:.0f} MB")
    verdict = "within" if beyond < GOAL_MB else "OVER"
    print(f"beyond the core: {beyond:.0f} MB ({verdict} the {GOAL_MB} MB goal)")


if __name__ == "__main__":
    main()
