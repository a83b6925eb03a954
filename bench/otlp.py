"""What --otlp costs a headless run: `python -m bench otlp`.

A generated stream (bench/streams.py's `parallel`: 16 calls, their fragments
interleaved, ~9 MB) is replayed headless at speed 0, without and with `--otlp` pointed
at a receiver in this process that answers at once, in paired alternating rounds
(without, with, without, with…), each run started by bench/spawn.py (fork to
exit, CPU seconds and peak RSS from wait4). The same on a tiny stream (the stub's
`parallel` scenario) tells what loading the SDK and sending one span cost on their
own, apart from the stream.
The median and spread of the per-pair ratios are printed, and written as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from toolstream_stubs import load_scenario

from . import processes
from .consumers import headless_argv
from .streams import DEFAULT_SEED, parallel, write_stream
from .throughput import finish_meta, git_state, load_average, progress

BENCH = Path(__file__).resolve().parent
DEFAULT_JSON = BENCH / "otlp-results.json"
TINY_SCENARIO = "parallel"  # the stub's: three calls in about 2 KB
DESCRIPTION = "Time headless replays without and with --otlp, in paired alternating rounds."


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def receiver() -> Iterator[str]:
    """An OTLP/HTTP endpoint that takes every export and answers 200 at once."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def pairs(path: Path, url: str, count: int) -> list[dict[str, float]]:
    plain = headless_argv(path)
    exported = [*plain, "--otlp", url]
    processes.run_headless(plain)  # the file into the page cache
    rounds = []
    for _ in range(count):
        without, with_otlp = processes.run_headless(plain), processes.run_headless(exported)
        rounds.append(
            {
                "without_s": without.seconds,
                "with_s": with_otlp.seconds,
                "ratio": with_otlp.seconds / without.seconds,
                "without_cpu_s": without.cpu_seconds,
                "with_cpu_s": with_otlp.cpu_seconds,
                "cpu_ratio": with_otlp.cpu_seconds / without.cpu_seconds,
                "without_peak_kb": without.peak_kb,
                "with_peak_kb": with_otlp.peak_kb,
            }
        )
    return rounds


def summary(rounds: list[dict[str, float]]) -> dict[str, Any]:
    ratios = [entry["ratio"] for entry in rounds]
    cpu = [entry["cpu_ratio"] for entry in rounds]
    return {
        "pairs": len(rounds),
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        "median_cpu_ratio": statistics.median(cpu),
        "without_median_s": statistics.median(entry["without_s"] for entry in rounds),
        "with_median_s": statistics.median(entry["with_s"] for entry in rounds),
        "without_peak_kb": max(entry["without_peak_kb"] for entry in rounds),
        "with_peak_kb": max(entry["with_peak_kb"] for entry in rounds),
    }


def measure(args: argparse.Namespace, out: Path, url: str) -> dict[str, Any]:
    stream = parallel("otlp-parallel", args.calls, args.call_bytes, args.seed)
    tiny = out / "tiny.sse"
    tiny.write_bytes(load_scenario(TINY_SCENARIO).rendered)
    results: dict[str, Any] = {}
    for key, path in (("stream", write_stream(stream, out)), ("tiny", tiny)):
        size = path.stat().st_size
        progress(f"{key}: {size} bytes, {args.pairs} pairs")
        rounds = pairs(path, url, args.pairs)
        results[key] = {"bytes": size, "rounds": rounds, **summary(rounds)}
    return results


def report_text(data: dict[str, Any]) -> str:
    lines = [
        "stream  bytes       pairs  without_s  with_s  ratio (min-max)      cpu_ratio  peak_kb",
    ]
    for key in ("stream", "tiny"):
        entry = data["results"][key]
        lines.append(
            f"{key:<7} {entry['bytes']:<11} {entry['pairs']:<6} "
            f"{entry['without_median_s']:<10.3f} {entry['with_median_s']:<7.3f} "
            f"{entry['median_ratio']:.3f} ({entry['min_ratio']:.3f}-{entry['max_ratio']:.3f})  "
            f"{entry['median_cpu_ratio']:<10.3f} "
            f"{entry['without_peak_kb']}->{entry['with_peak_kb']}"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench otlp", description=DESCRIPTION)
    # Each fragment of 1 to 8 characters is an SSE chunk: 16 calls of 8 KiB are ~9 MB.
    parser.add_argument("--calls", type=int, default=16, help="calls in the stream (16)")
    parser.add_argument("--call-bytes", type=int, default=8192, help="argument bytes per call")
    parser.add_argument("--pairs", type=int, default=7, help="rounds of without/with (7)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where results go")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "argv": list(argv or sys.argv[1:]),
        "load_average_start": load_average(),
        "git_start": git_state(),
    }
    with tempfile.TemporaryDirectory() as scratch, receiver() as url:
        results = measure(args, Path(scratch), url)
    finish_meta(meta, started)
    data = {"meta": meta, "results": results}
    args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(report_text(data))
    return 0
