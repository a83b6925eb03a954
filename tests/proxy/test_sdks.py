"""The official SDKs as the proxy's clients: each is pointed at the proxy, whose
upstream is the stub server. What the SDK builds from the stream is the oracle for
the proxy's report of that request, and the bytes the SDK read are the stub's."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.helpers.proxy import AsyncKeepingTransport, KeepingTransport, RunningProxy
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.proxy.requests import Change

KEY = "sk-proxy-oracle-5f1e2d3c4b5a"
MESSAGES = [{"role": "user", "content": "What is the weather?"}]
CONCURRENT = 8


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    """Every scenario as fast as possible, cut into random writes."""
    with StubServer("weather", speed=0, split="random", seed=3) as server:
        yield server


def openai_client(proxy: RunningProxy, scenario: str, transport: KeepingTransport) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=KEY,
        base_url=f"{proxy.url}/scenarios/{scenario}/v1",
        http_client=httpx2.Client(transport=transport),
        max_retries=0,
    )


def anthropic_client(
    proxy: RunningProxy, scenario: str, transport: KeepingTransport
) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=KEY,
        base_url=f"{proxy.url}/scenarios/{scenario}",
        http_client=httpx2.Client(transport=transport),
        max_retries=0,
    )


# -- what each SDK built, in the report's terms ---------------------------------------


def from_chat(completion: Any) -> dict[str, Any]:
    choice = completion.choices[0]
    calls = choice.message.tool_calls or []
    return {
        "text": choice.message.content or "",
        "finish_reason": choice.finish_reason,
        "calls": [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls],
    }


def from_message(message: Any) -> dict[str, Any]:
    blocks = message.content
    return {
        "text": "".join(block.text for block in blocks if block.type == "text"),
        "reasoning": "".join(block.thinking for block in blocks if block.type == "thinking"),
        "finish_reason": message.stop_reason,
        "calls": [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"],
    }


def from_response_events(events: list[Any]) -> dict[str, Any]:
    """The output items the SDK parsed from `output_item.done` events (the stub's
    `response.completed` carries no output to build a final response from)."""
    items = [event.item for event in events if event.type == "response.output_item.done"]
    final = [event.response for event in events if event.type == "response.completed"]
    calls = [item for item in items if item.type == "function_call"]
    texts = [part.text for item in items if item.type == "message" for part in item.content]
    return {
        "text": "".join(texts),
        "finish_reason": final[0].status,
        "calls": [(c.call_id, c.name, json.loads(c.arguments)) for c in calls],
    }


def reported(report: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    view = {
        "text": report["text"],
        "reasoning": report["reasoning"],
        "finish_reason": report["finish_reason"],
        "calls": [(c["id"], c["name"], c["arguments"]) for c in report["tool_calls"]],
    }
    return {key: view[key] for key in keys}


def assert_oracle(built: dict[str, Any], report: dict[str, Any], scenario: str) -> None:
    assert report["status"] == "finished", report["error"]
    assert built["calls"], "the scenario must carry tool calls to compare"
    assert reported(report, set(built)) == built
    assert report["anomalies"] == []
    assert report["http_status"] == 200


def assert_same_bytes(received: bytes, scenario: str) -> None:
    assert received == load_scenario(scenario).rendered


# -- one at a time -------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["weather", "demo", "parallel"])
def test_openai_chat_stream(proxy: RunningProxy, scenario: str) -> None:
    transport = KeepingTransport()
    client = openai_client(proxy, scenario, transport)
    with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        completion = stream.get_final_completion()
    [record] = proxy.finished(1)
    assert_oracle(from_chat(completion), record.summary(), scenario)
    assert_same_bytes(bytes(transport.bodies[0]), scenario)
    assert record.forwarded_bytes == record.bytes == len(transport.bodies[0])


def test_openai_chat_without_stream(proxy: RunningProxy) -> None:
    transport = KeepingTransport()
    client = openai_client(proxy, "json-completion", transport)
    completion = client.chat.completions.create(model="m", messages=MESSAGES, stream=False)
    [record] = proxy.finished(1)
    assert_oracle(from_chat(completion), record.summary(), "json-completion")
    assert_same_bytes(bytes(transport.bodies[0]), "json-completion")


def test_openai_responses_stream(proxy: RunningProxy) -> None:
    transport = KeepingTransport()
    client = openai_client(proxy, "responses-interleaved", transport)
    with client.responses.stream(model="m", input="weather and time") as stream:
        events = list(stream)
    [record] = proxy.finished(1)
    report = record.summary()
    assert report["dialect"] == "openai-responses"
    assert_oracle(from_response_events(events), report, "responses-interleaved")
    assert_same_bytes(bytes(transport.bodies[0]), "responses-interleaved")


@pytest.mark.parametrize(
    "scenario", ["anthropic-parallel", "anthropic-text-tools", "anthropic-thinking"]
)
def test_anthropic_messages_stream(proxy: RunningProxy, scenario: str) -> None:
    transport = KeepingTransport()
    client = anthropic_client(proxy, scenario, transport)
    with client.messages.stream(model="m", max_tokens=100, messages=MESSAGES) as stream:
        message = stream.get_final_message()
    [record] = proxy.finished(1)
    report = record.summary()
    assert report["dialect"] == "anthropic"
    assert_oracle(from_message(message), report, scenario)
    assert_same_bytes(bytes(transport.bodies[0]), scenario)


def test_anthropic_messages_without_stream(proxy: RunningProxy) -> None:
    transport = KeepingTransport()
    client = anthropic_client(proxy, "anthropic-json", transport)
    message = client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    [record] = proxy.finished(1)
    assert_oracle(from_message(message), record.summary(), "anthropic-json")
    assert_same_bytes(bytes(transport.bodies[0]), "anthropic-json")


def test_the_sdk_requests_reach_the_stub_with_their_key_and_the_report_keeps_none(
    proxy: RunningProxy, stub: StubServer
) -> None:
    before = len(stub.requests)
    transport = KeepingTransport()
    openai_client(proxy, "weather", transport).chat.completions.create(
        model="m", messages=MESSAGES, stream=True
    ).close()
    anthropic_client(proxy, "anthropic-json", transport).messages.create(
        model="m", max_tokens=10, messages=MESSAGES
    )
    records = proxy.finished(2)
    sent = [
        {k.lower(): v for k, v in request.headers.items()} for request in stub.requests[before:]
    ]
    assert sent[0]["authorization"] == f"Bearer {KEY}"
    assert KEY in sent[1].get("x-api-key", "") + sent[1].get("authorization", "")
    for record in records:
        assert KEY not in json.dumps(record.summary())


# -- several at once -------------------------------------------------------------------

Run = Callable[[str, Any], Awaitable[dict[str, Any]]]


async def chat_stream(base: str, http: Any, model: str) -> dict[str, Any]:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{base}/v1", http_client=http, max_retries=0)
    async with client.chat.completions.stream(model=model, messages=MESSAGES) as stream:
        return from_chat(await stream.get_final_completion())


async def chat_json(base: str, http: Any, model: str) -> dict[str, Any]:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{base}/v1", http_client=http, max_retries=0)
    return from_chat(await client.chat.completions.create(model=model, messages=MESSAGES))


async def responses_stream(base: str, http: Any, model: str) -> dict[str, Any]:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{base}/v1", http_client=http, max_retries=0)
    async with client.responses.stream(model=model, input="hi") as stream:
        return from_response_events([event async for event in stream])


async def messages_stream(base: str, http: Any, model: str) -> dict[str, Any]:
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=base, http_client=http, max_retries=0)
    async with client.messages.stream(model=model, max_tokens=99, messages=MESSAGES) as stream:
        return from_message(await stream.get_final_message())


async def messages_json(base: str, http: Any, model: str) -> dict[str, Any]:
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=base, http_client=http, max_retries=0)
    return from_message(await client.messages.create(model=model, max_tokens=9, messages=MESSAGES))


JOBS: list[tuple[Callable[[str, Any, str], Awaitable[dict[str, Any]]], str]] = [
    (chat_stream, "demo"),
    (chat_stream, "parallel"),
    (chat_stream, "weather"),
    (chat_json, "json-completion"),
    (responses_stream, "responses-interleaved"),
    (messages_stream, "anthropic-parallel"),
    (messages_stream, "anthropic-thinking"),
    (messages_json, "anthropic-json"),
]


async def test_several_sdks_at_once_are_separate_requests_all_live_together() -> None:
    """The stub holds every response after its head until all of them have begun: so
    the requests can only complete if the proxy has them all open at once."""
    assert len(JOBS) == CONCURRENT
    all_started = threading.Barrier(CONCURRENT, timeout=30)

    def hold_until_all_started(event: int) -> None:
        if event == 0:
            all_started.wait()

    with (
        StubServer(
            "weather", speed=0, split="random", seed=9, before_event=hold_until_all_started
        ) as stub,
        RunningProxy(stub.base_url) as proxy,
    ):
        transports = [AsyncKeepingTransport() for _ in JOBS]
        runs = [
            job(f"{proxy.url}/scenarios/{scenario}", httpx2.AsyncClient(transport=t), f"m-{i}")
            for i, ((job, scenario), t) in enumerate(zip(JOBS, transports, strict=True))
        ]
        built = await asyncio.wait_for(asyncio.gather(*runs), 60)
        records = {record.model: record for record in proxy.finished(CONCURRENT)}
        changes = list(proxy.changes)
    assert sorted(records) == sorted(f"m-{i}" for i in range(CONCURRENT))
    first_finish = next(i for i, (_, change) in enumerate(changes) if change is Change.FINISHED)
    assert [c for _, c in changes[:first_finish]].count(Change.ADDED) == CONCURRENT
    for i, ((_, scenario), transport) in enumerate(zip(JOBS, transports, strict=True)):
        record = records[f"m-{i}"]
        assert record.path.startswith(f"/scenarios/{scenario}/")
        assert_oracle(built[i], record.summary(), scenario)
        assert_same_bytes(bytes(transport.bodies[0]), scenario)
