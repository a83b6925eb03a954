"""The benchmark (bench/run.py) runs end to end in --quick mode, and the streams it
generates are what they claim to be. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from toolstream_tui.core import StreamSession, build_report

BENCH = Path(__file__).resolve().parents[1] / "bench"
STREAMS = ("big-args-100k", "big-args-300k", "big-args-1m", "parallel-64", "chatty")
ALWAYS_MEASURED = ("floor-json", "core", "process-floor", "process-headless")
READ_SIZE = 1000  # small reads cut inside events and inside UTF-8 characters


def load_bench_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"toolstream_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def streams() -> ModuleType:
    return load_bench_module("streams")


@pytest.fixture(scope="module")
def quick_streams(streams: ModuleType) -> dict[str, Any]:
    return {stream.name: stream for stream in streams.generate_all(streams.QUICK)}


def test_quick_run_reports_every_stream(tmp_path: Path) -> None:
    out, results_path = tmp_path / "streams", tmp_path / "results.json"
    command = [sys.executable, str(BENCH / "run.py"), "--quick", "--out", str(out)]
    done = subprocess.run(
        [*command, "--json", str(results_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
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


def feed(body: bytes) -> dict[str, Any]:
    session = StreamSession("bench-smoke")
    session.open(200, "text/event-stream")
    for start in range(0, len(body), READ_SIZE):
        session.feed(body[start : start + READ_SIZE], 0.0)
    session.close(0.0)
    return build_report(session.state)


@pytest.mark.parametrize("name", STREAMS)
def test_generated_stream_reassembles_to_its_objects(
    quick_streams: dict[str, Any], name: str
) -> None:
    stream = quick_streams[name]
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
