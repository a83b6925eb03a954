"""Which dialect a response speaks: told from the first SSE events (event: line or
the data's type; [DONE] or choices → chat), from the shape of a non-streaming JSON
body, overridden by name, and falling back to chat when nothing tells.

Stub scenarios are fed to a StreamSession as bytes (no sockets)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tests.helpers.sse import sse
from toolstream_stubs import load_scenario
from toolstream_stubs.scenarios import scenario_names
from toolstream_tui.core import SSEEvent, StreamSession, StreamState, build_report, exit_code
from toolstream_tui.core.dialects.anthropic import AnthropicMessagesDialect
from toolstream_tui.core.dialects.chat import ChatCompletionsDialect
from toolstream_tui.core.dialects.detect import (
    DIALECTS,
    UNDECIDED_LIMIT,
    DetectingDialect,
    dialect_of_completion,
    dialect_of_event,
    make_dialect,
)
from toolstream_tui.core.dialects.responses import OpenAIResponsesDialect
from toolstream_tui.core.events import DialectDetected, StreamEvent
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

CHAT, ANTHROPIC, RESPONSES = "openai-chat", "anthropic", "openai-responses"
DIALECT_OF_ENDPOINT = {
    "/v1/chat/completions": CHAT,
    "/v1/messages": ANTHROPIC,
    "/v1/responses": RESPONSES,
}
# A scenario's name says its dialect (chat completions when no prefix does).
DIALECT_OF_PREFIX = {
    "anthropic-": ANTHROPIC,
    "responses-": RESPONSES,
    "gemini-": "gemini",
    "vertex-": "gemini",
    "bedrock-": "bedrock",
    "cohere-": "cohere",
    "ollama-": "ollama",
    "aisdk-": "ai-sdk-ui",
}
NAMES = scenario_names()
ANTHROPIC_NAMES = [name for name in NAMES if name.startswith("anthropic-")]
RESPONSES_NAMES = [name for name in NAMES if name.startswith("responses-")]
CHAT_NAMES = [name for name in NAMES if not name.startswith(tuple(DIALECT_OF_PREFIX))]
STREAMED_NON_CHAT = [
    name for name in NAMES if name not in CHAT_NAMES and load_scenario(name).is_sse
]
SSE_TYPED = [name for name in ANTHROPIC_NAMES + RESPONSES_NAMES if load_scenario(name).is_sse]


def dialect_of_scenario(name: str) -> str:
    prefix = next((prefix for prefix in DIALECT_OF_PREFIX if name.startswith(prefix)), None)
    return CHAT if prefix is None else DIALECT_OF_PREFIX[prefix]


# -- running ----------------------------------------------------------------------


def play(
    pieces: list[bytes],
    *,
    status: int = 200,
    content_type: str = "text/event-stream",
    dialect: str | None = None,
) -> tuple[StreamSession, list[StreamEvent], dict[str, Any]]:
    session = StreamSession("test", dialect=dialect)
    events = session.open(status, content_type)
    for i, piece in enumerate(pieces):
        events += session.feed(piece, float(i))
    events += session.close(float(len(pieces)))
    return session, events, build_report(session.state)


def play_scenario(
    name: str, *, split: str = "whole", dialect: str | None = None, body: bytes | None = None
) -> tuple[StreamSession, list[StreamEvent], dict[str, Any]]:
    scenario = load_scenario(name)
    if body is not None:
        pieces = [body]
    elif split == "whole":
        pieces = [scenario.rendered]
    else:
        pieces = list(itertools.chain.from_iterable(scenario.writes("random", seed=7)))
    return play(pieces, status=scenario.status, content_type=scenario.content_type, dialect=dialect)


def detected(events: list[StreamEvent]) -> list[str]:
    return [e.name for e in events if isinstance(e, DialectDetected)]


def without_event_lines(name: str) -> bytes:
    """The scenario's stream with every `event:` line left out (data only)."""
    scenario = load_scenario(name)
    eol = scenario.line_ending
    out = []
    for event in scenario.events:
        lines = event.decode().split(eol)
        out.append(eol.join(line for line in lines if not line.startswith("event:")))
    return "".join(out).encode()


# -- the stub scenarios -----------------------------------------------------------------


