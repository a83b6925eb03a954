"""A stdlib HTTP server that replays scenarios as chunked streaming responses on 127.0.0.1.

Routes (GET or POST): each API path of `ENDPOINT_PATTERNS` serves the server's scenario,
the same path after `/scenarios/<name>` serves the named one, and `GET /scenarios` lists
them all.
A scenario response can carry a network fault (see `toolstream_stubs.faults`): the
server's default, or the one a request names with `?fault=NAME`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import struct
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from toolstream_stubs.faults import (
    Fault,
    FaultError,
    GzipStream,
    check_default_fault,
    cut_offset,
    gzip_bomb,
    parse_fault,
    redirect_query,
    split_last_piece,
    status_error,
    truncated,
)
from toolstream_stubs.scenarios import (
    CHAT_ENDPOINT,
    ENDPOINT,
    SPLIT_MODES,
    Scenario,
    ScenarioNotFound,
    SplitMode,
    Writes,
    list_scenarios,
    load_scenario,
)

HOST = "127.0.0.1"
SHUTDOWN_POLL_S = 0.02
LISTEN_BACKLOG = 1024  # connections the kernel queues before the stub accepts them
SCENARIO_PATH = re.compile(rf"^/scenarios/(?P<name>[^/]+)(?:{ENDPOINT.pattern})$")
LIST_PATH = "/scenarios"
NO_API_KEY = "none"
LINGER_RESET = struct.pack("ii", 1, 0)  # l_onoff=1, l_linger=0: close() sends a TCP RST
LAST_CHUNK = b"0\r\n\r\n"

BeforeEvent = Callable[[int], None]
Encode = Callable[[bytes], bytes]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class StubServer:
    """Serves scenarios over HTTP/1.1 from a background daemon thread.

    `before_event(k)` runs in the handler thread before event k is written (after the
    pacing delay), so a test can use it as a gate. `fault` (one of `FAULTS`) is injected
    into every scenario response whose request names no other; `fault_params` are its
    default parameters. Both raise `FaultError` when invalid.
    """

    def __init__(
        self,
        scenario: str = "demo",
        *,
        port: int = 0,
        delay_ms: float | None = None,
        split: SplitMode = "event",
        seed: int = 0,
        speed: float = 1.0,
        before_event: BeforeEvent | None = None,
        fault: str | None = None,
        fault_params: Mapping[str, object] | None = None,
    ) -> None:
        if split not in SPLIT_MODES:
            raise ValueError(f"unknown split mode {split!r}; expected one of {SPLIT_MODES}")
        self.fault = fault
        self.fault_params = dict(fault_params or {})
        check_default_fault(fault, self.fault_params)
        self.scenario: Scenario = load_scenario(scenario)
        self.requested_port = port
        self.delay_ms = delay_ms
        self.split: SplitMode = split
        self.seed = seed
        self.speed = speed
        self.before_event = before_event
        self.requests: list[RecordedRequest] = []
        self._requests_lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _StubHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> StubServer:
        """Bind 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("StubServer already started")
        self._stopping.clear()
        self._httpd = _StubHTTPServer((HOST, self.requested_port), self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            args=(SHUTDOWN_POLL_S,),
            name=f"toolstream-stub:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread. Safe to call more than once."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("StubServer is not running")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The URL of this server's own scenario, at that scenario's endpoint."""
        return self.base_url + self.scenario.endpoint

    def scenario_url(self, name: str, endpoint: str | None = None) -> str:
        """The URL serving scenario `name` at `endpoint` (default: the scenario's own).

        An unknown name gets the Chat Completions endpoint, so the URL still reaches the
        server's 404 that lists the available scenarios.
        """
        if endpoint is None:
            endpoint = _endpoint_of(name)
        return f"{self.base_url}/scenarios/{name}{endpoint}"

    def delay_for(self, scenario: Scenario) -> float:
        """Seconds to wait before each event after the first (0 when speed <= 0)."""
        if self.speed <= 0:
            return 0.0
        delay_ms = scenario.delay_ms if self.delay_ms is None else self.delay_ms
        return max(0.0, delay_ms) / self.speed / 1000

    def record(self, request: RecordedRequest) -> None:
        with self._requests_lock:
            self.requests.append(request)

    def pause(self, seconds: float) -> bool:
        """Wait between events; returns False if the server is stopping."""
        if seconds <= 0:
            return not self._stopping.is_set()
        return not self._stopping.wait(seconds)

    def hold(self, seconds: float) -> None:
        """Wait `seconds`, or less if the server stops meanwhile."""
        self._stopping.wait(seconds)

    def fault_for(self, query: str) -> Fault | None:
        """The fault for a request with this query string. Raises `FaultError`."""
        return parse_fault(query, self.fault, self.fault_params)


def _endpoint_of(name: str) -> str:
    try:
        return load_scenario(name).endpoint
    except ScenarioNotFound:
        return CHAT_ENDPOINT


def api_key_of(headers: Message) -> str:
    """The key a request sent: a Bearer token, else the `x-api-key` header, else `none`."""
    scheme, _, token = headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key") or NO_API_KEY


class _StubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver listens with a backlog of 5: a benchmark's 128 clients at once
    # overflowed it and got their connections dropped by the stub, not the code under test.
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], stub: StubServer) -> None:
        self.stub = stub
        super().__init__(address, _StubHandler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the host name."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = HOST, self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client disconnects; report anything else as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _StubHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request logging to stderr."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self._read_body()
        self.server.stub.record(
            RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
        )
        path = urlsplit(self.path).path
        if ENDPOINT.fullmatch(path):
            self._serve_scenario(self.server.stub.scenario)
        elif match := SCENARIO_PATH.match(path):
            self._send_named_scenario(match["name"])
        elif path == LIST_PATH and self.command == "GET":
            self._send_scenario_list()
        else:
            self._send_error_json(404, f"Unknown path: {path}", "not_found")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_named_scenario(self, name: str) -> None:
        try:
            scenario = load_scenario(name)
        except ScenarioNotFound as error:
            self._send_error_json(404, str(error), "scenario_not_found")
            return
        self._serve_scenario(scenario)

    def _serve_scenario(self, scenario: Scenario) -> None:
        """Send `scenario`, with the fault the request (or the server's default) asks for."""
        try:
            fault = self.server.stub.fault_for(urlsplit(self.path).query)
        except FaultError as error:
            self._send_error_json(400, str(error), "invalid_fault")
            return
        scenario = scenario.with_api_key(api_key_of(self.headers))
        if fault is None:
            self._send_scenario(scenario)
        else:
            self._send_fault(fault, scenario)

    def _send_scenario_list(self) -> None:
        listing = [info._asdict() for info in list_scenarios()]
        self._send_json(200, listing)

    def _send_error_json(self, status: int, message: str, code: str) -> None:
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
        self._send_json(status, {"error": error})

    def _send_json(self, status: int, value: Any, headers: Sequence[tuple[str, str]] = ()) -> None:
        payload = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, header_value in headers:
            self.send_header(name, header_value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def _send_scenario(self, scenario: Scenario) -> None:
        groups, delay_s = self._writes_of(scenario)
        try:
            self._send_stream_headers(scenario)
            if self._write_groups(groups, delay_s):
                self.wfile.write(LAST_CHUNK)
        except ConnectionError:
            self.close_connection = True

    def _writes_of(self, scenario: Scenario) -> tuple[Writes, float]:
        """The server's write groups for `scenario` and the pacing delay between them."""
        stub = self.server.stub
        delay_s = stub.delay_for(scenario)
        return scenario.writes(stub.split, stub.seed, paced=delay_s > 0), delay_s

    def _send_stream_headers(
        self, scenario: Scenario, extra: Sequence[tuple[str, str]] = ()
    ) -> None:
        self.send_response(scenario.status)
        self.send_header("Content-Type", scenario.content_type)
        for name, value in (*scenario.headers, *extra):
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()

    def _write_groups(self, groups: Writes, delay_s: float, encode: Encode | None = None) -> bool:
        """Write every group (each piece through `encode`); False if the server stopped."""
        stub = self.server.stub
        for index, pieces in enumerate(groups):
            if index > 0 and not stub.pause(delay_s):
                return False
            if stub.before_event is not None:
                stub.before_event(index)
            for piece in pieces:
                self._write_chunk(encode(piece) if encode else piece)
        return True

    def _write_chunk(self, piece: bytes) -> None:
        if piece:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(piece), piece))

    # --- faults ---

    def _send_fault(self, fault: Fault, scenario: Scenario) -> None:
        senders: dict[str, Callable[[Fault, Scenario], None]] = {
            "drip": self._send_drip,
            "stall": self._send_stall,
            "no-answer": self._send_no_answer,
            "reset": self._send_reset,
            "cut-chunk": self._send_cut_chunk,
            "gzip": self._send_gzip,
            "gzip-bomb": self._send_gzip_bomb,
            "redirect": self._send_redirect,
            "status": self._send_status,
        }
        self.close_connection = True
        with contextlib.suppress(ConnectionError):
            senders[fault.name](fault, scenario)

    def _send_drip(self, fault: Fault, scenario: Scenario) -> None:
        """The body one byte per chunk, one chunk per write, `interval_ms` apart."""
        self._send_stream_headers(scenario)
        body, interval_s = scenario.rendered, fault.interval_ms / 1000
        for index in range(len(body)):
            if index > 0 and not self.server.stub.pause(interval_s):
                return
            self._write_chunk(body[index : index + 1])
        self.wfile.write(LAST_CHUNK)

    def _send_stall(self, fault: Fault, scenario: Scenario) -> None:
        if self._send_up_to_middle(fault, scenario):
            self.server.stub.hold(fault.seconds)

    def _send_no_answer(self, fault: Fault, scenario: Scenario) -> None:
        self.server.stub.hold(fault.seconds)

    def _send_reset(self, fault: Fault, scenario: Scenario) -> None:
        self._send_up_to_middle(fault, scenario)
        self._reset_connection()

    def _send_up_to_middle(self, fault: Fault, scenario: Scenario) -> bool:
        """Headers and the body up to the middle of event `at`; False if the server stopped."""
        groups, delay_s = self._writes_of(scenario)
        self._send_stream_headers(scenario)
        return self._write_groups(truncated(groups, cut_offset(scenario, fault.at)), delay_s)

    def _reset_connection(self) -> None:
        """Close the socket with a zero linger timeout, so the peer gets a TCP RST.

        `rfile` holds a reference to the socket: the descriptor closes when both are closed.
        """
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
        self.connection.close()
        self.rfile.close()

    def _send_cut_chunk(self, fault: Fault, scenario: Scenario) -> None:
        """All but the last piece; its size line announces it whole but half of it follows."""
        groups, delay_s = self._writes_of(scenario)
        head, last = split_last_piece(groups)
        self._send_stream_headers(scenario)
        if self._write_groups(head, delay_s):
            self.wfile.write(b"%x\r\n%b" % (len(last), last[: len(last) // 2]))

    def _send_gzip(self, fault: Fault, scenario: Scenario) -> None:
        groups, delay_s = self._writes_of(scenario)
        stream = GzipStream()
        self._send_stream_headers(scenario, [("Content-Encoding", "gzip")])
        if self._write_groups(groups, delay_s, stream.encode):
            self._write_chunk(stream.finish())
            self.wfile.write(LAST_CHUNK)

    def _send_gzip_bomb(self, fault: Fault, scenario: Scenario) -> None:
        status, content_type, pieces = gzip_bomb(fault)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in pieces:
            if not self.server.stub.pause(0):  # the server is stopping
                return
            self._write_chunk(piece)
        self.wfile.write(LAST_CHUNK)

    def _send_redirect(self, fault: Fault, scenario: Scenario) -> None:
        parts = urlsplit(self.path)
        query = redirect_query(parts.query, fault)
        location = self.server.stub.base_url + parts.path + (f"?{query}" if query else "")
        self.send_response(307)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def _send_status(self, fault: Fault, scenario: Scenario) -> None:
        headers = [("Retry-After", str(fault.retry_after))]
        self._send_json(fault.code, status_error(fault), headers)
