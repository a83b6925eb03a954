"""The `ollama` SDK as an oracle for the Ollama dialect: `Client.chat(stream=True)`
reads every `ollama-*` stub scenario from a real stub server on 127.0.0.1 (its host
keeps the `/scenarios/<name>` path), written in random pieces that cut characters
between their bytes, and its parts are accumulated as a user would: content,
thinking, each tool call's name and arguments, the done_reason. That must equal
our report on the same bytes, cut the same way.

The SDK's tool call holds only `function.name` and `function.arguments`: the wire's
`id` and `function.index` are dropped by its types, so the ids are checked by the
core's own tests, not here. Where the SDK reads a stream otherwise, the test says
exactly how: it raises on an error line, and it hands over a whole call from a
stream that never finished, which the report leaves unsettled."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import ollama
import pytest

from tests.helpers.oracles import scenario_report
from toolstream_stubs import StubServer, load_scenario
from toolstream_stubs.scenarios import scenario_names

MODEL = "stub-model"
TIMEOUT = 20.0  # seconds
SEED = 5  # how the stub cuts its writes, and ours
NAMES = [name for name in scenario_names() if name.startswith("ollama-")]


class Call(NamedTuple):
    name: str | None
    arguments: Any  # None when the report leaves them unparsed


@dataclass(frozen=True)
class Final:
    text: str
    reasoning: str
    calls: tuple[Call, ...]
    finish: str | None


# -- our side ------------------------------------------------------------------------


def ours(report: dict[str, Any]) -> Final:
    calls = tuple(Call(call["name"], call["arguments"]) for call in report["tool_calls"])
    return Final(report["text"], report["reasoning"], calls, report["finish_reason"])


# -- the SDK's side ----------------------------------------------------------------------


@dataclass
class Accumulated:
    text: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    finish: str | None = None

    def take(self, part: ollama.ChatResponse) -> None:
        message = part.message
        self.text += message.content or ""
        self.reasoning += message.thinking or ""
        for call in message.tool_calls or []:
            self.calls.append(Call(call.function.name, dict(call.function.arguments)))
        if part.done:
            self.finish = part.done_reason

    def final(self) -> Final:
        return Final(self.text, self.reasoning, tuple(self.calls), self.finish)


def read(stub: StubServer, name: str, accumulated: Accumulated) -> None:
    client = ollama.Client(host=f"{stub.base_url}/scenarios/{name}", timeout=TIMEOUT)
    messages = [{"role": "user", "content": "What is the weather?"}]
    for part in client.chat(model=MODEL, messages=messages, stream=True):
        accumulated.take(part)


def sdk_final(stub: StubServer, name: str) -> Final:
    accumulated = Accumulated()
    read(stub, name, accumulated)
    return accumulated.final()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer("ollama-text-tools", speed=0, split="random", seed=SEED) as server:
        yield server


READ_ALIKE = ["ollama-empty-args", "ollama-split-utf8", "ollama-text-tools"]
ERROR_LINE = "ollama-error"
NO_DONE_LINE = "ollama-truncated"


def test_every_ollama_scenario_is_compared() -> None:
    assert sorted([*READ_ALIKE, ERROR_LINE, NO_DONE_LINE]) == NAMES


@pytest.mark.parametrize("name", READ_ALIKE)
def test_the_sdk_reads_the_stream_as_the_report_does(stub: StubServer, name: str) -> None:
    report = scenario_report(name, seed=SEED)
    assert (report["dialect"], report["status"]) == ("ollama", "finished")
    assert sdk_final(stub, name) == ours(report)


def test_an_error_line_raises_in_the_sdk_and_fails_the_report(stub: StubServer) -> None:
    accumulated = Accumulated()
    with pytest.raises(ollama.ResponseError) as raised:
        read(stub, ERROR_LINE, accumulated)
    message = "an error was encountered while running the model"
    assert (raised.value.error, raised.value.status_code) == (message, -1)
    report = scenario_report(ERROR_LINE, seed=SEED)
    assert (report["status"], report["error"]) == ("error", f"error in stream: {message}")
    assert [anomaly["kind"] for anomaly in report["anomalies"]] == ["error-event"]
    # what the SDK handed over before it raised is what the report holds
    assert accumulated.final() == ours(report)
    assert accumulated.text == "Yes, I can"


def test_a_stream_without_a_done_line_ends_quietly_in_the_sdk(stub: StubServer) -> None:
    """The SDK returns the call it received whole; so does the report, in a stream
    it calls truncated (no done line): arguments that came whole are complete."""
    report = scenario_report(NO_DONE_LINE, seed=SEED)
    assert (report["status"], report["finish_reason"]) == ("truncated", None)
    assert [call["error"] for call in report["tool_calls"]] == [None]
    raw = report["tool_calls"][0]["arguments_raw"]
    assert raw == '{"query":"streaming tool calls","limit":5}'
    assert sdk_final(stub, NO_DONE_LINE) == ours(report)


def test_the_stub_cuts_characters_of_the_split_utf8_scenario() -> None:
    pieces = itertools.chain.from_iterable(
        load_scenario("ollama-split-utf8").writes("random", SEED, paced=False)
    )
    continuation = [piece for piece in pieces if piece and 0x80 <= piece[0] <= 0xBF]
    assert continuation, "no write starts inside a character"


def test_the_oracle_sees_what_matters(stub: StubServer) -> None:
    """The comparison is not vacuous: the SDK's reading holds what the scenarios say."""
    tools = sdk_final(stub, "ollama-text-tools")
    assert tools == Final(
        "Let me check both.",
        "The user wants the weather and the time.",
        (
            Call("get_weather", {"city": "Tokyo", "unit": "celsius"}),
            Call("get_time", {"timezone": "Asia/Tokyo"}),
        ),
        "stop",
    )
    split = sdk_final(stub, "ollama-split-utf8")
    assert split.text == "我来查一下北京的天气。"
    assert split.calls == (Call("get_weather", {"city": "北京", "note": "今天和明天"}),)
    assert sdk_final(stub, "ollama-empty-args").calls == (Call("current_time", {}),)
