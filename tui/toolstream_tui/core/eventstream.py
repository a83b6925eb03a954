"""AWS event-stream framing (`application/vnd.amazon.eventstream`, Bedrock).

A frame is: total length and headers length (4 bytes each, big-endian), the CRC32
of those 8 bytes, the headers, the payload, and the CRC32 of everything before
it. A header is a 1-byte name length, the name, a 1-byte value type and the value.

Each frame becomes one `SSEEvent`: `event` is its `:event-type` (or, for frames
that are not events, `exception:<:exception-type>` or `error:<:error-code>`), and
`data` its payload as text (an error frame's `:error-message`). What cannot be
framed is named in `problems`, and the bytes from there on are the trailing text:
a prelude whose CRC fails (its lengths cannot be trusted), a length past the
limits, a frame cut short at the end. A frame whose own CRC fails is still
handed on, and named.
"""

from __future__ import annotations

import struct
import sys
import zlib
from typing import Any

from .framing import decode_utf8
from .sse import SSEEvent, SSEItem

EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream"
PRELUDE = struct.Struct(">III")
PRELUDE_BYTES = PRELUDE.size  # 12
MIN_FRAME = PRELUDE_BYTES + 4
MAX_HEADERS = 128 * 1024  # botocore's limits
MAX_PAYLOAD = 16 * 1024 * 1024
# value type -> fixed size (None: a 2-byte length precedes the value)
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}


def looks_like_eventstream(head: bytes) -> bool:
    """Do these first bytes open an event-stream frame (its prelude CRC holds)?"""
    if len(head) < PRELUDE_BYTES:
        return False
    total, headers, crc = PRELUDE.unpack_from(head)
    return zlib.crc32(head[:8]) == crc and total >= MIN_FRAME + headers


class EventStreamDecoder:
    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self.max_event_bytes = max_event_bytes
        self.oversized = False  # a frame longer than max_event_bytes
        self.broken = False  # a frame could not be read: the rest is trailing
        self.invalid_tail = False
        self.dispatched = 0
        self.problems: list[str] = []  # what went wrong, for `frame-invalid`
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[SSEItem]:
        buffer = self._buffer
        buffer += chunk
        items: list[SSEItem] = []
        offset = 0
        while not (self.broken or self.oversized) and len(buffer) - offset >= PRELUDE_BYTES:
            total = self._frame_length(buffer, offset)
            if total is None or len(buffer) - offset < total:
                break
            items.append(self._frame(bytes(buffer[offset : offset + total])))
            offset += total
        del buffer[:offset]
        return items

    def _frame_length(self, buffer: bytearray, offset: int) -> int | None:
        total, headers, crc = PRELUDE.unpack_from(buffer, offset)
        if zlib.crc32(buffer[offset : offset + 8]) != crc:
            self._break(f"frame {self.dispatched + 1}: the prelude's CRC32 does not match")
        elif headers > MAX_HEADERS or total - headers - MIN_FRAME > MAX_PAYLOAD:
            self._break(f"frame {self.dispatched + 1}: lengths past the limits ({total} bytes)")
        elif total < MIN_FRAME + headers:
            self._break(f"frame {self.dispatched + 1}: a length of {total} bytes is impossible")
        elif total > self.max_event_bytes:
            self.oversized = True
        else:
            return total
        return None

    def _break(self, problem: str) -> None:
        self.broken = True
        self.problems.append(problem + "; the bytes from there on were not decoded")

    def _frame(self, frame: bytes) -> SSEEvent:
        self.dispatched += 1
        _, headers_length, _ = PRELUDE.unpack_from(frame)
        (crc,) = struct.unpack_from(">I", frame, len(frame) - 4)
        if zlib.crc32(frame[:-4]) != crc:
            self.problems.append(f"frame {self.dispatched}: the message CRC32 does not match")
        headers = _headers(frame[PRELUDE_BYTES : PRELUDE_BYTES + headers_length])
        payload, valid = decode_utf8(frame[PRELUDE_BYTES + headers_length : -4])
        kind = str(headers.get(":message-type", "event"))
        if kind == "event":
            name = str(headers.get(":event-type", ""))
        elif kind == "exception":
            name = f"exception:{headers.get(':exception-type', '')}"
        else:
            name = f"{kind}:{headers.get(':error-code', '')}"
            payload = payload or str(headers.get(":error-message", ""))
        return SSEEvent(self.dispatched, name, payload, None, None, valid)

    def take_problems(self) -> list[str]:
        problems, self.problems = self.problems, []
        return problems

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: a frame cut short (or everything after a broken one) is the
        trailing text, its bytes shown as text."""
        tail = bytes(self._buffer)
        self._buffer.clear()
        text, valid = decode_utf8(tail)
        self.invalid_tail = not valid
        return [], text


def _headers(raw: bytes) -> dict[str, Any]:
    """The frame's headers; a header that runs past the end stops the reading."""
    headers: dict[str, Any] = {}
    at = 0
    while at < len(raw):
        size = raw[at]
        name = raw[at + 1 : at + 1 + size].decode("utf-8", errors="replace")
        at += 1 + size
        if at >= len(raw):
            break
        kind = raw[at]
        at += 1
        fixed = _FIXED.get(kind, -1)
        if fixed == -1:
            break
        if fixed is None:
            (length,) = struct.unpack_from(">H", raw, at) if at + 2 <= len(raw) else (0,)
            value: Any = raw[at + 2 : at + 2 + length]
            at += 2 + length
            if kind == 7:
                value = value.decode("utf-8", errors="replace")
        else:
            value = kind == 0 if kind in (0, 1) else raw[at : at + fixed]
            at += fixed
        headers[name] = value
    return headers
