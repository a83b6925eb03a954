"""AWS event-stream framing (`application/vnd.amazon.eventstream`, Bedrock).

A frame is: total length and headers length (4 bytes each, big-endian), the CRC32
of those 8 bytes, the headers, the payload, and the CRC32 of everything before
it. A header is a 1-byte name length, the name, a 1-byte value type and the value.

Each frame becomes one `SSEEvent`: `event` is its `:event-type` (or, for frames
that are not events, `exception:<:exception-type>` or `error:<:error-code>`), and
`data` its payload as text (an error frame's `:error-message`). What cannot be
framed is named in `problems`, and the bytes from there on are the trailing text:
a prelude whose CRC fails (its lengths cannot be trusted), a length past the
limits, a frame cut short at the end. A frame whose own CRC fails, or whose
headers do not read, is still handed on, and named.

The limits are botocore's, checked on the prelude before any of the frame is
held, so a frame is never buffered past them (nor past `max_event_bytes`).
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from typing import Any

from .framing import decode_utf8
from .sse import SSEEvent, SSEItem, new_event
from .strict_json import has_long_digit_run

EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream"
PRELUDE = struct.Struct(">III")
PRELUDE_BYTES = PRELUDE.size  # 12
MESSAGE_CRC = struct.Struct(">I")
MIN_FRAME = PRELUDE_BYTES + 4
MAX_HEADERS = 128 * 1024  # botocore's limits
MAX_PAYLOAD = 24 * 1024 * 1024
# A stream's frames repeat a few sets of headers (one per event type): each set is
# read once; past this many different ones (a hostile stream), each frame is read.
NAMED_HEADERS = 64
STRING = 7  # the value type of a UTF-8 string (a 2-byte length, then the bytes)
# value type -> how its value is read: a struct format, None for a 2-byte length and
# that many bytes, or a bool (types 0 and 1 carry no bytes).
_VALUE_FORMATS: dict[int, str | bool | None] = {
    0: True,
    1: False,
    2: ">b",
    3: ">h",
    4: ">i",
    5: ">q",
    6: None,  # byte array
    7: None,  # UTF-8 string
    8: ">q",  # timestamp, milliseconds since the epoch
    9: "16s",  # UUID
}


def looks_like_eventstream(head: bytes) -> bool:
    """Do these first bytes open an event-stream frame (its prelude CRC holds)?"""
    if len(head) < PRELUDE_BYTES:
        return False
    total: int
    headers: int
    crc: int
    total, headers, crc = PRELUDE.unpack_from(head)
    return zlib.crc32(head[:8]) == crc and headers <= MAX_HEADERS and total >= MIN_FRAME + headers


def frame_length(data: bytes | bytearray, at: int = 0) -> int | None:
    """The length of the frame whose prelude is at `at`, if that prelude holds (its
    CRC, and lengths within botocore's limits); None when it does not, or is not
    all there."""
    if len(data) - at < PRELUDE_BYTES:
        return None
    total: int
    headers: int
    crc: int
    total, headers, crc = PRELUDE.unpack_from(data, at)
    if zlib.crc32(data[at : at + 8]) != crc or headers > MAX_HEADERS:
        return None
    if not MIN_FRAME + headers <= total <= MAX_PAYLOAD + MIN_FRAME + headers:
        return None
    return total


def frame_parts(frame: bytes) -> tuple[bytes, bytes, bool] | None:
    """A whole frame's raw headers and payload, and whether its message CRC holds;
    None when `frame` is not exactly one frame whose prelude holds."""
    if frame_length(frame) != len(frame):
        return None
    headers_end = PRELUDE_BYTES + PRELUDE.unpack_from(frame)[1]
    intact = zlib.crc32(frame[:-4]) == MESSAGE_CRC.unpack_from(frame, len(frame) - 4)[0]
    return frame[PRELUDE_BYTES:headers_end], frame[headers_end:-4], intact


def encode_frame(headers: bytes, payload: bytes, intact: bool = True) -> bytes:
    """The frame of these raw headers and payload; `intact=False` gives it a message
    CRC that does not match, as the frame it stands for had."""
    lengths = struct.pack(">II", MIN_FRAME + len(headers) + len(payload), len(headers))
    message = lengths + struct.pack(">I", zlib.crc32(lengths)) + headers + payload
    crc = zlib.crc32(message) ^ (0 if intact else 0xFFFFFFFF)
    return message + MESSAGE_CRC.pack(crc)


class EventStreamDecoder:
    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self.max_event_bytes = max_event_bytes
        self.oversized = False  # a frame (or the undecodable rest) past max_event_bytes
        self.broken = False  # a frame could not be read: the rest is trailing
        self.invalid_tail = False
        self.long_digit_runs = True
        self.dispatched = 0
        # What went wrong, for `frame-invalid`: each with the number of the frame after
        # which it is told (a frame's own problem after it, a break after the last frame).
        self.problems: list[tuple[int, str]] = []
        self._named: dict[bytes, tuple[str, str, str | None]] = {}  # by the raw headers
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[SSEItem]:
        buffer = self._buffer
        buffer += chunk
        items: list[SSEItem] = []
        with memoryview(buffer) as view:  # frames are read in place, not copied out
            offset = self._frames(buffer, view, items)
        self.long_digit_runs = not items or has_long_digit_run(buffer[:offset])
        del buffer[:offset]
        if self.broken and len(buffer) > self.max_event_bytes:
            self.oversized = True  # what cannot be framed is held no further
        return items

    def _frames(self, buffer: bytearray, view: memoryview, items: list[SSEItem]) -> int:
        """The whole frames at the start of `buffer` (`view` is a view of it), each an
        event in `items`; returns where the rest begins. A frame whose prelude passes
        every check, whose CRC holds and whose payload is UTF-8 is read here, inline
        (Bedrock sends one per piece of arguments); any other goes through
        `_frame_length` and `_frame`, which name what is wrong."""
        size, offset = len(view), 0
        unpack, crc32, message_crc = PRELUDE.unpack_from, zlib.crc32, MESSAGE_CRC.unpack_from
        named_of, most = self._named.get, self.max_event_bytes
        # The headers of the frame before, and what they name: the next frame usually
        # has the same, told without copying them out for the lookup
        last_raw, last_named = b"", None
        if self.broken or self.oversized:  # (only `_frame_length` sets them, and then ends this)
            return 0
        while size - offset >= PRELUDE_BYTES:
            total: int | None
            total, headers_length, prelude_crc = unpack(view, offset)
            if not (
                crc32(view[offset : offset + 8]) == prelude_crc
                and MIN_FRAME + headers_length <= total <= MAX_PAYLOAD + MIN_FRAME + headers_length
                and total <= most
                and headers_length <= MAX_HEADERS
            ):
                total = self._frame_length(view, offset)
                if total is None:
                    break
            if size - offset < total:
                break
            end = offset + total - 4  # where the message CRC begins
            headers = offset + PRELUDE_BYTES
            if headers_length == len(last_raw) and buffer.startswith(last_raw, headers):
                named = last_named
            else:
                raw = bytes(view[headers : headers + headers_length])
                named = named_of(raw)
                if named is not None:
                    last_raw, last_named = raw, named
            payload = None
            if named and not named[2] and crc32(view[offset:end]) == message_crc(view, end)[0]:
                # not `suppress`: entering and leaving it cost more than reading the frame
                try:  # noqa: SIM105
                    payload = str(view[headers + headers_length : end], "utf-8")
                except UnicodeDecodeError:  # `_frame` tells it
                    pass
            if named is None or payload is None:
                items.append(self._frame(view, offset, total))
            else:
                self.dispatched += 1
                event = (self.dispatched, named[0], payload or named[1], None, None, True)
                items.append(new_event(SSEEvent, event))
            offset += total
        return offset

    def _frame_length(self, buffer: memoryview, offset: int) -> int | None:
        total: int
        headers: int
        crc: int
        total, headers, crc = PRELUDE.unpack_from(buffer, offset)
        number = self.dispatched + 1
        if zlib.crc32(buffer[offset : offset + 8]) != crc:
            self._break(f"frame {number}: the prelude's CRC32 does not match")
        elif total < MIN_FRAME + headers:
            self._break(f"frame {number}: a length of {total} bytes is impossible")
        elif headers > MAX_HEADERS:
            self._break(f"frame {number}: {headers} bytes of headers, past {MAX_HEADERS}")
        elif total - headers - MIN_FRAME > MAX_PAYLOAD:
            payload = total - headers - MIN_FRAME
            self._break(f"frame {number}: a payload of {payload} bytes, past {MAX_PAYLOAD}")
        elif total > self.max_event_bytes:
            self.oversized = True
        else:
            return total
        return None

    def _break(self, problem: str) -> None:
        self.broken = True
        detail = problem + "; the bytes from there on were not decoded"
        self.problems.append((self.dispatched, detail))

    def _frame(self, view: memoryview, start: int, total: int) -> SSEEvent:
        """The frame of `total` bytes at `start` (its prelude already checked)."""
        self.dispatched += 1
        headers_length = PRELUDE.unpack_from(view, start)[1]
        end = start + total - 4  # where the message CRC begins
        if zlib.crc32(view[start:end]) != MESSAGE_CRC.unpack_from(view, end)[0]:
            problem = "the message CRC32 does not match"
            self.problems.append((self.dispatched, f"frame {self.dispatched}: {problem}"))
        headers = start + PRELUDE_BYTES
        raw = bytes(view[headers : headers + headers_length])
        named = self._named.get(raw)
        if named is None:
            named = frame_name(raw)
            if len(self._named) < NAMED_HEADERS:
                self._named[raw] = named
        name, error_message, unread = named
        if unread:
            self.problems.append((self.dispatched, f"frame {self.dispatched}: {unread}"))
        payload, valid = decode_utf8(bytes(view[headers + headers_length : end]))
        return SSEEvent(self.dispatched, name, payload or error_message, None, None, valid)

    def has_problems(self) -> bool:
        return bool(self.problems)

    def take_problems(self, upto: int | None = None) -> list[str]:
        """The problems not yet taken; with `upto`, only those told by frame `upto`
        (a session that takes them after each frame names each at its own event,
        however the stream was cut)."""
        if not self.problems:
            return []
        if upto is None:
            taken, self.problems = self.problems, []
        else:
            taken = [problem for problem in self.problems if problem[0] <= upto]
            self.problems = self.problems[len(taken) :]
        return [detail for _, detail in taken]

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: a frame cut short (or everything after a broken one) is the
        trailing text. Its prelude and CRCs are binary, never text: bytes that are not
        UTF-8 are written as `\\xNN` escapes, so every byte stays visible."""
        tail = bytes(self._buffer)
        self._buffer.clear()
        return [], tail.decode("utf-8", errors="backslashreplace")


def frame_name(raw: bytes) -> tuple[str, str, str | None]:
    """What a frame's headers name it (see the module's docstring), an error frame's
    message (its text when it has no payload), and what stopped their reading."""
    headers, unread = read_headers(raw)
    kind = _text(headers.get(":message-type", "event"))
    if kind == "event":
        return _text(headers.get(":event-type", "")), "", unread
    if kind == "exception":
        return f"exception:{_text(headers.get(':exception-type', ''))}", "", unread
    name = f"{kind}:{_text(headers.get(':error-code', ''))}"
    return name, _text(headers.get(":error-message", "")), unread


def read_headers(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """A frame's headers, and what stopped their reading (None when nothing did): a
    header running past the end, a value type that does not exist, a name twice (the
    first value is kept)."""
    headers: dict[str, Any] = {}
    at = 0
    while at < len(raw):
        name_end = at + 1 + raw[at]
        name = raw[at + 1 : name_end].decode("utf-8", errors="replace")
        if name_end >= len(raw):
            return headers, f"header {name!r} runs past the end of the headers"
        value, at = _header_value(raw, name_end)
        if at < 0:
            return headers, f"header {name!r}: {value}"
        if name in headers:
            return headers, f"header {name!r} appears twice"
        headers[name] = value
    return headers, None


def edited_headers(raw: bytes, edit: Callable[[bytes], bytes]) -> bytes | None:
    """A frame's raw headers with `edit` applied to every string value (its length
    written anew); None when they do not read (`read_headers` says why)."""
    out, at = bytearray(), 0
    while at < len(raw):
        name_end = at + 1 + raw[at]
        if name_end >= len(raw):
            return None
        _, value_end = _header_value(raw, name_end)
        if value_end < 0:
            return None
        if raw[name_end] == STRING:
            value = edit(raw[name_end + 3 : value_end])
            out += raw[at : name_end + 1] + struct.pack(">H", len(value)) + value
        else:
            out += raw[at:value_end]
        at = value_end
    return bytes(out)


def _header_value(raw: bytes, at: int) -> tuple[Any, int]:
    """The value at `at` (its type byte) and where the next header starts; a negative
    position says the value could not be read, and the value why."""
    kind = raw[at]
    at += 1
    if kind not in _VALUE_FORMATS:
        return f"value type {kind} does not exist", -1
    form = _VALUE_FORMATS[kind]
    if isinstance(form, bool):
        return form, at
    if form is None:
        if at + 2 > len(raw):
            return "its length runs past the end of the headers", -1
        (length,) = struct.unpack_from(">H", raw, at)
        at += 2
        if at + length > len(raw):
            return "its value runs past the end of the headers", -1
        value = raw[at : at + length]
        text = value.decode("utf-8", errors="replace") if kind == 7 else value
        return text, at + length
    size = struct.calcsize(form)
    if at + size > len(raw):
        return "its value runs past the end of the headers", -1
    (number,) = struct.unpack_from(form, raw, at)
    return number, at + size


def _text(value: Any) -> str:
    """A header that names something, as text (a header of another type is shown)."""
    return value if isinstance(value, str) else repr(value)
