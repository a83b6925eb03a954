"""Throughput on generated streams: `python -m bench throughput [--quick] [--out DIR]`.

Generates deterministic OpenAI chat-completions SSE streams, then times, on the
same bytes in one run, the JSON-parsing floors, the project's core, the openai
SDK's accumulator, whole processes and the Textual app. Prints a table per
stream and writes the same figures as JSON (bench/results.json by default).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from . import consumers, streams
from .environment import with_key
from .streams import GeneratedStream

DESCRIPTION = "Time toolstream-tui against JSON floors and the openai SDK on generated streams."
BENCH = Path(__file__).resolve().parent
DEFAULT_JSON = BENCH / "results.json"
SDK_STREAMS = ("big-args-100k",)
APP_STREAMS = ("big-args-100k", "big-args-1m", "parallel-64")
KEY_STREAM = "chatty"
GROWTH = ("big-args-1m", "big-args-100k")
GROWTH_CONSUMERS = ("core", "floor-json", "process-headless", "app")
RSS_STREAM = "big-args-1m"
T = TypeVar("T")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench throughput", description=DESCRIPTION)
    parser.add_argument("--out", type=Path, help="write the streams here (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default: 3)")
    parser.add_argument(
        "--quick", action="store_true", help="tiny streams, 1 repetition, no SDK or key latency"
    )
    parser.add_argument("--no-app", action="store_true", help="skip the Textual app")
    parser.add_argument("--seed", type=int, default=streams.DEFAULT_SEED)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    return args


# -- timing ---------------------------------------------------------------------
def best_of(repeat: int, run: Callable[[], T]) -> tuple[float, T]:
    """Fastest wall time of `repeat` calls, and the last call's result."""
    best = math.inf
    result: Any = None
    for _ in range(max(1, repeat)):
        gc.collect()
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def best_seconds(repeat: int, measure: Callable[[], float]) -> float:
    """Fastest of `repeat` measurements that time themselves."""
    seconds = []
    for _ in range(max(1, repeat)):
        gc.collect()
        seconds.append(measure())
    return min(seconds)


@contextmanager
def stream_dir(out: Path | None) -> Iterator[Path]:
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-") as scratch:
        yield Path(scratch)


# -- checks ---------------------------------------------------------------------
def core_problems(report: dict[str, Any], stream: GeneratedStream) -> list[str]:
    """How the core's report differs from what the generator made (empty: none)."""
    problems = []
    if report["status"] != "finished":
        problems.append(f"status {report['status']}")
    calls = report["tool_calls"]
    texts = [call["arguments_raw"] for call in calls]
    if texts != [call.arguments_text for call in stream.calls]:
        problems.append("reassembled argument text differs")
    if [call["arguments"] for call in calls] != [call.arguments for call in stream.calls]:
        problems.append("parsed arguments differ")
    if report["text"] != stream.text:
        problems.append("assistant text differs")
    if report["anomalies"]:
        problems.append(f"anomalies: {[a['kind'] for a in report['anomalies']]}")
    return problems


