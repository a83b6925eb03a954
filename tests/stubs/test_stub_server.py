"""Tests of the stub SSE server, its scenario data and its CLI, against real sockets."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.helpers.paths import PROJECT
from toolstream_stubs import StubServer, list_scenarios, load_scenario
from toolstream_stubs.cli import build_parser, start_server
from toolstream_stubs.cli import main as cli_main
from toolstream_stubs.faults import (
    FAULT_PARAMS,
    FAULTS,
    Fault,
    FaultError,
    cut_offset,
    parse_fault,
    redirect_query,
    split_last_piece,
    truncated,
)
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
# The API path each family of scenarios imitates (chat completions when no prefix says).
ENDPOINT_BY_PREFIX = {
    "anthropic": re.escape(MESSAGES_ENDPOINT),
    "responses": re.escape(RESPONSES_ENDPOINT),
    "gemini": r"/v1beta/models/[^/]+:streamGenerateContent",
    "vertex": r"/v1(beta1)?/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/]+"
    r":streamGenerateContent",
    "bedrock": r"/model/[^/]+/(converse-stream|invoke-with-response-stream)",
    "cohere": r"/v2/chat",
    "ollama": r"/api/chat",
    "aisdk": r"/api/chat",
}
SCENARIO_FILES = sorted(
    path.stem for path in (PROJECT / "stubs/toolstream_stubs/scenarios").glob("*.json")
)
SPLIT_CASES: list[tuple[SplitMode, dict[str, Any]]] = [
    ("event", {"speed": 0}),
    ("whole", {"speed": 0}),
    ("random", {"speed": 0, "seed": 5}),
    ("random", {"delay_ms": 0.01, "speed": 1, "seed": 5}),
]
SPLIT_IDS = ["event", "whole", "random-unpaced", "random-paced"]
FAULT_TIMEOUT_S = 2.0
SHORT_READ = httpx.Timeout(FAULT_TIMEOUT_S, read=0.5)
QUIET_S = 0.2  # how long a raw socket waits to show that nothing more arrives
STOP_DEADLINE_S = 30.0  # only a stop() that waits for a stall reaches it
WEATHER = load_scenario("weather")


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


def read_raw_chunks(port: int, path: str, timeout: float = TIMEOUT_S) -> tuple[bytes, list[bytes]]:
    """GET `path` over a bare socket; returns the header block and each HTTP chunk's payload."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
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


