"""The benchmarks (`python -m bench ...`) run end to end in --quick mode, the
streams they generate are what they claim to be, and the app benchmark's
pieces (stream cache, screen reading, goals, the README section) do what they
say. No timing is asserted."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.docs_pages import docs_page
from tests.helpers.paths import PROJECT
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.sources.recording import RecordedRead, timing_path, timing_records

ROOT = PROJECT
BENCH = ROOT / "bench"
STREAMS = ("big-args-100k", "big-args-300k", "big-args-1m", "parallel-64", "chatty")
ALWAYS_MEASURED = (
    "floor-json",
    "core",
    "process-floor",
    "process-headless",
    "process-headless-key",
)
READ_SIZE = 1000  # small reads cut inside events and inside UTF-8 characters


def bench_module(name: str) -> ModuleType:
    """bench.NAME, the package loaded from the repository (it is not installed)."""
    if "bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "bench", BENCH / "__init__.py", submodule_search_locations=[str(BENCH)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules["bench"] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"bench.{name}")


def run_bench(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def streams() -> ModuleType:
    return bench_module("streams")


@pytest.fixture(scope="module")
def quick_streams(streams: ModuleType) -> dict[str, Any]:
    return {stream.name: stream for stream in streams.generate_all(streams.QUICK)}


# -- the throughput benchmark ---------------------------------------------------------
@pytest.mark.slow
def test_quick_throughput_reports_every_stream(tmp_path: Path) -> None:
    out, results_path = tmp_path / "streams", tmp_path / "results.json"
    done = run_bench("throughput", "--quick", "--out", str(out), "--json", str(results_path))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert set(results["streams"]) == set(STREAMS)
    for name, entry in results["streams"].items():
        assert (out / f"{name}.sse").stat().st_size == entry["body_bytes"]
        assert set(ALWAYS_MEASURED) <= set(entry["consumers"]), name
        assert entry["problems"] == [], name
    assert {"core", "floor-json", "process-headless"} <= set(results["growth"])
    assert results["rss"]["headless_kb"] > 0
    assert set(results["startup"]) >= {"headless_weather", "import_app"}
    assert "core" in done.stdout and str(results_path) in done.stdout


def test_the_bench_runs_with_no_key_of_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a key set, a headless run reads its stream twice (to keep the key out of
    it): figures would depend on who ran the bench."""
    environment = bench_module("environment")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-of-this-machine")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "of-this-machine")
    environment.forget_keys()
    assert "OPENAI_API_KEY" not in os.environ and "AWS_BEARER_TOKEN_BEDROCK" not in os.environ
    assert environment.with_key()["OPENAI_API_KEY"] == environment.BENCH_KEY


def test_run_py_still_runs_the_throughput_benchmark() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "python -m bench throughput" in done.stdout


