"""The pure half of --otlp: a report to a span (otlp/spans.py), and a response's
model, id and usage read from its first and last bytes (otlp/envelope.py).
Expected values are the stub scenarios' own (their JSON files)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.oracles import scenario_report, scenario_session
from toolstream_stubs import load_scenario
from toolstream_tui.core.redact import REDACTED
from toolstream_tui.otlp.envelope import BodyWindow, Envelope, read_envelope
from toolstream_tui.otlp.spans import (
    ARGUMENTS_CHARS,
    CUT_MARK,
    MAX_EVENTS,
    REDACT_MARGIN,
    RequestFacts,
    span_plan,
)
from toolstream_tui.sources.secrets import Redactor

SECRET = "sk-live-SECRET123-a1b2c3"
INVOKED_MODEL = "claude-sonnet-4-5-20250929"


def envelope_of(name: str, head_bytes: int = 64 * 1024, tail_bytes: int = 64 * 1024) -> Envelope:
    session = scenario_session(name)
    window = BodyWindow(head_bytes, tail_bytes)
    window.keep(load_scenario(name).rendered)
    return read_envelope(window, session.mode)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("parallel", Envelope("stub-model", "chatcmpl-stub", None, None)),
        ("anthropic-quirks", Envelope("stub-model", "msg_stub", 12, 40)),
        ("responses-interleaved", Envelope("stub-model", "resp_stub", 36, 24)),
        ("gemini-parallel-spread", Envelope("gemini-3-pro-preview", "stub-resp-2", 61, 40)),
        ("bedrock-text-tools", Envelope(None, None, 412, 88)),
        # InvokeModel: Anthropic's events in base64 chunks, Bedrock's count in the last.
        (
            "bedrock-invoke-anthropic",
            Envelope(INVOKED_MODEL, "msg_bdrk_01HvXKgQ2bT7sP9w3nYcRzJf", 412, 62),
        ),
        ("ollama-text-tools", Envelope("stub-model", None, 169, 15)),
        ("aisdk-text-tools", Envelope(None, "msg_aisdk_1", None, None)),
        ("json-completion", Envelope("stub-model", "chatcmpl-stub", 64, 38)),
    ],
)
def test_each_dialect_says_its_model_id_and_usage(name: str, expected: Envelope) -> None:
    assert envelope_of(name) == expected


@pytest.mark.parametrize(
    "name",
    ["anthropic-quirks", "bedrock-text-tools", "bedrock-invoke-anthropic", "ollama-text-tools"],
)
def test_a_long_body_is_read_from_its_first_and_last_bytes(name: str) -> None:
    """With bytes let go in the middle, the tail is read from its first whole
    event on, and the output count comes from the tail only (Anthropic's first
    event counts 1 output token, its last 40)."""
    whole = envelope_of(name)
    body = load_scenario(name).rendered
    assert len(body) > 600
    cut = envelope_of(name, head_bytes=300, tail_bytes=300)
    assert cut.output_tokens == whole.output_tokens
    assert (cut.model, cut.response_id) == (whole.model, whole.response_id)


def test_the_window_lets_a_read_go_only_when_the_tail_is_full_without_it() -> None:
    """Head 4, tail 4: reads of 4, 4 and 3 bytes are all kept (the whole body,
    no gap); a third read of 4 lets the second go."""
    whole = BodyWindow(4, 4)
    for piece in (b"abcd", b"efgh", b"ijk"):
        whole.keep(piece)
    assert whole.pieces() == (b"abcdefghijk", None)
    cut = BodyWindow(4, 4)
    for piece in (b"abcd", b"efgh", b"ijkl"):
        cut.keep(piece)
    assert cut.pieces() == (b"abcd", b"ijkl")


def test_the_report_maps_to_the_genai_conventions() -> None:
    report = scenario_report("parallel")
    plan = span_plan(
        report,
        RequestFacts(url="https://api.openai.com/v1/chat/completions", body='{"model": "gpt-x"}'),
        Envelope("gpt-x-2025", "chatcmpl-1", 10, 20),
    )
    assert plan.name == "chat gpt-x"
    assert plan.error is None
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.response.model": "gpt-x-2025",
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "server.address": "api.openai.com",
        "server.port": 443,
    }
    assert {key: plan.attributes[key] for key in expected} == expected
    calls = [event for event in plan.events if event.name == "toolstream.tool_call"]
    assert [call.attributes["gen_ai.tool.name"] for call in calls] == [
        call["name"] for call in report["tool_calls"]
    ]
    assert [json.loads(str(call.attributes["gen_ai.tool.call.arguments"])) for call in calls] == [
        call["arguments"] for call in report["tool_calls"]
    ]


GEMINI = "https://generativelanguage.googleapis.com/v1beta"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"


@pytest.mark.parametrize(
    ("url", "model"),
    [
        (f"{GEMINI}/models/gemini-x:streamGenerateContent", "gemini-x"),
        (f"{BEDROCK}/model/anthropic.claude-x/converse-stream", "anthropic.claude-x"),
        ("https://api.openai.com/v1/chat/completions", None),
    ],
)
def test_a_model_named_in_the_url_is_the_requested_model(url: str, model: str | None) -> None:
    assert RequestFacts(url=url).requested_model() == model


def report_with_arguments(raw: str, calls: int = 1) -> dict[str, Any]:
    report = scenario_report("parallel")
    one = {**report["tool_calls"][0], "arguments_raw": raw}
    return {**report, "tool_calls": [{**one, "index": i} for i in range(calls)], "anomalies": []}


@pytest.mark.parametrize("length", [ARGUMENTS_CHARS - 1, ARGUMENTS_CHARS, ARGUMENTS_CHARS + 1])
def test_arguments_are_capped(length: int) -> None:
    raw = "x" * length
    [call] = [e for e in span_plan(report_with_arguments(raw)).events if e.name.endswith("call")]
    sent = call.attributes["gen_ai.tool.call.arguments"]
    assert sent == (raw if length <= ARGUMENTS_CHARS else raw[: ARGUMENTS_CHARS - 1] + CUT_MARK)
    assert call.attributes["toolstream.tool_call.arguments_chars"] == length


def test_a_secret_across_the_cap_is_redacted_before_the_cut() -> None:
    raw = "x" * (ARGUMENTS_CHARS - 6) + SECRET
    redactor = Redactor([SECRET])
    plan = span_plan(report_with_arguments(raw), redact=redactor.text)
    [call] = [e for e in plan.events if e.name.endswith("call")]
    sent = str(call.attributes["gen_ai.tool.call.arguments"])
    assert sent.startswith("x" * (ARGUMENTS_CHARS - 6) + REDACTED[:5])
    assert "sk-" not in sent


@pytest.mark.parametrize(
    "raw",
    [
        "x" * (ARGUMENTS_CHARS - 6) + SECRET + "y" * 2 * REDACT_MARGIN,
        "x" * (ARGUMENTS_CHARS + REDACT_MARGIN - 5) + SECRET + "y" * 10,  # the secret cut
        SECRET * (2 * REDACT_MARGIN // len(SECRET)),  # redaction shrinks it past the cap
    ],
    ids=["after-the-cap", "cut-by-the-redacted-start", "shrunk-by-redaction"],
)
def test_long_arguments_are_redacted_from_their_start_only(raw: str) -> None:
    plan = span_plan(report_with_arguments(raw), redact=Redactor([SECRET]).text)
    [call] = [e for e in plan.events if e.name.endswith("call")]
    sent = str(call.attributes["gen_ai.tool.call.arguments"])
    assert len(sent) <= ARGUMENTS_CHARS and sent.endswith(CUT_MARK)
    assert "sk-" not in sent and "SECRET" not in sent
    assert call.attributes["toolstream.tool_call.arguments_chars"] == len(raw)


def test_every_text_is_redacted() -> None:
    report = {**scenario_report("http-401"), "source": f"https://h/v1?key={SECRET}"}
    report["error"] = f"HTTP 401: bad key {SECRET}"
    report["anomalies"] = [{"kind": "x", "index": None, "detail": SECRET, "event": 1, "count": 1}]
    plan = span_plan(report, redact=Redactor([SECRET]).text)
    assert SECRET not in repr(plan)
    assert plan.error == f"HTTP 401: bad key {REDACTED}"
    assert plan.attributes["error.type"] == "401"


@pytest.mark.parametrize("calls", [MAX_EVENTS - 2, MAX_EVENTS - 1, MAX_EVENTS])
def test_a_span_keeps_at_most_max_events(calls: int) -> None:
    """One first-token event and one per call: MAX_EVENTS - 1 calls fill the span."""
    plan = span_plan(report_with_arguments("{}", calls=calls))
    assert len(plan.events) == min(calls + 1, MAX_EVENTS)
    dropped = plan.attributes.get("toolstream.span_events_dropped")
    assert dropped == (None if calls + 1 <= MAX_EVENTS else calls + 1 - MAX_EVENTS)


def test_anomalies_are_placed_at_the_wire_event_they_were_seen_at() -> None:
    session = scenario_session("anthropic-quirks")
    times = {1: 0.1, 2: 0.2, 8: 0.8, 9: 0.9, 14: 1.4}
    plan = span_plan(scenario_report("anthropic-quirks"), event_time=times.get)
    anomalies = [e for e in plan.events if e.name == "toolstream.anomaly"]
    seen_at = [a.event for a in session.state.anomalies]
    assert [e.seconds for e in anomalies] == [times[number] for number in seen_at]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"model": "m", "max_tokens": 100, "temperature": 0.2, "top_p": 1}', (100, 0.2, 1)),
        ('{"generationConfig": {"maxOutputTokens": 50, "topP": 0.9}}', (50, None, 0.9)),
        ('{"inferenceConfig": {"maxTokens": 7, "temperature": 0}}', (7, 0, None)),
        ('{"max_tokens": true, "temperature": "hot"}', (None, None, None)),  # not numbers
        ("not json", (None, None, None)),
    ],
)
def test_the_requests_sampling_parameters_are_named_as_the_conventions_do(
    body: str, expected: tuple[float | None, ...]
) -> None:
    attributes = span_plan(scenario_report("parallel"), RequestFacts(body=body)).attributes
    names = ("gen_ai.request.max_tokens", "gen_ai.request.temperature", "gen_ai.request.top_p")
    assert tuple(attributes.get(name) for name in names) == expected