def test_scenario_families_are_not_empty_and_match_their_endpoints() -> None:
    assert ANTHROPIC_NAMES and RESPONSES_NAMES and CHAT_NAMES
    for names, dialect in [
        (ANTHROPIC_NAMES, ANTHROPIC),
        (RESPONSES_NAMES, RESPONSES),
        (CHAT_NAMES, CHAT),
    ]:
        for name in names:
            assert DIALECT_OF_ENDPOINT[load_scenario(name).endpoint] == dialect, name


@pytest.mark.parametrize("split", ["whole", "random"])
@pytest.mark.parametrize("name", NAMES)
def test_every_stub_scenario_is_detected_as_its_dialect(name: str, split: str) -> None:
    expected = dialect_of_scenario(name)
    _, events, report = play_scenario(name, split=split)
    assert report["dialect"] == expected
    assert detected(events) == [expected]


@pytest.mark.parametrize("name", STREAMED_NON_CHAT)
def test_detection_is_made_from_the_first_event(name: str) -> None:
    scenario = load_scenario(name)
    session = StreamSession("test")
    opened = session.open(scenario.status, scenario.content_type)
    first = session.feed(scenario.events[0], 0.0)
    assert detected(opened + first) == [dialect_of_scenario(name)]


@pytest.mark.parametrize("name", SSE_TYPED)
def test_data_only_streams_are_detected_by_the_data_type(name: str) -> None:
    expected = DIALECT_OF_ENDPOINT[load_scenario(name).endpoint]
    body = without_event_lines(name)
    assert b"event:" not in body
    _, _, report = play_scenario(name, body=body)
    _, _, with_lines = play_scenario(name)
    assert report["dialect"] == expected
    assert report["status"] == with_lines["status"]
    assert report["tool_calls"] == with_lines["tool_calls"]


# status, exit code, finish_reason, anomaly kinds: what each non-chat scenario means
EXPECTED_OUTCOME: dict[str, tuple[str, int, str | None, list[str]]] = {
    "anthropic-error": ("error", 1, None, ["error-event"]),
    "anthropic-full-input": ("finished", 0, "tool_use", []),
    "anthropic-json": ("finished", 0, "tool_use", []),
    "anthropic-max-tokens": ("finished", EXIT_INCOMPLETE, "max_tokens", []),
    "anthropic-no-event-lines": ("finished", 0, "tool_use", []),
    "anthropic-parallel": ("finished", 0, "tool_use", []),
    "anthropic-quirks": (
        "finished",
        0,
        "tool_use",
        ["block-index-reused", "block-not-stopped", "delta-after-stop", "delta-without-start"],
    ),
    "anthropic-text-tools": ("finished", 0, "tool_use", []),
    "anthropic-thinking": ("finished", 0, "tool_use", []),
    "anthropic-truncated": ("truncated", EXIT_INCOMPLETE, None, ["unterminated-event"]),
    "responses-done-mismatch": ("finished", 0, "completed", ["done-mismatch"]),
    "responses-done-only": ("finished", 0, "completed", []),
    "responses-error": ("error", 1, None, ["error-event"]),
    "responses-failed": ("error", 1, "failed", ["error-event"]),
    "responses-incomplete": ("finished", EXIT_INCOMPLETE, "incomplete:max_output_tokens", []),
    "responses-interleaved": ("finished", 0, "completed", []),
    "responses-litellm": ("finished", 0, "completed", ["data-after-completed"]),
    "responses-lost-delta": ("finished", 0, "completed", ["done-mismatch", "sequence-gap"]),
    "responses-reasoning": ("finished", 0, "completed", []),
    "responses-truncated": ("truncated", EXIT_INCOMPLETE, None, []),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_OUTCOME))
def test_non_chat_scenarios_end_as_described(name: str) -> None:
    status, code, finish_reason, kinds = EXPECTED_OUTCOME[name]
    session, _, report = play_scenario(name, split="random")
    assert (report["status"], exit_code(session.state), report["finish_reason"]) == (
        status,
        code,
        finish_reason,
    )
    assert sorted(a["kind"] for a in report["anomalies"]) == kinds


