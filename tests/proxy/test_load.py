"""What the proxy's benchmarks throw at the stub: many clients at once."""

from __future__ import annotations

import socket
import threading
from contextlib import ExitStack

from toolstream_stubs import StubServer
from toolstream_stubs.server import HOST, _StubHTTPServer

CLIENTS = 128
LAST_CHUNK = b"data: [DONE]\n\n\r\n0\r\n\r\n"
CONNECT_WAIT_S = 0.5  # a connection the kernel queues completes at once; a dropped one not


def test_the_stub_queues_128_connections_before_it_accepts_any() -> None:
    """Made while the stub is not yet accepting, as 128 clients arriving in the same
    instant find it: every connection completes (a backlog of 5 drops the rest,
    whose clients retry a second later or give up), and each is then served."""
    stub = StubServer("weather", speed=0)
    server = _StubHTTPServer((HOST, 0), stub)
    port = server.server_address[1]
    with ExitStack() as stack:
        stack.callback(server.server_close)
        sockets = []
        for _ in range(CLIENTS):
            sock = stack.enter_context(socket.socket())
            sock.settimeout(CONNECT_WAIT_S)
            sock.connect((HOST, port))  # raises TimeoutError once the queue is full
            sockets.append(sock)
        serving = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        serving.start()
        stack.callback(serving.join)
        stack.callback(server.shutdown)
        request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: stub\r\ncontent-length: 0\r\n"
        for sock in sockets:
            sock.settimeout(10)
            sock.sendall(request + b"connection: close\r\n\r\n")
        answers = [read_to_close(sock) for sock in sockets]
    whole = [
        answer.startswith(b"HTTP/1.1 200") and answer.endswith(LAST_CHUNK) for answer in answers
    ]
    assert whole == [True] * CLIENTS


def read_to_close(sock: socket.socket) -> bytes:
    received = b""
    while data := sock.recv(65536):
        received += data
    return received
