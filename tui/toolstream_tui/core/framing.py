"""How a body is cut into events, for bodies that are not Server-Sent Events.

Every framing hands its events on as `SSEEvent`s (numbered from 1, the payload
text in `data`), so one path takes them to the dialects, the raw log and the
recordings whatever the wire:

- NDJSON (`application/x-ndjson`, Ollama): one JSON value per line (a last line
  cut inside its value is the trailing text);
- a JSON array written progressively (Gemini's `streamGenerateContent` without
  `alt=sse`): one event per element, handed on as soon as it is complete;
- AWS event-stream frames (Bedrock): `eventstream.EventStreamDecoder`.

Each decoder works on bytes, costs time linear in what it is fed however the
stream is cut, and never holds more than `max_event_bytes` of one event: past
that it sets `oversized` and keeps the rest, undecoded, for `close()`, which
returns it as the trailing text (nothing received is lost).
"""

from __future__ import annotations

import re
import sys
from typing import Protocol

from .sse import BOM, SSEEvent, SSEItem
from .strict_json import has_long_digit_run

NDJSON_TYPES = frozenset(
    {"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonl"}
)


class Framer(Protocol):
    """What the session needs of a decoder (`sse.SSEDecoder` is one)."""

    oversized: bool
    invalid_tail: bool  # the undispatched tail held bytes that are not UTF-8
    # False: no run of 19 digits in the events the latest feed returned (so strict_json
    # need not look for one in each: see `loads`); True when not known
    long_digit_runs: bool

    def feed(self, chunk: bytes) -> list[SSEItem]: ...

    def take_problems(self, upto: int | None = None) -> list[str]:
        """What could not be framed since the last call (each a `frame-invalid`);
        with `upto`, only what events up to that number told."""
        ...

    def has_problems(self) -> bool:
        """Are there problems not yet taken?"""
        ...

    def close(self) -> tuple[list[SSEItem], str]: ...


def bom_settled(buffer: bytearray) -> bool:
    """At a body's start: False while its bytes could still be a UTF-8 BOM cut short
    (wait for more), else True, with the BOM (if one came) taken off."""
    if len(buffer) < len(BOM) and BOM.startswith(buffer):
        return False
    if buffer.startswith(BOM):
        del buffer[: len(BOM)]
    return True


class NoProblems:
    """For framings in which any bytes frame (whatever they hold)."""

    def take_problems(self, upto: int | None = None) -> list[str]:
        return []

    def has_problems(self) -> bool:
        return False


def decode_utf8(data: bytes) -> tuple[str, bool]:
    """UTF-8 text, and whether it was valid (invalid bytes become U+FFFD)."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), False


class LineDecoder(NoProblems):
    """NDJSON: each non-blank line is one event (LF or CRLF ends it)."""

    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self.max_event_bytes = max_event_bytes
        self.oversized = False
        self.invalid_tail = False
        self.dispatched = 0
        self.long_digit_runs = True
        self._buffer = bytearray()
        self._at_start = True

    def feed(self, chunk: bytes) -> list[SSEItem]:
        buffer = self._buffer
        scan_from = len(buffer)
        buffer += chunk
        if self._at_start:
            if not bom_settled(buffer):
                return []
            self._at_start = False
            scan_from = 0  # what was held was at most a BOM's start
        if self.oversized:
            return []
        end = buffer.rfind(b"\n", scan_from)
        if end < 0:
            self.oversized = len(buffer) > self.max_event_bytes
            return []
        complete = bytes(buffer[:end])
        del buffer[: end + 1]
        self.long_digit_runs = has_long_digit_run(complete)
        lines = complete.split(b"\n")
        items: list[SSEItem] = []
        for position, line in enumerate(lines):
            if len(line) > self.max_event_bytes:
                self._buffer[:0] = b"\n".join(lines[position:]) + b"\n"
                self.oversized = True
                return items
            self._dispatch(line.rstrip(b"\r"), items)
        self.oversized = len(buffer) > self.max_event_bytes
        return items

    def _dispatch(self, line: bytes, items: list[SSEItem]) -> None:
        if line.strip():
            self.dispatched += 1
            text, valid = decode_utf8(line)
            items.append(SSEEvent(self.dispatched, "", text, None, None, valid))

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: a last line without its newline is still an event (many
        servers end that way), unless it ends inside a value: then it was cut, and
        it is the trailing text, as an SSE event without its blank line is. Past
        the limit, the rest is the trailing text."""
        tail = bytes(self._buffer)
        self._buffer.clear()
        self.long_digit_runs = True
        if self.oversized or _ends_inside_a_value(tail):
            text, valid = decode_utf8(tail)
            self.invalid_tail = not valid
            return [], text
        items: list[SSEItem] = []
        self._dispatch(tail.rstrip(b"\r"), items)
        return items, ""


