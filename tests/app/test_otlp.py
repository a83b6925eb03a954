"""`--otlp URL` in the app: the stream's span is sent when it ends, to a real
OTLP/HTTP receiver on 127.0.0.1 that decodes with opentelemetry-proto."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.helpers.apps import frozen_clock, make_app, wait_settled
from tests.helpers.otlp_receiver import Receiver
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.otlp.export import OtlpExport
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.watching.options import WatchOptions

SIZE = (100, 30)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


async def test_the_app_sends_the_span_of_a_stream_that_ends(
    app_stub: StubServer, receiver: Receiver
) -> None:
    export = OtlpExport(receiver.url)
    url = app_stub.scenario_url("anthropic-quirks")
    body = b'{"model": "claude-test", "stream": true}'
    source = HttpSource(HttpRequest(url=url, method="POST", body=body), clock=frozen_clock)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock, otlp=export))
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        [span] = await asyncio.to_thread(receiver.wait_for_spans, 1)
    assert span.name == "chat claude-test"
    attributes = span.attributes
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == "claude-test"
    assert attributes["gen_ai.response.model"] == "stub-model"
    assert attributes["gen_ai.response.id"] == "msg_stub"
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["toolstream.source"] == url
    names = [event.name for event in span.events]
    assert names.count("toolstream.tool_call") == 3
    assert names.count("toolstream.anomaly") == 4
    assert export.close().sent == 1
    assert export.summary() == f"--otlp: 1 span sent to {receiver.url}/v1/traces"


async def test_a_stream_the_app_restarts_is_sent_again(
    app_stub: StubServer, receiver: Receiver
) -> None:
    export = OtlpExport(receiver.url)
    app = make_app(app_stub, "parallel", otlp=export)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await asyncio.to_thread(receiver.wait_for_spans, 1)
        await pilot.press("r")
        await wait_settled(app)
        spans = await asyncio.to_thread(receiver.wait_for_spans, 2)
    assert [span.attributes["toolstream.tool_calls"] for span in spans] == [3, 3]
    assert spans[0].start_unix_nano < spans[1].start_unix_nano