# -- the app benchmark ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="the app benchmark needs tmux")
def test_quick_app_bench_measures_every_row(tmp_path: Path) -> None:
    goals = bench_module("goals")
    markers = bench_module("markers")
    results_path, cache = tmp_path / "app.json", tmp_path / "cache"
    done = run_bench("app", "--quick", "--json", str(results_path), "--cache", str(cache))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    text = results_path.read_text(encoding="utf-8")
    assert str(tmp_path) not in text and tempfile.gettempdir() not in text  # may be committed
    results = json.loads(text)
    assert results["problems"] == []
    assert results["meta"]["terminal"] == [120, 40]
    figures = results["figures"]
    for goal in goals.GOALS:
        figure = figures[goal.figure]
        assert figure["n"] >= 1 or "not_finished" in figure, goal.figure
    judged = {entry["figure"]: entry for entry in results["goals"]}
    assert set(judged) == {goal.figure for goal in goals.GOALS}
    names = {case.name for case in markers.KEYS}
    streaming = {case.name for case in markers.STREAMING_KEYS}
    assert streaming == names - {"tree/raw"}  # no lane is parsed before the finish
    phases = {"keys.speed-0": streaming, "keys.paced": streaming, "keys.calls-10k": streaming}
    phases["keys.finished"] = names
    for phase, pressed in phases.items():
        assert {press["key"] for press in results["details"][phase]["presses"]} == pressed, phase
        assert set(figures[phase]["per_key"]) == pressed, phase
    # Whether a key answers is the app's business, but each marker has seen its key's
    # effect at least once.
    answered = {
        name for phase in phases for name, entry in figures[phase]["per_key"].items() if entry["n"]
    }
    assert answered == names
    assert figures["rss.app"]["max"] > 0 and figures["rss.headless"]["max"] > 0
    assert figures["startup.minimal_textual_app"]["n"] == figures["startup.app"]["n"]
    assert figures["startup.over_minimal"]["n"] == figures["startup.app"]["n"]
    assert figures["cpu.paced.app"]["min"] > 0 and figures["cpu.paced.headless"]["min"] > 0
    assert set(results["meta"]["resolution"]) == {"whole", "keys", "startup", "jumps"}
    for name, facts in results["streams"].items():
        assert (cache / facts["path"]).stat().st_size == facts["body_bytes"], name
    table = results_path.with_suffix(".md").read_text(encoding="utf-8")
    assert "`python -m bench app --quick`" in table
    assert table.count("\n| ") >= len(goals.GOALS) + 1
    assert "a minimal Textual app" in table and "What watching costs" in table
    assert table in done.stdout


def test_a_headless_run_is_measured_without_the_bench_s_own_memory() -> None:
    """The kernel's peak RSS of a child counts the memory of whoever started it; a
    bench that holds a big stream must not have it counted as headless's."""
    processes = bench_module("processes")
    held = bytearray(200 << 20)
    for page in range(0, len(held), 4096):
        held[page] = 1  # resident, as a generated stream is
    run = processes.run_headless([sys.executable, "-c", "pass"])
    assert run.peak_kb < 100 << 10  # a bare interpreter, not the 200 MB held here
    assert run.seconds > 0


def test_stream_files_are_cached_by_parameters(tmp_path: Path) -> None:
    files = bench_module("files")
    spec = files.StreamSpec("big-args-1m", "big-args", (3000,))
    stale = tmp_path / f"{files.cache_stem(spec, 1)}-000000000000.sse"
    stale.write_bytes(b"made by an older generator")
    first = files.stream_file(spec, 1, tmp_path)
    assert not stale.exists()
    assert files.stream_file(spec, 1, tmp_path) == first
    assert first.path.read_bytes() == bench_module("streams").big_args(spec.name, 3000, 1).body
    other = files.stream_file(spec, 2, tmp_path)
    assert other.path != first.path and first.path.exists()
    smaller = files.stream_file(files.StreamSpec("big-args-1m", "big-args", (2000,)), 1, tmp_path)
    assert smaller.body_bytes < first.body_bytes and first.path.exists()
    assert feed(other.path.read_bytes())["events"] == other.events


def test_paced_copy_streams_for_the_seconds_asked(tmp_path: Path) -> None:
    files = bench_module("files")
    made = files.stream_file(files.StreamSpec("parallel-64", "parallel", (4, 5000)), 1, tmp_path)
    path = files.paced(made, 20)
    assert path.read_bytes() == made.path.read_bytes()
    with timing_path(path).open("rb") as file:
        records = timing_records(file, timing_path(path).name)
        reads = [record for record in records if isinstance(record, RecordedRead)]
    assert reads[-1] == RecordedRead(made.body_bytes, 20.0)
    assert [read.end for read in reads] == sorted(read.end for read in reads)
    assert (reads[0].t or 0) > 0


