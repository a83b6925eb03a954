"""`--otlp URL` headless, against a real OTLP/HTTP receiver on 127.0.0.1 that
decodes what arrives with the official protobuf messages; and the export's
bounded queue, with a receiver that never answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.e2e.test_echoed_secrets import SECRET, EchoServer, echoing_stream, serving, traces_in
from tests.helpers.cli import CliRunner, console_script
from tests.helpers.otlp_receiver import ReceivedSpan, Receiver
from tests.helpers.paths import DATA, PROJECT
from toolstream_tui.cli import main
from toolstream_tui.otlp.export import OtlpExport
from toolstream_tui.otlp.spans import SpanPlan

# Anthropic: three calls (two in parallel, one whose block never started) and four
# anomalies, with the model, id and usage in its message_start and message_delta.
SCENARIO = "anthropic-quirks"
SPAN_KIND_CLIENT = 3  # opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_CLIENT
STATUS_ERROR = 2


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture
def echo_stream() -> Iterator[EchoServer]:
    """A model that repeats the key it was sent (see test_echoed_secrets.py)."""
    yield from serving(lambda key: (200, "text/event-stream", echoing_stream(key)))


def headless_span(cli: CliRunner, receiver: Receiver, *args: str) -> ReceivedSpan:
    result = cli("--headless", "--otlp", receiver.url, *args)
    assert f"--otlp: 1 span sent to {receiver.url}/v1/traces" in result.stderr, result.stderr
    [span] = receiver.wait_for_spans(1)
    return span


def test_a_headless_run_sends_one_span_with_the_genai_attributes(
    cli: CliRunner, receiver: Receiver
) -> None:
    span = headless_span(cli, receiver, "--scenario", SCENARIO, "--speed", "0")
    assert span.kind == SPAN_KIND_CLIENT
    assert span.name == "chat"  # the stub's request names no model
    assert span.resource["service.name"] == "toolstream-tui"
    attributes = span.attributes
    assert {key: value for key, value in attributes.items() if key.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.response.model": "stub-model",
        "gen_ai.response.id": "msg_stub",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 40,
        "gen_ai.response.finish_reasons": ["tool_use"],
        "gen_ai.response.time_to_first_chunk": attributes["gen_ai.response.time_to_first_chunk"],
    }
    assert attributes["toolstream.tool_calls"] == 3
    assert attributes["toolstream.anomalies"] == 4
    assert attributes["toolstream.status"] == "finished"
    calls = [event.attributes for event in span.events if event.name == "toolstream.tool_call"]
    assert [(call.get("gen_ai.tool.call.id"), call.get("gen_ai.tool.name")) for call in calls] == [
        ("toolu_q1", "get_weather"),
        ("toolu_q2", "get_time"),
        (None, None),  # deltas for a block that never started: no id, no name
    ]
    assert json.loads(calls[0]["gen_ai.tool.call.arguments"]) == {"city": "Nice"}
    assert all(call["toolstream.tool_call.first_argument_byte"] >= 0 for call in calls)
    kinds = [
        event.attributes["toolstream.anomaly.kind"]
        for event in span.events
        if event.name == "toolstream.anomaly"
    ]
    assert kinds == [
        "delta-without-start",
        "delta-after-stop",
        "block-index-reused",
        "block-not-stopped",
    ]
    assert "toolstream.first_token" in [event.name for event in span.events]
    for event in span.events:
        assert span.start_unix_nano <= event.time_unix_nano <= span.end_unix_nano


def test_the_span_is_named_by_the_requested_model_and_the_server(
    cli: CliRunner, receiver: Receiver, echo_stream: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_KEY", SECRET)
    span = headless_span(
        cli,
        receiver,
        "--url",
        echo_stream.url,
        "--api-key-env",
        "ECHO_KEY",
        "-d",
        '{"model": "gpt-test", "stream": true}',
    )
    assert span.name == "chat gpt-test"
    assert span.attributes["gen_ai.request.model"] == "gpt-test"
    assert span.attributes["gen_ai.provider.name"] == "openai"
    assert span.attributes["server.address"] == "127.0.0.1"
    assert isinstance(span.attributes["server.port"], int)


def test_an_echoed_key_reaches_no_span(
    cli: CliRunner, receiver: Receiver, echo_stream: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model repeats the key it was sent, whole, escaped and cut across deltas
    and arguments: the bytes sent to the receiver hold none of it."""
    monkeypatch.setenv("ECHO_KEY", SECRET)
    span = headless_span(
        cli,
        receiver,
        "--url",
        echo_stream.url,
        "--api-key-env",
        "ECHO_KEY",
        "-d",
        '{"stream": true}',
    )
    [call] = [event for event in span.events if event.name == "toolstream.tool_call"]
    assert json.loads(call.attributes["gen_ai.tool.call.arguments"]) == {
        "key": "[REDACTED]",
        "escaped": "[REDACTED]",
    }
    assert traces_in(span.raw.decode("utf-8", errors="replace")) == []


