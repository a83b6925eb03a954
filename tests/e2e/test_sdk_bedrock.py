"""boto3 (and the Anthropic SDK's Bedrock client) as the oracle for every bedrock-*
stub scenario: each SDK reads the scenario from a real stub server on 127.0.0.1,
its frames cut into random TCP writes, and the message a user would assemble from
what it yields (text, reasoning, tool uses with their input parsed, the stop
reason) must equal our report on the same bytes. Where the scenario is a fault,
the test says exactly what the SDK does instead (the exception it raises, or the
events it stops at) and what our report shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import anthropic
import boto3
import pytest
from botocore.client import BaseClient
from botocore.eventstream import ChecksumMismatch
from botocore.exceptions import EventStreamError

from tests.helpers.oracles import client_parsed, scenario_report
from toolstream_stubs import StubServer, load_scenario
from toolstream_stubs.scenarios import scenario_names

MODEL = "stub-model"
MESSAGES: Any = [{"role": "user", "content": [{"text": "What is the weather?"}]}]
BEDROCK_NAMES = [name for name in scenario_names() if name.startswith("bedrock-")]


class Call(NamedTuple):
    id: str | None
    name: str | None
    raw: str
    arguments: Any


@dataclass
class Final:
    text: str = ""
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    finish: str | None = None


# -- our side ---------------------------------------------------------------------------------


def ours(report: dict[str, Any]) -> Final:
    calls = tuple(
        Call(call["id"], call["name"], call["arguments_raw"], client_parsed(call["arguments_raw"]))
        for call in report["tool_calls"]
    )
    return Final(report["text"], report["reasoning"], calls, report["finish_reason"])


# -- the SDK's side ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(split="random", seed=5, speed=0) as server:
        yield server


def bedrock(stub: StubServer, name: str) -> BaseClient:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=f"{stub.base_url}/scenarios/{name}",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
    )


@dataclass
class Assembly:
    """A ConverseStream message put together from the events boto3 yields."""

    final: Final = field(default_factory=Final)
    tools: dict[int, list[Any]] = field(default_factory=dict)  # index: [id, name, input]
    events: int = 0

    def take(self, event: dict[str, Any]) -> None:
        self.events += 1
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"].get("toolUse")
            if use is not None:
                self.tools[start["contentBlockIndex"]] = [use["toolUseId"], use["name"], ""]
        elif "contentBlockDelta" in event:
            self._delta(event["contentBlockDelta"])
        elif "messageStop" in event:
            self.final.finish = event["messageStop"]["stopReason"]

    def _delta(self, block: dict[str, Any]) -> None:
        delta = block["delta"]
        if "text" in delta:
            self.final.text += delta["text"]
        if "reasoningContent" in delta:
            self.final.reasoning += delta["reasoningContent"].get("text", "")
        if "toolUse" in delta:
            self.tools[block["contentBlockIndex"]][2] += delta["toolUse"]["input"]

    def result(self) -> Final:
        calls = tuple(
            Call(call_id, name, raw, client_parsed(raw))
            for call_id, name, raw in (self.tools[index] for index in sorted(self.tools))
        )
        return Final(self.final.text, self.final.reasoning, calls, self.final.finish)


def converse(stub: StubServer, name: str) -> tuple[Assembly, Exception | None]:
    """What boto3's converse_stream yields, and the exception that ended it, if any."""
    response = bedrock(stub, name).converse_stream(modelId=MODEL, messages=MESSAGES)
    assembly = Assembly()
    try:
        for event in response["stream"]:
            assembly.take(event)
    except (EventStreamError, ChecksumMismatch) as exc:
        return assembly, exc
    return assembly, None


# -- ConverseStream ------------------------------------------------------------------------


FINISHED = ["bedrock-text-tools", "bedrock-empty-args", "bedrock-reasoning"]


@pytest.mark.parametrize("name", FINISHED)
def test_boto3_assembles_what_we_report(stub: StubServer, name: str) -> None:
    assembly, error = converse(stub, name)
    report = scenario_report(name)
    assert error is None
    assert assembly.result() == ours(report)
    assert (report["status"], report["anomalies"]) == ("finished", [])


def test_text_tools_as_boto3_reads_them(stub: StubServer) -> None:
    final = converse(stub, "bedrock-text-tools")[0].result()
    assert final.text == "I'll look up the weather in 北京 and in 東京 for you."
    assert [call.arguments for call in final.calls] == [
        {"city": "Beijing", "unit": "celsius"},
        {"city": "東京", "unit": "celsius"},
    ]


def test_empty_tool_input_is_an_empty_object_for_boto3_and_for_us(stub: StubServer) -> None:
    final = converse(stub, "bedrock-empty-args")[0].result()
    assert [(call.raw, call.arguments) for call in final.calls] == [("", {}), ("", {})]
    assert [call["arguments"] for call in scenario_report("bedrock-empty-args")["tool_calls"]] == [
        {},
        {},
    ]


