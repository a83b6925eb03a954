"""The app as a user meets it, against headless: `python -m bench app [--quick]`.

Every row of issue 12's table, measured from outside the process: the app runs
in a real terminal (a private tmux server, 120x40), its screen is captured as
fast as tmux answers after a key or a launch (every 10 ms while a whole stream
plays), and every time is from an action (launch, key) to the first captured
frame that shows its effect, or to the process being gone.
Markers of "the effect" are in markers.py; goals in goals.py.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import toolstream_stubs
import toolstream_tui

from . import markers, minimal_app, report
from .files import DEFAULT_CACHE, StreamFile, StreamSpec, paced, stream_file
from .goals import BIG_1M, BIG_10M, CALLS, KEY_PRESSES, KEY_PRESSES_MANY_CALLS, PARALLEL
from .processes import (
    AppExited,
    Watch,
    app_argv,
    quit_app,
    replay_argv,
    run_headless,
    screen_summary,
)
from .procstat import cpu_seconds
from .streams import DEFAULT_SEED
from .terminal import Frame, Process, Terminal, tmux_path

BENCH = Path(__file__).resolve().parent
PARTS = ("whole", "keys", "startup", "cpu", "jumps")
DEFAULT_JSON = BENCH / "app-results.json"
COMMAND = "python -m bench app"


@dataclass(frozen=True, slots=True)
class Plan:
    """How big and how many: the full run, or --quick (seconds, for the smoke test)."""

    whole: tuple[StreamSpec, ...]  # app ÷ headless, one pair per round
    rss_stream: str  # peak RSS and `q` → gone are read from this stream's rounds
    keys_stream: StreamSpec  # ~200k events
    many_calls: StreamSpec  # its keys are measured too
    tiny: StreamSpec  # headless startup
    rounds: int
    presses: int  # per key and phase on the keys' stream, at least
    many_calls_presses: int  # per key on the many calls' stream, at least
    paced_seconds: float  # the paced replay streams this long
    press_timeout: float  # a key with no effect after this long is unanswered
    phase_cap: float  # seconds of key presses per phase at most
    keys_during_stream_only: bool
    jumps: int = 20  # rounds of jumps (End, Home, g N, ]) on the keys' stream
    anomaly_every: int = 2_000  # events between the anomalies spliced into it
    memory_jumps: int = 800  # then this many more, to see whether memory grows


BIG_ARGS_1M = StreamSpec(BIG_1M, "big-args", (1_000_000,))
PARALLEL_64 = StreamSpec(PARALLEL, "parallel", (64, 15_625))
BIG_ARGS_10M = StreamSpec(BIG_10M, "big-args", (10_000_000,))  # ~2M fragments, ~700 MB
CALLS_10K = StreamSpec(CALLS, "one-chunk-calls", (10_000,))
TINY = StreamSpec("tiny", "parallel", (2, 100))

FULL = Plan(
    whole=(BIG_ARGS_1M, PARALLEL_64, BIG_ARGS_10M, CALLS_10K),
    rss_stream=BIG_10M,
    keys_stream=PARALLEL_64,
    many_calls=CALLS_10K,
    tiny=TINY,
    rounds=3,
    presses=KEY_PRESSES,
    many_calls_presses=KEY_PRESSES_MANY_CALLS,
    paced_seconds=30,
    press_timeout=20.0,
    phase_cap=900,  # at `--speed 0` a launch gives each key about two presses
    keys_during_stream_only=True,
)
# The same names, much smaller: a lane per call costs the app most, so few calls.
QUICK_PARALLEL = StreamSpec(PARALLEL, "parallel", (8, 150))
QUICK_CALLS = StreamSpec(CALLS, "one-chunk-calls", (20,))
QUICK = Plan(
    whole=(
        StreamSpec(BIG_1M, "big-args", (20_000,)),
        QUICK_PARALLEL,
        StreamSpec(BIG_10M, "big-args", (100_000,)),
        QUICK_CALLS,
    ),
    rss_stream=BIG_10M,
    keys_stream=QUICK_PARALLEL,
    many_calls=QUICK_CALLS,
    tiny=TINY,
    rounds=1,
    presses=1,
    many_calls_presses=1,
    paced_seconds=1,
    press_timeout=10.0,
    phase_cap=120,
    keys_during_stream_only=False,  # a tiny stream is over before the keys are
    jumps=2,
    memory_jumps=8,
    anomaly_every=100,
)
APP_TIMEOUT_FACTOR = 10  # the app may take this many times headless before it is stopped
APP_TIMEOUT_MIN = 60.0
UNANSWERED_LIMIT = 3  # unanswered presses in a row before a phase stops pressing a key
PRESS_GAP = (0.05, 0.2)  # seconds between an effect and the next press (random: no aliasing)
LAUNCH_TIMEOUT = 120.0
POLL_WHOLE = 0.01  # seconds between captures while a whole stream plays: plenty for runs
# of seconds, and it leaves the CPU to the app
POLL_CPU = 0.1  # while the app's CPU is measured, the screen only says when it finished
CPU_TICK = 0.01  # the kernel counts CPU time in ticks of this many seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small streams, one round (seconds)")
    parser.add_argument("--rounds", type=int, help="pairs per stream (default: 3; --quick 1)")
    parser.add_argument("--presses", type=int, help=f"presses per key (default {KEY_PRESSES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="stream files")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file")
    parser.add_argument("--markdown", type=Path, help="the table (default: the results file, .md)")
    parser.add_argument(
        "--poll-whole",
        type=float,
        default=POLL_WHOLE,
        help=f"seconds between captures while a whole stream plays (default {POLL_WHOLE})",
    )
    parser.add_argument(
        "--poll-keys",
        type=float,
        default=0.0,
        help="seconds between captures after a key or a launch (default 0: as fast as "
        "tmux answers)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=PARTS,
        help="run only these parts (repeatable)",
    )
    args = parser.parse_args(argv)
    args.markdown = args.markdown or args.json.with_suffix(".md")
    return args


def plan_for(args: argparse.Namespace) -> Plan:
    plan = QUICK if args.quick else FULL
    changes: dict[str, Any] = {}
    if args.rounds:
        changes["rounds"] = args.rounds
    if args.presses:
        changes["presses"] = changes["many_calls_presses"] = args.presses
    return replace(plan, **changes)


# -- statistics -------------------------------------------------------------------
def summary(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median": statistics.median(values),
        "max": max(values),
        "min": min(values),
        "values": list(values),
    }


# -- the machine ----------------------------------------------------------------------
class LoadMonitor:
    """Samples the load average and the CPU's busy share while the benchmark runs:
    the machine is shared, and the report says how busy it was."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoadMonitor:
        self._cpu_start = cpu_times()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._cpu_end = cpu_times()

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                return

    def facts(self) -> dict[str, Any]:
        start, end = self._cpu_start, self._cpu_end
        busy, total = end[0] - start[0], end[1] - start[1]
        return {
            "cpus": os.cpu_count(),
            "load_1min": summary([round(sample, 2) for sample in self.samples]),
            "cpu_busy_share": round(busy / total, 3) if total else None,
        }