# Inside an element: all up to the next bracket, or the next quote of a string that
# has not ended yet; whole strings (escapes too) are taken at once, in C (written
# unrolled, `normal* (special normal*)*`, which the engine runs fastest).
_ELEMENT_TEXT = re.compile(rb'[^"{}\[\]]*+(?:"[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"[^"{}\[\]]*+)*+')
# Inside a string: all up to its closing quote, or a backslash that ends the buffer.
_STRING_TEXT = re.compile(rb'[^"\\]*+(?:\\[\s\S][^"\\]*+)*+')
_QUOTE = ord('"')
_OPENERS = frozenset(b"{[")
_NEXT_ELEMENT = re.compile(rb"[^\s,]")  # between elements, whitespace and commas are skipped
_SCALAR_END = re.compile(rb'[\s,\[\]{}"]')


class JSONArrayDecoder(NoProblems):
    """A JSON array written one element at a time (`[{…}\\r\\n,{…}]`): each element
    is an event once its end arrives. Only brackets, quotes and escapes are looked
    at; the elements are parsed by the dialect. A bare value between elements (or
    junk) is an event too, so the dialect names it and nothing is hidden."""

    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self.max_event_bytes = max_event_bytes
        self.oversized = False
        self.invalid_tail = False
        self.long_digit_runs = True  # not looked for
        self.dispatched = 0
        self.opened = False  # the array's `[` arrived
        self.closed = False  # and its `]`
        self._buffer = bytearray()
        self._scan = 0  # where scanning resumes in the buffer
        self._start: int | None = None  # where the open element began
        self._depth = 0  # bracket depth inside the open element
        self._in_string = False
        self._scalar = False  # the open element is a bare value
        self._at_start = True  # a BOM may come first (and be cut across reads)
        # Where each element ended, counted in bytes from the body's start: kept only
        # when a list is given (the secret scrubber cuts the body there).
        self.element_ends: list[int] | None = None
        self._dropped = 0  # bytes taken off the buffer's start so far

    def feed(self, chunk: bytes) -> list[SSEItem]:
        self._buffer += chunk
        if self._at_start:
            held = len(self._buffer)
            if not bom_settled(self._buffer):
                return []
            self._dropped += held - len(self._buffer)
            self._at_start = False
        if self.oversized:
            return []
        items: list[SSEItem] = []
        self._scan = self._advance(self._scan, items)
        self._trim()
        if self._start is not None and len(self._buffer) > self.max_event_bytes:
            self.oversized = True
        return items

    def _advance(self, position: int, items: list[SSEItem]) -> int:
        """Scan from `position`; return where the next feed resumes. Each step
        returns the position after what it took, or None when it needs more bytes
        (then it resumes at `position`)."""
        buffer = self._buffer
        while position < len(buffer) and not self.oversized:
            if self._in_string:
                step = self._in_text(position, items)
            elif self._start is None:
                step = self._between(position)
            elif self._scalar:
                step = self._in_scalar(position, items)
            else:
                step = self._in_element(position, items)
            if step is None:
                return self._resume_at(position)
            position = step
        return position

    def _resume_at(self, position: int) -> int:
        """Where to look again once more bytes come: a backslash that ends the
        buffer is read again with the byte it escapes; anything else was scanned."""
        return position if self._buffer.endswith(b"\\") and self._in_string else len(self._buffer)

    def _in_text(self, position: int, items: list[SSEItem]) -> int | None:
        buffer = self._buffer
        end = _STRING_TEXT.match(buffer, position).end()  # type: ignore[union-attr]
        if end == len(buffer):
            return end
        if buffer[end] != _QUOTE:  # a backslash ending the buffer: read it with the next
            return end if end > position else None
        self._in_string = False
        if self._depth == 0:  # the element was a string
            self._dispatch(end + 1, items)
        return end + 1

    def _in_scalar(self, position: int, items: list[SSEItem]) -> int | None:
        assert self._start is not None
        found = _SCALAR_END.search(self._buffer, position)
        if found is None:
            return None
        # A bracket no element opened (`]]`, `}`) is a one-byte value of its own.
        end = max(found.start(), self._start + 1)
        self._dispatch(end, items)
        return end

    def _between(self, position: int) -> int | None:
        found = _NEXT_ELEMENT.search(self._buffer, position)
        if found is None:
            return None
        byte = found.group()
        if byte == b"[" and not self.opened:
            self.opened = True
            return found.end()
        if byte == b"]" and self.opened and not self.closed:
            self.closed = True
            return found.end()
        self._start = found.start()
        if byte in (b"{", b"["):
            self._depth = 1
        elif byte == b'"':
            self._in_string = True
        else:
            self._scalar = True
            return found.start()
        return found.end()

    def _in_element(self, position: int, items: list[SSEItem]) -> int | None:
        """Up to the next bracket (or an unfinished string), brackets counted here
        until the element ends or the buffer does."""
        buffer = self._buffer
        size = len(buffer)
        depth = self._depth
        while True:
            end = _ELEMENT_TEXT.match(buffer, position).end()  # type: ignore[union-attr]
            if end == size:
                self._depth = depth
                return end
            byte = buffer[end]
            position = end + 1
            if byte == _QUOTE:
                self._depth, self._in_string = depth, True
                return position
            depth += 1 if byte in _OPENERS else -1
            if depth == 0:
                self._dispatch(position, items)
                return position

    def _dispatch(self, end: int, items: list[SSEItem]) -> None:
        """The element from `_start` to `end` is an event; past the size limit it is
        not, and it and all after it stay for the trailing text."""
        assert self._start is not None
        if end - self._start > self.max_event_bytes:
            self.oversized = True
            return
        self.dispatched += 1
        text, valid = decode_utf8(bytes(self._buffer[self._start : end]))
        items.append(SSEEvent(self.dispatched, "", text, None, None, valid))
        self._start, self._depth, self._scalar = None, 0, False
        if self.element_ends is not None:
            self.element_ends.append(self._dropped + end)

    def _trim(self) -> None:
        """Forget what was dispatched: the buffer keeps only an open element."""
        keep = self._start if self._start is not None else self._scan
        if keep:
            del self._buffer[:keep]
            self._dropped += keep
            self._scan -= keep
            if self._start is not None:
                self._start = 0

    @property
    def inside_value(self) -> bool:
        """The bytes so far end inside an element that is an object, array or string."""
        return self._start is not None and not self._scalar

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: an element never ended is the trailing text."""
        tail = b"" if self._start is None else bytes(self._buffer[self._start :])
        self._buffer.clear()
        text, valid = decode_utf8(tail)
        self.invalid_tail = not valid
        return [], text


def _ends_inside_a_value(line: bytes) -> bool:
    """Does the line end inside an object, an array or a string (a value cut short)?"""
    scanner = JSONArrayDecoder()
    scanner.opened = True  # a `[` here opens a value, not an array of events
    scanner.feed(line)
    return scanner.inside_value