def test_a_cut_stream_ends_quietly_for_boto3_and_truncated_for_us(stub: StubServer) -> None:
    """botocore stops at the last whole frame and says nothing of the cut one: the
    caller sees a stream with no messageStop."""
    assembly, error = converse(stub, "bedrock-truncated")
    report = scenario_report("bedrock-truncated")
    assert error is None and assembly.final.finish is None
    assert assembly.result() == ours(report)
    assert assembly.result().calls[0].raw == '{"path": "/etc/ho'
    assert report["status"] == "truncated"
    assert [anomaly["kind"] for anomaly in report["anomalies"]] == ["unterminated-event"]
    assert report["trailing_chars"] > 0


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("bedrock-exception", "modelStreamErrorException", "Model Stream Error"),
        (
            "bedrock-throttled",
            "throttlingException",
            "Too many tokens, please wait before trying again.",
        ),
    ],
)
def test_an_exception_frame_raises_in_boto3_and_ends_our_stream_with_the_same_message(
    stub: StubServer, name: str, code: str, message: str
) -> None:
    assembly, error = converse(stub, name)
    assert isinstance(error, EventStreamError)
    assert error.response["Error"] == {"Code": code, "Message": message}
    assert str(error) == (
        f"An error occurred ({code}) when calling the ConverseStream operation: {message}"
    )
    report = scenario_report(name)
    assert report["status"] == "error"
    assert report["error"].startswith(f"error in stream: {code}: {message}")
    assert assembly.result() == ours(report)  # what came before the exception


def test_a_bad_crc_raises_in_boto3_and_is_named_by_us_with_the_frame_kept(
    stub: StubServer,
) -> None:
    """botocore raises ChecksumMismatch at the spoiled frame (the third) and the
    caller has only what came before; we name the frame and keep reading."""
    assembly, error = converse(stub, "bedrock-bad-crc")
    assert isinstance(error, ChecksumMismatch)
    assert assembly.events == 2
    assert assembly.result().text == "The answer is "
    report = scenario_report("bedrock-bad-crc")
    assert (report["status"], report["finish_reason"]) == ("finished", "end_turn")
    assert report["text"] == "The answer is forty-two."
    (anomaly,) = report["anomalies"]
    assert (anomaly["kind"], anomaly["detail"]) == (
        "frame-invalid",
        "frame 3: the message CRC32 does not match",
    )


# -- InvokeModelWithResponseStream -------------------------------------------------------------


INVOKE_BODY = json.dumps(
    {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024, "messages": MESSAGES}
)


def boto3_invoke_events(stub: StubServer, name: str) -> list[dict[str, Any]]:
    """Each chunk's bytes as boto3 hands them over (base64 already decoded), parsed."""
    response = bedrock(stub, name).invoke_model_with_response_stream(
        modelId=MODEL, body=INVOKE_BODY
    )
    return [json.loads(event["chunk"]["bytes"]) for event in response["body"]]


def anthropic_final(stub: StubServer, name: str) -> Final:
    """The Anthropic SDK's own Bedrock client, accumulating the message."""
    client = anthropic.AnthropicBedrock(
        base_url=f"{stub.base_url}/scenarios/{name}",
        aws_access_key="x",
        aws_secret_key="y",
        aws_region="us-east-1",
        max_retries=0,
    )
    messages: Any = [{"role": "user", "content": "What is the weather?"}]
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages) as stream:
        message = stream.get_final_message()
    calls = tuple(
        Call(block.id, block.name, json.dumps(block.input), block.input)
        for block in message.content
        if block.type == "tool_use"
    )
    text = "".join(block.text for block in message.content if block.type == "text")
    return Final(text, "", calls, message.stop_reason)


def test_invoke_with_response_stream_as_the_anthropic_bedrock_client_reads_it(
    stub: StubServer,
) -> None:
    name = "bedrock-invoke-anthropic"
    report = scenario_report(name)
    sdk = anthropic_final(stub, name)
    mine = ours(report)
    assert (sdk.text, sdk.finish) == (mine.text, mine.finish)
    assert [(c.id, c.name, c.arguments) for c in sdk.calls] == [
        (c.id, c.name, c.arguments) for c in mine.calls
    ]
    assert (report["status"], report["anomalies"]) == ("finished", [])


def test_invoke_chunks_as_boto3_decodes_them(stub: StubServer) -> None:
    """boto3 hands over each chunk's decoded bytes; joining the input_json_delta
    pieces of the tool_use block gives exactly our raw arguments."""
    events = boto3_invoke_events(stub, "bedrock-invoke-anthropic")
    pieces = "".join(
        event["delta"]["partial_json"]
        for event in events
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta"
    )
    (call,) = scenario_report("bedrock-invoke-anthropic")["tool_calls"]
    assert pieces == call["arguments_raw"] == '{"city": "Paris", "unit": "celsius"}'
    assert len(events) == len(load_scenario("bedrock-invoke-anthropic").events)


# -- coverage ------------------------------------------------------------------------------------


COVERED = {
    *FINISHED,
    "bedrock-truncated",
    "bedrock-exception",
    "bedrock-throttled",
    "bedrock-bad-crc",
    "bedrock-invoke-anthropic",
}


def test_every_bedrock_scenario_is_compared_with_an_sdk() -> None:
    assert set(BEDROCK_NAMES) == COVERED
