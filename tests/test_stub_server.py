"""Tests of the stub SSE server, its scenario data and its CLI, against real sockets."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from toolstream_stubs import StubServer, list_scenarios, load_scenario
from toolstream_stubs.cli import main as cli_main
from toolstream_stubs.scenarios import (
    CHAT_ENDPOINT,
    ENDPOINTS,
    ScenarioNotFound,
    SplitMode,
    render_item,
    with_sequence_numbers,
)

StartStub = Callable[..., StubServer]
TIMEOUT_S = 10.0
LISTENING_LINE = re.compile(r"^listening on (http://127\.0\.0\.1:\d+/v1/[a-z/]+)\n$")
MESSAGES_ENDPOINT, RESPONSES_ENDPOINT = "/v1/messages", "/v1/responses"
ALL_SCENARIOS = [info.name for info in list_scenarios()]
ANTHROPIC_SCENARIOS = [name for name in ALL_SCENARIOS if name.startswith("anthropic-")]
RESPONSES_SCENARIOS = [name for name in ALL_SCENARIOS if name.startswith("responses-")]
ENDPOINT_BY_PREFIX = {"anthropic": MESSAGES_ENDPOINT, "responses": RESPONSES_ENDPOINT}
SPLIT_CASES: list[tuple[SplitMode, dict[str, Any]]] = [
    ("event", {"speed": 0}),
    ("whole", {"speed": 0}),
    ("random", {"speed": 0, "seed": 5}),
    ("random", {"delay_ms": 0.01, "speed": 1, "seed": 5}),
]
SPLIT_IDS = ["event", "whole", "random-unpaced", "random-paced"]


@pytest.fixture
def start_stub() -> Iterator[StartStub]:
    servers: list[StubServer] = []

    def start(scenario: str = "demo", **options: Any) -> StubServer:
        options.setdefault("speed", 0)
        server = StubServer(scenario, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def flat(groups: list[list[bytes]]) -> list[bytes]:
    return [piece for pieces in groups for piece in pieces]


def cut_offsets(pieces: list[bytes]) -> list[int]:
    offsets, total = [], 0
    for piece in pieces[:-1]:
        total += len(piece)
        offsets.append(total)
    return offsets


def sse_events(body: bytes) -> list[tuple[str | None, str]]:
    """(event field, data) of each complete SSE event (an unterminated trailing one is dropped)."""
    lines = re.split(r"\r\n|\r|\n", body.decode("utf-8"))[:-1]
    events: list[tuple[str | None, str]] = []
    event: str | None = None
    data_lines: list[str] = []
    for line in lines:
        if not line and data_lines:
            events.append((event, "\n".join(data_lines)))
            event, data_lines = None, []
        elif line.startswith(("data:", "event:")):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            else:
                data_lines.append(value)
    return events


def sse_data(body: bytes) -> list[str]:
    return [data for _, data in sse_events(body)]


def chunks_of(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(data) for data in sse_data(body) if data != "[DONE]"]


def tool_arguments(body: bytes) -> dict[int, str]:
    """Concatenated argument fragments per tool-call index."""
    arguments: dict[int, str] = {}
    for chunk in chunks_of(body):
        for choice in chunk.get("choices", []):
            for call in choice["delta"].get("tool_calls", []):
                piece = call["function"].get("arguments", "")
                arguments[call["index"]] = arguments.get(call["index"], "") + piece
    return arguments


def joined_by(
    chunks: list[dict[str, Any]], key: str, piece: Callable[[dict[str, Any]], str | None]
) -> dict[Any, str]:
    """Concatenate `piece(chunk)` (skipping None) per `chunk[key]`."""
    joined: dict[Any, str] = {}
    for chunk in chunks:
        text = piece(chunk)
        if text is not None:
            joined[chunk[key]] = joined.get(chunk[key], "") + text
    return joined


def anthropic_inputs(body: bytes) -> dict[int, str]:
    """Concatenated input_json_delta pieces per content block index."""

    def piece(chunk: dict[str, Any]) -> str | None:
        return chunk.get("delta", {}).get("partial_json")

    return joined_by(chunks_of(body), "index", piece)


def responses_arguments(body: bytes, event_type: str, field: str) -> dict[str, str]:
    """`field` of every `event_type` chunk, concatenated per item_id."""

    def piece(chunk: dict[str, Any]) -> str | None:
        return chunk[field] if chunk["type"] == event_type else None

    return joined_by(chunks_of(body), "item_id", piece)


def read_raw_chunks(port: int, path: str) -> tuple[bytes, list[bytes]]:
    """GET `path` over a bare socket; returns the header block and each HTTP chunk's payload."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: stub\r\n\r\n".encode())
        received = bytearray()
        while data := connection.recv(65536):
            received += data
    head, _, rest = bytes(received).partition(b"\r\n\r\n")
    return head, decode_chunks(rest)