# -- measuring one stream -------------------------------------------------------
class Results:
    """Every figure of the run, shaped as results.json."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.data: dict[str, Any] = {"meta": meta(args), "streams": {}, "notes": [], "problems": []}

    def stream(self, stream: GeneratedStream, path: Path) -> dict[str, Any]:
        entry = {
            "file": str(path),
            "events": stream.events,
            "body_bytes": len(stream.body),
            "argument_bytes": stream.argument_bytes,
            "calls": len(stream.calls),
            "text_chars": len(stream.text),
            "consumers": {},
            "problems": [],
        }
        self.data["streams"][stream.name] = entry
        return entry

    def note(self, text: str) -> None:
        if text not in self.data["notes"]:
            self.data["notes"].append(text)


def meta(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "openai": consumers.sdk_version(),
        "orjson": "installed" if consumers.orjson_loads() else None,
        "quick": args.quick,
        "repeat": args.repeat,
        "seed": args.seed,
        "read_size": consumers.READ_SIZE,
        "toolstream_tui": consumers.project_path(),
        "git": git_state(),
        "load_average_start": load_average(),
    }


def load_average() -> list[float] | None:
    """Other work on the machine skews every figure: the 1, 5 and 15 minute loads."""
    try:
        return [round(load, 2) for load in os.getloadavg()]
    except OSError:
        return None


def finish_meta(meta: dict[str, Any], started: float) -> None:
    meta["total_seconds"] = time.perf_counter() - started
    meta["load_average_end"] = load_average()
    meta["git_end"] = git_state()


def git_state() -> dict[str, Any] | None:
    """The commit measured, and files changed since (other work may be in flight);
    None when the measured toolstream_tui is not this checkout's."""
    if not Path(consumers.project_path()).is_relative_to(BENCH.parent):
        return None
    try:
        commit = git("rev-parse", "HEAD").strip()
        status = git("status", "--porcelain", "--", "tui").splitlines()
    except (OSError, subprocess.CalledProcessError):
        return None
    changed = [line[3:].removeprefix("tui/toolstream_tui/") for line in status]
    return {"commit": commit, "uncommitted_in_tui": changed}


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=BENCH.parent, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def record(entry: dict[str, Any], consumer: str, seconds: float) -> None:
    entry["consumers"][consumer] = {
        "seconds": seconds,
        "events_per_s": entry["events"] / seconds if seconds > 0 else None,
    }


def measure_floors(entry: dict[str, Any], stream: GeneratedStream, repeat: int) -> None:
    seconds, _ = best_of(repeat, lambda: consumers.floor_json(stream.body))
    record(entry, "floor-json", seconds)
    loads = consumers.orjson_loads()
    if loads is not None:
        seconds, _ = best_of(repeat, lambda: consumers.floor(stream.body, loads))
        record(entry, "floor-orjson", seconds)


def measure_core(entry: dict[str, Any], stream: GeneratedStream, repeat: int) -> None:
    seconds, report = best_of(repeat, lambda: consumers.core(stream.body))
    record(entry, "core", seconds)
    live_seconds, _ = best_of(repeat, lambda: consumers.core(stream.body, live=True))
    record(entry, "core-live", live_seconds)
    entry["problems"] += [f"core: {problem}" for problem in core_problems(report, stream)]


def measure_sdk(entry: dict[str, Any], stream: GeneratedStream, repeat: int) -> None:
    expected = [call.arguments for call in stream.calls]
    for consumer, construct in (("sdk", False), ("sdk-construct", True)):
        seconds, arguments = best_of(repeat, lambda c=construct: consumers.sdk(stream.body, c))
        record(entry, consumer, seconds)
        if arguments != expected:
            entry["problems"].append(f"{consumer}: parsed arguments differ")


def measure_processes(entry: dict[str, Any], path: Path, repeat: int) -> None:
    """The floor, headless, and headless with a key set (which then reads the stream
    a second time, to keep the key out of it)."""
    headless = consumers.headless_argv(path)
    for consumer, argv, env in (
        ("process-floor", consumers.floor_argv(path), None),
        ("process-headless", headless, None),
        ("process-headless-key", headless, with_key()),
    ):
        measure = lambda a=argv, e=env: consumers.process_seconds(a, e)  # noqa: E731
        record(entry, consumer, best_seconds(repeat, measure))


def measure_app(entry: dict[str, Any], path: Path, repeat: int) -> None:
    seconds = best_seconds(repeat, lambda: asyncio.run(consumers.app_settle_seconds(path)))
    record(entry, "app", seconds)


def measure_app_preview(entry: dict[str, Any], path: Path, repeat: int) -> None:
    """The app with live previews on: what following every lane's partial JSON costs."""
    stats: dict[str, Any] = {}
    seconds = best_seconds(
        repeat,
        lambda: asyncio.run(consumers.app_settle_seconds(path, preview=True, stats=stats)),
    )
    record(entry, "app-preview", seconds)
    entry["preview"] = stats


def attempt(problems: list[str], label: str, measure: Callable[[], None]) -> None:
    """Run one measurement; a failure is recorded and the run goes on."""
    progress(label)
    try:
        measure()
    except Exception as exc:
        problems.append(f"{label}: {type(exc).__name__}: {exc}")
        progress(f"FAILED {problems[-1]}")