def test_stub_calls_come_out_with_their_ids_and_arguments() -> None:
    _, _, report = play_scenario("anthropic-thinking")
    assert [(c["index"], c["id"], c["arguments"]) for c in report["tool_calls"]] == [
        (2, "toolu_th1", {"city": "Oslo"})
    ]
    assert report["reasoning"].startswith("The user wants the weather in Oslo.")
    _, _, report = play_scenario("anthropic-full-input")
    assert report["tool_calls"][0]["arguments"] == {"city": "Rome", "days": 2}
    _, _, report = play_scenario("responses-interleaved")
    assert [(c["index"], c["id"], c["item_id"], c["arguments"]) for c in report["tool_calls"]] == [
        (1, "call_r1", "fc_r1", {"city": "Tokyo"}),
        (2, "call_r2", "fc_r2", {"timezone": "Asia/Tokyo"}),
    ]
    assert report["text"] == "Checking both."


# -- the override ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", [*(n for n in NAMES if n not in CHAT_NAMES), "weather", "parallel"]
)
def test_naming_the_right_dialect_gives_the_detected_report(name: str) -> None:
    expected = dialect_of_scenario(name)
    _, events, named = play_scenario(name, dialect=expected)
    _, _, detected_report = play_scenario(name)
    assert named == detected_report
    assert detected(events) == [expected]


@pytest.mark.parametrize(
    ("name", "forced"),
    [
        ("weather", ANTHROPIC),
        ("weather", RESPONSES),
        ("anthropic-parallel", CHAT),
        ("anthropic-parallel", RESPONSES),
        ("responses-interleaved", ANTHROPIC),
        ("json-completion", ANTHROPIC),
    ],
)
def test_a_named_dialect_overrides_detection(name: str, forced: str) -> None:
    session = StreamSession("test", dialect=forced)
    assert isinstance(session.dialect, DIALECTS[forced])
    _, events, report = play_scenario(name, dialect=forced)
    assert report["dialect"] == forced
    assert detected(events) == [forced]


def test_an_unknown_dialect_name_is_refused() -> None:
    with pytest.raises((KeyError, ValueError)):
        StreamSession("test", dialect="smoke-signals")


def test_make_dialect() -> None:
    state = StreamState(source="t", dialect="detecting")
    assert isinstance(make_dialect(state, None), DetectingDialect)
    assert state.dialect == "detecting"
    for name, cls in [
        (CHAT, ChatCompletionsDialect),
        (ANTHROPIC, AnthropicMessagesDialect),
        (RESPONSES, OpenAIResponsesDialect),
    ]:
        state = StreamState(source="t", dialect="detecting")
        assert isinstance(make_dialect(state, name), cls)
        assert state.dialect == name
        assert DIALECTS[name] is cls


# -- detection from one event -------------------------------------------------------------


def event(data: str, name: str = "") -> SSEEvent:
    return SSEEvent(number=1, event=name, data=data, id=None, retry=None)


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("message_start", "{}", ANTHROPIC),
        ("ping", "{}", ANTHROPIC),
        ("content_block_delta", "not json", ANTHROPIC),
        ("", '{"type": "message_start", "message": {}}', ANTHROPIC),
        ("", '{"type": "content_block_start", "index": 0}', ANTHROPIC),
        ("error", '{"type": "error", "error": {"type": "overloaded_error"}}', ANTHROPIC),
        ("", '{"type": "error", "error": {"type": "overloaded_error"}}', ANTHROPIC),
        ("response.created", "{}", RESPONSES),
        ("", '{"type": "response.created", "response": {}}', RESPONSES),
        ("", '{"type": "response.output_text.delta", "delta": "x"}', RESPONSES),
        ("error", '{"type": "error", "code": "rate_limit_exceeded", "message": "m"}', RESPONSES),
        ("", "[DONE]", CHAT),
        ("", " [DONE] ", CHAT),
        ("", '{"choices": []}', CHAT),
        ("", '{"id": "c", "object": "chat.completion.chunk", "choices": [{"delta": {}}]}', CHAT),
        ("", '{"object": "chat.completion.chunk"}', CHAT),
        ("", '{"hello": 1}', None),
        ("", '{"error": {"message": "boom"}}', None),
        ("", "not json", None),
        ("", "[1, 2]", None),
        ("message", '{"hello": 1}', None),
    ],
)
def test_dialect_of_one_event(name: str, data: str, expected: str | None) -> None:
    assert dialect_of_event(event(data, name)) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"type": "message", "content": []}, ANTHROPIC),
        ({"type": "error", "error": {"type": "overloaded_error"}}, ANTHROPIC),
        ({"object": "response", "output": []}, RESPONSES),
        ({"object": "chat.completion", "choices": []}, CHAT),
        ({"error": {"message": "bad key"}}, CHAT),
        (None, CHAT),
        ([1, 2], CHAT),
    ],
)
def test_dialect_of_a_complete_body(body: Any, expected: str) -> None:
    assert dialect_of_completion(body) == expected


