"""Every wire event of a tape (and every SSE comment), for the raw log.

The stream's core keeps no copy of each event's data: the screen's other parts
are drawn from what the events built. The raw log is the one place that shows
the events themselves, so it decodes them again from the tape (the bytes as
they arrived), only once somebody opens it, a budget of work at a time so keys
stay answered, and writes each one to an anonymous temporary file: a stream of
two million events costs a few arrays in memory, however large its data.

The tape is cut into events as the session cut it (`framing_of`): SSE events,
NDJSON lines, JSON-array elements or AWS event-stream frames, numbered alike.
"""

from __future__ import annotations

import sys
import tempfile
import time
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import IO

from ..core.framing import Framer
from ..core.session import FRAMERS, mode_for, sniffed_mode
from ..core.sse import SSEComment, SSEItem
from ..sources.base import ResponseHead
from ..sources.recording import Tape

READ_BLOCK = 64 * 1024  # the most of the tape decoded at a time
SNIFF_BLOCK = 64 * 1024  # the most of an untyped body's start read to tell its framing


@dataclass(frozen=True, slots=True)
class WireLine:
    number: int  # the wire event's number; for a comment, the events before it
    t: float
    comment: bool
    event: str
    id: str | None
    data: str  # the data, or the comment's text


class WireEvents:
    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.widest = 0  # characters in the longest data or comment so far
        self._decoder: Framer | None = None  # once the framing is known
        self._undecided_at = -1  # the tape's length when its start told no framing yet
        self._events = 0  # the wire events decoded
        self._decoded = 0  # bytes of the tape decoded
        self._closed = False  # the decoder was told the tape ended
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="toolstream-wire-")  # noqa: SIM115
        self._written = 0
        self._pending = bytearray()
        self._starts = array("q")  # where each line's record starts in the file
        self._numbers = array("q")
        self._times = array("d")
        self._comments = bytearray()  # 1 for a comment line
        self._event_sizes = array("i")  # bytes of the event name, then of the id (-1: none)
        self._id_sizes = array("i")

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def caught_up(self) -> bool:
        """All the tape holds is decoded (or it waits for more bytes, which tell its
        framing)."""
        length = self.tape.length
        return self._decoded >= length or self._undecided_at == length

    def index(self, budget: float, *, complete: bool = False) -> bool:
        """Decode what the tape holds beyond what was decoded, for at most `budget`
        seconds (real time: it bounds work, it is never displayed). `complete`: the
        tape will not grow (comments in an unterminated tail are shown then). True
        when caught up."""
        deadline = time.perf_counter() + budget
        tape = self.tape
        decoder = self._decoder or self._framer(complete)
        while decoder is not None and self._decoded < tape.length:
            read = bisect_right(tape.read_ends, self._decoded)
            end = min(tape.read_ends[read], self._decoded + READ_BLOCK)
            self._take(decoder.feed(tape.body(self._decoded, end)), tape.read_times[read])
            self._decoded = end
            if time.perf_counter() >= deadline:
                break
        if decoder is not None and complete and self.caught_up and not self._closed:
            self._closed = True
            # An NDJSON line without its newline is an event; SSE hands on comments only.
            self._take(decoder.close()[0], tape.read_times[-1] if tape.read_times else 0.0)
        self._flush()
        return self.caught_up

    def lines_upto(self, event: int) -> int:
        """How many lines had arrived by the end of wire event `event`."""
        return bisect_right(self._numbers, event)

    def line(self, number: int) -> WireLine:
        self._flush()
        start = self._starts[number]
        end = self._starts[number + 1] if number + 1 < len(self._starts) else self._written
        self._file.seek(start)
        record = self._file.read(end - start)
        event_end = self._event_sizes[number]
        id_end = event_end + max(0, self._id_sizes[number])
        return WireLine(
            number=self._numbers[number],
            t=self._times[number],
            comment=bool(self._comments[number]),
            event=_text(record[:event_end]),
            id=_text(record[event_end:id_end]) if self._id_sizes[number] >= 0 else None,
            data=_text(record[id_end:]),
        )

    def close(self) -> None:
        self._file.close()

    def _framer(self, complete: bool) -> Framer | None:
        """The decoder of the tape's framing, once its head and first bytes tell it
        (`complete`: no more bytes will come to tell it)."""
        tape = self.tape
        framing = framing_of(tape.head, tape.body(0, SNIFF_BLOCK), final=complete)
        if framing is None:
            self._undecided_at = tape.length
            return None
        self._decoder = FRAMERS[framing](sys.maxsize)
        return self._decoder

    def _take(self, items: list[SSEItem], t: float) -> None:
        for item in items:
            if isinstance(item, SSEComment):
                self._add(self._events, t, True, "", None, item.text)
            else:
                self._events = item.number
                self._add(item.number, t, False, item.event, item.id, item.data)

    def _add(
        self, number: int, t: float, comment: bool, event: str, call_id: str | None, data: str
    ) -> None:
        parts = [_bytes(event), _bytes(call_id or ""), _bytes(data)]
        self._starts.append(self._written + len(self._pending))
        self._event_sizes.append(len(parts[0]))
        self._id_sizes.append(-1 if call_id is None else len(parts[1]))
        self._pending += b"".join(parts)
        self._numbers.append(number)
        self._times.append(t)
        self._comments.append(comment)
        self.widest = max(self.widest, len(data))

    def _flush(self) -> None:
        if self._pending:
            self._file.seek(0, 2)
            self._file.write(self._pending)
            self._written += len(self._pending)
            self._pending.clear()


def framing_of(head: ResponseHead | None, start: bytes, *, final: bool) -> str | None:
    """The framing the session reads a body with (see `StreamSession.open` and
    `_sniff`): told by the content type or, untyped or typed JSON, by the body's
    `start` (None while that could still be more than one; `final`: it is the
    whole body). A body that is no stream of events is decoded as SSE, as the
    session does with one that looks like SSE."""
    status = head.status if head is not None else 200
    mode = mode_for(status, head.content_type if head is not None else "")
    if mode in FRAMERS:
        return mode
    if mode not in ("sniff", "json"):  # an error body, or a body of another type
        return "sse"
    sniffed = sniffed_mode(start, final)
    if sniffed is None and not final:
        return None
    if sniffed in FRAMERS and (sniffed == "json-array" or mode == "sniff"):
        return sniffed
    return "sse"


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")
