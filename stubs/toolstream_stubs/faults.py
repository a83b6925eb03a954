"""Network faults the stub server can inject into a scenario response.

A request picks one with `?fault=NAME` on any scenario URL (`?fault=none` turns off the
server's default fault); numeric query parameters tune it. `FAULT_PARAMS` says which
parameters each fault reads, `Fault` holds their defaults. Event numbers count from 0, as
in `StubServer.before_event`; a non-SSE body counts as a single event.

- `drip`: the body one byte per chunk and write, `interval_ms` apart.
- `stall`: the body up to the middle of event `at`, then silence for `seconds` (or until
  the server stops), then the connection closes without the final chunk.
- `no-answer`: the request is read, no status line is ever sent; closes after `seconds`.
- `reset`: the body up to the middle of event `at`, then a TCP reset (SO_LINGER 0).
- `cut-chunk`: the last chunk's size line announces its full size, half of it is sent,
  then the connection closes.
- `gzip`: the body gzip-compressed (`Content-Encoding: gzip`), flushed after every write.
- `gzip-bomb`: a small gzip body inflating to `mib` MiB: one SSE event that never ends
  (`error_code` 0), or an error body of that HTTP status (`error_code` 400..599).
- `redirect`: 307 to the same URL without the fault; `hops` redirects in a chain.
- `status`: HTTP `code` with an OpenAI-style JSON error and `Retry-After: retry_after`.

This module holds the pure parts (parsing, byte plans); the server does the socket work.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from toolstream_stubs.scenarios import Scenario, Writes

FAULT_PARAM = "fault"
NO_FAULT = "none"
FAULT_PARAMS: dict[str, tuple[str, ...]] = {
    "drip": ("interval_ms",),
    "stall": ("at", "seconds"),
    "no-answer": ("seconds",),
    "reset": ("at",),
    "cut-chunk": (),
    "gzip": (),
    "gzip-bomb": ("mib", "error_code"),
    "redirect": ("hops",),
    "status": ("code", "retry_after"),
}
FAULTS: tuple[str, ...] = tuple(FAULT_PARAMS)
GZIP_WBITS = 31  # zlib's gzip container

STATUS_ERRORS: dict[int, tuple[str, str, str | None]] = {
    429: (
        "Rate limit reached for stub-model. Please try again in {retry_after}s.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    ),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
}


class FaultError(ValueError):
    """An unknown fault name, or a fault parameter out of range."""


@dataclass(frozen=True)
class Param:
    convert: Callable[[str], int | float]
    minimum: float
    maximum: float


PARAMS: dict[str, Param] = {
    "interval_ms": Param(float, 0, 60_000),
    "at": Param(int, 0, 1_000_000_000),
    "seconds": Param(float, 0, 86_400),
    "hops": Param(int, 1, 50),
    "code": Param(int, 400, 599),
    "retry_after": Param(int, 0, 86_400),
    "mib": Param(int, 1, 1 << 20),
    "error_code": Param(int, 0, 599),
}


@dataclass(frozen=True)
class Fault:
    """One fault to inject. `from_default` is set when the server's default chose it."""

    name: str
    interval_ms: float = 2.0
    at: int = 3
    seconds: float = 30.0
    hops: int = 1
    code: int = 429
    retry_after: int = 7
    mib: int = 4096
    error_code: int = 0
    from_default: bool = False


def parse_fault(
    query: str, default: str | None = None, default_params: Mapping[str, object] | None = None
) -> Fault | None:
    """The fault a request's query asks for (else `default`), or None for no fault.

    Parameters come from `default_params`, overridden by the query. Raises `FaultError`.
    """
    fields = dict(parse_qsl(query, keep_blank_values=True))
    name = fields.get(FAULT_PARAM, default)
    if name is None or name == NO_FAULT:
        return None
    if name not in FAULTS:
        raise FaultError(f"unknown fault {name!r}; expected one of: {', '.join(FAULTS)}")
    texts = {**checked_params(default_params or {}), **fields}
    # Each value has its field's type: PARAMS converts each as its field is typed.
    values: dict[str, Any] = {key: param_value(key, texts[key]) for key in PARAMS if key in texts}
    return Fault(name, from_default=FAULT_PARAM not in fields, **values)