# -- non-streaming JSON bodies ---------------------------------------------------------------

ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "thinking", "thinking": "Two tools.", "signature": "c2ln"},
        {"type": "text", "text": "Checking Zürich."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Zürich", "days": [1, 2], "opts": {"unit": "C", "emoji": "😀"}},
        },
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"tz": "Europe/Zurich"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 20},
}

RESPONSES_OBJECT = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-test",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking Zürich.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Zürich", "days": [1, 2]}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "get_time",
            "arguments": '{"tz": "Europe/Zurich"}',
            "status": "completed",
        },
    ],
}


def play_json(
    body: Any, *, status: int = 200, content_type: str = "application/json"
) -> tuple[StreamSession, list[StreamEvent], dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return play([data[:7], data[7:]], status=status, content_type=content_type)


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/x+json"]
)
def test_anthropic_message_body_is_detected_and_complete(content_type: str) -> None:
    session, events, report = play_json(ANTHROPIC_MESSAGE, content_type=content_type)
    assert report["dialect"] == ANTHROPIC
    assert detected(events) == [ANTHROPIC]
    assert report["status"] == "finished"
    assert report["finish_reason"] == "tool_use"
    assert report["text"] == "Checking Zürich."
    assert report["reasoning"] == "Two tools."
    assert report["anomalies"] == []
    assert exit_code(session.state) == 0
    blocks = ANTHROPIC_MESSAGE["content"]
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in report["tool_calls"]] == [
        (2, "toolu_1", "get_weather", blocks[2]["input"]),  # type: ignore[index]
        (3, "toolu_2", "get_time", blocks[3]["input"]),  # type: ignore[index]
    ]
    for call in report["tool_calls"]:
        assert json.loads(call["arguments_raw"]) == call["arguments"]


def test_responses_object_body_is_detected_and_complete() -> None:
    session, events, report = play_json(RESPONSES_OBJECT)
    assert report["dialect"] == RESPONSES
    assert detected(events) == [RESPONSES]
    assert report["status"] == "finished"
    assert report["finish_reason"] == "completed"
    assert report["text"] == "Checking Zürich."
    assert report["anomalies"] == []
    assert exit_code(session.state) == 0
    assert [
        (c["index"], c["id"], c["item_id"], c["name"], c["arguments_raw"], c["arguments"])
        for c in report["tool_calls"]
    ] == [
        (
            2,
            "call_1",
            "fc_1",
            "get_weather",
            '{"city": "Zürich", "days": [1, 2]}',
            {"city": "Zürich", "days": [1, 2]},
        ),
        (3, "call_2", "fc_2", "get_time", '{"tz": "Europe/Zurich"}', {"tz": "Europe/Zurich"}),
    ]


