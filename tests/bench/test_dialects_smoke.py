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

from tests.bench.test_bench_smoke import bench_module, run_bench
from tests.helpers.paths import PROJECT
from toolstream_tui.core import StreamSession, build_report

ROOT = PROJECT
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
def test_quick_run_checks_and_times_every_stream(tmp_path: Path, dialects: ModuleType) -> None:
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
        assert timing["cpu_min_ratio"] == timing["cpu_median_ratio"] == timing["cpu_max_ratio"] > 0
        assert entry["startup"]["pairs"] == 1, name
        thin = entry["body_bytes"] <= dialects.THIN_ENVELOPES * entry["argument_bytes"]
        assert ("bound" in entry) is (not entry["met"] and thin), name
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


def run_on_a_tiny_stream(
    dialect_streams: ModuleType, argv_of: Any, tmp_path: Path, name: str
) -> tuple[Any, bytes]:
    """A tiny stream of `name`, and what `argv_of(framing, path)` wrote reading it."""
    stream = dialect_streams.generate(name, TINY_BYTES)
    path = dialect_streams.write_stream(stream, tmp_path)
    done = subprocess.run(argv_of(stream.framing, path), capture_output=True, check=True)
    return stream, done.stdout


def json_events(stream: Any) -> int:
    return stream.events - (1 if stream.dialect == "ai-sdk-ui" else 0)  # `[DONE]` is not JSON


@pytest.mark.parametrize("name", names())
def test_the_floor_parses_every_event(
    dialect_streams: ModuleType, dialects: ModuleType, tmp_path: Path, name: str
) -> None:
    stream, printed = run_on_a_tiny_stream(dialect_streams, dialects.floor_argv, tmp_path, name)
    assert int(printed) == json_events(stream)


@pytest.mark.parametrize("name", names())
def test_the_bound_writes_every_event_it_parsed(
    dialect_streams: ModuleType, dialects: ModuleType, tmp_path: Path, name: str
) -> None:
    stream, printed = run_on_a_tiny_stream(dialect_streams, dialects.bound_argv, tmp_path, name)
    written = json.loads(printed)
    if stream.framing == "json-array":
        assert written == json.loads(stream.body)
    else:
        assert len(written) == json_events(stream)
        assert all(isinstance(event, dict) for event in written)


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


# -- the generated shapes, as the providers' SDKs read them ------------------------------
def sse_payloads(body: bytes) -> list[Any]:
    blocks = body.replace(b"\r\n", b"\n").split(b"\n\n")
    data = [line[6:] for block in blocks for line in block.split(b"\n") if line[:6] == b"data: "]
    return [json.loads(payload) for payload in data if payload != b"[DONE]"]


def gemini_calls(chunks: list[Any]) -> list[tuple[str | None, Any]]:
    from google.genai import types

    responses = [types.GenerateContentResponse.model_validate(chunk) for chunk in chunks]
    return [(call.name, call.args) for r in responses for call in r.function_calls or []]


@pytest.mark.parametrize("name", ["gemini-sse", "gemini-array"])
def test_google_genai_reads_the_gemini_calls(dialect_streams: ModuleType, name: str) -> None:
    stream = dialect_streams.generate(name, TINY_BYTES)
    chunks = sse_payloads(stream.body) if name == "gemini-sse" else json.loads(stream.body)
    assert gemini_calls(chunks) == [(call.name, call.arguments) for call in stream.calls]


def leaves(value: Any, path: str = "$") -> dict[str, Any]:
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in leaves(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {
            k: v for n, item in enumerate(value) for k, v in leaves(item, f"{path}[{n}]").items()
        }
    return {path: value}


def whole_value(piece: Any) -> Any:
    """A partialArg's value that is not a string, as google-genai reads it."""
    if piece.bool_value is not None:
        return piece.bool_value
    return None if piece.null_value is not None else piece.number_value


def test_google_genai_reads_the_vertex_partial_args(dialect_streams: ModuleType) -> None:
    from google.genai import types

    stream = dialect_streams.generate("vertex-partial-args", TINY_BYTES)
    responses = [types.GenerateContentResponse.model_validate(c) for c in sse_payloads(stream.body)]
    calls: list[tuple[str | None, dict[str, Any]]] = []
    for response in responses:
        call = response.candidates[0].content.parts[0].function_call  # type: ignore[index,union-attr]
        if call is None:
            continue
        if call.name:
            calls.append((call.name, {}))
        for piece in call.partial_args or []:
            values = calls[-1][1]
            if piece.string_value is not None:
                values[piece.json_path] = values.get(piece.json_path, "") + piece.string_value
            else:
                values[piece.json_path] = whole_value(piece)
    assert calls == [(call.name, leaves(call.arguments)) for call in stream.calls]
    assert responses[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]


def test_botocore_reads_the_bedrock_tool_uses(dialect_streams: ModuleType) -> None:
    import botocore.session
    from botocore.eventstream import EventStreamBuffer
    from botocore.parsers import EventStreamJSONParser

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    stream = dialect_streams.generate("bedrock-converse", TINY_BYTES)
    frames = EventStreamBuffer()
    frames.add_data(stream.body)
    events = [EventStreamJSONParser().parse(frame.to_response_dict(), shape) for frame in frames]
    calls: dict[int, list[str]] = {}
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start["start"]["toolUse"]
            calls[start["contentBlockIndex"]] = [tool["toolUseId"], tool["name"], ""]
        delta = event.get("contentBlockDelta", {})
        if "toolUse" in delta.get("delta", {}):
            calls[delta["contentBlockIndex"]][2] += delta["delta"]["toolUse"]["input"]
    expected = [[call.call_id, call.name, call.arguments_text] for call in stream.calls]
    assert list(calls.values()) == expected
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK's pydantic v1 idioms
def test_cohere_reads_the_tool_call_deltas(dialect_streams: ModuleType) -> None:
    from cohere.core.unchecked_base_model import construct_type
    from cohere.v2.types import V2ChatStreamResponse

    stream = dialect_streams.generate("cohere-v2", TINY_BYTES)
    events = [
        construct_type(type_=V2ChatStreamResponse, object_=e) for e in sse_payloads(stream.body)
    ]
    calls: dict[int, list[str]] = {}
    for event in events:
        if event.type == "tool-call-start":
            tool = event.delta.message.tool_calls
            calls[event.index] = [tool.id, tool.function.name, tool.function.arguments]
        if event.type == "tool-call-delta":
            calls[event.index][2] += event.delta.message.tool_calls.function.arguments
    expected = [[call.call_id, call.name, call.arguments_text] for call in stream.calls]
    assert list(calls.values()) == expected
    assert events[-1].delta.finish_reason == "TOOL_CALL"


def test_ollama_reads_the_whole_tool_calls(dialect_streams: ModuleType) -> None:
    import ollama

    stream = dialect_streams.generate("ollama-chat", TINY_BYTES)
    lines = [ollama.ChatResponse.model_validate_json(line) for line in stream.body.splitlines()]
    calls = [call for line in lines for call in line.message.tool_calls or []]
    assert [(call.function.name, call.function.arguments) for call in calls] == [
        (call.name, call.arguments) for call in stream.calls
    ]
    assert lines[-1].done and not any(line.done for line in lines[:-1])