def test_a_failed_request_is_an_error_span(cli: CliRunner, receiver: Receiver) -> None:
    result = cli("--headless", "--otlp", receiver.url, "--scenario", "http-401", "--speed", "0")
    assert result.returncode == 1
    [span] = receiver.wait_for_spans(1)
    assert span.status_code == STATUS_ERROR
    assert span.status_message.startswith("HTTP 401")
    assert span.attributes["error.type"] == "401"
    assert span.attributes["http.response.status_code"] == 401


def test_without_the_extra_the_message_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    code = main(["--headless", "--otlp", "http://127.0.0.1:4318", "--scenario", "demo"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--otlp needs the OpenTelemetry SDK" in err
    assert "pip install 'toolstream-tui[otlp]'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:4318", "127.0.0.1:4318", "http://"])
def test_a_url_that_is_not_http_is_one_line(cli: CliRunner, url: str) -> None:
    result = cli("--headless", "--otlp", url, "--scenario", "demo", "--speed", "0")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "is not an http(s) URL" in result.stderr


def test_a_receiver_that_never_answers_does_not_hold_the_run(receiver: Receiver) -> None:
    """The report is out before the span leaves, and the run ends (waiting a
    bounded time) while the receiver still holds the span, which it says."""
    receiver.hold()
    command = [console_script("toolstream-tui"), "--headless", "--otlp", receiver.url]
    process = subprocess.Popen(
        [*command, "--scenario", SCENARIO, "--speed", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={key: value for key, value in os.environ.items() if key != "NO_COLOR"},
    )
    try:
        receiver.wait_for_requests(1)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert receiver.spans == []  # it never answered: the run ended all the same
    assert json.loads(stdout)["status"] == "finished"
    assert "--otlp: 0 of 1 span sent" in stderr
    assert "1 still unsent when the wait at exit ended" in stderr


def test_ctrl_c_while_the_span_waits_ends_the_run_without_a_traceback(
    receiver: Receiver,
) -> None:
    receiver.hold()
    command = [console_script("toolstream-tui"), "--headless", "--otlp", receiver.url]
    process = subprocess.Popen(
        [*command, "--scenario", SCENARIO, "--speed", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        receiver.wait_for_requests(1)  # the report is out; the span waits on the receiver
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["status"] == "finished"
    assert "--otlp: 0 of 1 span sent" in stderr
    assert "Traceback" not in stderr


def plan(number: int) -> SpanPlan:
    return SpanPlan(name=f"chat {number}", seconds=0.5, attributes={"toolstream.n": number})


@pytest.mark.parametrize("extra", [0, 1])
def test_the_queue_holds_n_spans_and_drops_the_next(receiver: Receiver, extra: int) -> None:
    """While the receiver holds the first batch, `queue_spans` more are queued and
    any beyond are dropped and counted; submitting never waits."""
    queue_spans = 3
    export = OtlpExport(receiver.url, queue_spans=queue_spans)
    receiver.hold()
    export.submit(plan(0), time.time_ns())
    receiver.wait_for_requests(1)  # the worker is sending span 0, and waits
    for number in range(1, queue_spans + extra + 1):
        export.submit(plan(number), time.time_ns())
    assert export.counts.dropped == extra
    receiver.release()
    counts = export.close(wait=30)
    assert (counts.sent, counts.dropped, counts.unsent) == (1 + queue_spans, extra, 0)
    names = sorted(span.name for span in receiver.wait_for_spans(1 + queue_spans))
    assert names == [f"chat {number}" for number in range(queue_spans + 1)]
    if extra:
        assert f"{extra} dropped (the queue of {queue_spans} was full)" in export.summary()


def test_docs_page_names_every_attribute_the_span_carries(
    cli: CliRunner, receiver: Receiver
) -> None:
    span = headless_span(cli, receiver, "--scenario", SCENARIO, "--speed", "0")
    page = (PROJECT / "docs" / "opentelemetry.md").read_text()
    names = {*span.attributes, *(key for event in span.events for key in event.attributes)}
    names |= {event.name for event in span.events}
    missing = sorted(name for name in names if f"`{name}`" not in page)
    assert missing == []


CAPTURES = DATA / "captures"
CAPTURE_SECRET = "sk-capture-secret-0123456789abcdef"  # its requests' Authorization


def test_a_capture_sends_a_span_per_model_request(cli: CliRunner, receiver: Receiver) -> None:
    """Playwright's HAR: four streaming POSTs (each sent, with the Authorization the
    HAR keeps nowhere in them) and a GET of a JSON listing (not a model call)."""
    result = cli("--headless", "--otlp", receiver.url, "--replay", str(CAPTURES / "playwright.har"))
    assert "--otlp: 4 spans sent" in result.stderr, result.stderr
    spans = sorted(receiver.wait_for_spans(4), key=lambda span: span.start_unix_nano)
    assert [span.attributes["gen_ai.provider.name"] for span in spans] == [
        "openai",
        "anthropic",
        "gcp.gemini",
        "openai",
    ]
    gemini = spans[2]
    assert (gemini.name, gemini.attributes["gen_ai.operation.name"]) == (
        "generate_content stub-model",
        "generate_content",
    )
    assert spans[3].attributes["toolstream.status"] == "truncated"
    assert CAPTURE_SECRET.encode() not in b"".join(receiver.bodies)


RECEIVER_SECRETS = ["pw-secret-123", "tok-secret-456", "hdr-secret-789"]


def test_a_url_with_a_port_out_of_range_is_refused_up_front(cli: CliRunner) -> None:
    """It was taken, and every span then failed ('Failed to parse')."""
    result = cli("--headless", "--otlp", "http://127.0.0.1:99999", "--scenario", "demo")
    assert result.returncode == 2
    assert result.stdout == "" and "is not a URL: Port out of range" in result.stderr


@pytest.mark.parametrize(
    "url",
    [
        "ftp://alice:pw-secret-123@collector.example:4318?api_key=tok-secret-456",
        "https://alice:pw-secret-123@[collector.example?api_key=tok-secret-456",
    ],
)
def test_a_refused_url_is_said_without_its_credentials(cli: CliRunner, url: str) -> None:
    result = cli("--headless", "--otlp", url, "--scenario", "demo", "--speed", "0")
    assert result.returncode == 2
    assert "--otlp '" in result.stderr
    assert "pw-secret-123" not in result.stderr and "tok-secret-456" not in result.stderr


@pytest.mark.parametrize(
    ("environ", "name"),
    [
        ({}, "toolstream-tui"),
        ({"OTEL_SERVICE_NAME": "my-agent"}, "my-agent"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,env=ci"}, "from-attrs"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "env=ci"}, "toolstream-tui"),
    ],
)
def test_the_environment_can_name_the_service(
    cli: CliRunner,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    environ: dict[str, str],
    name: str,
) -> None:
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    span = headless_span(cli, receiver, "--scenario", SCENARIO, "--speed", "0")
    assert span.resource["service.name"] == name


@pytest.mark.parametrize("answering", [True, False], ids=["receiver-up", "receiver-down"])
def test_the_receivers_credentials_are_never_shown(
    cli: CliRunner, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, answering: bool
) -> None:
    """A password or a key in the --otlp URL, or the exporter's headers from the
    environment, are not in what is said on stderr (sent or failed)."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hdr-secret-789")
    port = receiver.url.rpartition(":")[2]
    if not answering:
        receiver.__exit__(None, None, None)
    url = f"http://user:pw-secret-123@127.0.0.1:{port}?token=tok-secret-456"
    result = cli("--headless", "--otlp", url, "--scenario", "demo", "--speed", "0")
    assert result.returncode == 0
    assert ("--otlp: 1 span sent" in result.stderr) is answering, result.stderr
    assert "--otlp:" in result.stderr
    assert [secret for secret in RECEIVER_SECRETS if secret in result.stderr] == []


@pytest.fixture
def web_page() -> Iterator[str]:
    """A web UI's port (Jaeger's 16686 answers any path with its page): 200, HTML."""
    page = b"<!doctype html><title>Jaeger UI</title>"
    for server in serving(lambda key: (200, "text/html; charset=utf-8", [page])):
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_a_web_page_that_answers_200_is_no_receiver(cli: CliRunner, web_page: str) -> None:
    """The spans were counted as sent though nobody took them."""
    result = cli("--headless", "--otlp", web_page, "--scenario", SCENARIO, "--speed", "0")
    assert "0 of 1 span sent" in result.stderr, result.stderr
    assert "1 failed" in result.stderr and "answered with a web page" in result.stderr
    assert json.loads(result.stdout)["status"] == "finished"
