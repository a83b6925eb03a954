"""What HTTP asks of a proxy, with no I/O: which headers belong to one connection
only (the hop-by-hop ones, and those a `Connection` header names), when a request
asks to switch protocols, how big a request may be, and the bodies of the proxy's
own error answers."""

from __future__ import annotations

import json
from collections.abc import Iterable

MAX_REQUEST_BYTES = 64 << 20  # a request with a few images inlined as base64 fits
MAX_HEADER_BYTES = 64 << 10  # the request line and headers together
HEADER_TIMEOUT_S = 10.0  # a connection without a whole request head this long is closed
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Set again by httpx from the URL and the body, or meaningless once the body is read.
NOT_FORWARDED = frozenset({"host", "content-length", "expect"})
PROXY_CHALLENGE = b'Bearer realm="toolstream-tui proxy"'


def proxy_error(status: int, code: str, message: str) -> tuple[int, bytes]:
    error = {"message": message, "type": "proxy_error", "code": code}
    return status, json.dumps({"error": error}, ensure_ascii=False).encode()


def headers_too_large(limit: int) -> tuple[int, bytes]:
    return proxy_error(
        431,
        "headers_too_large",
        f"the request line and headers are over the proxy's limit of {limit} bytes; not forwarded",
    )


def connection_tokens(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Header names a `Connection` header lists: hop-by-hop for this connection only."""
    return frozenset(
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    )


def upgrade_asked(headers: list[tuple[str, str]]) -> str | None:
    """The protocol a request asks to switch to (`Upgrade`, named in `Connection`)."""
    if "upgrade" not in connection_tokens(headers):
        return None
    return next((value for name, value in headers if name.lower() == "upgrade"), None)


def end_to_end(
    headers: list[tuple[str, str]], also_dropped: frozenset[str]
) -> list[tuple[str, str]]:
    """`headers` but the hop-by-hop ones, names as they came (compared lowercased)."""
    dropped = HOP_BY_HOP | also_dropped | connection_tokens(headers)
    return [(name, value) for name, value in headers if name.lower() not in dropped]


def head_size(target: str, headers: list[tuple[str, str]]) -> int:
    """The request line and headers' size as `max_header_bytes` counts it (uvicorn's
    h11 bounds a head that arrives in pieces; one that came whole is measured so)."""
    return len(target) + sum(len(name) + len(value) + 4 for name, value in headers)
