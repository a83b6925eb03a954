"""An OTLP/HTTP trace receiver on 127.0.0.1 for the tests: it accepts POST
/v1/traces, decodes each body with the official `opentelemetry-proto` messages
and keeps the spans, flattened for assertions. `hold()` makes it take requests
without answering until `release()` (a receiver that hangs)."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

TRACES_PATH = "/v1/traces"


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return None if kind is None else getattr(value, kind)


def attributes_of(pairs: Iterator[KeyValue]) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass
class ReceivedEvent:
    name: str
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass
class ReceivedSpan:
    name: str
    kind: int
    start_unix_nano: int
    end_unix_nano: int
    attributes: dict[str, Any]
    events: list[ReceivedEvent]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    raw: bytes = field(repr=False)  # the request body it came in (for "never in the bytes")


class Receiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.bodies: list[bytes] = []
        self._changed = threading.Condition()
        self._released = threading.Event()
        self._released.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.take(self)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def hold(self) -> None:
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def take(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        if handler.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        with self._changed:
            self.requests += 1
            self._changed.notify_all()
        self._released.wait()
        if urlsplit(handler.path).path != TRACES_PATH:
            handler.send_response(404)
            handler.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [
            ReceivedSpan(
                name=span.name,
                kind=span.kind,
                start_unix_nano=span.start_time_unix_nano,
                end_unix_nano=span.end_time_unix_nano,
                attributes=attributes_of(span.attributes),
                events=[
                    ReceivedEvent(e.name, e.time_unix_nano, attributes_of(e.attributes))
                    for e in span.events
                ],
                status_code=span.status.code,
                status_message=span.status.message,
                resource=attributes_of(resource_spans.resource.attributes),
                raw=body,
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        answer = ExportTraceServiceResponse().SerializeToString()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-protobuf")
        handler.send_header("Content-Length", str(len(answer)))
        handler.end_headers()
        handler.wfile.write(answer)
        with self._changed:
            self.bodies.append(body)
            self.spans.extend(spans)
            self._changed.notify_all()

    def wait_for_spans(self, count: int, timeout: float = 30.0) -> list[ReceivedSpan]:
        with self._changed:
            arrived = self._changed.wait_for(lambda: len(self.spans) >= count, timeout)
            assert arrived, f"{len(self.spans)} of {count} spans arrived within {timeout} s"
            return list(self.spans)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        with self._changed:
            arrived = self._changed.wait_for(lambda: self.requests >= count, timeout)
            assert arrived, f"{self.requests} of {count} export requests within {timeout} s"
