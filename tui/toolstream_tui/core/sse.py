"""Incremental Server-Sent-Events decoding: bytes in, events out.

Every source (HTTP, replay file, embedded stub) feeds its bytes through this one
decoder. It follows the WHATWG event-stream rules: LF, CR and CRLF line ends (a
CRLF may be split across reads), comments, `event`/`id`/`retry` fields, `data`
with or without the space after the colon, multi-line data, and UTF-8 characters
split across reads. Bytes of an event that never got its blank line are not
dispatched but are handed back by `close()` so nothing received is lost.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
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


# A comment line another line follows (in an event waiting for its blank line, a
# line that is not blank)
_DROPPABLE_COMMENT = re.compile(rb"^:([^\n]*)\n(?=[^\n])", re.MULTILINE)

# The most bytes of one event made into Python objects at once, so that an event
# costs a small multiple of its bytes however short its lines (one string a line
# costs some 50 bytes for a line of 2): a longer event is decoded this much at a
# time (a longer line on its own), and while it waits for its blank line its
# comment lines are handed on as they come.
PIECE_BYTES = 16 * 1024


class SSEDecoder:
    """Works on bytes: line ends are normalised to LF (a CR that ends a read ends
    the line at once; an LF opening the next read is then its CRLF partner), the
    buffer is cut at blank lines, and each complete event is decoded on its own.
    Event boundaries are ASCII, so a UTF-8 character can never straddle two
    events. Cost is linear in the bytes fed, however the stream is cut.

    Memory stays a small multiple of the bytes held: an event still waiting for
    its blank line is held as bytes, and once it is longer than PIECE_BYTES its
    comment lines are handed on as each ends, and not held; a long event is
    decoded a piece at a time.

    `max_event_bytes`: an event (its lines, comment lines too, and the line ends
    between them) longer than this is never dispatched, whether it arrives whole
    or in pieces: the decoder sets `oversized` and keeps it, and everything after
    it, for `close()`. Where the stream is cut into reads never changes whether
    an event is oversized."""

    def __init__(self, max_event_bytes: int = sys.maxsize) -> None:
        self._max_event_bytes = max_event_bytes
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
        # Of the event in the buffer, once it is long (see `_hold`):
        self._looked_to = -1  # how far it was looked through for comment lines (-1: never)
        self._last_comment = -1  # where its last line starts, if that is a comment
        self._dropped = 0  # bytes of its comment lines handed on, which count towards its size
        self._dropped_valid = True  # were they UTF-8 (its `valid_utf8` says so)
        # While the buffer holds no more than this, `feed` takes its quick path
        # (-1 while an event held long is looked through: see `_hold`)
        self._quick_up_to = min(PIECE_BYTES, max_event_bytes)
        # False: no run of 19 digits in the events the latest feed returned (so
        # strict_json need not look for one in each: see `loads`)
        self.long_digit_runs = True

    @property
    def max_event_bytes(self) -> int:
        """Set once: the quick path's bound is made of it."""
        return self._max_event_bytes

    def feed(self, chunk: bytes) -> list[SSEItem]:
        chunk = self._normalise(chunk)
        if not chunk:
            return []
        buffer = self._buffer
        if self.oversized:
            buffer += chunk
            return []
        scan_from = max(len(buffer) - 1, 0)
        buffer += chunk
        end = buffer.find(b"\n\n", scan_from)
        quick_up_to = self._quick_up_to
        if end < 0:
            return self._hold() if len(buffer) > quick_up_to else []
        end = buffer.rfind(b"\n\n", end)
        if end > quick_up_to:
            return self._take_long(end)
        complete = bytes(buffer[:end])
        del buffer[: end + 2]
        self.long_digit_runs = has_long_digit_run(complete)
        items = self._take_blocks(complete.split(b"\n\n"))
        if len(buffer) > quick_up_to:
            items += self._hold()
        return items

    def _take_long(self, end: int) -> list[SSEItem]:
        """As `feed` does with short blocks, for blocks before `end` (where the
        last blank line starts) that may be long, or may have been held long."""
        held = self._first_oversized(end) if end + self._dropped > self.max_event_bytes else -1
        if held >= 0:
            items = self._take_complete(held - 2) if held else []
            self.oversized = True
            return items
        items = self._take_complete(end)
        if len(self._buffer) > self._quick_up_to:
            items += self._hold()
        return items

    def _take_complete(self, end: int) -> list[SSEItem]:
        """Dispatch the blocks before `end` (where the last blank line in the
        buffer starts), dropping them and that blank line from the buffer."""
        buffer = self._buffer
        if end <= PIECE_BYTES:
            complete = bytes(buffer[:end])
        else:  # copied once, not twice
            with memoryview(buffer) as view:
                complete = view[:end].tobytes()
        del buffer[: end + 2]
        self.long_digit_runs = has_long_digit_run(complete)
        blocks = complete.split(b"\n\n")
        if self._looked_to < 0:
            return self._take_blocks(blocks)
        return self._take_blocks_after_looking(blocks)

    def _take_blocks_after_looking(self, blocks: list[bytes]) -> list[SSEItem]:
        """Blocks of which the first was long while held: its comment lines were
        handed on then (if one was not UTF-8, its event says so)."""
        valid = self._dropped_valid
        self._forget_held()
        if valid:
            return self._take_blocks(blocks)
        items: list[SSEItem] = []
        self._take_long_block(blocks[0], items, valid=False)  # of any length
        return items + self._take_blocks(blocks[1:])

    def _take_blocks(self, blocks: list[bytes]) -> list[SSEItem]:
        """The events of whole blocks. The usual ones, one `data:` line with or
        without an `event:` line before it, are made here, in the fewest steps."""
        items: list[SSEItem] = []
        dispatched, last_id = self.dispatched, self._last_id
        piece_bytes = PIECE_BYTES
        for block in blocks:
            line_end = block.find(b"\n")
            if block[:6] == b"data: " and line_end < 0:
                kind, data = b"", block[6:]
            elif block[:7] == b"event: " and _one_data_line(block, line_end):
                kind, data = block[7:line_end], block[line_end + 7 :]
            else:
                self.dispatched = dispatched
                if len(block) > piece_bytes:
                    self._take_long_block(block, items)
                else:
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

    def _first_oversized(self, end: int) -> int:
        """Where the first block before `end` that is longer than the limit starts
        in the buffer (-1: none is)."""
        buffer, limit = self._buffer, self.max_event_bytes
        start, dropped = 0, self._dropped
        while True:
            stop = buffer.find(b"\n\n", start, end)
            stop = end if stop < 0 else stop
            if _size(buffer, start, stop, dropped) > limit:
                return start
            if stop == end:
                return -1
            start, dropped = stop + 2, 0

    def _hold(self) -> list[SSEItem]:
        """The event still waiting for its blank line, when it is long: past the
        limit it is oversized; else its comment lines that ended since it was last
        looked through are handed on, and dropped (a long run of them would cost
        far more as the items `_take_block` makes of them at its end)."""
        buffer = self._buffer
        limit = self.max_event_bytes
        if (
            len(buffer) + self._dropped > limit
            and _size(buffer, 0, len(buffer), self._dropped) > limit
        ):
            self.oversized = True
            return []
        items: list[SSEItem] = []
        if len(buffer) <= PIECE_BYTES:
            return items
        start = max(self._looked_to, 0)
        self._quick_up_to = -1
        if self._last_comment >= 0:
            end = buffer.find(b"\n", max(self._last_comment, start - 1))
            start = self._drop_last_comment(end, items) if 0 <= end < len(buffer) - 1 else -1
        if start >= 0 and (start := _comment_start(buffer, start)) >= 0:
            self._drop_comments(start, items)
        self._looked_to = len(buffer)
        return items

    def _drop_last_comment(self, end: int, items: list[SSEItem]) -> int:
        """The comment line last looked at, which ends at `end`, now has a line
        after it: it is handed on and dropped (it may be long: its text is its only
        copy). Returns where it started, where the lines not yet looked at start now."""
        buffer, start = self._buffer, self._last_comment
        with memoryview(buffer) as view:
            text, valid = _decode_view(view[start + 1 : end])
        items.append(SSEComment(text))
        self._dropped += end + 1 - start
        self._dropped_valid = self._dropped_valid and valid
        del buffer[start : end + 1]
        self._last_comment = -1
        return start

    def _drop_comments(self, start: int, items: list[SSEItem]) -> None:
        """Hand on and drop the comment lines in the buffer from `start` (where one
        starts) on. Not the last line, even if it ended: what follows it decides
        whether a blank line ends the event there (so the buffer never ends with a
        line dropped); note where it starts if it is a comment."""
        buffer = self._buffer
        texts = _DROPPABLE_COMMENT.findall(buffer, start)
        if texts:
            text, valid = self._decode(b"\n".join(texts))  # LFs are ASCII: as line by line
            items.extend([SSEComment(line) for line in text.split("\n")])
            kept = _DROPPABLE_COMMENT.sub(b"", buffer[start:])
            self._dropped += len(buffer) - start - len(kept)
            self._dropped_valid = self._dropped_valid and valid
            buffer[start:] = kept
        last_line = max(buffer.rfind(b"\n", start, len(buffer) - 1) + 1, start)
        if buffer.startswith(b":", last_line):
            self._last_comment = last_line

    def _forget_held(self) -> None:
        """The event in the buffer was dispatched or ended: start afresh."""
        self._looked_to = self._last_comment = -1
        self._dropped, self._dropped_valid = 0, True
        self._quick_up_to = min(PIECE_BYTES, self.max_event_bytes)

    def take_problems(self, upto: int | None = None) -> list[str]:
        """What could not be framed (nothing, for SSE: every byte frames)."""
        return []

    def has_problems(self) -> bool:
        return False

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: comments still pending, and the text of an event that
        never got its blank line (not dispatched)."""
        tail = bytes(self._buffer)
        self._buffer.clear()
        items: list[SSEItem] = []
        texts: list[str] = []
        valid = self._dropped_valid
        # After an event past the size limit, the rest is not read as events: it is
        # kept as it came, blank lines and comments in it (they tell where its
        # events began and ended).
        ends = tail.find(b"\n\n") if self.oversized else -1
        tail, rest = (tail, b"") if ends < 0 else (tail[:ends], tail[ends:])
        with memoryview(tail) as view:
            for start, end in _pieces(tail):
                text, piece_valid = _decode_view(view[start:end])
                valid = valid and piece_valid
                text = self._tail_text(text, items)
                if text:
                    texts.append(text)
        del tail
        rest_text, rest_valid = self._decode(rest)
        self.invalid_tail = not (valid and rest_valid)
        self.long_digit_runs = True
        self._forget_held()
        return items, "\n".join(texts) + rest_text

    @staticmethod
    def _tail_text(text: str, items: list[SSEItem]) -> str:
        """The lines of `text` that are neither blank nor comments (those are added
        to `items`), joined."""
        if "\n" not in text:  # one line, maybe long: no copy of it
            if text.startswith(":"):
                items.append(SSEComment(text[1:]))
                return ""
            return text
        unterminated = []
        for line in text.split("\n"):
            if line.startswith(":"):
                items.append(SSEComment(line[1:]))
            elif line:
                unterminated.append(line)
        return "\n".join(unterminated)

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
    def _decode(data: bytes | bytearray) -> tuple[str, bool]:
        """UTF-8 text, and whether it was valid (invalid bytes become U+FFFD)."""
        try:
            return data.decode("utf-8"), True
        except UnicodeDecodeError:
            return data.decode("utf-8", errors="replace"), False

    def _take_block(self, block: bytes, items: list[SSEItem]) -> None:
        """A block no longer than a piece."""
        text, self._block_valid = self._decode(block)
        self._take_lines(text, items)
        self._dispatch(items)

    def _take_long_block(self, block: bytes, items: list[SSEItem], valid: bool = True) -> None:
        """A block longer than a piece, taken a piece at a time, the data lines of
        each joined at once; `valid`: False if lines of it dropped earlier were not
        UTF-8. (A blank line can only open or end a block, so the event is
        dispatched after its last piece was decoded: its validity is known.)"""
        with memoryview(block) as view:
            for start, end in _pieces(block):
                mark = len(self._data)
                if end - start > PIECE_BYTES:
                    valid = self._take_long_line(block, view, start, end, items) and valid
                else:
                    text, text_valid = _decode_view(view[start:end])
                    valid = self._block_valid = valid and text_valid
                    self._take_lines(text, items)
                if len(self._data) - mark > 1:
                    self._data[mark:] = ["\n".join(self._data[mark:])]
        self._block_valid = valid
        self._dispatch(items)

    def _take_long_line(
        self, block: bytes, view: memoryview, start: int, end: int, items: list[SSEItem]
    ) -> bool:
        """A line longer than a piece: its value is decoded straight from the block
        (its only copy). Whether it was UTF-8."""
        if block.startswith(b":", start):
            text, valid = _decode_view(view[start + 1 : end])
            items.append(SSEComment(text))
            return valid
        colon = block.find(b":", start, end)
        if colon < 0:
            field, valid = _decode_view(view[start:end])
            self._take_field(field, "")
            return valid
        field, field_valid = _decode_view(view[start:colon])
        value_start = colon + 1 + block.startswith(b" ", colon + 1, end)
        value, valid = _decode_view(view[value_start:end])
        self._take_field(field, value)
        return valid and field_valid

    def _take_lines(self, text: str, items: list[SSEItem]) -> None:
        for line in text.split("\n"):
            if not line:
                self._dispatch(items)
            elif line.startswith(":"):
                items.append(SSEComment(line[1:]))
            else:
                field, colon, value = line.partition(":")
                if colon and value.startswith(" "):
                    value = value[1:]
                if field == "data":  # most lines: taken with no call more
                    self._data.append(value)
                else:
                    self._take_field(field, value)

    def _take_field(self, field: str, value: str) -> None:
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


def _size(buffer: bytes | bytearray, start: int, end: int, dropped: int) -> int:
    """The size of the event in `buffer[start:end]` (a block: no blank line inside),
    not counting a blank line opening it or an LF ending it, with `dropped` bytes of
    its comment lines held no more."""
    lead = buffer.startswith(b"\n", start, end)
    return end - start - lead - buffer.endswith(b"\n", start + lead, end) + dropped


def _pieces(data: bytes) -> Iterator[tuple[int, int]]:
    """`data` cut at line ends (start, end: the LF at `end` is in neither piece)
    into pieces of whole lines no longer than PIECE_BYTES, or of one longer line."""
    start, size = 0, len(data)
    while size - start > PIECE_BYTES:
        end = data.rfind(b"\n", start, start + PIECE_BYTES + 1)
        if end < 0:
            end = data.find(b"\n", start + PIECE_BYTES)
            if end < 0:
                break
        yield start, end
        start = end + 1
    yield start, size


def _comment_start(buffer: bytearray, start: int) -> int:
    """Where the first comment line starting at `start` or later starts (-1: none)."""
    if start == 0 and buffer.startswith(b":"):
        return 0
    line_end = buffer.find(b"\n", max(start - 1, 0))  # one byte: the quickest search
    found = buffer.find(b"\n:", line_end) if line_end >= 0 else -1
    return found + 1 if found >= 0 else -1


def _decode_view(data: memoryview) -> tuple[str, bool]:
    """As `_decode`, for bytes not copied out of a larger whole."""
    try:
        return str(data, "utf-8"), True
    except UnicodeDecodeError:
        return str(data, "utf-8", "replace"), False


def _one_data_line(block: bytes, line_end: int) -> bool:
    """Is the line after the first (which ends at `line_end`) a `data: ` line, and the last?"""
    return block[line_end + 1 : line_end + 7] == b"data: " and block.find(b"\n", line_end + 1) < 0
