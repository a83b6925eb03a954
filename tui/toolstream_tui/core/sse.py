"""Incremental Server-Sent-Events decoding: bytes in, events out.

Every source (HTTP, replay file, embedded stub) feeds its bytes through this one
decoder. It follows the WHATWG event-stream rules: LF, CR and CRLF line ends (a
CRLF may be split across reads), comments, `event`/`id`/`retry` fields, `data`
with or without the space after the colon, multi-line data, and UTF-8 characters
split across reads. Bytes of an event that never got its blank line are not
dispatched but are handed back by `close()` so nothing received is lost.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from .strict_json import has_long_digit_run

BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):
    """One dispatched event. `number` counts dispatched events from 1. (A named
    tuple: one is made per event, and these are the cheapest to make.)"""

    number: int
    event: str
    data: str
    id: str | None
    retry: int | None
    valid_utf8: bool = True  # False: some bytes were not UTF-8 (shown as U+FFFD)


# `SSEEvent(...)` runs the named tuple's `__new__`, a Python function; the framers
# make one per event with `new_event(SSEEvent, (number, event, data, id, retry,
# valid_utf8))`, the tuple's own constructor, in a third of the time (on 48k
# Bedrock frames, 25 ms of CPU less).
new_event = tuple.__new__


class SSEComment(NamedTuple):
    """A comment line (`: keep-alive`); kept so the raw log shows it."""

    text: str


SSEItem = SSEEvent | SSEComment


class SSEDecoder:
    """Works on bytes: line ends are normalised to LF (a CR that ends a read ends
    the line at once; an LF opening the next read is then its CRLF partner), the
    buffer is cut at blank lines, and each complete event is decoded on its own.
    Event boundaries are ASCII, so a UTF-8 character can never straddle two
    events. Cost is linear in the bytes fed, however the stream is cut.

    `max_event_bytes`: an event (the bytes between two blank lines) longer than
    this is never dispatched, whether it arrives whole or in pieces: the decoder
    sets `oversized` and keeps it, and everything after it, for `close()`. Where
    the stream is cut into reads never changes whether an event is oversized."""

    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self.max_event_bytes = max_event_bytes
        self.oversized = False
        self._buffer = bytearray()
        self._skip_lf = False
        self._at_stream_start = True
        self._event_type = ""
        self._data: list[str] = []
        self._last_id: str | None = None
        self._retry: int | None = None
        self.dispatched = 0
        self.invalid_tail = False  # the undispatched tail held bytes that are not UTF-8
        self._block_valid = True
        # False: no run of 19 digits in the events the latest feed returned (so
        # strict_json need not look for one in each: see `loads`)
        self.long_digit_runs = True

    def feed(self, chunk: bytes) -> list[SSEItem]:
        chunk = self._normalise(chunk)
        if not chunk:
            return []
        buffer = self._buffer
        scan_from = max(len(buffer) - 1, 0)
        buffer += chunk
        if self.oversized:
            return []
        limit = self.max_event_bytes
        end = buffer.find(b"\n\n", scan_from)
        if end < 0:
            if len(buffer) > limit:
                self._check_pending()
            return []
        end = buffer.rfind(b"\n\n", end)
        complete = bytes(buffer[:end])
        del buffer[: end + 2]
        self.long_digit_runs = has_long_digit_run(complete)
        if len(complete) > limit:  # only then can one block be too long
            return self._take_blocks(self._before_oversized(complete.split(b"\n\n")))
        if len(buffer) > limit:
            self._check_pending()
        return self._take_blocks(complete.split(b"\n\n"))

    def _take_blocks(self, blocks: list[bytes]) -> list[SSEItem]:
        """The events of whole blocks. The usual ones, one `data:` line with or
        without an `event:` line before it, are made here, in the fewest steps."""
        items: list[SSEItem] = []
        dispatched, last_id = self.dispatched, self._last_id
        for block in blocks:
            line_end = block.find(b"\n")
            if block[:6] == b"data: " and line_end < 0:
                kind, data = b"", block[6:]
            elif block[:7] == b"event: " and _one_data_line(block, line_end):
                kind, data = block[7:line_end], block[line_end + 7 :]
            else:
                self.dispatched = dispatched
                self._take_block(block, items)
                dispatched, last_id = self.dispatched, self._last_id
                continue
            dispatched += 1
            try:  # both valid UTF-8, as a server sends them: decoded with no more steps
                event = (dispatched, kind.decode(), data.decode(), last_id, None, True)
            except UnicodeDecodeError:
                name, name_valid = self._decode(kind)
                text, valid = self._decode(data)
                event = (dispatched, name, text, last_id, None, valid and name_valid)
            items.append(new_event(SSEEvent, event))
        self.dispatched = dispatched
        return items

    def _check_pending(self) -> None:
        """An event still waiting for its blank line is oversized as soon as it is
        longer than the limit (an LF ending the buffer may be half of that line)."""
        buffer = self._buffer
        self.oversized = len(buffer) - buffer.endswith(b"\n") > self.max_event_bytes

    def _before_oversized(self, blocks: list[bytes]) -> list[bytes]:
        """The blocks before the first one over the limit; that one and the rest go
        back in front of the buffer, undispatched."""
        for position, block in enumerate(blocks):
            if len(block) > self.max_event_bytes:
                self._buffer[:0] = b"\n\n".join(blocks[position:]) + b"\n\n"
                self.oversized = True
                return blocks[:position]
        self._check_pending()
        return blocks

    def take_problems(self, upto: int | None = None) -> list[str]:
        """What could not be framed (nothing, for SSE: every byte frames)."""
        return []

    def has_problems(self) -> bool:
        return False

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: comments still pending, and the text of an event that
        never got its blank line (not dispatched)."""
        tail, valid = self._decode(bytes(self._buffer))
        self.invalid_tail = not valid
        self.long_digit_runs = True
        self._buffer.clear()
        items: list[SSEItem] = []
        unterminated = []
        for line in tail.split("\n"):
            if line.startswith(":"):
                items.append(SSEComment(line[1:]))
            elif line:
                unterminated.append(line)
        return items, "\n".join(unterminated)

    def _normalise(self, chunk: bytes) -> bytes:
        if self._skip_lf and chunk:
            self._skip_lf = False
            chunk = chunk.removeprefix(b"\n")
        if self._at_stream_start and chunk:
            chunk = bytes(self._buffer) + chunk
            self._buffer.clear()
            if len(chunk) < 3 and BOM.startswith(chunk):
                self._buffer += chunk  # a BOM cut short: decide on the next read
                return b""
            self._at_stream_start = False
            chunk = chunk.removeprefix(BOM)
        if b"\r" not in chunk:
            return chunk
        self._skip_lf = chunk.endswith(b"\r")
        chunk = chunk.replace(b"\r\n", b"\n")
        return chunk.replace(b"\r", b"\n") if b"\r" in chunk else chunk  # CRs alone: rare

    @staticmethod
    def _decode(data: bytes) -> tuple[str, bool]:
        """UTF-8 text, and whether it was valid (invalid bytes become U+FFFD)."""
        try:
            return data.decode("utf-8"), True
        except UnicodeDecodeError:
            return data.decode("utf-8", errors="replace"), False

    def _take_block(self, block: bytes, items: list[SSEItem]) -> None:
        text, self._block_valid = self._decode(block)
        for line in text.split("\n"):
            self._take_line(line, items)
        self._dispatch(items)

    def _take_line(self, line: str, items: list[SSEItem]) -> None:
        if not line:
            self._dispatch(items)
            return
        if line.startswith(":"):
            items.append(SSEComment(line[1:]))
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event_type = value
        elif field == "id" and "\0" not in value:
            self._last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, items: list[SSEItem]) -> None:
        """A blank line ends the event; per the spec, one without data lines is not
        dispatched (its fields other than `id` are forgotten)."""
        if self._data:
            self.dispatched += 1
            items.append(
                SSEEvent(
                    self.dispatched,
                    self._event_type,
                    "\n".join(self._data),
                    self._last_id,
                    self._retry,
                    self._block_valid,
                )
            )
            self._data = []
        self._event_type = ""
        self._retry = None


def _one_data_line(block: bytes, line_end: int) -> bool:
    """Is the line after the first (which ends at `line_end`) a `data: ` line, and the last?"""
    return block[line_end + 1 : line_end + 7] == b"data: " and block.find(b"\n", line_end + 1) < 0
