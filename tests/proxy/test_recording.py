"""What the request list and a recording read of a compressed body (proxy/recording.py's
`decoded`): undone a bounded piece at a time by sources/decoding.py, so that the
session's --max-bytes stops a gzip bomb before it inflates, and a size limit of N
still lets exactly N decoded bytes through."""

from __future__ import annotations

import gzip
import tracemalloc

from toolstream_tui.proxy.pipe import Exchange, ResponseEnd
from toolstream_tui.proxy.requests import RequestList, RequestRecord
from toolstream_tui.proxy.server import ProxiedResponse
from toolstream_tui.sources import Limits
from toolstream_tui.sources.base import BodyChunk, ResponseHead

EVENT = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'
BOMB_BYTES = 64 << 20  # what the bomb inflates to: more than anything here may hold
HELD_BYTES = 16 << 20  # what reading it may allocate at most, all told


async def watched(body: bytes, encoding: str, limits: Limits) -> RequestRecord:
    """`body` sent with Content-Encoding `encoding` in one read, through a request list."""
    requests = RequestList(limits)
    proxied = ProxiedResponse(Exchange("POST", "/v1/x", "http://h/v1/x", {}, b"{}", 1.0, 0.0))
    requests.take(proxied)
    headers = {"content-type": "text/event-stream", "content-encoding": encoding}
    proxied.put(ResponseHead(200, "text/event-stream", headers=headers, t=0.1))
    proxied.put(BodyChunk(body, 0.2))
    proxied.put(ResponseEnd(0.3, len(body)))
    await requests.wait_idle()
    return requests.records[1]


async def test_a_gzip_body_of_exactly_the_size_limit_is_read_whole() -> None:
    body = EVENT * 2000
    limit = len(body)
    record = await watched(gzip.compress(body), "gzip", Limits(max_bytes=limit))
    assert (record.bytes, record.session.state.events) == (limit, 2000)
    assert "limit-reached" not in record.anomalies
    record = await watched(gzip.compress(body), "gzip", Limits(max_bytes=limit - 1))
    assert (record.bytes, record.session.state.events) == (limit - 1, 1999)
    assert "limit-reached" in record.anomalies


async def test_a_gzip_bomb_stops_at_the_size_limit_without_inflating() -> None:
    bomb = gzip.compress(b"\n" * BOMB_BYTES, compresslevel=9)  # ~64 KB
    limit = 1 << 20
    tracemalloc.start()
    try:
        record = await watched(bomb, "gzip", Limits(max_bytes=limit))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record.bytes == limit and "limit-reached" in record.anomalies
    assert peak < HELD_BYTES, f"{peak} bytes held to read {limit} of a {BOMB_BYTES}-byte bomb"


async def test_an_encoding_nothing_here_decodes_ends_the_stream_saying_so() -> None:
    record = await watched(b"\x1b\x00compressed", "br", Limits())
    [anomaly] = [a for a in record.session.state.anomalies if a.kind == "connection-lost"]
    assert anomaly.detail == "the body does not decode as br: unsupported Content-Encoding: br"
    assert record.bytes == 0  # never read as if it were the body