def check_default_fault(name: str | None, params: Mapping[str, object]) -> None:
    """Raises `FaultError` unless `name` is a fault (or None) and every one of `params`
    is a valid fault parameter. Each is checked whatever `name` is: a request's
    `?fault=` may pick any fault, and would otherwise get a 400 for it every time."""
    for key, text in checked_params(params).items():
        param_value(key, text)
    parse_fault("", name)


def checked_params(params: Mapping[str, object]) -> dict[str, str]:
    """`params` as query texts; raises `FaultError` for a key that is no fault parameter."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise FaultError(f"unknown fault parameter(s) {unknown}; expected: {', '.join(PARAMS)}")
    return {key: str(value) for key, value in params.items()}


def param_value(key: str, text: str) -> int | float:
    param = PARAMS[key]
    try:
        value = param.convert(text)
    except ValueError:
        raise FaultError(f"fault parameter {key}={text!r} is not a valid number") from None
    if not param.minimum <= value <= param.maximum:
        raise FaultError(f"fault parameter {key} must be {param.minimum:g}..{param.maximum:g}")
    return value


def cut_offset(scenario: Scenario, at: int) -> int:
    """Byte offset of the middle of event `at` (the last event if there are fewer)."""
    events = scenario.events or (scenario.rendered,)
    index = min(at, len(events) - 1)
    return sum(len(event) for event in events[:index]) + len(events[index]) // 2


def truncated(groups: Writes, limit: int) -> Writes:
    """The first `limit` bytes of `groups`, keeping their grouping and piece cuts."""
    kept: Writes = []
    for pieces in groups:
        if limit <= 0:
            break
        kept.append([])
        for piece in pieces:
            kept[-1].append(piece[:limit])
            limit -= len(piece)
            if limit <= 0:
                break
    return kept


def split_last_piece(groups: Writes) -> tuple[Writes, bytes]:
    """`groups` without its last non-empty piece, and that piece."""
    head = [list(pieces) for pieces in groups]
    for pieces in reversed(head):
        if pieces:
            return head, pieces.pop()
    return head, b""


def redirect_query(query: str, fault: Fault) -> str:
    """The query of the next URL in a redirect chain.

    The last hop drops `fault` and `hops` (or says `fault=none` when the server's default
    chose the redirect, which would otherwise loop); other parameters are kept.
    """
    pairs = [
        (key, value)
        for key, value in parse_qsl(query, keep_blank_values=True)
        if key not in (FAULT_PARAM, "hops")
    ]
    if fault.hops > 1:
        pairs += [(FAULT_PARAM, fault.name), ("hops", str(fault.hops - 1))]
    elif fault.from_default:
        pairs.append((FAULT_PARAM, NO_FAULT))
    return urlencode(pairs)


def status_error(fault: Fault) -> dict[str, Any]:
    """An OpenAI-style error body for a `status` fault."""
    kind = "server_error" if fault.code >= 500 else "invalid_request_error"
    fallback = (f"Stub fault: HTTP {fault.code}.", kind, None)
    message, kind, code = STATUS_ERRORS.get(fault.code, fallback)
    error = {"message": message.format(retry_after=fault.retry_after), "type": kind}
    return {"error": {**error, "param": None, "code": code}}


BOMB_BLOCK = 1 << 20
BOMB_SSE_START = b'data: {"choices":[{"index":0,"delta":{"content":"'
BOMB_ERROR_START = b'{"error":{"message":"'


def gzip_bomb(fault: Fault) -> tuple[int, str, Iterator[bytes]]:
    """Status, content type and the gzip pieces of a body that inflates to `mib` MiB
    of one event (or one error message) that never ends; made as it is sent."""
    if fault.error_code:
        return fault.error_code, "application/json", _bomb_pieces(BOMB_ERROR_START, fault.mib)
    return 200, "text/event-stream", _bomb_pieces(BOMB_SSE_START, fault.mib)


def _bomb_pieces(start: bytes, mib: int) -> Iterator[bytes]:
    compressor = zlib.compressobj(9, wbits=GZIP_WBITS)
    yield compressor.compress(start)
    block = b"x" * BOMB_BLOCK
    for _ in range(mib):
        piece = compressor.compress(block)
        if piece:
            yield piece
    yield compressor.flush()


class GzipStream:
    """Gzip-compresses a body piece by piece, sync-flushing so each piece decodes at once."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(wbits=GZIP_WBITS)

    def encode(self, piece: bytes) -> bytes:
        return self._compressor.compress(piece) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        """The final deflate block and the gzip trailer."""
        return self._compressor.flush()