def test_the_selected_lane_and_the_status_are_read_off_a_frame() -> None:
    markers = bench_module("markers")
    terminal = bench_module("terminal")
    raw = [
        " streaming · PAUSED · at event 12 of 40 · 0.10 s · no anomalies · 1 KB",
        "╭─ #0 get_weather · call_0 ─╮",
        "│ {} │",
        "╰─────────────── streaming ─╯",
        "╔═ #1 get_weather · call_1 ═╗",
        "║ ▼ {} 2 keys ║",
        "╚════════════════ parsed ═╝",
    ]
    frame = terminal.Frame(0.0, raw)
    assert [(box.index, box.focused) for box in markers.lanes(frame)] == [(0, False), (1, True)]
    assert markers.focused_view(frame) == (1, "tree")
    assert markers.focused_parsed(frame)
    assert markers.paused(frame) and markers.state(frame) == "streaming"
    assert markers.events_shown(frame) == 12
    live = terminal.Frame(0.0, [" finished · no anomalies · 0.3s · 40 events · 1 KB · /tmp/x.sse"])
    assert markers.finished(live) and markers.events_shown(live) == 40
    assert markers.status_facts(live) == "finished · no anomalies · 0.3s · 40 events · 1 KB"


def test_a_key_is_answered_only_by_its_own_effect() -> None:
    markers = bench_module("markers")
    cases = {case.name: case for case in markers.KEYS}
    focus, view = cases["focus next lane"], cases["tree/raw"]
    assert focus.answered(None, 1) and focus.answered(1, 2)
    assert not focus.answered(1, None)  # scrolled out of view: not a new focus
    assert view.answered((1, "raw"), (1, "tree"))
    assert not view.answered((1, "raw"), None)
    assert not view.answered((1, "raw"), (2, "tree"))  # another lane, not a flip
    assert cases["pause"].answered(False, True)


def test_goals_are_judged_on_their_statistic() -> None:
    report = bench_module("report")
    goals = bench_module("goals")
    presses = goals.KEY_PRESSES
    figures: dict[str, Any] = {
        "whole.big-args-1m.ratio": {"n": 3, "median": 1.2, "max": 1.9},
        "whole.parallel-64.ratio": {"n": 3, "median": 1.4, "max": 1.4},
        "whole.calls-10k.ratio": {"n": 0, "not_finished": {"after_seconds": 60}},
        "keys.speed-0": {"n": 2000, "max": 90, "least_answered": presses - 1, "unanswered": 0},
        "keys.paced": {"n": 2000, "max": 90, "least_answered": presses, "unanswered": 0},
    }
    met = {entry["figure"]: entry["met"] for entry in report.judge(figures)}
    assert met["whole.big-args-1m.ratio"] is True  # the median, not the max
    assert met["whole.parallel-64.ratio"] is False
    assert met["whole.calls-10k.ratio"] is False
    assert met["keys.speed-0"] is False  # too few presses of one key
    assert met["keys.paced"] is True
    assert met["rss.app"] is None  # not measured
    assert len(met) == len(goals.GOALS)


def test_the_performance_pages_app_section_is_replaced_and_nothing_else() -> None:
    report = bench_module("report")
    page = docs_page("performance/index.md")
    updated = report.section_with(page, "NEW TABLE\n")
    before, _, after = page.partition(report.SECTION_HEADING)
    new_before, _, new_after = updated.partition(report.SECTION_HEADING)
    assert new_before == before
    assert new_after.startswith("\n\nNEW TABLE\n\n### ")
    next_heading = after[after.index("\n### ") :]
    assert new_after.endswith(next_heading), "the other benchmarks' subsections stay"


# -- the generated streams ----------------------------------------------------------------
def feed(body: bytes) -> dict[str, Any]:
    session = StreamSession("bench-smoke")
    session.open(200, "text/event-stream")
    for start in range(0, len(body), READ_SIZE):
        session.feed(body[start : start + READ_SIZE], 0.0)
    session.close(0.0)
    return build_report(session.state)


def assert_reassembles(stream: Any) -> None:
    report = feed(stream.body)
    assert report["status"] == "finished"
    assert report["finish_reason"] == "tool_calls"
    assert report["anomalies"] == []
    assert report["events"] == stream.events
    assert report["text"] == stream.text
    calls = report["tool_calls"]
    assert [(c["index"], c["id"], c["name"]) for c in calls] == [
        (c.index, c.call_id, c.name) for c in stream.calls
    ]
    assert [c["arguments_raw"] for c in calls] == [c.arguments_text for c in stream.calls]
    assert [c["arguments"] for c in calls] == [c.arguments for c in stream.calls]