def test_incomplete_responses_object_names_its_reason() -> None:
    body = {
        **RESPONSES_OBJECT,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    _, _, report = play_json(body)
    assert report["dialect"] == RESPONSES
    assert report["status"] == "finished"
    assert report["finish_reason"] == "incomplete:max_output_tokens"


def test_chat_completion_body_is_detected_and_complete() -> None:
    session, events, report = play_scenario("json-completion")
    assert report["dialect"] == CHAT
    assert detected(events) == [CHAT]
    assert report["status"] == "finished"
    assert report["finish_reason"] == "tool_calls"
    assert exit_code(session.state) == 0
    assert [(c["index"], c["id"], c["arguments"]) for c in report["tool_calls"]] == [
        (0, "call_json_0", {"city": "Paris"}),
        (1, "call_json_1", {"tz": "Europe/Paris"}),
    ]


def test_anthropic_error_body_with_status_200_is_an_anthropic_error() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    session, _, report = play_json(body)
    assert report["dialect"] == ANTHROPIC
    assert report["status"] == "error"
    assert "Overloaded" in report["error"]
    assert exit_code(session.state) == 1


# -- HTTP error bodies still yield a dialect ---------------------------------------------------


def test_anthropic_http_error_body_is_detected_as_anthropic() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    session, events, report = play_json(body, status=529)
    assert report["dialect"] == ANTHROPIC
    assert detected(events) == [ANTHROPIC]
    assert report["status"] == "error"
    assert report["http_status"] == 529
    assert "Overloaded" in report["error"]
    assert exit_code(session.state) == 1


@pytest.mark.parametrize("name", ["http-401", "http-401-echo", "html-page"])
def test_openai_and_non_json_error_bodies_yield_a_dialect(name: str) -> None:
    session, events, report = play_scenario(name)
    assert report["dialect"] in DIALECTS
    assert detected(events) == [report["dialect"]]
    assert report["status"] == "error"
    assert exit_code(session.state) == 1


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"<html>Bad gateway</html>", "text/html"), (b"", "text/plain"), (b"oops", "")],
)
def test_any_error_body_yields_a_dialect(body: bytes, content_type: str) -> None:
    _, events, report = play([body], status=502, content_type=content_type)
    assert report["dialect"] in DIALECTS
    assert detected(events) == [report["dialect"]]
    assert report["status"] == "error"


# -- undecided streams fall back to chat ---------------------------------------------------------


def test_an_undecided_short_stream_is_read_as_chat_at_the_end() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    fed = session.feed(sse({"hello": 1}, {"hello": 2}, "plain text"), 0.0)
    assert detected(fed) == []
    assert session.state.dialect == "detecting"
    closed = session.close(1.0)
    assert detected(closed) == [CHAT]
    report = build_report(session.state)
    assert report["dialect"] == CHAT
    assert report["events"] == 3
    assert report["status"] == "truncated"


def test_a_long_undecided_stream_falls_back_to_chat_before_the_end() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    fed = session.feed(sse(*({"n": n} for n in range(UNDECIDED_LIMIT + 3))), 0.0)
    assert detected(fed) == [CHAT]
    report = build_report(session.state)
    assert report["dialect"] == CHAT
    assert "dialect-unknown" in [a["kind"] for a in report["anomalies"]]


@pytest.mark.parametrize("body", [b"", b": keep-alive\n\n", b": a\n\n: b\n\n"])
def test_a_stream_without_events_still_names_a_dialect(body: bytes) -> None:
    _, events, report = play([body])
    assert report["dialect"] == CHAT
    assert detected(events) == [CHAT]
    assert report["status"] == "truncated"


def test_events_held_while_undecided_are_replayed_to_the_chosen_dialect() -> None:
    body = sse("not json") + sse(
        {"type": "message_start", "message": {}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    )
    _, events, report = play([body])
    assert report["dialect"] == ANTHROPIC
    assert detected(events) == [ANTHROPIC]
    assert report["text"] == "hi"
    assert report["status"] == "finished"
    assert [a["kind"] for a in report["anomalies"]] == ["data-not-json"]
    assert report["anomalies"][0]["event"] == 1


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (sse("[DONE]"), CHAT),
        (sse({"choices": []}), CHAT),
        (sse({"type": "message_start", "message": {}}), ANTHROPIC),
        (sse({"type": "response.created", "response": {}}), RESPONSES),
        (sse({"anything": 1}, event="message_start"), ANTHROPIC),
        (sse({"anything": 1}, event="response.in_progress"), RESPONSES),
    ],
)
def test_the_first_telling_event_decides_at_once(first: bytes, expected: str) -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    assert detected(session.feed(first, 0.0)) == [expected]
    later = session.feed(sse("[DONE]", {"type": "message_stop"}), 1.0)
    later += session.close(2.0)
    assert detected(later) == []
    assert build_report(session.state)["dialect"] == expected