def decode_chunks(data: bytes) -> list[bytes]:
    chunks: list[bytes] = []
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert data == b"\r\n"
            return chunks
        chunks.append(data[:size])
        assert data[size : size + 2] == b"\r\n"
        data = data[size + 2 :]


# --- write splitting (pure) ---


def test_random_split_is_deterministic_per_seed() -> None:
    scenario = load_scenario("demo")
    assert scenario.writes("random", 3) == scenario.writes("random", 3)
    assert scenario.writes("random", 3) != scenario.writes("random", 4)
    unpaced = scenario.writes("random", 3, paced=False)
    assert unpaced == scenario.writes("random", 3, paced=False)


@pytest.mark.parametrize("paced", [True, False])
def test_random_split_cuts_inside_characters_and_lines(paced: bool) -> None:
    scenario = load_scenario("demo")
    pieces = flat(scenario.writes("random", 0, paced=paced))
    body = scenario.rendered
    assert b"".join(pieces) == body
    offsets = cut_offsets(pieces)
    assert any(body[offset] & 0xC0 == 0x80 for offset in offsets), "no cut inside a UTF-8 char"
    assert any(body[offset - 1 : offset] not in (b"\n", b"\r") for offset in offsets)


def test_paced_random_split_keeps_pieces_within_events() -> None:
    scenario = load_scenario("demo")
    groups = scenario.writes("random", 9)
    assert [b"".join(pieces) for pieces in groups] == list(scenario.events)
    for pieces, event in zip(groups, scenario.events, strict=True):
        assert all(1 <= len(piece) <= len(event) // 3 + 1 for piece in pieces)


def test_unpaced_random_split_spans_event_boundaries() -> None:
    scenario = load_scenario("demo")
    pieces = flat(scenario.writes("random", 2, paced=False))
    event_ends = set(cut_offsets(list(scenario.events)))
    assert b"".join(pieces) == scenario.rendered
    assert not event_ends <= set(cut_offsets(pieces))


def test_event_and_whole_splits() -> None:
    scenario = load_scenario("weather")
    assert scenario.writes("event") == [[event] for event in scenario.events]
    assert scenario.writes("whole") == [[scenario.rendered]]
    assert load_scenario("http-401").writes("random", 1) == [[load_scenario("http-401").rendered]]


# --- the server over real sockets ---


@pytest.mark.parametrize(("split", "options"), SPLIT_CASES, ids=SPLIT_IDS)
def test_chunked_body_equals_rendered_scenario(
    start_stub: StartStub, split: SplitMode, options: dict[str, Any]
) -> None:
    server = start_stub("demo", split=split, **options)
    payload = {"model": "m", "stream": True}
    with httpx.stream("POST", server.url, json=payload, timeout=TIMEOUT_S) as response:
        body = response.read()
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["transfer-encoding"] == "chunked"
    assert body == load_scenario("demo").rendered


@pytest.mark.parametrize(("split", "options"), SPLIT_CASES, ids=SPLIT_IDS)
def test_each_write_is_one_http_chunk(
    start_stub: StartStub, split: SplitMode, options: dict[str, Any]
) -> None:
    server = start_stub("emoji-split", split=split, **options)
    head, chunks = read_raw_chunks(server.port, "/v1/chat/completions")
    paced = server.delay_for(server.scenario) > 0
    expected = flat(server.scenario.writes(split, options.get("seed", 0), paced=paced))
    assert head.startswith(b"HTTP/1.1 200 ")
    assert chunks == expected


def test_huge_args_streams_completely(start_stub: StartStub) -> None:
    server = start_stub("huge-args", split="event")
    response = httpx.get(server.url, timeout=TIMEOUT_S)
    assert response.content == load_scenario("huge-args").rendered


def test_http_401_status_and_content_type(start_stub: StartStub) -> None:
    server = start_stub("http-401")
    response = httpx.post(server.url, json={}, timeout=TIMEOUT_S)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"] == "req_stub_401"
    assert response.json()["error"]["code"] == "invalid_api_key"


def test_scenario_by_path(start_stub: StartStub) -> None:
    server = start_stub("demo")
    response = httpx.post(server.scenario_url("weather"), timeout=TIMEOUT_S)
    assert response.content == load_scenario("weather").rendered


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_serves_default_and_named_scenarios(
    start_stub: StartStub, method: str, endpoint: str
) -> None:
    server = start_stub("weather")
    default = httpx.request(method, server.base_url + endpoint, timeout=TIMEOUT_S)
    named_path = f"/scenarios/anthropic-parallel{endpoint}"
    named = httpx.request(method, server.base_url + named_path, timeout=TIMEOUT_S)
    assert (default.status_code, named.status_code) == (200, 200)
    assert default.content == load_scenario("weather").rendered
    assert named.content == load_scenario("anthropic-parallel").rendered


def test_urls_use_the_scenario_endpoint(start_stub: StartStub) -> None:
    server = start_stub("anthropic-text-tools")
    base = server.base_url
    assert server.url == base + MESSAGES_ENDPOINT
    assert server.scenario_url("weather") == f"{base}/scenarios/weather{CHAT_ENDPOINT}"
    responses_url = server.scenario_url("responses-reasoning")
    assert responses_url == f"{base}/scenarios/responses-reasoning{RESPONSES_ENDPOINT}"
    explicit = server.scenario_url("weather", MESSAGES_ENDPOINT)
    assert explicit == f"{base}/scenarios/weather{MESSAGES_ENDPOINT}"
    assert server.scenario_url("no-such-scenario").endswith(CHAT_ENDPOINT)
    assert httpx.post(server.url, timeout=TIMEOUT_S).content == server.scenario.rendered
    assert httpx.post(explicit, timeout=TIMEOUT_S).content == load_scenario("weather").rendered


@pytest.mark.parametrize(
    ("headers", "expected_key"),
    [
        ({"Authorization": "Bearer sk-live-123"}, "sk-live-123"),
        ({"x-api-key": "sk-ant-456"}, "sk-ant-456"),
        ({"Authorization": "Bearer sk-bearer", "x-api-key": "sk-header"}, "sk-bearer"),
        ({"Authorization": "Basic dXNlcg==", "x-api-key": "sk-header"}, "sk-header"),
        ({"Authorization": 'Bearer sk-"quoted"\\'}, 'sk-"quoted"\\'),
        ({}, "none"),
    ],
    ids=["bearer", "x-api-key", "bearer-wins", "basic-ignored", "json-escaped", "none"],
)
def test_echo_api_key_puts_the_request_key_in_the_body(
    start_stub: StartStub, headers: dict[str, str], expected_key: str
) -> None:
    server = start_stub("http-401-echo")
    response = httpx.post(server.url, json={}, headers=headers, timeout=TIMEOUT_S)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    message = response.json()["error"]["message"]
    assert message.startswith(f"Incorrect API key provided: {expected_key}. You can")
    assert b"{api_key}" in load_scenario("http-401-echo").rendered, "cached scenario unchanged"


def test_api_key_is_not_echoed_without_the_flag(start_stub: StartStub) -> None:
    server = start_stub("http-401")
    headers = {"Authorization": "Bearer sk-secret"}
    response = httpx.post(server.url, headers=headers, timeout=TIMEOUT_S)
    assert response.content == load_scenario("http-401").rendered


@pytest.mark.parametrize(
    "path",
    [
        "/scenarios/no-such-scenario/v1/chat/completions",
        "/scenarios/no-such-scenario/v1/messages",
        "/scenarios/weather/v1/completions",
        "/scenarios/weather/v1/messages/extra",
        "/v1/messages/extra",
        "/v2/elsewhere",
        "/",
    ],
)
def test_unknown_paths_are_404_json_errors(start_stub: StartStub, path: str) -> None:
    server = start_stub()
    response = httpx.post(server.base_url + path, timeout=TIMEOUT_S)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_unknown_scenario_error_names_the_available_ones(start_stub: StartStub) -> None:
    server = start_stub()
    response = httpx.get(server.scenario_url("no-such-scenario"), timeout=TIMEOUT_S)
    message = response.json()["error"]["message"]
    assert "no-such-scenario" in message
    assert "weather" in message


def test_scenario_listing(start_stub: StartStub) -> None:
    server = start_stub()
    listing = httpx.get(server.base_url + "/scenarios", timeout=TIMEOUT_S).json()
    assert listing == [info._asdict() for info in list_scenarios()]
    assert {"demo", "huge-args", "emoji-split"} <= {entry["name"] for entry in listing}


def test_requests_are_recorded(start_stub: StartStub) -> None:
    server = start_stub("weather")
    payload = {"model": "gpt-stub", "stream": True}
    httpx.post(server.url + "?trace=1", json=payload, headers={"X-Test": "yes"}, timeout=TIMEOUT_S)
    httpx.get(server.base_url + "/scenarios", timeout=TIMEOUT_S)
    first, second = server.requests
    assert (first.method, first.path) == ("POST", "/v1/chat/completions?trace=1")
    assert json.loads(first.body) == payload
    assert first.headers["X-Test"] == "yes"
    assert (second.method, second.path, second.body) == ("GET", "/scenarios", b"")


def test_before_event_gate_blocks_until_released(start_stub: StartStub) -> None:
    gate, reached_gate = threading.Event(), threading.Event()
    started: list[int] = []

    def before_event(index: int) -> None:
        started.append(index)
        if index == 2:
            reached_gate.set()
            gate.wait(TIMEOUT_S)

    server = start_stub("weather", before_event=before_event)
    events = load_scenario("weather").events
    with httpx.stream("GET", server.url, timeout=TIMEOUT_S) as response:
        lines = response.iter_lines()
        first_two = [next(lines) for _ in range(4)]
        assert reached_gate.wait(TIMEOUT_S)
        assert started == [0, 1, 2]
        gate.set()
        rest = list(lines)
    assert "\n".join(first_two) + "\n" == (events[0] + events[1]).decode()
    assert started == list(range(len(events)))
    assert "\n".join(first_two + rest).strip() == b"".join(events).decode().strip()


def test_client_leaving_mid_stream_does_not_break_the_server(start_stub: StartStub) -> None:
    server = start_stub("huge-args")
    with httpx.stream("GET", server.url, timeout=TIMEOUT_S) as response:
        assert next(response.iter_raw())
    assert httpx.get(server.scenario_url("weather"), timeout=TIMEOUT_S).status_code == 200


def test_stop_is_idempotent_and_context_manager_works() -> None:
    with StubServer("weather", speed=0) as server:
        assert httpx.get(server.url, timeout=TIMEOUT_S).status_code == 200
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.url


def test_pacing_delay() -> None:
    demo = load_scenario("demo")
    scenario_delay = demo.delay_ms / 1000
    assert StubServer("demo").delay_for(demo) == pytest.approx(scenario_delay)
    assert StubServer("demo", speed=2).delay_for(demo) == pytest.approx(scenario_delay / 2)
    assert StubServer("demo", delay_ms=100, speed=4).delay_for(demo) == pytest.approx(0.025)
    assert StubServer("demo", speed=0).delay_for(demo) == 0


def test_unknown_scenario_raises() -> None:
    with pytest.raises(ScenarioNotFound, match="demo"):
        load_scenario("no-such-scenario")
    with pytest.raises(ScenarioNotFound):
        StubServer("no-such-scenario")


# --- scenario data ---


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_every_scenario_file_loads_and_renders(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.rendered
    assert scenario.endpoint == ENDPOINT_BY_PREFIX.get(name.split("-")[0], CHAT_ENDPOINT)
    if scenario.is_sse:
        assert b"".join(scenario.events) == scenario.rendered
        assert chunks_of(scenario.rendered)


def test_event_field_renders_before_data() -> None:
    item = {"event": "message_start", "chunk": {"type": "message_start", "message": {}}}
    rendered = render_item(item, "\n")
    assert rendered == 'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'


@pytest.mark.parametrize(
    "name", [name for name in ANTHROPIC_SCENARIOS if name != "anthropic-no-event-lines"]
)
def test_anthropic_events_are_named_by_their_type(name: str) -> None:
    events = sse_events(load_scenario(name).rendered)
    assert events
    for event, data in events:
        assert event == json.loads(data)["type"], data


def test_anthropic_no_event_lines_is_text_tools_without_event_lines() -> None:
    body = load_scenario("anthropic-no-event-lines").rendered
    assert b"event:" not in body
    assert all(event is None for event, _ in sse_events(body))
    assert chunks_of(body) == chunks_of(load_scenario("anthropic-text-tools").rendered)


@pytest.mark.parametrize("name", RESPONSES_SCENARIOS)
def test_responses_events_carry_consecutive_sequence_numbers(name: str) -> None:
    events = sse_events(load_scenario(name).rendered)
    chunks = [json.loads(data) for _, data in events]
    assert [chunk["sequence_number"] for chunk in chunks] == list(range(len(chunks)))
    assert all(list(chunk)[:2] == ["type", "sequence_number"] for chunk in chunks)
    assert all(event == chunk["type"] for (event, _), chunk in zip(events, chunks, strict=True))


def test_sequence_numbers_skip_other_items_and_keep_existing_ones() -> None:
    items = [
        {"chunk": {"type": "response.created"}},
        {"comment": " keep-alive"},
        {"chunk": {"type": "message_start"}},
        {"chunk": {"type": "response.in_progress", "sequence_number": 41}},
        {"chunk": {"type": "error", "code": "x"}},
    ]
    numbers = [
        item.get("chunk", {}).get("sequence_number") for item in with_sequence_numbers(items)
    ]
    assert numbers == [0, None, None, 41, 2]
    assert items[0] == {"chunk": {"type": "response.created"}}, "input items are not mutated"


ANTHROPIC_INPUTS: dict[str, dict[int, str]] = {
    "anthropic-parallel": {
        0: '{"city":"Paris","unit":"celsius"}',
        1: '{"timezone":"Europe/Paris"}',
    },
    "anthropic-text-tools": {1: '{"query":"streaming tool calls","limit":5}'},
    "anthropic-no-event-lines": {1: '{"query":"streaming tool calls","limit":5}'},
    "anthropic-thinking": {2: '{"city":"Oslo"}'},
    "anthropic-max-tokens": {1: '{"city":"San Fra'},
    "anthropic-error": {},
    "anthropic-full-input": {},
    "anthropic-truncated": {0: '{"city":"Ber'},
    # index 0 holds two blocks and a stray " " delta after the first block's stop
    "anthropic-quirks": {3: '{"x":1}', 0: '{"city":"Nice"} {"tz":"UTC"}'},
}


@pytest.mark.parametrize("name", ANTHROPIC_SCENARIOS)
def test_anthropic_input_fragments_join_as_scripted(name: str) -> None:
    assert anthropic_inputs(load_scenario(name).rendered) == ANTHROPIC_INPUTS[name]


RESPONSES_ARGUMENTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "responses-interleaved": (
        {"fc_r1": '{"city":"Tokyo"}', "fc_r2": '{"timezone":"Asia/Tokyo"}'},
        {"fc_r1": '{"city":"Tokyo"}', "fc_r2": '{"timezone":"Asia/Tokyo"}'},
    ),
    "responses-done-only": ({}, {"fc_do1": '{"city":"Lima"}'}),
    "responses-done-mismatch": ({"fc_dm1": '{"city":"Kyoto"}'}, {"fc_dm1": '{"city":"Osaka"}'}),
    "responses-incomplete": ({"fc_in1": '{"query":"long qu'}, {}),
    "responses-failed": ({}, {}),
    "responses-error": ({"fc_er1": '{"city":"Ca'}, {}),
    "responses-truncated": ({"fc_tr1": '{"city":"Nairob'}, {}),
    "responses-reasoning": ({"fc_rz1": '{"city":"Seoul"}'}, {"fc_rz1": '{"city":"Seoul"}'}),
}


@pytest.mark.parametrize("name", RESPONSES_SCENARIOS)
def test_responses_argument_deltas_and_done_as_scripted(name: str) -> None:
    body = load_scenario(name).rendered
    deltas = responses_arguments(body, "response.function_call_arguments.delta", "delta")
    done = responses_arguments(body, "response.function_call_arguments.done", "arguments")
    assert (deltas, done) == RESPONSES_ARGUMENTS[name]


def test_truncated_new_dialects_end_as_scripted() -> None:
    anthropic = load_scenario("anthropic-truncated").rendered
    assert anthropic.endswith(
        b'event: content_block_delta\ndata: {"type":"content_block_delta","ind'
    )
    assert b"message_stop" not in anthropic
    for name, last_type in [
        ("anthropic-error", "error"),
        ("responses-error", "error"),
        ("responses-truncated", "response.function_call_arguments.delta"),
        ("responses-incomplete", "response.incomplete"),
        ("responses-failed", "response.failed"),
    ]:
        assert chunks_of(load_scenario(name).rendered)[-1]["type"] == last_type, name


def test_weather_arguments_arrive_in_five_fragments() -> None:
    body = load_scenario("weather").rendered
    fragments = [
        call["function"]["arguments"]
        for chunk in chunks_of(body)
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert fragments == ["", '{"loc', "ation", '":"Be', "ijing", '"}']


def test_demo_and_parallel_arguments_reassemble() -> None:
    demo = tool_arguments(load_scenario("demo").rendered)
    assert {index: json.loads(text)["city"] for index, text in demo.items()} == {
        0: "北京",
        1: "上海",
    }
    parallel = tool_arguments(load_scenario("parallel").rendered)
    assert sorted(parallel) == [0, 1, 2]
    assert all(json.loads(text) for text in parallel.values())


def test_huge_args_is_a_megabyte_of_varied_json() -> None:
    scenario = load_scenario("huge-args")
    arguments = tool_arguments(scenario.rendered)[0]
    assert len(arguments.encode()) >= 1_000_000
    assert json.loads(arguments)["sections"]
    for needle in ("\\u00e9", "\\n", '\\"', "\\\\", "北京", "😀", "true", "null"):
        assert needle in arguments, needle


def test_many_parallel_has_sixteen_interleaved_calls() -> None:
    body = load_scenario("many-parallel").rendered
    ids = [
        call["id"]
        for chunk in chunks_of(body)
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
        if "id" in call
    ]
    assert ids == [f"call_p{index:02d}" for index in range(16)]
    arguments = tool_arguments(body)
    assert all(json.loads(text) for text in arguments.values())


def test_truncated_ends_inside_an_event() -> None:
    body = load_scenario("truncated").rendered
    assert body.endswith(b'data: {"id":"chatcmpl-stub","choi')
    assert b"[DONE]" not in body


def test_crlf_scenario_uses_crlf_everywhere() -> None:
    body = load_scenario("crlf-comments").rendered
    assert b"\n" not in body.replace(b"\r\n", b"")
    assert body.startswith(b": keep-alive\r\n")
    assert b"data:{" in body
    assert b"event: message\r\nid: 1\r\nretry: 3000\r\ndata: " in body


# --- CLI ---


def test_cli_list_prints_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ALL_SCENARIOS
    assert len(listed) == 44


def test_cli_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--scenario", "no-such-scenario", "--port", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert "no-such-scenario" in captured.err
    assert "demo" in captured.err


@pytest.mark.parametrize(
    ("stop_signal", "scenario"),
    [(signal.SIGTERM, "weather"), (signal.SIGINT, "anthropic-thinking")],
)
def test_cli_serves_until_signalled(stop_signal: signal.Signals, scenario: str) -> None:
    command = [sys.executable, "-m", "toolstream_stubs", "--scenario", scenario, "--port", "0"]
    process = subprocess.Popen(
        [*command, "--speed", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        match = LISTENING_LINE.match(process.stdout.readline().decode())
        assert match, process.stderr.read() if process.stderr else ""
        assert match[1].endswith(load_scenario(scenario).endpoint)
        response = httpx.post(match[1], json={}, timeout=TIMEOUT_S)
        assert response.content == load_scenario(scenario).rendered
    finally:
        process.send_signal(stop_signal)
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0
    assert (stdout, stderr) == (b"", b"")
