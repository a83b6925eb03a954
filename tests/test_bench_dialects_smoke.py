"""`python -m bench dialects` runs end to end on tiny streams, each generated
stream is rebuilt exactly by the headless run and by the core fed in small
reads, and the floors parse every event (and refuse a bad CRC). No timing is
asserted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_bench_smoke import bench_module, run_bench

from toolstream_tui.core import StreamSession, build_report

ROOT = Path(__file__).resolve().parents[1]
READ_SIZE = 1000  # cuts inside events, frames and UTF-8 characters
TINY_BYTES = 3000


@pytest.fixture(scope="module")
def dialect_streams() -> ModuleType:
    return bench_module("dialect_streams")


@pytest.fixture(scope="module")
def dialects() -> ModuleType:
    return bench_module("dialects")


def names() -> list[str]:
    return list(bench_module("dialect_streams").GENERATORS)


@pytest.mark.slow
def test_quick_run_checks_and_times_every_stream(tmp_path: Path) -> None:
    results_path = tmp_path / "results.json"
    done = run_bench("dialects", "--quick", "--out", str(tmp_path), "--json", str(results_path))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert list(results["streams"]) == names()
    for name, entry in results["streams"].items():
        assert entry["problems"] == [], name  # the headless report rebuilt the calls
        assert (tmp_path / entry["file"]).stat().st_size == entry["body_bytes"], name
        timing = entry["timing"]
        assert timing["pairs"] == 1 and timing["floor_median_s"] > 0, name
        assert timing["median_ratio"] == timing["headless_median_s"] / timing["floor_median_s"]
        assert entry["startup"]["pairs"] == 1, name
        assert name in done.stdout
    assert results["meta"]["command"] in done.stdout
    assert str(results_path) in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_headless_rebuilds_the_generated_calls(
    dialect_streams: ModuleType, dialects: ModuleType, tmp_path: Path, name: str
) -> None:
    stream = dialect_streams.generate(name, TINY_BYTES)
    assert dialects.check(stream, dialect_streams.write_stream(stream, tmp_path)) == []


def core_report(body: bytes) -> dict[str, Any]:
    """The core on a bare body (no content type, as a bare --replay), in small reads."""
    session = StreamSession("bench-dialects")
    session.open(200, "")
    for start in range(0, len(body), READ_SIZE):
        session.feed(body[start : start + READ_SIZE], 0.0)
    session.close(0.0)
    return build_report(session.state)


@pytest.mark.parametrize("name", names())
def test_core_in_small_reads_rebuilds_the_generated_calls(
    dialect_streams: ModuleType, dialects: ModuleType, name: str
) -> None:
    stream = dialect_streams.generate(name, TINY_BYTES)
    report = core_report(stream.body)
    assert dialects.report_problems(report, stream) == []
    assert report["events"] == stream.events


def test_a_report_that_differs_is_told(dialect_streams: ModuleType, dialects: ModuleType) -> None:
    stream = dialect_streams.generate("bedrock-converse", TINY_BYTES)
    report = core_report(stream.body)
    report["tool_calls"][1]["arguments"] = {**report["tool_calls"][1]["arguments"], "n": 1.0}
    report["tool_calls"][2]["id"] = "tooluse_other"
    assert dialects.report_problems(report, stream) == [
        "parsed arguments differ",
        "call ids differ",
    ]
    report["dialect"], report["tool_calls"] = "openai-chat", []
    problems = dialects.report_problems(report, stream)
    assert problems[:2] == [
        "read as openai-chat, not bedrock",
        "0 call(s) named otherwise than the 4 sent",
    ]


@pytest.mark.parametrize("name", names())
def test_the_floor_parses_every_event(
    dialect_streams: ModuleType, dialects: ModuleType, tmp_path: Path, name: str
) -> None:
    stream = dialect_streams.generate(name, TINY_BYTES)
    path = dialect_streams.write_stream(stream, tmp_path)
    done = subprocess.run(
        dialects.floor_argv(stream.framing, path), capture_output=True, text=True, check=True
    )
    done_event = 1 if stream.dialect == "ai-sdk-ui" else 0  # `[DONE]` is not JSON
    assert int(done.stdout) == stream.events - done_event


def test_the_eventstream_floor_checks_both_crcs(
    dialect_streams: ModuleType, dialects: ModuleType, tmp_path: Path
) -> None:
    body = dialect_streams.generate("bedrock-converse", TINY_BYTES).body
    for spoiled, said in ((8, "prelude CRC"), (len(body) - 1, "message CRC")):
        path = tmp_path / f"spoiled-{spoiled}.bin"
        path.write_bytes(body[:spoiled] + bytes([body[spoiled] ^ 1]) + body[spoiled + 1 :])
        done = subprocess.run(
            dialects.floor_argv("eventstream", path), capture_output=True, text=True, check=False
        )
        assert done.returncode != 0 and said in done.stderr


def test_generation_is_seeded(dialect_streams: ModuleType) -> None:
    for name in names():
        first = dialect_streams.generate(name, TINY_BYTES)
        assert dialect_streams.generate(name, TINY_BYTES).body == first.body, name
        assert dialect_streams.generate(name, TINY_BYTES, seed=7).body != first.body, name
        assert first.argument_bytes >= TINY_BYTES * 0.9, name