def measure_stream(
    results: Results, stream: GeneratedStream, path: Path, args: argparse.Namespace
) -> None:
    entry = results.stream(stream, path)
    problems, name, repeat = entry["problems"], stream.name, args.repeat
    attempt(problems, f"{name}: floors", lambda: measure_floors(entry, stream, repeat))
    attempt(problems, f"{name}: core", lambda: measure_core(entry, stream, repeat))
    if name in SDK_STREAMS and not args.quick:
        if consumers.sdk_version() is None:
            results.note("sdk: skipped, openai is not installed (pip install '.[bench]')")
        else:
            attempt(problems, f"{name}: sdk", lambda: measure_sdk(entry, stream, repeat))
    attempt(problems, f"{name}: processes", lambda: measure_processes(entry, path, repeat))
    if name in APP_STREAMS and not args.no_app:
        attempt(problems, f"{name}: app", lambda: measure_app(entry, path, repeat))
        attempt(problems, f"{name}: app-preview", lambda: measure_app_preview(entry, path, repeat))
    add_ratios(entry)


def add_ratios(entry: dict[str, Any]) -> None:
    rows = entry["consumers"]
    for base, key in (("floor-json", "vs_floor_json"), ("sdk", "vs_sdk")):
        if base in rows:
            for row in rows.values():
                row[key] = row["seconds"] / rows[base]["seconds"]


# -- measures beside the streams ------------------------------------------------
def growth(results: Results) -> dict[str, float]:
    big, small = (results.data["streams"][name]["consumers"] for name in GROWTH)
    return {
        consumer: big[consumer]["seconds"] / small[consumer]["seconds"]
        for consumer in GROWTH_CONSUMERS
        if consumer in big and consumer in small
    }


def key_latency(path: Path) -> dict[str, Any]:
    presses = asyncio.run(consumers.key_latencies(path))
    return {
        "max_ms": max(press.latency for press in presses) * 1000,
        "presses": [asdict(press) for press in presses],
    }