def cpu_times() -> tuple[int, int]:
    """Busy and total jiffies of all CPUs, from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def versions() -> dict[str, Any]:
    from importlib.metadata import version

    tmux = subprocess.run(["tmux", "-V"], capture_output=True, text=True, check=False)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "textual": version("textual"),
        "toolstream_tui": version("toolstream-tui"),
        "tmux": tmux.stdout.strip(),
    }


def git_commit() -> dict[str, Any] | None:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=BENCH, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "tui"],
            cwd=BENCH.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": commit, "uncommitted_in_tui": [line[3:] for line in dirty]}


# -- the run --------------------------------------------------------------------------
@dataclass
class Run:
    """Everything measured, shaped as the results file."""

    plan: Plan
    args: argparse.Namespace
    cwd: Path  # where the app runs: a directory of the run's own
    figures: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    resolution: dict[str, list[float]] = field(default_factory=dict)
    terminal: Terminal = field(init=False)  # the current part's (`fresh_terminal`)
    watch: Watch = field(init=False)

    def file(self, spec: StreamSpec) -> StreamFile:
        progress(f"stream {spec.name}: {spec.describe()} (cache {self.args.cache})")
        made = stream_file(spec, self.args.seed, self.args.cache)
        self.streams[spec.name] = made.facts()
        return made

    @contextmanager
    def fresh_terminal(self) -> Iterator[None]:
        """A tmux server of its own for each part. tmux 3.3a keeps what each
        `capture-pane -p` answered in control mode (about the size of the screen,
        every capture): after the keys' phases the server held 4.3 GB and took a
        quarter of a core, and the parts measured after them paid for it (the
        minimal Textual app's first frame took 0.66 s instead of 0.2)."""
        with Terminal(cwd=self.cwd) as terminal:
            self.terminal, self.watch = terminal, Watch(terminal)
            yield

    @contextmanager
    def timing(self, part: str, interval: float) -> Iterator[None]:
        """Captures every `interval` seconds (0: as fast as tmux answers) and keeps
        the intervals measured: the resolution of this part's times."""
        self.watch.gaps, self.watch.interval = [], interval
        try:
            yield
        finally:
            self.resolution.setdefault(part, []).extend(self.watch.gaps)


def progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def attempt(run: Run, label: str, measure: Callable[[], None]) -> None:
    """One part of the run; a failure is recorded and the run goes on."""
    progress(label)
    try:
        with run.fresh_terminal():
            measure()
    except Exception as exc:
        run.problems.append(f"{label}: {type(exc).__name__}: {exc}")
        progress(f"FAILED {run.problems[-1]}")


# -- row 1: whole process against whole process ------------------------------------
@dataclass
class AppRun:
    seconds: float | None  # launch → finished on screen → q → gone; None: not finished
    to_finished: float | None
    quit_seconds: float
    killed: bool
    peak_kb: int
    waited: float  # how long it ran before being stopped, when it did not finish
    last_status: str


def run_app_to_end(run: Run, argv: list[str], timeout: float) -> AppRun:
    """Launch → `finished` on screen → `q` → process gone."""
    terminal, watch = run.terminal, run.watch
    start = time.perf_counter()
    process = terminal.launch(argv)
    try:
        frame = watch.until(process, markers.ended, timeout)
        shown = frame or watch.last
        if frame is not None and not markers.finished(frame):
            raise RuntimeError(f"the app ended {markers.state(frame)}: {screen_summary(frame)}")
        to_finished = frame.t - start if frame is not None else None
        process.sample_peak()
        quit_seconds, killed = quit_app(terminal, process, markers.QUIT_KEY)
        total = time.perf_counter() - start if frame is not None else None
        waited = time.perf_counter() - start
        status = markers.status_facts(shown) if shown else ""
        return AppRun(total, to_finished, quit_seconds, killed, process.peak_kb, waited, status)
    finally:
        process.kill()
        process.close()


def whole_process(run: Run, spec: StreamSpec) -> None:
    stream = run.file(spec)
    headless_argv = replay_argv(stream.path, "--headless")
    app = replay_argv(stream.path)
    pairs: list[dict[str, Any]] = []
    for number in range(run.plan.rounds):
        headless = run_headless(headless_argv)
        timeout = max(APP_TIMEOUT_MIN, APP_TIMEOUT_FACTOR * headless.seconds)
        with run.timing("whole", run.args.poll_whole):
            shown = run_app_to_end(run, app, timeout)
        pair = {"headless": asdict(headless), "app": asdict(shown)}
        pairs.append(pair)
        if shown.seconds is None:
            progress(f"  round {number + 1}: app not finished after {shown.waited:.1f} s")
            break
        ratio = shown.seconds / headless.seconds
        pair["ratio"] = ratio
        progress(
            f"  round {number + 1}: headless {headless.seconds:.2f} s, app {shown.seconds:.2f} s"
            f" = {ratio:.2f}x, q → gone {shown.quit_seconds:.2f} s"
        )
    run.details[f"whole.{spec.name}"] = pairs
    record_whole(run, spec.name, pairs)


def record_whole(run: Run, name: str, pairs: list[dict[str, Any]]) -> None:
    done = [pair for pair in pairs if "ratio" in pair]
    figures = run.figures
    figures[f"whole.{name}.ratio"] = summary([pair["ratio"] for pair in done])
    figures[f"whole.{name}.app_seconds"] = summary([pair["app"]["seconds"] for pair in done])
    figures[f"whole.{name}.headless_seconds"] = summary(
        [pair["headless"]["seconds"] for pair in pairs]
    )
    figures[f"quit.{name}"] = summary([pair["app"]["quit_seconds"] for pair in done])
    unfinished = [pair for pair in pairs if "ratio" not in pair]
    if unfinished:
        app = unfinished[0]["app"]
        bound = app["waited"] / unfinished[0]["headless"]["seconds"]
        figures[f"whole.{name}.ratio"]["not_finished"] = {
            "after_seconds": app["waited"],
            "ratio_at_least": bound,
            "status": app["last_status"],
        }
    if name == run.plan.rss_stream:
        figures["rss.headless"] = summary([pair["headless"]["peak_kb"] / 1024 for pair in pairs])
        figures["rss.app"] = summary([pair["app"]["peak_kb"] / 1024 for pair in pairs])


# -- row 2: key → the frame that shows its effect -----------------------------------
@dataclass(frozen=True, slots=True)
class Press:
    key: str
    latency: float | None  # None: no effect within the timeout
    at: float  # seconds since launch
    events: int | None  # events on the status bar when it was sent
    ended: bool  # the stream was over on screen when it was sent
    ambiguous: bool = False  # the effect came with the stream's end, which changes it too

    @property
    def counted(self) -> bool:
        """Answered, and surely by the key."""
        return self.latency is not None and not self.ambiguous


@dataclass
class KeyPhase:
    name: str
    argv: list[str]
    wanted_presses: int  # per key
    after_end: bool = False  # keys pressed once the stream has finished, `t` among them
    presses: list[Press] = field(default_factory=list)
    launches: int = 0
    dropped: set[str] = field(default_factory=set)
    capped: bool = False
    note: str = ""  # why it stopped early, when it did

    def answered(self, key: str) -> int:
        return sum(1 for p in self.presses if p.key == key and p.counted)

    def unanswered_in_a_row(self, key: str) -> int:
        """Its last presses that had no effect (a key that never answers is dropped)."""
        count = 0
        for past in reversed([p for p in self.presses if p.key == key]):
            if past.counted:
                break
            count += 1
        return count

    @property
    def cases(self) -> tuple[markers.KeyCase, ...]:
        """The keys this phase presses: while the stream is on, not `t` (no lane is
        parsed before the finish)."""
        return markers.KEYS if self.after_end else markers.STREAMING_KEYS

    def in_turn(self) -> list[markers.KeyCase]:
        """The keys in their order (close follows open, resume follows pause), from the
        one answered least: where a launch leaves time for a press or two before the
        stream ends (10,000 calls), each key gets its turn, not always the first."""
        cases = list(self.cases)
        first = min(range(len(cases)), key=lambda at: self.answered(cases[at].name))
        return cases[first:] + cases[:first]

    def wanted(self) -> list[markers.KeyCase]:
        return [
            case
            for case in self.cases
            if case.name not in self.dropped and self.answered(case.name) < self.wanted_presses
        ]


def key_phase(run: Run, phase: KeyPhase) -> None:
    """Launch the app again and again, pressing every key in turn while the stream
    is on, until each has its presses (or stops answering, or the time is up)."""
    plan, rng = run.plan, random.Random(run.args.seed)
    deadline = time.perf_counter() + plan.phase_cap
    with run.timing("keys", run.args.poll_keys):
        while phase.wanted() and not phase.capped:
            phase.launches += 1
            start = time.perf_counter()
            process = run.terminal.launch(phase.argv)
            try:
                ready = markers.finished_with_lanes if phase.after_end else markers.lane_in_view
                if run.watch.until(process, ready, LAUNCH_TIMEOUT) is None:
                    phase.note = f"no lane on screen {LAUNCH_TIMEOUT:.0f} s after launch"
                    break
                if not press_keys(run, phase, process, start, rng, deadline):
                    dropped = ", ".join(sorted(phase.dropped)) or "none"
                    phase.note = f"no key could be pressed (no longer pressed: {dropped})"
                    break
                quit_app(run.terminal, process, markers.QUIT_KEY)
            except AppExited as exited:
                phase.note = f"the app exited while keys were pressed: {exited}"
                break
            finally:
                process.kill()
                process.close()
            phase.capped = time.perf_counter() > deadline
    progress(f"  {phase.name}: {len(phase.presses)} presses in {phase.launches} launch(es)")
    if phase.note:
        progress(f"  {phase.name}: {phase.note}")
    run.details[f"keys.{phase.name}"] = {
        "launches": phase.launches,
        "note": phase.note,
        "capped_at_seconds": plan.phase_cap if phase.capped else None,
        "dropped": sorted(phase.dropped),
        "presses": [asdict(press) for press in phase.presses],
    }
    run.figures[f"keys.{phase.name}"] = key_figures(phase, plan)


def press_keys(
    run: Run,
    phase: KeyPhase,
    process: Process,
    start: float,
    rng: random.Random,
    deadline: float,
) -> bool:
    """Press every key in turn (more presses than wanted are more samples), until
    each has its presses or the stream is over; False when no key could be pressed
    at all on this screen."""
    plan = run.plan
    stop_at_end = plan.keys_during_stream_only and not phase.after_end
    while time.perf_counter() < deadline and phase.wanted():
        pressed = False
        for case in phase.in_turn():
            if case.name in phase.dropped:
                continue
            time.sleep(rng.uniform(*PRESS_GAP))
            before = run.watch.frame(process)
            if process.gone():
                raise AppExited(screen_summary(before))
            if stop_at_end and markers.ended(before):
                return True
            if not case.ready(before):
                continue
            pressed_now = press(run, process, case, before, start)
            phase.presses.append(pressed_now)
            pressed = True
            if phase.unanswered_in_a_row(case.name) >= UNANSWERED_LIMIT:
                phase.dropped.add(case.name)
            if pressed_now.latency is None:
                # A late effect would be taken for the next key's: wait it out.
                run.watch.until(
                    process, lambda frame, c=case, b=before: late(c, b, frame), plan.press_timeout
                )
        if not pressed:
            return False
    return True


def late(case: markers.KeyCase, before: Frame, frame: Frame) -> bool:
    """The unanswered key's effect came after all, or the stream ended."""
    answered = case.answered(case.probe(before), case.probe(frame))
    return answered or (markers.ended(frame) and not markers.ended(before))


def press(run: Run, process: Process, case: markers.KeyCase, before: Frame, start: float) -> Press:
    was, ended_before = case.probe(before), markers.ended(before)
    sent = run.terminal.send_key(case.key)
    answered = run.watch.until(
        process, lambda frame: case.answered(was, case.probe(frame)), run.plan.press_timeout
    )
    at, events = sent - start, markers.events_shown(before)
    if answered is None:
        return Press(case.name, None, at, events, ended_before)
    ambiguous = case.end_changes_it and markers.ended(answered) and not ended_before
    return Press(case.name, answered.t - sent, at, events, ended_before, ambiguous)


def key_figures(phase: KeyPhase, plan: Plan) -> dict[str, Any]:
    counted = [p for p in phase.presses if not p.ambiguous]
    latencies = [p.latency * 1000 for p in counted if p.latency is not None]
    figures = summary(latencies)
    figures.pop("values", None)
    figures["unanswered"] = sum(1 for p in counted if p.latency is None)
    figures["ambiguous"] = len(phase.presses) - len(counted)
    figures["after_end"] = sum(1 for p in counted if p.ended)
    figures["per_key"] = {}
    for case in phase.cases:
        own = [p for p in counted if p.key == case.name]
        values = [p.latency * 1000 for p in own if p.latency is not None]
        entry = summary(values)
        entry.pop("values", None)
        entry["unanswered"] = sum(1 for p in own if p.latency is None)
        figures["per_key"][case.name] = entry
    figures["least_answered"] = min(
        (entry["n"] for entry in figures["per_key"].values()), default=0
    )
    figures["launches"] = phase.launches
    figures["capped_at_seconds"] = plan.phase_cap if phase.capped else None
    figures["note"] = phase.note
    return figures


# -- row 4: startup -------------------------------------------------------------------
def startup(run: Run) -> None:
    tiny = run.file(run.plan.tiny)
    headless: list[float] = []
    shown: list[FirstFrame] = []
    floor: list[FirstFrame] = []
    rounds = max(run.plan.rounds, 5) if not run.args.quick else 1
    with run.timing("startup", run.args.poll_keys):
        for _ in range(rounds):
            headless.append(run_headless(replay_argv(tiny.path, "--headless")).seconds)
            shown.append(first_frame(run, app_argv(), markers.content, markers.QUIT_KEY))
            floor.append(first_frame(run, MINIMAL_APP_ARGV, shows_minimal_app, "C-q"))
    run.figures["startup.app"] = summary([frame.seconds for frame in shown])
    run.figures["startup.headless"] = summary(headless)
    run.figures["startup.minimal_textual_app"] = summary([frame.seconds for frame in floor])
    # Each round launches the two in turn: the difference within a round is the
    # steadier figure on a machine whose speed drifts.
    run.figures["startup.over_minimal"] = summary(
        [app.seconds - minimal.seconds for app, minimal in zip(shown, floor, strict=True)]
    )
    # The CPU each had used by then: on a busy machine, steadier than the seconds.
    run.figures["startup.app_cpu"] = summary([frame.cpu for frame in shown])
    run.figures["startup.minimal_textual_app_cpu"] = summary([frame.cpu for frame in floor])
    progress(
        f"  first frame {statistics.median(frame.seconds for frame in shown):.3f} s "
        f"(CPU {statistics.median(frame.cpu for frame in shown):.2f} s), "
        f"headless {statistics.median(headless):.3f} s, "
        f"a minimal Textual app {statistics.median(frame.seconds for frame in floor):.3f} s "
        f"(CPU {statistics.median(frame.cpu for frame in floor):.2f} s)"
    )


MINIMAL_APP_ARGV = [sys.executable, str(Path(__file__).with_name("minimal_app.py"))]


def shows_minimal_app(frame: Frame) -> bool:
    return any(minimal_app.TEXT in line for line in frame.lines)


@dataclass(frozen=True, slots=True)
class FirstFrame:
    seconds: float  # from the launch to the first frame that shows it
    cpu: float  # the process's CPU when that frame was captured (kernel ticks: 10 ms)


def first_frame(
    run: Run, argv: list[str], shows: Callable[[Frame], bool], quit_key: str
) -> FirstFrame:
    """From launching `argv` to the first frame that `shows`; then quit."""
    start = time.perf_counter()
    process = run.terminal.launch(argv)
    try:
        frame = run.watch.until(process, shows, LAUNCH_TIMEOUT)
        if frame is None:
            raise RuntimeError(f"{argv[-1]}: nothing shown after {LAUNCH_TIMEOUT:.0f} s")
        cpu = cpu_seconds(process.pid)
        if cpu is None:
            raise RuntimeError(f"{argv[-1]}: gone before its CPU time was read")
        quit_app(run.terminal, process, quit_key)
        return FirstFrame(frame.t - start, cpu)
    finally:
        process.kill()
        process.close()


# -- what watching costs ----------------------------------------------------------------
def display_cpu(run: Run) -> None:
    """CPU time of the whole process over the paced stream (the keys' stream spread
    over `paced_seconds`, no key pressed): the app from launch until `finished` is
    on screen, headless until it exits; the two take turns."""
    path = paced(run.file(run.plan.keys_stream), run.plan.paced_seconds)
    watch = replace(run.watch, interval=POLL_CPU, gaps=[])
    pairs: list[dict[str, float]] = []
    for number in range(run.plan.rounds):
        headless = run_headless(replay_argv(path, "--headless", speed=1)).cpu_seconds
        timeout = APP_TIMEOUT_MIN + APP_TIMEOUT_FACTOR * run.plan.paced_seconds
        app = app_cpu_to_finished(run.terminal, watch, replay_argv(path, speed=1), timeout)
        pairs.append({"app": app, "headless": headless, "ratio": app / max(headless, CPU_TICK)})
        progress(f"  round {number + 1}: app {app:.2f} s of CPU, headless {headless:.2f} s")
    run.details["cpu.paced"] = pairs
    for name in ("app", "headless", "ratio"):
        run.figures[f"cpu.paced.{name}"] = summary([pair[name] for pair in pairs])


def app_cpu_to_finished(terminal: Terminal, watch: Watch, argv: list[str], timeout: float) -> float:
    """CPU seconds of the app from launch until `finished` is on screen."""
    process = terminal.launch(argv)
    try:
        frame = watch.until(process, markers.ended, timeout)
        cpu = cpu_seconds(process.pid, children=False)
        if frame is None or not markers.finished(frame) or cpu is None:
            shown = frame or watch.last
            said = screen_summary(shown) if shown else "nothing on screen"
            raise RuntimeError(f"the paced stream did not finish: {said}")
        quit_app(terminal, process, markers.QUIT_KEY)
        return cpu
    finally:
        process.kill()
        process.close()


# -- time travel: a jump → the frame that shows the cursor there -------------------------
NOT_JSON_EVENT = b"data: {not json\n\n"


def with_anomalies(stream: StreamFile, every: int) -> tuple[Path, int, list[int]]:
    """The stream with a not-JSON event (a `data-not-json` sighting) after every
    `every` events, so `]` has somewhere to go all along it; its events, and the
    numbers of those spliced in."""
    path = stream.path.with_name(f"{stream.path.stem}.anomalies{every}.sse")
    events = stream.path.read_bytes().split(b"\n\n")[:-1]
    spliced = [event + b"\n\n" for event in events]
    for position in range(len(spliced) - len(spliced) % every, 0, -every):
        spliced.insert(position, NOT_JSON_EVENT)
    anomalies = [n + 1 for n, event in enumerate(spliced) if event == NOT_JSON_EVENT]
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_bytes(b"".join(spliced))
        os.replace(partial, path)
    return path, len(spliced), anomalies


def at_event(number: int) -> Callable[[Frame], bool]:
    return lambda frame: markers.paused(frame) and markers.events_shown(frame) == number


def read_at(number: int, total: int) -> Callable[[Frame], bool]:
    """At event `number` with all `total` events read: `--at` shows its event while
    the rest is still read, and a jump timed then would time the reading."""
    shown = at_event(number)
    return lambda frame: shown(frame) and f" of {total:,} · " in markers.status(frame)


def vm_rss_kb(pid: int) -> int | None:
    """The resident set now (VmRSS), in KiB: what jumps might leave behind."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass
class Jumps:
    """Key → frame per kind of jump, in seconds."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)

    def jump(self, run: Run, process: Process, name: str, key: str, to: int) -> None:
        """Send `key`; the first frame showing the cursor at event `to` ends the jump."""
        sent = run.terminal.send_key(key)
        frame = run.watch.until(process, at_event(to), run.plan.press_timeout)
        if frame is None:
            shown = markers.events_shown(run.watch.last) if run.watch.last else None
            self.missed.append(f"{name} to {to}: the screen stayed at {shown}")
            return
        self.seconds.setdefault(name, []).append(frame.t - sent)


def jumps(run: Run) -> None:
    """`--replay FILE --at N` on the keys' stream with anomalies spliced in (~200k
    events), then rounds of: End, Home (start ↔ end), g N Enter (a random event;
    timed from Enter), ] (the next anomaly); then `memory_jumps` more, untimed:
    the resident set after the second half of them less after the first half
    (caches filled by then) says whether memory grows with the number of jumps."""
    plan, rng = run.plan, random.Random(run.args.seed)
    path, total, anomalies = with_anomalies(run.file(plan.keys_stream), plan.anomaly_every)
    start = total // 2
    process = run.terminal.launch(replay_argv(path, "--at", str(start)))
    measured = Jumps()
    try:
        with run.timing("jumps", run.args.poll_keys):
            if run.watch.until(process, read_at(start, total), LAUNCH_TIMEOUT) is None:
                raise RuntimeError(
                    f"not at event {start} of {total} {LAUNCH_TIMEOUT:.0f} s after launch"
                )
            rss_timed = jump_rounds(run, process, measured, rng, total, anomalies, plan.jumps)
            half = plan.memory_jumps // 8  # rounds of 4 jumps
            rss_before = jump_rounds(run, process, Jumps(), rng, total, anomalies, half)
            rss_after = jump_rounds(run, process, Jumps(), rng, total, anomalies, half)
        quit_app(run.terminal, process, markers.QUIT_KEY)
    finally:
        process.kill()
        process.close()
    for name, values in measured.seconds.items():
        run.figures[f"jumps.{name}"] = summary(values)
    growth = None if rss_before is None or rss_after is None else (rss_after - rss_before) / 1024
    run.figures["jumps.rss_growth"] = summary([] if growth is None else [growth])
    run.details["jumps"] = {
        "events": total,
        "anomalies": len(anomalies),
        "opened_at": start,
        "rounds": plan.jumps,
        "rss_kb_after_timed_rounds": rss_timed,
        "memory_jumps": plan.memory_jumps,
        "rss_kb_after_half_of_them": rss_before,
        "rss_kb_after_all_of_them": rss_after,
        "missed": measured.missed,
    }
    run.problems += [f"jumps: {missed}" for missed in measured.missed]
    said = ", ".join(
        f"{name} max {max(values) * 1000:.0f} ms" for name, values in measured.seconds.items()
    )
    progress(f"  {said}; resident set {growth if growth is None else round(growth, 1)} MB more")


def jump_rounds(
    run: Run,
    process: Process,
    measured: Jumps,
    rng: random.Random,
    total: int,
    anomalies: list[int],
    rounds: int,
) -> int | None:
    """`rounds` rounds of every jump; the resident set after them (KiB)."""
    for _ in range(rounds):
        measured.jump(run, process, "start-end", "End", total)
        measured.jump(run, process, "start-end", "Home", 0)
        target = rng.randrange(1, total)
        run.terminal.send_key("g")
        if run.watch.until(process, markers.goto_prompt, run.plan.press_timeout) is None:
            measured.missed.append("g: no prompt")
            continue
        run.terminal.send_key(str(target))
        measured.jump(run, process, "random-event", "Enter", target)
        later = [number for number in anomalies if number > target]
        if later:
            measured.jump(run, process, "next-anomaly", "]", later[0])
    return vm_rss_kb(process.pid)


# -- everything -------------------------------------------------------------------------
def measure(run: Run, parts: set[str]) -> None:
    plan = run.plan
    if "whole" in parts:
        for spec in plan.whole:
            attempt(run, f"whole process: {spec.name}", lambda s=spec: whole_process(run, s))
    if "keys" in parts:
        keys = run.file(plan.keys_stream)
        many = run.file(plan.many_calls)
        paced_keys = replay_argv(paced(keys, plan.paced_seconds), speed=1)
        phases = (
            KeyPhase("speed-0", replay_argv(keys.path), plan.presses),
            KeyPhase("paced", paced_keys, plan.presses),
            KeyPhase("calls-10k", replay_argv(many.path), plan.many_calls_presses),
            KeyPhase("finished", replay_argv(keys.path), plan.presses, after_end=True),
        )
        for phase in phases:
            attempt(run, f"keys: {phase.name}", lambda p=phase: key_phase(run, p))
    if "startup" in parts:
        attempt(run, "startup", lambda: startup(run))
    if "cpu" in parts:
        attempt(run, "cpu: paced", lambda: display_cpu(run))
    if "jumps" in parts:
        attempt(run, "jumps", lambda: jumps(run))


def resolution_facts(run: Run) -> dict[str, Any]:
    facts = {}
    for part, gaps in run.resolution.items():
        ms = sorted(gap * 1000 for gap in gaps)
        if ms:
            facts[part] = {
                "captures": len(ms) + 1,
                "median_ms": statistics.median(ms),
                "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
                "max_ms": ms[-1],
            }
    return facts


def scrubbed(text: str, cache: Path) -> str:
    """No path of this machine in a results file that may be committed."""
    return text.replace(str(cache), "$CACHE").replace(tempfile.gettempdir(), "$TMPDIR")


def command_line(args: argparse.Namespace) -> str:
    options = ["--quick"] if args.quick else []
    if args.rounds:
        options.append(f"--rounds {args.rounds}")
    if args.presses:
        options.append(f"--presses {args.presses}")
    if args.poll_whole != POLL_WHOLE:
        options.append(f"--poll-whole {args.poll_whole:g}")
    if args.poll_keys:
        options.append(f"--poll-keys {args.poll_keys:g}")
    options += [f"--only {part}" for part in args.only or ()]
    return " ".join([COMMAND, *options])


def compile_packages() -> None:
    """Bytecode for the code measured, as an install writes it: an editable install
    (or PYTHONDONTWRITEBYTECODE) would otherwise compile it at every launch, which
    the startup rows would count."""
    for package in (toolstream_tui, toolstream_stubs):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if tmux_path() is None:
        print("tmux is not installed; the app benchmark needs a real terminal", file=sys.stderr)
        return 2
    plan = plan_for(args)
    parts = set(args.only or PARTS)
    compile_packages()
    started = time.perf_counter()
    with (
        LoadMonitor() as load,
        tempfile.TemporaryDirectory(prefix="toolstream-bench-cwd-") as cwd,
    ):
        run = Run(plan, args, Path(cwd))
        with run.fresh_terminal():
            terminal_size = run.terminal.size()
        measure(run, parts)
    results = {
        "meta": {
            "command": command_line(args),
            "quick": args.quick,
            "seed": args.seed,
            "rounds": plan.rounds,
            "presses": plan.presses,
            "many_calls_presses": plan.many_calls_presses,
            "paced_seconds": plan.paced_seconds,
            "rss_stream": plan.rss_stream,
            "poll_seconds": {"whole": args.poll_whole, "keys": args.poll_keys},
            "terminal": list(terminal_size),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "total_seconds": time.perf_counter() - started,
            "machine": load.facts(),
            "resolution": resolution_facts(run),
            "versions": versions(),
            "git": git_commit(),
        },
        "streams": run.streams,
        "figures": run.figures,
        "details": run.details,
        "problems": [scrubbed(problem, args.cache) for problem in run.problems],
    }
    results["goals"] = report.judge(results["figures"])
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    table = report.markdown(results)
    args.markdown.write_text(table, encoding="utf-8")
    print(table)
    print(f"results: {args.json}, {args.markdown} ({results['meta']['total_seconds']:.0f} s)")
    return 1 if run.problems else 0