@pytest.mark.parametrize("name", STREAMS)
def test_generated_stream_reassembles_to_its_objects(
    quick_streams: dict[str, Any], name: str
) -> None:
    assert_reassembles(quick_streams[name])


def test_one_chunk_calls_reassemble(streams: ModuleType) -> None:
    stream = streams.one_chunk_calls("calls-10k", 30)
    assert stream.events == 32  # a chunk per call, the finish, [DONE]
    assert_reassembles(stream)


@pytest.mark.parametrize("name", STREAMS)
def test_every_event_is_a_whole_chunk(quick_streams: dict[str, Any], name: str) -> None:
    body: bytes = quick_streams[name].body
    assert body.endswith(b"\n\ndata: [DONE]\n\n")
    events = body.split(b"\n\n")[:-2]  # the [DONE] event and the empty tail
    chunks = [json.loads(event.removeprefix(b"data: ")) for event in events]
    assert all(event.startswith(b"data: {") for event in events)
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    reasons = [chunk["choices"][0]["finish_reason"] for chunk in chunks]
    assert reasons[-1] == "tool_calls" and set(reasons[:-1]) == {None}


def test_argument_fragments_are_1_to_8_characters(quick_streams: dict[str, Any]) -> None:
    for event in quick_streams["big-args-1m"].body.split(b"\n\n")[1:-3]:
        delta = json.loads(event.removeprefix(b"data: "))["choices"][0]["delta"]
        assert 1 <= len(delta["tool_calls"][0]["function"]["arguments"]) <= 8


def test_arguments_carry_the_hard_cases(quick_streams: dict[str, Any]) -> None:
    text = quick_streams["big-args-1m"].calls[0].arguments_text
    for needle in ('\\"', "\\\\", "\\n", "\\u00e9", "é", "中文", "🚀", "null", "true", "["):
        assert needle in text, needle


def test_generation_is_deterministic(streams: ModuleType) -> None:
    first = streams.big_args("big-args-100k", 3000)
    assert streams.big_args("big-args-100k", 3000).body == first.body
    assert streams.big_args("big-args-100k", 3000, seed=7).body != first.body


def test_quick_app_bench_times_jumps_and_memory(tmp_path: Path) -> None:
    """`--only jumps`: End/Home, g N, ] on the keys' stream with anomalies spliced
    in, each timed to the frame that shows the cursor there; memory over more."""
    results_path, cache = tmp_path / "jumps.json", tmp_path / "cache"
    done = run_bench(
        "app", "--quick", "--only", "jumps", "--json", str(results_path), "--cache", str(cache)
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    results = json.loads(results_path.read_text(encoding="utf-8"))
    figures, details = results["figures"], results["details"]["jumps"]
    for name in ("start-end", "random-event", "next-anomaly"):
        assert figures[f"jumps.{name}"]["n"] >= 1, name
        assert 0 < figures[f"jumps.{name}"]["max"] < 10, name
    assert details["anomalies"] >= 2 and details["missed"] == []
    assert details["rss_kb_after_all_of_them"] > 0
    assert figures["jumps.rss_growth"]["n"] == 1
    assert "jump → frame: End / Home" in results_path.with_suffix(".md").read_text("utf-8")


def test_each_launch_starts_with_the_key_answered_least() -> None:
    app = bench_module("app")
    phase = app.KeyPhase("calls-10k", [], wanted_presses=50)
    names = [case.name for case in phase.cases]
    assert [case.name for case in phase.in_turn()] == names  # none answered: in order
    phase.presses += [app.Press(names[0], 0.02, 1.0, 10, False)] * 3
    phase.presses += [app.Press(name, 0.02, 1.0, 10, False) for name in names[1:3]]
    turn = [case.name for case in phase.in_turn()]
    assert turn == names[3:] + names[:3]
    phase.presses.append(app.Press(names[3], None, 1.0, 10, False))  # unanswered: not counted
    assert phase.in_turn()[0].name == names[3]
