"""Every stub scenario over real loopback HTTP, cut into random TCP writes, read
by the CLI in a subprocess: the report and the exit code are as specified."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.apps import scenario_params
from tests.helpers.cli import CliRunner
from toolstream_stubs import StubServer, list_scenarios, load_scenario
from toolstream_stubs.generators import generate_items
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

WEATHER_TEXT = "I'll check the weather in 北京 and 上海 for you."


@dataclass
class Expected:
    exit: int
    status: str
    finish_reason: str | None = None
    calls: list[tuple[int, str | None, str | None, Any]] = field(default_factory=list)
    anomalies: set[tuple[str, int | None]] = field(default_factory=set)
    text: str | None = None
    reasoning_starts: str | None = None
    refusal: str | None = None
    error_contains: str | None = None
    dialect: str = "openai-chat"


def generated_calls(scenario: str) -> list[tuple[int, str | None, str | None, Any]]:
    """The original objects behind a generated scenario, rebuilt from the stub's
    own items (not from the wire) so the test has an independent oracle."""
    path = resources.files("toolstream_stubs") / "scenarios" / f"{scenario}.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    calls: dict[int, dict[str, Any]] = {}
    for item in spec["events"]:
        for delta_item in generate_items(item["generate"]) if "generate" in item else []:
            for fragment in delta_item["delta"]["tool_calls"]:
                call = calls.setdefault(fragment["index"], {"parts": []})
                call.setdefault("id", fragment.get("id"))
                call.setdefault("name", fragment.get("function", {}).get("name"))
                call["parts"].append(fragment["function"].get("arguments", ""))
    return [
        (index, call["id"], call["name"], json.loads("".join(call["parts"])))
        for index, call in sorted(calls.items())
    ]


SCHEMA_MISMATCH_CALLS: list[tuple[int, str | None, str | None, Any]] = [
    (0, "call_w", "get_weather", {"city": "Oslo", "unit": "kelvin", "days": 30, "hourly": True}),
    (1, "call_t", "get_time", {"tz": "Europe/Oslo"}),
    (2, "call_m", "send_email", {"to": "me"}),
]

EXPECTED: dict[str, Expected] = {
    "demo": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (0, "call_demo_0", "get_weather", {"city": "北京", "unit": "celsius"}),
            (1, "call_demo_1", "get_weather", {"city": "上海", "unit": "celsius"}),
        ],
        text=WEATHER_TEXT,
    ),
    "weather": Expected(
        0, "finished", "tool_calls", [(0, "call_weather_1", "get_weather", {"location": "Beijing"})]
    ),
    "parallel": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (0, "call_par_0", "get_weather", {"location": "Tokyo", "unit": "celsius"}),
            (1, "call_par_1", "get_time", {"timezone": "Asia/Tokyo"}),
            (2, "call_par_2", "search_web", {"query": "cherry blossom forecast", "max_results": 3}),
        ],
    ),
    "empty-args": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_empty_0", "get_time", {}), (1, "call_empty_1", "list_files", {})],
    ),
    "text-only": Expected(0, "finished", "stop"),
    "invalid-json": Expected(
        EXIT_INCOMPLETE,
        "finished",
        "tool_calls",
        [(0, "call_bad_0", "search", None), (1, "call_bad_1", "get_time", {"tz": "UTC"})],
    ),
    "truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "call_trunc_1", "get_weather", None)],
        {("unterminated-event", None)},
        text="Let me check that for you.",
    ),
    "http-401": Expected(1, "error", error_contains="HTTP 401: Incorrect API key provided"),
    "in-stream-error": Expected(
        1,
        "error",
        anomalies={("error-event", None)},
        error_contains="The server had an error while processing your request",
    ),
    "index-missing": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (0, "call_g1", "get_weather", {"city": "Paris"}),
            (1, "call_g2", "get_time", {"tz": "CET"}),
        ],
        {("index-missing", 0), ("index-missing", 1)},
    ),
    "index0-reused": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (0, "call_r1", "get_weather", {"city": "Lima"}),
            (1, "call_r2", "get_time", {"tz": "America/Lima"}),
        ],
        {("index-reused", 1)},
    ),
    "name-repeated": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_rep_1", "get_weather", {"city": "Reykjavík", "unit": "celsius"})],
        {("name-repeated", 0), ("id-repeated", 0)},
    ),
    "finish-stop-with-tools": Expected(
        0,
        "finished",
        "stop",
        [(0, "call_stop_1", "get_weather", {"city": "Madrid"})],
        {("finish-stop-with-tools", None)},
    ),
    "crlf-comments": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_crlf_1", "get_weather", {"city": "Lisbon"})],
    ),
    "huge-args": Expected(0, "finished", "tool_calls", generated_calls("huge-args")),
    "many-parallel": Expected(0, "finished", "tool_calls", generated_calls("many-parallel")),
    "arguments-object": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_obj_1", "get_forecast", {"city": "Oslo", "days": 3})],
        {("arguments-object", 0)},
    ),
    "no-done": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_nodone_1", "get_weather", {"city": "Nairobi"})],
        {("done-missing", None)},
    ),
    "done-only": Expected(
        0,
        "finished",
        None,
        [(0, "call_doneonly_1", "get_time", {"tz": "Asia/Kolkata"})],
        {("finish-missing", None)},
    ),
    "data-after-done": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_after_1", "get_weather", {"city": "Cairo"})],
        {("data-after-done", None)},
    ),
    "concatenated-json": Expected(
        EXIT_INCOMPLETE,
        "finished",
        "tool_calls",
        [(0, "call_concat_1", "get_weather", None)],
        {("fragment-after-complete-json", 0)},
    ),
    "reasoning": Expected(
        0,
        "finished",
        "tool_calls",
        [(0, "call_reason_1", "get_weather", {"city": "Berlin", "unit": "celsius"})],
        text="Let me look up Berlin.",
        reasoning_starts="The user wants the w",
    ),
    "refusal": Expected(0, "finished", "stop", refusal="I can't help with that."),
    "html-page": Expected(
        1,
        "error",
        anomalies={("dialect-unknown", None)},  # nothing in a proxy's login page tells one
        error_contains="neither SSE nor a JSON completion (text/html",
    ),
    "json-completion": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (0, "call_json_0", "get_weather", {"city": "Paris"}),
            (1, "call_json_1", "get_time", {"tz": "Europe/Paris"}),
        ],
    ),
    "anthropic-json": Expected(
        0,
        "finished",
        "tool_use",
        [
            (1, "toolu_json_0", "get_weather", {"city": "Paris"}),
            (2, "toolu_json_1", "get_time", {"tz": "Europe/Paris"}),
        ],
        text="Checking both cities.",
        dialect="anthropic",
    ),
    "emoji-split": Expected(
        0,
        "finished",
        "tool_calls",
        [
            (
                0,
                "call_emoji_1",
                "save_note",
                {"note": "Feeling 😀 today 🎉", "tags": ["joy", "party 🎉", "🎈"]},
            )
        ],
        text="Sure 😀! Saving your note 👩\u200d💻 now.",
    ),
    "anthropic-parallel": Expected(
        0,
        "finished",
        "tool_use",
        [
            (0, "toolu_par1", "get_weather", {"city": "Paris", "unit": "celsius"}),
            (1, "toolu_par2", "get_time", {"timezone": "Europe/Paris"}),
        ],
        dialect="anthropic",
    ),
    "anthropic-text-tools": Expected(
        0,
        "finished",
        "tool_use",
        [(1, "toolu_tt1", "search_docs", {"query": "streaming tool calls", "limit": 5})],
        text="I'll look that up for you.",
        dialect="anthropic",
    ),
    "anthropic-no-event-lines": Expected(
        0,
        "finished",
        "tool_use",
        [(1, "toolu_tt1", "search_docs", {"query": "streaming tool calls", "limit": 5})],
        text="I'll look that up for you.",
        dialect="anthropic",
    ),
    "anthropic-thinking": Expected(
        0,
        "finished",
        "tool_use",
        [(2, "toolu_th1", "get_weather", {"city": "Oslo"})],
        text="Let me check Oslo.",
        reasoning_starts="The user wants",
        dialect="anthropic",
    ),
    "anthropic-max-tokens": Expected(
        EXIT_INCOMPLETE,
        "finished",
        "max_tokens",
        [(1, "toolu_mt1", "get_weather", None)],
        text="Let me look up the weather.",
        dialect="anthropic",
    ),
    "anthropic-error": Expected(
        1,
        "error",
        anomalies={("error-event", None)},
        error_contains="overloaded_error: Overloaded",
        dialect="anthropic",
    ),
    "anthropic-full-input": Expected(
        0,
        "finished",
        "tool_use",
        [(0, "toolu_fi1", "get_forecast", {"city": "Rome", "days": 2})],
        dialect="anthropic",
    ),
    "anthropic-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "toolu_tr1", "get_weather", None)],
        {("unterminated-event", None)},
        dialect="anthropic",
    ),
    "anthropic-quirks": Expected(
        0,
        "finished",
        "tool_use",
        [
            (0, "toolu_q1", "get_weather", {"city": "Nice"}),
            (1, "toolu_q2", "get_time", {"tz": "UTC"}),
            (3, None, None, {"x": 1}),
        ],
        {
            ("delta-without-start", 3),
            ("delta-after-stop", 0),
            ("block-index-reused", 1),
            ("block-not-stopped", 3),
        },
        dialect="anthropic",
    ),
    "responses-interleaved": Expected(
        0,
        "finished",
        "completed",
        [
            (1, "call_r1", "get_weather", {"city": "Tokyo"}),
            (2, "call_r2", "get_time", {"timezone": "Asia/Tokyo"}),
        ],
        text="Checking both.",
        dialect="openai-responses",
    ),
    "responses-done-only": Expected(
        0,
        "finished",
        "completed",
        [(0, "call_do1", "get_weather", {"city": "Lima"})],
        dialect="openai-responses",
    ),
    "responses-done-mismatch": Expected(
        0,
        "finished",
        "completed",
        [(0, "call_dm1", "get_weather", {"city": "Osaka"})],
        {("done-mismatch", 0)},
        dialect="openai-responses",
    ),
    "responses-lost-delta": Expected(
        0,
        "finished",
        "completed",
        [(0, "call_ld1", "get_weather", {"city": "Nairobi"})],
        {("done-mismatch", 0), ("sequence-gap", None)},
        dialect="openai-responses",
    ),
    "responses-litellm": Expected(
        0,
        "finished",
        "completed",
        [(1, "call_ll1", "get_weather", {"city": "Quito"})],
        {("data-after-completed", None)},
        text="Looking up Quito.",
        dialect="openai-responses",
    ),
    "responses-incomplete": Expected(
        EXIT_INCOMPLETE,
        "finished",
        "incomplete:max_output_tokens",
        [(0, "call_in1", "search_docs", None)],
        dialect="openai-responses",
    ),
    "responses-failed": Expected(
        1,
        "error",
        "failed",
        anomalies={("error-event", None)},
        error_contains="response failed: The model failed to finish the response.",
        dialect="openai-responses",
    ),
    "responses-error": Expected(
        1,
        "error",
        None,
        [(0, "call_er1", "get_weather", None)],
        {("error-event", None)},
        error_contains="rate_limit_exceeded: Rate limit reached",
        dialect="openai-responses",
    ),
    "responses-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "call_tr1", "get_weather", None)],
        dialect="openai-responses",
    ),
    "responses-reasoning": Expected(
        0,
        "finished",
        "completed",
        [(1, "call_rz1", "get_weather", {"city": "Seoul"})],
        reasoning_starts="**Checking the",
        dialect="openai-responses",
    ),
    "http-401-echo": Expected(1, "error", error_contains="HTTP 401: Incorrect API key provided"),
    # Over --url without its request body no tools are declared, so nothing is checked.
    "schema-mismatch": Expected(
        0, "finished", "tool_calls", SCHEMA_MISMATCH_CALLS, text="Checking Oslo."
    ),
    # The other providers' dialects: each scenario's SDK oracle (tests/test_sdk_*.py)
    # agrees with these reports.
    "aisdk-empty-args": Expected(
        0, "finished", "tool-calls", [(0, "call_aisdk_e", "get_time", {})], dialect="ai-sdk-ui"
    ),
    "aisdk-error": Expected(
        1,
        "error",
        None,
        [(0, "call_aisdk_er", "get_weather", None)],
        {("error-event", None)},
        text="Checking.",
        error_contains="error in stream: Overloaded: the provide",
        dialect="ai-sdk-ui",
    ),
    "aisdk-mismatch": Expected(
        0,
        "finished",
        "tool-calls",
        [(0, "call_aisdk_mm", "get_weather", {"city": "Berlin, DE", "days": 3})],
        {("done-mismatch", 0)},
        dialect="ai-sdk-ui",
    ),
    "aisdk-reasoning": Expected(
        0,
        "finished",
        "tool-calls",
        [(0, "call_aisdk_r", "get_weather", {"city": "Rome"})],
        text="One moment.",
        reasoning_starts="The user wants",
        dialect="ai-sdk-ui",
    ),
    "aisdk-text-tools": Expected(
        0,
        "finished",
        "stop",
        [
            (0, "call_aisdk_w", "get_weather", {"city": "Paris", "unit": "celsius"}),
            (1, "call_aisdk_t", "get_time", {"timezone": "Europe/Paris"}),
        ],
        text="Checking the weather and the time. "
        "It is 18°C and cloudy in Paris, where it is 14:05.",
        dialect="ai-sdk-ui",
    ),
    "aisdk-tool-input-error": Expected(
        0,
        "finished",
        "tool-calls",
        [(0, "call_aisdk_ie", "get_wether", {"city": "Oslo"})],
        {("tool-input-error", 0)},
        dialect="ai-sdk-ui",
    ),
    "aisdk-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "call_aisdk_tr", "get_weather", None)],
        text="Let me look that up.",
        dialect="ai-sdk-ui",
    ),
    "anthropic-message-start-call": Expected(
        0,
        "finished",
        "tool_use",
        [(0, "toolu_ms1", "rollDie", {"player": "player2"})],
        dialect="anthropic",
    ),
    "anthropic-message-start-deltas": Expected(
        0,
        "finished",
        "tool_use",
        [
            (1, "toolu_md1", "rollDie", {"player": "player1"}),
            (2, "toolu_md2", "rollDie", {"player": "player2"}),
        ],
        text="Rolling for both players.",
        dialect="anthropic",
    ),
    "bedrock-bad-crc": Expected(
        0,
        "finished",
        "end_turn",
        [],
        {("frame-invalid", None)},
        text="The answer is forty-two.",
        dialect="bedrock",
    ),
    "bedrock-empty-args": Expected(
        0,
        "finished",
        "tool_use",
        [
            (1, "tooluse_3fQ0mJvJQ5yVd2kJ8H1aZw", "get_time", {}),
            (2, "tooluse_Xr1bS7uTTRa3iC0e9wPqLg", "list_issues", {}),
        ],
        text="Fetching the time and the issue list.",
        dialect="bedrock",
    ),
    "bedrock-exception": Expected(
        1,
        "error",
        None,
        [(1, "tooluse_R5tHq0mWTLKx3bY2aP9c7A", "search_docs", None)],
        {("error-event", None)},
        text="Searching the docs.",
        error_contains="error in stream: modelStreamErrorExcepti",
        dialect="bedrock",
    ),
    "bedrock-invoke-anthropic": Expected(
        0,
        "finished",
        "tool_use",
        [
            (
                1,
                "toolu_bdrk_01Q6mXhK7dZ2yWn4cT8fVbLs",
                "get_weather",
                {"city": "Paris", "unit": "celsius"},
            )
        ],
        text="Checking Paris — one moment.",
        dialect="bedrock",
    ),
    "bedrock-reasoning": Expected(
        0,
        "finished",
        "tool_use",
        [(2, "tooluse_Y0o7cLqTQf2V1bN8mHs4Kw", "get_weather", {"city": "Lyon", "days": 3})],
        text="Let me check Lyon's forecast.",
        reasoning_starts="The user wants",
        dialect="bedrock",
    ),
    "bedrock-text-tools": Expected(
        0,
        "finished",
        "tool_use",
        [
            (
                1,
                "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                "get_weather",
                {"city": "Beijing", "unit": "celsius"},
            ),
            (
                2,
                "tooluse_Ocn9vTzGSyWg8pL3UfXc1A",
                "get_weather",
                {"city": "東京", "unit": "celsius"},
            ),
        ],
        text="I'll look up the weather in 北京 and in 東京 for you.",
        dialect="bedrock",
    ),
    "bedrock-throttled": Expected(
        1,
        "error",
        None,
        [],
        {("error-event", None)},
        text="Let me",
        error_contains="error in stream: throttlingException: To",
        dialect="bedrock",
    ),
    "bedrock-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(1, "tooluse_Vb2nH8sQS0u4Zl7dJpEw5g", "read_file", None)],
        {("unterminated-event", None)},
        text="Reading the file.",
        dialect="bedrock",
    ),
    "cohere-citations": Expected(
        0,
        "finished",
        "COMPLETE",
        [],
        text="The key benefits are automation of tasks.",
        dialect="cohere",
    ),
    "cohere-empty-args": Expected(
        0,
        "finished",
        "TOOL_CALL",
        [(0, "currentTime_y46ar19t5gvw", "currentTime", {})],
        reasoning_starts="I will use the",
        dialect="cohere",
    ),
    "cohere-error": Expected(
        1,
        "error",
        "ERROR",
        [(0, "get_forecast_p4q8r2s6t1u5", "get_forecast", None)],
        {("block-not-stopped", 0), ("error-event", None)},
        reasoning_starts="I will check t",
        error_contains="error in stream: internal server error: ",
        dialect="cohere",
    ),
    "cohere-text-tools": Expected(
        0,
        "finished",
        "TOOL_CALL",
        [
            (0, "get_weather_k1x9q2m4p7r3", "get_weather", {"city": "Paris", "unit": "celsius"}),
            (1, "get_time_z8v3n5b2c6d1", "get_time", {"timezone": "Asia/Tokyo"}),
        ],
        text="Checking both now.",
        reasoning_starts="I will look up",
        dialect="cohere",
    ),
    "cohere-thinking": Expected(
        0,
        "finished",
        "TOOL_CALL",
        [(0, "get_weather_w2e4r6t8y0u1", "get_weather", {"city": "Lisbon"})],
        reasoning_starts="The user wants",
        dialect="cohere",
    ),
    "cohere-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "search_docs_h3j7k1l9m2n4", "search_docs", None)],
        reasoning_starts="I will search ",
        dialect="cohere",
    ),
    "gemini-array": Expected(
        0,
        "finished",
        "STOP",
        [
            (0, None, "get_weather", {"city": "Paris", "unit": "celsius"}),
            (1, None, "get_weather", {"city": "Tokyo", "unit": "celsius"}),
        ],
        text="I'll check the weather in both cities.",
        dialect="gemini",
    ),
    "gemini-blocked": Expected(
        1,
        "error",
        None,
        [],
        {("blocked", None)},
        error_contains="the prompt was blocked (SAFETY)",
        dialect="gemini",
    ),
    "gemini-empty-args": Expected(
        0,
        "finished",
        "STOP",
        [(0, None, "get_time", {}), (1, None, "list_files", {})],
        dialect="gemini",
    ),
    "gemini-error": Expected(
        1,
        "error",
        None,
        [],
        {("error-event", None)},
        text="Let me check",
        error_contains="error in stream: UNAVAILABLE (503): The ",
        dialect="gemini",
    ),
    "gemini-malformed": Expected(
        EXIT_INCOMPLETE,  # the model's call failed, where Gemini parsed it
        "finished",
        "MALFORMED_FUNCTION_CALL",
        [],
        {("finish-malformed-call", None)},
        text="I'll book it.",
        dialect="gemini",
    ),
    "gemini-parallel-spread": Expected(
        0,
        "finished",
        "STOP",
        [
            (0, None, "get_weather", {"city": "Paris"}),
            (1, None, "get_time", {"timezone": "Europe/Paris"}),
            (2, None, "get_weather", {"city": "Lisbon", "days": 3, "hourly": False}),
        ],
        dialect="gemini",
    ),
    "gemini-text-tools": Expected(
        0,
        "finished",
        "STOP",
        [
            (0, None, "get_weather", {"city": "Paris", "unit": "celsius"}),
            (1, None, "get_weather", {"city": "Tokyo", "unit": "celsius"}),
        ],
        text="I'll check the weather in both cities.",
        dialect="gemini",
    ),
    "gemini-thinking": Expected(
        0,
        "finished",
        "STOP",
        [(0, None, "get_weather", {"city": "Oslo", "when": "tomorrow"})],
        text="Let me look that up.",
        reasoning_starts="**Finding the ",
        dialect="gemini",
    ),
    "gemini-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, None, "get_weather", {"city": "Madrid"})],  # whole: complete as it came
        {("unterminated-event", None)},
        text="Checking Madrid",
        dialect="gemini",
    ),
    "ollama-empty-args": Expected(
        0, "finished", "stop", [(0, "call_y46ar19t", "current_time", {})], dialect="ollama"
    ),
    "ollama-error": Expected(
        1,
        "error",
        None,
        [],
        {("error-event", None)},
        text="Yes, I can",
        error_contains="error in stream: an error was encountere",
        dialect="ollama",
    ),
    "ollama-split-utf8": Expected(
        0,
        "finished",
        "stop",
        [(0, "call_b5n7m9q1", "get_weather", {"city": "北京", "note": "今天和明天"})],
        text="我来查一下北京的天气。",
        reasoning_starts="用户想知道北京的天气。",
        dialect="ollama",
    ),
    "ollama-text-tools": Expected(
        0,
        "finished",
        "stop",
        [
            (0, "call_k1x9q2m4", "get_weather", {"city": "Tokyo", "unit": "celsius"}),
            (1, "call_z8v3n5b2", "get_time", {"timezone": "Asia/Tokyo"}),
        ],
        text="Let me check both.",
        reasoning_starts="The user wants",
        dialect="ollama",
    ),
    "ollama-truncated": Expected(
        EXIT_INCOMPLETE,
        "truncated",
        None,
        [(0, "call_h3j7k1l9", "search_docs", {"query": "streaming tool calls", "limit": 5})],
        text="Searching the docs. One moment",
        dialect="ollama",
    ),
    "responses-rotating-ids": Expected(
        0,
        "finished",
        "completed",
        [(1, "call_rot1", "rollDie", {"player": "player2"})],
        {("item-id-changed", 1), ("item-id-changed", None)},
        text="Rolling the die.",
        dialect="openai-responses",
    ),
    "vertex-partial-args": Expected(
        0,
        "finished",
        "STOP",
        [
            (
                0,
                None,
                "plan_trip",
                {
                    "destination": {"city": "San Francisco", "nights": 3},
                    "stops": [{"name": "Golden Gate Park"}, {"name": "Alcatraz", "booked": True}],
                    "notes": None,
                },
            ),
            (1, None, "get_weather", {"city": "San Francisco"}),
        ],
        text="Planning the trip.",
        dialect="gemini",
    ),
    "vertex-partial-contradiction": Expected(
        0,
        "finished",
        "STOP",
        [
            (
                0,
                None,
                "plan_trip",
                {"destination": 7, "nights": 2, "stops": ["Colosseum"], "notes": "Bring an umb"},
            )
        ],
        {("partial-args-conflict", 0), ("partial-args-unended", 0)},
        dialect="gemini",
    ),
}


def test_every_scenario_has_an_expectation() -> None:
    assert {info.name for info in list_scenarios()} == set(EXPECTED)


@pytest.mark.parametrize("scenario", scenario_params(sorted(EXPECTED)))
def test_scenario_report_over_http(
    random_split_stub: StubServer, cli_in_process: CliRunner, scenario: str
) -> None:
    expected = EXPECTED[scenario]
    result = cli_in_process("--headless", "--url", random_split_stub.scenario_url(scenario))
    report = json.loads(result.stdout)

    assert result.returncode == expected.exit, result.stderr
    assert report["status"] == expected.status
    assert report["dialect"] == expected.dialect
    assert report["finish_reason"] == expected.finish_reason
    got = [(c["index"], c["id"], c["name"], c["arguments"]) for c in report["tool_calls"]]
    assert got == expected.calls
    assert {(a["kind"], a["index"]) for a in report["anomalies"]} == expected.anomalies
    assert {kind for kind, _ in expected.anomalies} <= ANOMALY_KINDS
    if expected.text is not None:
        assert report["text"] == expected.text
    if expected.reasoning_starts is not None:
        assert report["reasoning"].startswith(expected.reasoning_starts)
        assert expected.reasoning_starts not in report["text"]
    if expected.refusal is not None:
        assert report["refusal"] == expected.refusal
        assert report["text"] == ""
    if expected.error_contains is not None:
        assert expected.error_contains in report["error"]
        assert expected.error_contains in result.stderr
    for call in report["tool_calls"]:
        is_responses = expected.dialect == "openai-responses"
        assert (call["item_id"] or "").startswith("fc_") == is_responses
        if call["arguments"] is not None:
            assert json.loads(call["arguments_raw"] or "{}") == call["arguments"]
        else:
            assert call["error"], "an unparsed call must say why"


def test_headless_scenario_uses_the_embedded_stub(cli: CliRunner) -> None:
    result = cli("--headless", "--scenario", "weather", "--speed", "0")
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert report["source"] == "stub:weather"
    assert [c["fragments"] for c in report["tool_calls"]] == [5]
    assert report["tool_calls"][0]["arguments"] == {"location": "Beijing"}


def test_arguments_are_checked_against_the_tools_the_request_declared(
    cli: CliRunner, tmp_path: Path
) -> None:
    """The embedded stub sends the scenario's request body, which declares tools;
    a recording keeps that request, so its replay checks the same."""
    recording = str(tmp_path / "schema.sse")
    live = cli(
        "--headless", "--scenario", "schema-mismatch", "--speed", "0", "--record", str(recording)
    )
    replayed = cli("--headless", "--replay", recording, "--speed", "0")
    for result in (live, replayed):
        report = json.loads(result.stdout)
        assert result.returncode == EXIT_INCOMPLETE, "schema errors count like parse errors"
        assert report["declared_tools"] == ["get_weather", "get_time"]
        weather, time, mail = report["tool_calls"]
        assert [(e["path"], e["keyword"]) for e in weather["schema_errors"]] == [
            ("$", "additionalProperties"),
            ("$.days", "maximum"),
            ("$.unit", "enum"),
        ]
        assert (
            "'kelvin' is not one of ['celsius', 'fahrenheit']"
            in weather["schema_errors"][2]["message"]
        )
        assert time["schema_errors"] == mail["schema_errors"] == []
        kinds = {(a["kind"], a["index"]) for a in report["anomalies"]}
        assert kinds == {("schema-mismatch", 0), ("unknown-tool", 2)}
        assert "call 0 (get_weather): 3 schema errors" in result.stderr


def test_a_request_body_given_with_d_declares_the_tools(
    random_split_stub: StubServer, cli: CliRunner, tmp_path: Path
) -> None:
    body = tmp_path / "request.json"
    body.write_bytes(load_scenario("schema-mismatch").request or b"")
    url = random_split_stub.scenario_url("schema-mismatch")
    result = cli("--headless", "--url", url, "-d", f"@{body}")
    report = json.loads(result.stdout)
    assert result.returncode == EXIT_INCOMPLETE
    assert [len(call["schema_errors"]) for call in report["tool_calls"]] == [3, 0, 0]
