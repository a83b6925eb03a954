"""Every stub scenario over real loopback HTTP, cut into random TCP writes, read
by the CLI in a subprocess: the report and the exit code are as specified."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from conftest import CliRunner, scenario_params
from toolstream_stubs import StubServer, list_scenarios, load_scenario
from toolstream_stubs.generators import generate_items
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS

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
        2,
        "finished",
        "tool_calls",
        [(0, "call_bad_0", "search", None), (1, "call_bad_1", "get_time", {"tz": "UTC"})],
    ),
    "truncated": Expected(
        2,
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
        2,
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
        2,
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
        2,
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
        2,
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
        2,
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
}


def test_every_scenario_has_an_expectation() -> None:
    assert {info.name for info in list_scenarios()} == set(EXPECTED)


@pytest.mark.parametrize("scenario", scenario_params(sorted(EXPECTED)))
def test_scenario_report_over_http(
    random_split_stub: StubServer, cli: CliRunner, scenario: str
) -> None:
    expected = EXPECTED[scenario]
    result = cli("--headless", "--url", random_split_stub.scenario_url(scenario))
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
        assert result.returncode == 2, "schema errors count like parse errors"
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
    assert result.returncode == 2
    assert [len(call["schema_errors"]) for call in report["tool_calls"]] == [3, 0, 0]
