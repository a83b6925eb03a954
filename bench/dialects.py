"""The new dialects against their framing's floor: `python -m bench dialects`.

For each generated stream (bench/dialect_streams.py, ~1 MB of arguments) it
first runs `toolstream-tui --replay FILE --headless --speed 0` once and checks
that the report rebuilds the generated calls; a stream whose calls are not
rebuilt (its dialect not written yet, say) is reported as such and not timed.
Then, whole process against whole process on the same file, paired alternating
rounds (floor, headless, floor, headless…): the floor is bench/dialect_floor.py
(frame the file, `json.loads` each payload). Both are started by bench/spawn.py,
which times fork to exit and reads the child's peak RSS from wait4. The median
and spread of the per-pair ratios are reported, and the same on a tiny stream of
each dialect: what starting the two processes costs, so that a ratio that is
mostly startup can be told from one that is not.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import dialect_streams, processes
from .consumers import headless_argv
from .dialect_streams import DialectStream
from .streams import DEFAULT_SEED
from .throughput import finish_meta, git_state, load_average, progress

DESCRIPTION = "Time the new dialects' headless runs against a process that only frames and parses."
BENCH = Path(__file__).resolve().parent
DEFAULT_JSON = BENCH / "dialects-results.json"
FLOOR = BENCH / "dialect_floor.py"
GOAL = 1.3  # headless within 1.3x of its own floor (median of the pairs)
STARTUP_BYTES = 200  # the tiny stream that measures what starting costs
STARTUP_PAIRS = 5
# The bound writes all it parsed: less than the report (each call's arguments as text
# and parsed) only where the events hold little but the arguments (Gemini's and
# Ollama's whole calls), not where each small piece comes in an envelope of its own.
THIN_ENVELOPES = 3
NET_FLOOR_S = 0.05  # below this the floor is mostly startup, and a net ratio noise
# cProfile on the headless run, in-process (`run` ends with os._exit, `main` returns):
# the project's functions by cumulative time, then everything by own time.
PROFILE_SCRIPT = """\
import cProfile, os, pstats, sys
from toolstream_tui.cli import main
out, sys.stdout = sys.stdout, open(os.devnull, "w")
profile = cProfile.Profile()
profile.runcall(main, ["--replay", sys.argv[1], "--headless", "--speed", "0"])
sys.stdout = out
stats = pstats.Stats(profile, stream=out)
stats.sort_stats("cumulative").print_stats("toolstream_tui", 22)
stats.sort_stats("tottime").print_stats(12)
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench dialects", description=DESCRIPTION)
    parser.add_argument("--pairs", type=int, default=7, help="floor/headless pairs (default: 7)")
    parser.add_argument("--bytes", type=int, default=dialect_streams.FULL_BYTES)
    parser.add_argument("--only", action="append", choices=sorted(dialect_streams.GENERATORS))
    parser.add_argument("--quick", action="store_true", help="tiny streams, 1 pair")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the headless runs that miss the goal"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, help="keep the streams here (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file")
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.bytes = 1, dialect_streams.QUICK_BYTES
    return args


# -- correctness -------------------------------------------------------------------
def headless_report(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The headless JSON report of `path`, and what went wrong when there is none."""
    done = subprocess.run(headless_argv(path), capture_output=True, timeout=600, check=False)
    try:
        return json.loads(done.stdout), ""
    except ValueError:
        said = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return None, f"exit {done.returncode}, no report: {said[0]}"


def report_problems(report: dict[str, Any], stream: DialectStream) -> list[str]:
    """How the report differs from the generated calls (empty: it rebuilt them)."""
    problems = []
    if report.get("dialect") != stream.dialect:
        problems.append(f"read as {report.get('dialect')}, not {stream.dialect}")
    if report.get("status") != "finished":
        problems.append(f"status {report.get('status')}")
    calls = report.get("tool_calls") or []
    if [call.get("name") for call in calls] != [call.name for call in stream.calls]:
        problems.append(f"{len(calls)} call(s) named otherwise than the {len(stream.calls)} sent")
    elif exact(call.get("arguments") for call in calls) != exact(c.arguments for c in stream.calls):
        problems.append("parsed arguments differ")
    if stream.ids_on_wire and [c.get("id") for c in calls] != [c.call_id for c in stream.calls]:
        problems.append("call ids differ")
    kinds = sorted({anomaly["kind"] for anomaly in report.get("anomalies") or []})
    if kinds:
        problems.append(f"anomalies: {', '.join(kinds)}")
    return problems


def exact(values: Any) -> list[str]:
    """JSON text keeps what == forgets: key order, 1 against 1.0 and True."""
    return [json.dumps(value, ensure_ascii=False) for value in values]


def check(stream: DialectStream, path: Path) -> list[str]:
    report, failure = headless_report(path)
    return [failure] if report is None else report_problems(report, stream)


# -- timing ---------------------------------------------------------------------------
def floor_argv(framing: str, path: Path) -> list[str]:
    return [sys.executable, str(FLOOR), framing, str(path)]


def bound_argv(framing: str, path: Path) -> list[str]:
    """The floor's work, plus orjson's import and what it parsed written out: less
    than any headless run can do (see bench/dialect_floor.py)."""
    return [sys.executable, str(FLOOR), "--bound", framing, str(path)]


def pairs(
    framing: str, path: Path, count: int, against: list[str] | None = None
) -> list[dict[str, float]]:
    """`count` rounds of floor then headless (or `against`) on the same file; the
    floor runs once before them so that both find the file in the page cache."""
    floor, headless = floor_argv(framing, path), against or headless_argv(path)
    processes.run_headless(floor)
    rounds = []
    for _ in range(count):
        below, ours = processes.run_headless(floor), processes.run_headless(headless)
        rounds.append(
            {
                "floor_s": below.seconds,
                "headless_s": ours.seconds,
                "ratio": ours.seconds / below.seconds,
                "cpu_ratio": ours.cpu_seconds / below.cpu_seconds,
                "floor_peak_kb": below.peak_kb,
                "headless_peak_kb": ours.peak_kb,
            }
        )
    return rounds


def summary(rounds: list[dict[str, float]]) -> dict[str, Any]:
    ratios = [entry["ratio"] for entry in rounds]
    cpu_ratios = [entry["cpu_ratio"] for entry in rounds]
    return {
        "pairs": len(rounds),
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        # CPU time (user + system, wait4) of the two: other processes on the machine
        # stretch it far less than wall time, so it tells load from our own cost
        "cpu_median_ratio": statistics.median(cpu_ratios),
        "cpu_min_ratio": min(cpu_ratios),
        "cpu_max_ratio": max(cpu_ratios),
        "floor_median_s": statistics.median(entry["floor_s"] for entry in rounds),
        "headless_median_s": statistics.median(entry["headless_s"] for entry in rounds),
        "floor_peak_kb": max(entry["floor_peak_kb"] for entry in rounds),
        "headless_peak_kb": max(entry["headless_peak_kb"] for entry in rounds),
    }


def net_ratio(entry: dict[str, Any]) -> float | None:
    """The ratio with each process's startup (its median on the tiny stream) taken
    off: what the stream itself costs the two, when both are well above startup."""
    whole, tiny = entry.get("timing"), entry.get("startup")
    if not whole or not tiny:
        return None
    floor = whole["floor_median_s"] - tiny["floor_median_s"]
    headless = whole["headless_median_s"] - tiny["headless_median_s"]
    return headless / floor if floor > NET_FLOOR_S else None


# -- one stream --------------------------------------------------------------------------
def measure(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    stream = dialect_streams.generate(name, args.bytes, args.seed)
    path = dialect_streams.write_stream(stream, out)
    entry: dict[str, Any] = {
        "dialect": stream.dialect,
        "framing": stream.framing,
        "file": path.name,
        "events": stream.events,
        "body_bytes": len(stream.body),
        "argument_bytes": stream.argument_bytes,
        "calls": len(stream.calls),
    }
    progress(f"{name}: checking the headless report")
    entry["problems"] = check(stream, path)
    if entry["problems"]:
        entry["timing"] = None
        return entry
    del stream
    progress(f"{name}: {args.pairs} pairs of floor and headless")
    entry["timing"] = summary(pairs(entry["framing"], path, args.pairs))
    tiny = dialect_streams.generate(name, STARTUP_BYTES, args.seed)
    tiny_path = dialect_streams.write_stream(tiny, out, f"{name}-tiny")
    entry["startup"] = summary(pairs(tiny.framing, tiny_path, min(args.pairs, STARTUP_PAIRS)))
    entry["net_ratio"] = net_ratio(entry)
    entry["met"] = entry["timing"]["median_ratio"] <= GOAL
    if not entry["met"] and entry["body_bytes"] <= THIN_ENVELOPES * entry["argument_bytes"]:
        progress(f"{name}: {STARTUP_PAIRS} pairs of floor and the bound")
        against = bound_argv(entry["framing"], path)
        entry["bound"] = summary(pairs(entry["framing"], path, STARTUP_PAIRS, against))
    if args.profile and not entry["met"]:
        progress(f"{name}: cProfile of the headless run")
        entry["profile"] = profile_lines(path)
    return entry


def profile_lines(path: Path) -> list[str]:
    """The profile's rows, paths cut to the package (its timings are cProfile's, slower
    than the run's own: read them as shares)."""
    done = subprocess.run(
        [sys.executable, "-c", PROFILE_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return [
        short_paths(line)
        for line in done.stdout.splitlines()
        if line.strip() and not line.lstrip().startswith(("Ordered by", "List reduced"))
    ]


def short_paths(line: str) -> str:
    """A profile row with its file named from the package (or the stdlib's folder),
    never by where this machine keeps it."""
    return re.sub(r"/\S*/((?:toolstream_tui|python3\.\d+)/\S+)", r"\1", line).replace(
        "toolstream_tui/", ""
    )


# -- output -----------------------------------------------------------------------------------
def meta(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    import platform

    return {
        "command": " ".join(["python -m bench dialects", *argv]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pairs": args.pairs,
        "argument_bytes": args.bytes,
        "seed": args.seed,
        "git": git_state(),
        "clock": clock_resolution(),
        "load_average_start": load_average(),
    }


def clock_resolution() -> str:
    info = time.get_clock_info("perf_counter")
    return f"perf_counter, {info.resolution * 1e9:.0f} ns"


def row(name: str, entry: dict[str, Any]) -> str:
    head = f"  {name:<21}{entry['framing']:<12}{entry['events']:>9,}{entry['body_bytes']:>12,}"
    timing = entry["timing"]
    if timing is None:
        return f"{head}  NOT MEASURED: {'; '.join(entry['problems'])}"
    net = f"{entry['net_ratio']:.2f}" if entry["net_ratio"] is not None else "-"
    startup = entry["startup"]
    start_alone = startup["headless_median_s"] / timing["floor_median_s"]
    return (
        f"{head}{timing['floor_median_s']:>9.3f}{timing['headless_median_s']:>10.3f}"
        f"{timing['median_ratio']:>8.2f} {timing['min_ratio']:.2f}-{timing['max_ratio']:.2f}"
        f"{timing['cpu_median_ratio']:>6.2f} "
        f"{timing['cpu_min_ratio']:.2f}-{timing['cpu_max_ratio']:.2f}"
        f"{startup['floor_median_s']:>8.3f}{startup['headless_median_s']:>8.3f}{net:>6}"
        f"{start_alone:>7.2f}"
        f"{timing['headless_peak_kb'] // 1024:>6}{timing['floor_peak_kb'] // 1024:>6}"
        f"{bound_text(entry):>7}  {'met' if entry['met'] else 'NOT MET'}"
    )


def bound_text(entry: dict[str, Any]) -> str:
    bound = entry.get("bound")
    return "-" if bound is None else f"{bound['median_ratio']:.2f}"


def report_text(data: dict[str, Any]) -> str:
    m = data["meta"]
    git = m["git"] or {}
    changed = ", ".join(git.get("uncommitted_in_tui") or []) or "none"
    lines = [
        f"$ {m['command']}",
        f"python {m['python']}, {m['platform']}",
        f"commit {git.get('commit', '?')[:12]}, uncommitted in tui/: {changed}",
        f"load average at start {m['load_average_start']}, at end {m.get('load_average_end')}",
        f"{m['pairs']} pairs (floor, headless alternating) per stream, ~{m['argument_bytes']:,} B "
        f"of arguments each; wall time fork to exit ({m['clock']}), startup included; "
        f"goal: median ratio <= {GOAL}",
        "",
        f"  {'stream':<21}{'framing':<12}{'events':>9}{'body B':>12}{'floor s':>9}"
        f"{'headless':>10}{'ratio':>8} {'min-max':<9}{'cpu':>6} {'min-max':<9}"
        f"{'tiny fl':>8}{'tiny hl':>8}{'net':>6}{'start':>7}"
        f"{'MB hl':>6}{'MB fl':>6}{'bound':>7}",
    ]
    lines += [row(name, entry) for name, entry in data["streams"].items()]
    for name, entry in data["streams"].items():
        if entry.get("profile"):
            lines += ["", f"{name}: cProfile of the headless run", *entry["profile"]]
    if m.get("git_end") != m["git"]:
        lines.append("WARNING: tui/ changed during the run; figures may mix two versions")
    lines += [
        "",
        "ratio: median of headless/floor over the pairs (min-max the spread), wall time; cpu: the",
        "same of their CPU time (user + system), which the machine's load stretches less;",
        f"tiny fl / tiny hl: medians on a {STARTUP_BYTES} B stream of the same dialect (what",
        "starting costs);",
        "net: (headless - tiny hl) / (floor - tiny fl); start: tiny hl / floor, what starting",
        f"alone costs against the floor's whole run (from {GOAL} up, the goal is out of reach",
        "until the process starts faster); MB: peak RSS (wait4); bound (where the goal is not",
        f"met and the body is at most {THIN_ENVELOPES}x the arguments): the floor's work with "
        "orjson's import and",
        "what it parsed written out, against the floor: less than any headless run that writes",
        f"the report does; from {GOAL} up, none can meet the goal.",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    from .app import compile_packages  # (the app bench's imports are its own)

    # Under PYTHONDONTWRITEBYTECODE, each measured process compiled every module changed
    # since its bytecode was written (none written: 810M instructions for a 200-byte
    # stream's run, against 356M)
    compile_packages()
    started = time.perf_counter()
    data: dict[str, Any] = {"meta": meta(args, argv), "streams": {}}
    names = args.only or list(dialect_streams.GENERATORS)
    with tempfile.TemporaryDirectory(prefix="toolstream-dialects-") as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                data["streams"][name] = measure(name, args, out)
            except Exception as exc:  # one stream's failure must not lose the others
                data["streams"][name] = failed(name, args, exc)
                progress(f"FAILED {name}: {type(exc).__name__}: {exc}")
    finish_meta(data["meta"], started)
    return data


def failed(name: str, args: argparse.Namespace, exc: Exception) -> dict[str, Any]:
    framing = dialect_streams.generate(name, 10, args.seed).framing
    problem = f"{type(exc).__name__}: {exc}"
    return {"framing": framing, "events": 0, "body_bytes": 0, "problems": [problem], "timing": None}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    data = run(args, argv)
    print(report_text(data))
    args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"results: {args.json}  (total {data['meta']['total_seconds']:.1f} s)")
    return 1 if any(entry["problems"] for entry in data["streams"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
