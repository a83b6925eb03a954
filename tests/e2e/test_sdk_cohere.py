"""The `cohere` SDK as an oracle for the Cohere v2 dialect: `ClientV2.chat_stream`
reads every `cohere-*` stub scenario from a real stub server on 127.0.0.1 (its base
URL keeps the `/scenarios/<name>` prefix), written in random pieces, and its events
are accumulated as a user would: text and thinking from `content-delta`, the plan
from `tool-plan-delta` (with thinking, the report's reasoning, in arrival order),
each call's id, name and arguments by `index`, and `message-end`'s finish_reason
and error. That must equal our report on the same bytes, cut the same way.

The SDK raises on none of these streams: a stream cut short simply ends (its calls
hold what came), and an error arrives as `message-end` with finish_reason ERROR."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cohere
import pytest

from tests.helpers.oracles import client_parsed, scenario_report
from toolstream_stubs import StubServer
from toolstream_stubs.scenarios import scenario_names

MODEL = "stub-model"
TIMEOUT = 20.0  # seconds
SEED = 11  # how the stub cuts its writes, and ours
NAMES = [name for name in scenario_names() if name.startswith("cohere-")]


class Call(NamedTuple):
    id: str | None
    name: str | None
    raw: str
    arguments: Any  # what the arguments parse to; None when they do not


@dataclass(frozen=True)
class Final:
    text: str
    reasoning: str
    calls: tuple[Call, ...]
    finish: str | None
    error: str | None  # message-end's error (ours: the report's, without its prefix)


# -- our side ------------------------------------------------------------------------


def ours(report: dict[str, Any]) -> Final:
    calls = tuple(
        Call(call["id"], call["name"], call["arguments_raw"], call["arguments"])
        for call in report["tool_calls"]
    )
    error = report["error"]
    error = error.removeprefix("error in stream: ") if error else None
    return Final(report["text"], report["reasoning"], calls, report["finish_reason"], error)


# -- the SDK's side ----------------------------------------------------------------------


@dataclass
class Accumulated:
    text: str = ""
    reasoning: str = ""
    finish: str | None = None
    error: str | None = None
    calls: dict[int, list[Any]] = field(default_factory=dict)  # index → [id, name, arguments]

    def take(self, event: Any) -> None:
        if event.type == "content-delta":
            content = event.delta.message.content
            self.text += content.text or ""
            self.reasoning += content.thinking or ""
        elif event.type == "tool-plan-delta":
            self.reasoning += event.delta.message.tool_plan or ""
        elif event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            self.calls[event.index] = [call.id, call.function.name, call.function.arguments or ""]
        elif event.type == "tool-call-delta":
            self.calls[event.index][2] += event.delta.message.tool_calls.function.arguments or ""
        elif event.type == "message-end":
            self.finish, self.error = event.delta.finish_reason, event.delta.error

    def final(self) -> Final:
        calls = tuple(
            Call(call_id, name, raw, client_parsed(raw))
            for call_id, name, raw in (self.calls[index] for index in sorted(self.calls))
        )
        return Final(self.text, self.reasoning, calls, self.finish, self.error)


def sdk_final(stub: StubServer, name: str) -> Final:
    client = cohere.ClientV2(
        api_key="k", base_url=f"{stub.base_url}/scenarios/{name}", timeout=TIMEOUT
    )
    accumulated = Accumulated()
    messages: Any = [{"role": "user", "content": "What is the weather?"}]
    for event in client.chat_stream(model=MODEL, messages=messages):
        accumulated.take(event)
    return accumulated.final()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer("cohere-text-tools", speed=0, split="random", seed=SEED) as server:
        yield server


# How each scenario ends in our report (the SDK has no status of its own).
STATUS = {
    "cohere-citations": "finished",
    "cohere-empty-args": "finished",
    "cohere-error": "error",
    "cohere-text-tools": "finished",
    "cohere-thinking": "finished",
    "cohere-truncated": "truncated",
}


def test_every_cohere_scenario_has_an_expected_status() -> None:
    assert sorted(STATUS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_the_sdk_reads_the_stream_as_the_report_does(stub: StubServer, name: str) -> None:
    report = scenario_report(name, seed=SEED)
    assert report["dialect"] == "cohere"
    assert report["status"] == STATUS[name]
    assert sdk_final(stub, name) == ours(report)


def test_the_oracle_sees_what_matters(stub: StubServer) -> None:
    """The comparison is not vacuous: the SDK's reading holds the calls, the plan,
    the text and the error the scenarios were written with."""
    tools = sdk_final(stub, "cohere-text-tools")
    assert [(call.name, call.arguments) for call in tools.calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_time", {"timezone": "Asia/Tokyo"}),
    ]
    assert tools.reasoning.startswith("I will look up")
    assert (tools.text, tools.finish) == ("Checking both now.", "TOOL_CALL")
    assert sdk_final(stub, "cohere-empty-args").calls[0].arguments == {}
    cut = sdk_final(stub, "cohere-truncated")
    assert (cut.calls[0].raw, cut.calls[0].arguments, cut.finish) == (
        '{"query": "streaming tool ca',
        None,
        None,
    )
    failed = sdk_final(stub, "cohere-error")
    assert (failed.finish, failed.error) == ("ERROR", "internal server error: generation failed")
    assert sdk_final(stub, "cohere-thinking").reasoning == (
        "The user wants Lisbon's weather.I will call get_weather."
    )