def rss(path: Path, body_bytes: int) -> dict[str, Any]:
    headless, how = consumers.peak_rss_kb(consumers.headless_argv(path))
    floor, _ = consumers.peak_rss_kb(consumers.floor_argv(path))
    return {"headless_kb": headless, "floor_kb": floor, "body_kb": body_bytes // 1024, "how": how}


def startup(repeat: int) -> dict[str, float]:
    commands = {
        "headless_weather": [
            consumers.console_script("toolstream-tui"),
            *("--headless", "--scenario", "weather", "--speed", "0"),
        ],
        "import_app": [sys.executable, "-c", "import toolstream_tui.app"],
        "python_bare": [sys.executable, "-c", "pass"],
    }
    return {
        name: best_seconds(repeat, lambda a=argv: consumers.process_seconds(a))
        for name, argv in commands.items()
    }


def measure_extras(results: Results, paths: dict[str, Path], args: argparse.Namespace) -> None:
    data, problems = results.data, results.data["problems"]
    data["growth"] = growth(results)
    if args.quick or args.no_app:
        results.note("app-key-latency: skipped (--quick or --no-app)")
    else:
        attempt(problems, f"{KEY_STREAM}: key latency", lambda: set_key_latency(data, paths))
    body_bytes = data["streams"][RSS_STREAM]["body_bytes"]
    attempt(problems, "rss", lambda: data.update(rss=rss(paths[RSS_STREAM], body_bytes)))
    attempt(problems, "startup", lambda: data.update(startup=startup(args.repeat)))


def set_key_latency(data: dict[str, Any], paths: dict[str, Path]) -> None:
    data["key_latency"] = key_latency(paths[KEY_STREAM])


# -- output ---------------------------------------------------------------------
def progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def ratio(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.2f}" if key in row else "-"


def stream_table(name: str, entry: dict[str, Any]) -> list[str]:
    lines = [
        f"{name}: {entry['events']:,} events, body {entry['body_bytes']:,} B, "
        f"arguments {entry['argument_bytes']:,} B in {entry['calls']} call(s)"
        + (f", text {entry['text_chars']:,} chars" if entry["text_chars"] else ""),
        f"  {'consumer':<18}{'seconds':>10}{'events/s':>13}{'x floor-json':>14}{'x sdk':>9}",
    ]
    for consumer, row in entry["consumers"].items():
        rate = f"{row['events_per_s']:,.0f}" if row["events_per_s"] else "-"
        lines.append(
            f"  {consumer:<18}{row['seconds']:>10.3f}{rate:>13}"
            f"{ratio(row, 'vs_floor_json'):>14}{ratio(row, 'vs_sdk'):>9}"
        )
    if "preview" in entry and "app" in entry["consumers"]:
        p = entry["preview"]
        cost = entry["consumers"]["app-preview"]["seconds"] / entry["consumers"]["app"]["seconds"]
        lines.append(
            f"  preview: app-preview / app = {cost:.2f}; {p['parses']} partial parses read "
            f"{p['parsed_chars']:,} chars = {p['parsed_chars'] / max(p['argument_chars'], 1):.1f}"
            " x the arguments"
        )
    lines += [f"  PROBLEM {problem}" for problem in entry["problems"]]
    return lines


def press_text(press: dict[str, Any]) -> str:
    when = "after settling" if press["settled"] else f"{press['events']:,} events in"
    return f"{press['latency'] * 1000:.0f} ms (sent at {press['at']:.2f} s, {when})"


def extra_lines(data: dict[str, Any]) -> list[str]:
    big, small = GROWTH
    shown = "  ".join(f"{name} {value:.2f}" for name, value in data["growth"].items())
    lines = [f"growth = time({big}) / time({small}) (10 = linear): {shown}"]
    if "key_latency" in data:
        latency = data["key_latency"]
        each = ", ".join(press_text(press) for press in latency["presses"])
        lines.append(f"app-key-latency ({KEY_STREAM}, 'l'): max {latency['max_ms']:.0f} ms; {each}")
    if "rss" in data:
        r = data["rss"]
        lines.append(
            f"rss ({RSS_STREAM}, {r['how']}): headless {r['headless_kb']:,} KB, "
            f"process-floor {r['floor_kb']:,} KB, body {r['body_kb']:,} KB"
        )
    if "startup" in data:
        s = data["startup"]
        lines.append(
            f"startup: headless --scenario weather {s['headless_weather']:.3f} s, "
            f"import toolstream_tui.app {s['import_app']:.3f} s, "
            f"bare python {s['python_bare']:.3f} s"
        )
    return lines + [f"PROBLEM {problem}" for problem in data["problems"]]


def header(meta: dict[str, Any]) -> list[str]:
    lines = [
        f"python {meta['python']}, openai {meta['openai'] or '-'}, best of {meta['repeat']}, "
        f"load average at start {meta['load_average_start']}",
        f"toolstream_tui from {meta['toolstream_tui']}",
    ]
    git = meta["git"]
    if git is not None:
        changed = ", ".join(git["uncommitted_in_tui"]) or "none"
        lines.append(f"commit {git['commit'][:12]}, uncommitted in tui/: {changed}")
    if meta.get("git_end") != git:
        lines.append("WARNING: tui/ changed during the run; figures may mix two versions")
    return lines


def report_text(data: dict[str, Any]) -> str:
    lines = [*header(data["meta"]), ""]
    for name, entry in data["streams"].items():
        lines += [*stream_table(name, entry), ""]
    lines += extra_lines(data)
    lines += [f"note: {note}" for note in data["notes"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    results = Results(args)
    sizes = streams.QUICK if args.quick else streams.FULL
    with stream_dir(args.out) as out:
        progress(f"generating streams into {out}")
        generated = streams.generate_all(sizes, args.seed)
        paths = {stream.name: streams.write_stream(stream, out) for stream in generated}
        for stream in generated:
            measure_stream(results, stream, paths[stream.name], args)
        del generated
        measure_extras(results, paths, args)
    finish_meta(results.data["meta"], started)
    print(report_text(results.data))
    args.json.write_text(json.dumps(results.data, indent=2) + "\n", encoding="utf-8")
    meta = results.data["meta"]
    print(f"load average at end {meta['load_average_end']}")
    print(f"results: {args.json}  (total {meta['total_seconds']:.1f} s)")
    streams_failed = any(entry["problems"] for entry in results.data["streams"].values())
    return 1 if streams_failed or results.data["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
