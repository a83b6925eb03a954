"""`toolstream-tui proxy --otlp URL`: one span per proxied request, at a real
OTLP/HTTP receiver on 127.0.0.1 that decodes with opentelemetry-proto; a
receiver that hangs slows no client, and spans past the queue are counted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from tests.app.test_proxy_app import SIZE, post, proxy_app, until
from tests.commands.test_proxy import proxy_process
from tests.helpers.otlp_receiver import Receiver
from tests.helpers.proxy import SECRET_VALUES, SECRETS, WAIT_S, RunningProxy
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.otlp.export import OtlpExport
from toolstream_tui.proxy.requests import RequestList

ANTHROPIC = "/scenarios/anthropic-quirks/v1/messages"
CHAT = "/scenarios/index0-reused/v1/chat/completions"  # two calls at index 0, an anomaly


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


def test_each_proxied_request_is_one_span(stub: StubServer, receiver: Receiver) -> None:
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--exit-after", "2", "--otlp", receiver.url
    ) as proxy:
        proxy.send(ANTHROPIC, content=b'{"model": "claude-x", "stream": true}', headers=SECRETS)
        proxy.send(CHAT, content=b'{"model": "gpt-x", "stream": true}', headers=SECRETS)
        code = proxy.wait()
    assert code == 0, proxy.stderr
    assert f"--otlp: 2 spans sent to {receiver.url}/v1/traces" in proxy.stderr
    anthropic, chat = sorted(receiver.wait_for_spans(2), key=lambda span: span.name)
    assert (anthropic.name, chat.name) == ("chat claude-x", "chat gpt-x")
    assert anthropic.attributes["gen_ai.provider.name"] == "anthropic"
    assert anthropic.attributes["gen_ai.response.id"] == "msg_stub"
    assert anthropic.attributes["gen_ai.usage.input_tokens"] == 12
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.response.model"] == "stub-model"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat.attributes["server.address"] == "127.0.0.1"
    calls = [event.attributes for event in chat.events if event.name == "toolstream.tool_call"]
    assert [call["gen_ai.tool.call.id"] for call in calls] == ["call_r1", "call_r2"]
    anomalies = [event.attributes for event in chat.events if event.name == "toolstream.anomaly"]
    assert [anomaly["toolstream.anomaly.kind"] for anomaly in anomalies] == ["index-reused"]
    for span in (anthropic, chat):
        sent = span.raw.decode("utf-8", errors="replace")
        assert [secret for secret in SECRET_VALUES if secret in sent] == []


def test_a_receiver_that_hangs_slows_no_client(stub: StubServer, receiver: Receiver) -> None:
    """Every client gets its whole answer while the receiver holds the first span;
    the proxy stops (waiting a bounded time) and says the spans were not sent."""
    receiver.hold()
    expected = load_scenario("index0-reused").rendered
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--exit-after", "3", "--otlp", receiver.url
    ) as proxy:
        answers = [proxy.send(CHAT, content=b'{"stream": true}').content for _ in range(3)]
        assert answers == [expected] * 3
        receiver.wait_for_requests(1)
        code = proxy.wait()
    assert code == 0, proxy.stderr
    assert receiver.spans == []
    assert "--otlp: 0 of 3 spans sent" in proxy.stderr
    assert "3 still unsent when the wait at exit ended" in proxy.stderr


def test_spans_past_the_queue_are_dropped_and_counted(stub: StubServer, receiver: Receiver) -> None:
    """A queue of 1 while the receiver holds the first span: the second waits in
    the queue, the third is dropped; the clients notice nothing."""
    receiver.hold()
    export = OtlpExport(receiver.url, queue_spans=1)
    with RunningProxy(stub.base_url) as proxy, httpx.Client(timeout=WAIT_S) as client:
        proxy.log.otlp = export
        for number in range(1, 4):
            answer = client.post(proxy.url + CHAT, content=b'{"stream": true}')
            assert answer.content == load_scenario("index0-reused").rendered
            proxy.finished(number)
            if number == 1:
                receiver.wait_for_requests(1)  # span 1 is on its way, and held
        assert (export.counts.submitted, export.counts.dropped) == (3, 1)
        receiver.release()
        counts = export.close(wait=WAIT_S)
    assert (counts.sent, counts.dropped, counts.unsent) == (2, 1, 0)
    assert "1 dropped (the queue of 1 was full)" in export.summary()
    assert len(receiver.wait_for_spans(2)) == 2


async def test_the_request_list_says_what_was_sent(stub: StubServer, receiver: Receiver) -> None:
    log = RequestList(tapes=True, otlp=OtlpExport(receiver.url))
    async with proxy_app(stub.base_url, log) as (app, url), app.run_test(size=SIZE) as pilot:
        await post(url + CHAT)
        await until(lambda: log.finished_count == 1, pilot)
        await asyncio.to_thread(receiver.wait_for_spans, 1)
        await until(lambda: log.otlp is not None and log.otlp.counts.sent == 1, pilot)
        screen = app.requests
        assert "otlp: 1 sent" in screen.status_text(screen.table.ids)
        receiver.hold()
        await post(url + CHAT)
        await until(lambda: log.finished_count == 2, pilot)
        assert "otlp: 1 sent, 1 waiting" in screen.status_text(screen.table.ids)