def split_chunks(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete chunks' payloads of a chunked body, and whatever follows them.

    The rest is `0\r\n\r\n` for a finished body, b"" for one cut between chunks.
    """
    chunks: list[bytes] = []
    while True:
        size_line, separator, rest = data.partition(b"\r\n")
        size = int(size_line, 16) if separator else 0
        if size == 0 or len(rest) < size + 2:
            return chunks, data
        chunks.append(rest[:size])
        data = rest[size + 2 :]


def fault_path(scenario: str = "weather", **params: object) -> str:
    """The path of `scenario` at its endpoint with `params` as the query."""
    return f"/scenarios/{scenario}{load_scenario(scenario).endpoint}?{urlencode(params)}"


def up_to_middle(events: tuple[bytes, ...], at: int) -> bytes:
    return b"".join(events[:at]) + events[at][: len(events[at]) // 2]


def without_last_half(body: bytes, last: bytes) -> bytes:
    return body[: len(body) - len(last) + len(last) // 2]


def open_request(port: int, path: str) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=FAULT_TIMEOUT_S)
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: stub\r\n\r\n".encode())
    return connection


def recv_until(connection: socket.socket, done: Callable[[bytes], bool]) -> tuple[bytes, int]:
    """Receive until `done(received)`; returns the bytes and the number of recv calls."""
    received, calls = bytearray(), 0
    while not done(bytes(received)):
        data = connection.recv(65536)
        assert data, f"connection closed early after {bytes(received)!r}"
        received += data
        calls += 1
    return bytes(received), calls


def recv_to_end(connection: socket.socket) -> bytes:
    received = bytearray()
    while data := connection.recv(65536):
        received += data
    return bytes(received)


def body_of(response: bytes) -> bytes:
    return response.partition(b"\r\n\r\n")[2]


def causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and the chain of exceptions that caused it."""
    cause: BaseException | None = error
    while cause is not None:
        yield cause
        cause = cause.__cause__ or cause.__context__


def stream_until_error(
    url: str, timeout: httpx.Timeout | float = SHORT_READ
) -> tuple[bytes, httpx.TransportError]:
    """Stream `url` raw until the transport fails; returns the bytes received and the error."""
    received = bytearray()
    with (
        pytest.raises(httpx.TransportError) as caught,
        httpx.stream("GET", url, timeout=timeout) as response,
    ):
        for piece in response.iter_raw():
            received += piece
    return bytes(received), caught.value


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


# --- network faults ---


def test_fault_names_and_their_parameters() -> None:
    assert FAULTS == (
        "drip",
        "stall",
        "no-answer",
        "reset",
        "cut-chunk",
        "gzip",
        "gzip-bomb",
        "redirect",
        "status",
    )
    assert set(FAULT_PARAMS) == set(FAULTS)
    assert parse_fault("") is None
    assert parse_fault("fault=none", "stall") is None
    assert parse_fault("x=1", "stall") == Fault("stall", from_default=True)
    assert parse_fault("fault=stall&at=1&seconds=0.5", "drip", {"at": 2, "seconds": 9}) == Fault(
        "stall", at=1, seconds=0.5
    )


def test_cut_offset_is_mid_event_and_clamped() -> None:
    events = WEATHER.events
    assert cut_offset(WEATHER, 0) == len(events[0]) // 2
    assert cut_offset(WEATHER, 3) == len(up_to_middle(events, 3))
    assert cut_offset(WEATHER, 99) == len(up_to_middle(events, len(events) - 1))
    body = load_scenario("http-401").rendered
    assert cut_offset(load_scenario("http-401"), 3) == len(body) // 2


def test_truncated_and_split_last_piece_keep_the_grouping() -> None:
    groups = [[b"abc", b"de"], [b"fgh"], [b"ij"]]
    assert truncated(groups, 4) == [[b"abc", b"d"]]
    assert truncated(groups, 5) == [[b"abc", b"de"]]
    assert truncated(groups, 7) == [[b"abc", b"de"], [b"fg"]]
    assert split_last_piece(groups) == ([[b"abc", b"de"], [b"fgh"], []], b"ij")
    assert groups[-1] == [b"ij"], "input groups are not mutated"


def test_redirect_query_counts_hops_down_and_keeps_other_parameters() -> None:
    assert redirect_query("a=1&fault=redirect&hops=3", Fault("redirect", hops=3)) == (
        "a=1&fault=redirect&hops=2"
    )
    assert redirect_query("fault=redirect&a=1", Fault("redirect")) == "a=1"
    assert redirect_query("", Fault("redirect", from_default=True)) == "fault=none"


def test_drip_client_reads_one_byte_pieces(start_stub: StartStub) -> None:
    server = start_stub("weather")
    url = server.base_url + fault_path(fault="drip", interval_ms=0)
    with httpx.stream("GET", url, timeout=FAULT_TIMEOUT_S) as response:
        pieces = list(response.iter_raw())
    assert response.status_code == 200
    assert {len(piece) for piece in pieces} == {1}
    assert b"".join(pieces) == WEATHER.rendered


def test_drip_writes_one_byte_at_a_time_on_the_wire(start_stub: StartStub) -> None:
    server = start_stub("weather")
    wanted = 100

    def enough(received: bytes) -> bool:
        return len(split_chunks(body_of(received))[0]) >= wanted

    with open_request(server.port, fault_path(fault="drip")) as connection:
        received, recv_calls = recv_until(connection, enough)
    chunks, _ = split_chunks(body_of(received))
    assert {len(chunk) for chunk in chunks} == {1}
    assert b"".join(chunks) == WEATHER.rendered[: len(chunks)]
    assert recv_calls >= wanted // 10, "2 ms apart, the bytes arrive in many separate reads"


TRUNCATIONS = [
    pytest.param(
        {"fault": "stall"}, {}, httpx.ReadTimeout, up_to_middle(WEATHER.events, 3), id="stall"
    ),
    pytest.param(
        {"fault": "stall", "at": 1, "seconds": 0.1},
        {},
        httpx.RemoteProtocolError,
        up_to_middle(WEATHER.events, 1),
        id="stall-then-close",
    ),
    pytest.param(
        {"fault": "reset", "at": 2},
        {},
        httpx.ReadError,
        up_to_middle(WEATHER.events, 2),
        id="reset",
    ),
    pytest.param(
        {"fault": "reset"},
        {"split": "random", "seed": 3},
        httpx.ReadError,
        up_to_middle(WEATHER.events, 3),
        id="reset-random-split",
    ),
    pytest.param(
        {"fault": "cut-chunk"},
        {},
        httpx.RemoteProtocolError,
        without_last_half(WEATHER.rendered, WEATHER.events[-1]),
        id="cut-chunk",
    ),
    pytest.param({"fault": "no-answer"}, {}, httpx.ReadTimeout, b"", id="no-answer"),
    pytest.param(
        {"fault": "no-answer", "seconds": 0.1},
        {},
        httpx.RemoteProtocolError,
        b"",
        id="no-answer-then-close",
    ),
]


@pytest.mark.parametrize(("params", "options", "error", "expected"), TRUNCATIONS)
def test_faults_that_cut_the_body_short(
    start_stub: StartStub,
    params: dict[str, Any],
    options: dict[str, Any],
    error: type[httpx.TransportError],
    expected: bytes,
) -> None:
    server = start_stub("weather", **options)
    received, caught = stream_until_error(server.base_url + fault_path(**params))
    assert type(caught) is error, repr(caught)
    assert received == expected


def test_incomplete_reads_name_their_cause(start_stub: StartStub) -> None:
    server = start_stub("weather")
    _, cut = stream_until_error(server.base_url + fault_path(fault="cut-chunk"))
    assert "incomplete chunked read" in str(cut)
    _, reset = stream_until_error(server.base_url + fault_path(fault="reset"))
    assert any(isinstance(cause, ConnectionResetError) for cause in causes(reset))


def test_stall_holds_the_partial_body_until_stop(start_stub: StartStub) -> None:
    server = start_stub("weather")
    last_piece = WEATHER.events[3][: len(WEATHER.events[3]) // 2]
    # A day's stall: a stop() that waited for it would miss any deadline, however
    # loaded the machine; one that releases the handler ends well within it.
    with open_request(server.port, fault_path(fault="stall", seconds=86_400)) as connection:
        received, _ = recv_until(connection, lambda data: data.endswith(last_piece + b"\r\n"))
        connection.settimeout(QUIET_S)
        with pytest.raises(TimeoutError):
            connection.recv(1)
        connection.settimeout(STOP_DEADLINE_S)
        stopping = threading.Thread(target=server.stop, daemon=True)
        stopping.start()
        stopping.join(STOP_DEADLINE_S)
        assert not stopping.is_alive(), "stop() waited for the stalled handler"
        received += recv_to_end(connection)
    chunks, rest = split_chunks(body_of(received))
    assert received.startswith(b"HTTP/1.1 200 ")
    assert (b"".join(chunks), rest) == (up_to_middle(WEATHER.events, 3), b"")


def test_no_answer_reads_the_request_and_never_answers(start_stub: StartStub) -> None:
    server = start_stub("weather")
    path = fault_path(fault="no-answer")
    with open_request(server.port, path) as connection:
        connection.settimeout(QUIET_S)
        with pytest.raises(TimeoutError):
            connection.recv(1)
        connection.settimeout(FAULT_TIMEOUT_S)
        server.stop()
        assert connection.recv(1) == b"", "closed without a status line"
    assert [request.path for request in server.requests] == [path]


def test_reset_is_a_tcp_reset_after_partial_data(start_stub: StartStub) -> None:
    server = start_stub("weather")
    received = bytearray()
    path = fault_path(fault="reset", at=2)
    with open_request(server.port, path) as connection, pytest.raises(ConnectionResetError):
        while data := connection.recv(65536):
            received += data
    chunks, rest = split_chunks(body_of(bytes(received)))
    assert received.startswith(b"HTTP/1.1 200 ")
    assert (b"".join(chunks), rest) == (up_to_middle(WEATHER.events, 2), b"")


def test_cut_chunk_announces_more_than_it_sends(start_stub: StartStub) -> None:
    server = start_stub("weather")
    with open_request(server.port, fault_path(fault="cut-chunk")) as connection:
        received = recv_to_end(connection)
    chunks, rest = split_chunks(body_of(received))
    size_line, _, partial = rest.partition(b"\r\n")
    last = WEATHER.events[-1]
    assert chunks == list(WEATHER.events[:-1])
    assert (int(size_line, 16), partial) == (len(last), last[: len(last) // 2])


def test_gzip_decodes_to_exactly_the_scenario_body(start_stub: StartStub) -> None:
    server = start_stub("weather")
    response = httpx.get(server.base_url + fault_path(fault="gzip"), timeout=FAULT_TIMEOUT_S)
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.content == WEATHER.rendered


def test_gzip_flushes_every_event_as_it_goes(start_stub: StartStub) -> None:
    server = start_stub("weather")
    head, chunks = read_raw_chunks(server.port, fault_path(fault="gzip"), FAULT_TIMEOUT_S)
    assert b"\r\nContent-Encoding: gzip\r\n" in head
    assert chunks[0].startswith(b"\x1f\x8b")
    decompressor = zlib.decompressobj(wbits=31)
    assert [decompressor.decompress(chunk) for chunk in chunks] == [*WEATHER.events, b""]
    assert decompressor.eof


@pytest.mark.parametrize("hops", [1, 3])
def test_redirect_chain_ends_at_the_scenario(start_stub: StartStub, hops: int) -> None:
    server = start_stub("demo")
    path = fault_path("weather", trace=1, fault="redirect", hops=hops)
    response = httpx.post(
        server.base_url + path, json={"m": 1}, follow_redirects=True, timeout=FAULT_TIMEOUT_S
    )
    assert response.status_code == 200
    assert [redirect.status_code for redirect in response.history] == [307] * hops
    assert response.content == WEATHER.rendered
    assert server.requests[-1].path == "/scenarios/weather/v1/chat/completions?trace=1"
    assert [(request.method, request.body) for request in server.requests] == [
        ("POST", b'{"m":1}')
    ] * (hops + 1)


def test_default_redirect_ends_with_fault_none(start_stub: StartStub) -> None:
    server = start_stub("weather", fault="redirect")
    response = httpx.get(server.url, follow_redirects=True, timeout=FAULT_TIMEOUT_S)
    assert (response.status_code, len(response.history)) == (200, 1)
    assert response.history[0].headers["location"] == server.url + "?fault=none"
    assert response.content == WEATHER.rendered


@pytest.mark.parametrize(
    ("params", "status", "retry_after", "code"),
    [
        ({}, 429, "7", "rate_limit_exceeded"),
        ({"code": 500, "retry_after": 1}, 500, "1", None),
        ({"code": 503, "retry_after": 30}, 503, "30", None),
    ],
)
def test_status_fault(
    start_stub: StartStub,
    params: dict[str, int],
    status: int,
    retry_after: str,
    code: str | None,
) -> None:
    server = start_stub("weather")
    url = server.base_url + fault_path(fault="status", **params)
    response = httpx.post(url, json={}, timeout=FAULT_TIMEOUT_S)
    assert (response.status_code, response.headers["retry-after"]) == (status, retry_after)
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert (sorted(error), error["code"]) == (["code", "message", "param", "type"], code)
    assert error["message"]


@pytest.mark.parametrize(
    "query",
    [
        "fault=bogus",
        "fault=",
        "fault=status&code=200",
        "fault=drip&interval_ms=fast",
        "fault=redirect&hops=0",
        "fault=stall&seconds=nan",
        "fault=reset&at=1.5",
    ],
)
def test_bad_faults_are_400_json_errors(start_stub: StartStub, query: str) -> None:
    server = start_stub("weather")
    response = httpx.get(f"{server.url}?{query}", timeout=FAULT_TIMEOUT_S)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_fault"
    if query.startswith("fault=bogus"):
        assert all(name in response.json()["error"]["message"] for name in FAULTS)


def test_server_default_fault_and_per_request_override(start_stub: StartStub) -> None:
    server = start_stub("weather", fault="status", fault_params={"code": 503})
    assert httpx.get(server.url, timeout=FAULT_TIMEOUT_S).status_code == 503
    named = httpx.get(server.scenario_url("demo"), timeout=FAULT_TIMEOUT_S)
    assert named.status_code == 503
    plain = httpx.get(server.url + "?fault=none", timeout=FAULT_TIMEOUT_S)
    assert plain.content == WEATHER.rendered
    other = httpx.get(server.url + "?fault=status&code=500", timeout=FAULT_TIMEOUT_S)
    assert other.status_code == 500
    assert httpx.get(server.base_url + "/scenarios", timeout=FAULT_TIMEOUT_S).status_code == 200


@pytest.mark.parametrize(
    "options",
    [
        {"fault": "bogus"},
        {"fault": "stall", "fault_params": {"hop": 2}},
        {"fault_params": {"hop": 2}},
        {"fault_params": {"seconds": "soon"}},
    ],
)
def test_invalid_default_fault_raises(options: dict[str, Any]) -> None:
    with pytest.raises(FaultError):
        StubServer("weather", **options)


# --- scenario data ---


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_every_scenario_file_loads_and_renders(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.rendered
    endpoint = ENDPOINT_BY_PREFIX.get(name.split("-")[0], re.escape(CHAT_ENDPOINT))
    assert re.fullmatch(endpoint, scenario.endpoint)
    if scenario.is_sse:
        assert b"".join(scenario.events) == scenario.rendered
    if scenario.is_sse and scenario.content_type.startswith("text/event-stream"):
        assert chunks_of(scenario.rendered)


def test_event_field_renders_before_data() -> None:
    item = {"event": "message_start", "chunk": {"type": "message_start", "message": {}}}
    rendered = render_item(item, "\n")
    assert rendered == 'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in ANTHROPIC_SCENARIOS
        if name != "anthropic-no-event-lines" and load_scenario(name).is_sse
    ],
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


SEQUENCE_NUMBERS_LOST = {"responses-lost-delta": {4}}  # the event lost on the way


@pytest.mark.parametrize("name", RESPONSES_SCENARIOS)
def test_responses_events_carry_consecutive_sequence_numbers(name: str) -> None:
    events = [event for event in sse_events(load_scenario(name).rendered) if event[1] != "[DONE]"]
    chunks = [json.loads(data) for _, data in events]
    lost = SEQUENCE_NUMBERS_LOST.get(name, set())
    expected = [n for n in range(len(chunks) + len(lost)) if n not in lost]
    assert [chunk["sequence_number"] for chunk in chunks] == expected
    assert all(list(chunk)[:2] == ["type", "sequence_number"] for chunk in chunks)
    assert all(event == chunk["type"] for (event, _), chunk in zip(events, chunks, strict=True))


# What the openai SDK's `Response` type requires of every `response` object.
RESPONSE_REQUIRED = {
    "id", "created_at", "model", "object", "output", "parallel_tool_calls", "tool_choice", "tools"
}  # fmt: skip
FINAL_TYPES = ("response.completed", "response.incomplete", "response.failed")
STATUS_OF = {
    "response.created": "in_progress",
    "response.in_progress": "in_progress",
    **{kind: kind.removeprefix("response.") for kind in FINAL_TYPES},
}


@pytest.mark.parametrize("name", RESPONSES_SCENARIOS)
def test_responses_objects_are_whole_and_the_final_one_restates_every_item(name: str) -> None:
    """As the API sends them: every `response` has the fields the SDK's type requires, and
    the final one's `output` is every item done so far, in output_index order (the openai
    SDK's final response is that `output`)."""
    done: dict[int, Any] = {}
    for chunk in chunks_of(load_scenario(name).rendered):
        if chunk["type"] == "response.output_item.done":
            done[chunk["output_index"]] = chunk["item"]
        if "response" in chunk:
            response = chunk["response"]
            assert response.keys() >= RESPONSE_REQUIRED, chunk["type"]
            final = chunk["type"] in FINAL_TYPES
            assert response["output"] == ([done[i] for i in sorted(done)] if final else [])
            assert response["status"] == STATUS_OF[chunk["type"]]


def test_responses_text_events_carry_logprobs() -> None:
    """`logprobs` is required on output_text.delta and .done in the SDK's types."""
    texts = [
        chunk
        for name in RESPONSES_SCENARIOS
        for chunk in chunks_of(load_scenario(name).rendered)
        if chunk["type"] in ("response.output_text.delta", "response.output_text.done")
    ]
    assert texts
    assert all(chunk["logprobs"] == [] for chunk in texts)


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
    "anthropic-json": {},  # not a stream: its inputs arrive whole
    "anthropic-full-input": {},
    "anthropic-truncated": {0: '{"city":"Ber'},
    # index 0 holds two blocks and a stray " " delta after the first block's stop
    "anthropic-quirks": {3: '{"x":1}', 0: '{"city":"Nice"} {"tz":"UTC"}'},
    "anthropic-message-start-call": {},  # the call is whole in message_start
    "anthropic-message-start-deltas": {1: '{"player":"player1"}', 2: '{"player":"player2"}'},
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
    "responses-lost-delta": ({"fc_ld1": '{"ciirobi"}'}, {"fc_ld1": '{"city":"Nairobi"}'}),
    "responses-litellm": ({"fc_ll1": '{"city":"Quito"}'}, {"fc_ll1": '{"city":"Quito"}'}),
    # every event of the one call names another item id
    "responses-rotating-ids": (
        {"fc_rot_b": '{"player":', "fc_rot_c": '"player2"}'},
        {"fc_rot_d": '{"player":"player2"}'},
    ),
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


@pytest.mark.slow
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
    assert listed == ALL_SCENARIOS == SCENARIO_FILES


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
        stdout, stderr = signalled(process, stop_signal)
    assert process.returncode == 0
    assert (stdout, stderr) == (b"", b"")


def signalled(process: subprocess.Popen[bytes], stop_signal: signal.Signals) -> tuple[bytes, bytes]:
    """What the process wrote once `stop_signal` stopped it; one that does not stop
    is killed (a failed test leaves no server behind) and the test fails."""
    process.send_signal(stop_signal)
    try:
        return process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise


def test_cli_fault_options_reach_the_server() -> None:
    argv = ["--scenario", "weather", "--port", "0", "--speed", "0", "--fault", "status"]
    args = build_parser().parse_args(
        [*argv, "--fault-param", "code=500", "--fault-param", "retry_after=3"]
    )
    server = start_server(args)
    try:
        response = httpx.get(server.url, timeout=FAULT_TIMEOUT_S)
    finally:
        server.stop()
    assert (response.status_code, response.headers["retry-after"]) == (500, "3")


@pytest.mark.parametrize(
    "argv",
    [["--fault", "bogus"], ["--fault-param", "novalue"], ["--fault-param", "=1"]],
)
def test_cli_rejects_malformed_fault_options(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2


@pytest.mark.parametrize("param", ["code=200", "hop=2"])
def test_cli_rejects_invalid_fault_parameters(
    capsys: pytest.CaptureFixture[str], param: str
) -> None:
    assert cli_main(["--port", "0", "--fault", "status", "--fault-param", param]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "fault parameter" in captured.err


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_cli_refuses_a_port_out_of_range(capsys: pytest.CaptureFixture[str], port: str) -> None:
    with pytest.raises(SystemExit) as caught:
        cli_main(["--port", port])
    assert caught.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert (
        error
        == f"toolstream-stub: error: argument --port: expected an integer 0..65535, got {port!r}"
    )


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [
        ("--delay-ms", "1e400", "a number 0..60000"),
        ("--delay-ms", "60001", "a number 0..60000"),
        ("--speed", "1e-320", "0 (no delay) or a number >= 0.001"),
        ("--speed", "inf", "0 (no delay) or a number >= 0.001"),
    ],
)
def test_cli_refuses_a_pace_that_would_overflow_a_wait(
    capsys: pytest.CaptureFixture[str], option: str, value: str, rule: str
) -> None:
    """Such a pace once started the server and broke every paced response."""
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["--port", "0", option, value])
    assert caught.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == f"toolstream-stub: error: argument {option}: expected {rule}, got {value!r}"


@pytest.mark.parametrize(
    ("option", "value"),
    [("--speed", "-1"), ("--speed", "nan"), ("--delay-ms", "-5"), ("--delay-ms", "nan")],
)
def test_cli_refuses_a_negative_or_nan_pace(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args([option, value])
    assert caught.value.code == 2
    assert f"argument {option}: expected " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "pace"),
    [
        (["--speed", "0", "--delay-ms", "0"], (0, 0)),
        (["--speed", "0.001", "--delay-ms", "60000"], (0.001, 60000)),
    ],
)
def test_cli_takes_the_ends_of_the_pace_ranges(argv: list[str], pace: tuple[float, float]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.speed, args.delay_ms) == pace


@pytest.mark.parametrize("param", ["bogus=1", "seconds=abc", "seconds=1e9"])
def test_cli_refuses_a_bad_fault_parameter_without_a_fault(param: str) -> None:
    """It once started and then failed every request's ?fault= with a 400."""
    args = build_parser().parse_args(["--port", "0", "--fault-param", param])
    with pytest.raises(FaultError, match="fault parameter"):
        start_server(args).stop()


def test_cli_fault_parameter_without_a_fault_is_each_request_fault_default() -> None:
    args = build_parser().parse_args(["--port", "0", "--speed", "0", "--fault-param", "code=500"])
    server = start_server(args)
    try:
        plain = httpx.get(server.url, timeout=FAULT_TIMEOUT_S)
        faulty = httpx.get(server.url + "?fault=status", timeout=FAULT_TIMEOUT_S)
    finally:
        server.stop()
    assert (plain.status_code, faulty.status_code) == (200, 500)


def test_cli_stops_on_sigint_even_when_started_with_it_ignored() -> None:
    """A script's background job inherits SIGINT ignored; the stub stops on it anyway."""
    command = [sys.executable, "-m", "toolstream_stubs", "--scenario", "weather", "--port", "0"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert process.stdout is not None
        assert LISTENING_LINE.match(process.stdout.readline().decode())
    finally:
        stdout, stderr = signalled(process, signal.SIGINT)
    assert (process.returncode, stdout, stderr) == (0, b"", b"")
