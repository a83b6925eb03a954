"""Text that grows by appends, kept as the pieces it arrived in.

A stream can send millions of pieces (fragments of a call's arguments, deltas of
text), so there is no Python object per piece: the text is kept as UTF-8 in one
growing buffer (a string holding one emoji takes 4 bytes a character, UTF-8
takes 1 for ASCII), each piece's end offset and wire event live in compact
arrays, its arrival time once per run of pieces that arrived together (in one
read). That answers "what had arrived by wire event N" with a bisect, without
replaying anything, and a slice decodes only the blocks of pieces it touches.

A lone UTF-16 surrogate (half a pair cut between pieces, see surrogates.py) is
kept as its three bytes ("surrogatepass"), so the text reads back exactly as the
pieces were: pairs are rejoined by whoever reads it, as before.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import overload

BLOCK = 64  # pieces per block: where each block begins in the buffer is kept
UTF8 = ("utf-8", "surrogatepass")
# Offsets and event numbers take 4 bytes each until one passes 2**32 - 1 (a stream
# of millions of fragments: 8 MB less per array), then 8.
NARROW, WIDE = "I", "q"


def widened(numbers: array[int], value: int) -> array[int]:
    """`numbers` as 64-bit integers, with `value` appended (it did not fit)."""
    wide = array(WIDE, numbers)
    wide.append(value)
    return wide


def same_time(a: float, b: float) -> bool:
    """Equal, and of the same sign (0.0 and -0.0 print differently)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


class PieceTimes(Sequence[float]):
    """The arrival time of each piece (seconds since the request), read from the
    runs of pieces that share one: every piece of one read arrived at once."""

    __slots__ = ("_pieces",)

    def __init__(self, pieces: TextPieces) -> None:
        self._pieces = pieces

    def __len__(self) -> int:
        return len(self._pieces.ends)

    @overload
    def __getitem__(self, number: int) -> float: ...
    @overload
    def __getitem__(self, number: slice) -> list[float]: ...
    def __getitem__(self, number: int | slice) -> float | list[float]:
        if isinstance(number, slice):
            return [self[one] for one in range(*number.indices(len(self)))]
        count = len(self)
        if number < 0:
            number += count
        if not 0 <= number < count:
            raise IndexError("piece number out of range")
        pieces = self._pieces
        return pieces._time_values[bisect_right(pieces._time_starts, number) - 1]

    def runs(self) -> Iterator[tuple[int, float]]:
        """Each run of pieces that share one time: the number of its first piece (from
        0), and that time. Successive runs have different times."""
        return zip(self._pieces._time_starts, self._pieces._time_values, strict=True)

    def __iter__(self) -> Iterator[float]:
        starts, values = self._pieces._time_starts, self._pieces._time_values
        count = len(self)
        for run, value in enumerate(values):
            stop = starts[run + 1] if run + 1 < len(starts) else count
            yield from repeat(value, stop - starts[run])


class TextPieces:
    __slots__ = (
        "_block_starts",
        "_buffer",
        "_last_time",
        "_time_starts",
        "_time_values",
        "_whole",
        "_whole_has_ed",
        "ends",
        "events",
        "length",
    )

    def __init__(self) -> None:
        self.ends = array(NARROW)  # offset just past each piece
        self.events = array(NARROW)  # the wire event that carried each piece (non-decreasing)
        self._time_starts = array("q")  # the first piece of each run with one arrival time
        self._time_values = array("d")  # that time
        self._last_time: float | None = None
        self.length = 0
        # The text as UTF-8, or (never both) as the one string `_whole`.
        self._buffer: bytearray | None = bytearray()
        self._block_starts = array("q")  # where each block of BLOCK pieces begins in it
        self._whole: str | None = None
        self._whole_has_ed = False  # `_whole`'s UTF-8 held a byte 0xED (see `surely_no_surrogates`)

    def append(self, text: str, event: int, t: float) -> None:
        # Once per fragment of every call: kept to the fewest operations.
        buffer = self._buffer
        if buffer is None:
            buffer = self._unjoined()
        ends = self.ends
        if not len(ends) % BLOCK:
            self._block_starts.append(len(buffer))
        buffer += text.encode("utf-8", "surrogatepass")  # UTF8, spelled out: the fast call
        self.length = length = self.length + len(text)
        try:
            ends.append(length)
        except OverflowError:
            self.ends = widened(ends, length)
        try:
            self.events.append(event)
        except OverflowError:
            self.events = widened(self.events, event)
        if t is not self._last_time:  # the pieces of one read share its time object
            self._last_time = t
            values = self._time_values
            if not values or not same_time(values[-1], t):
                self._time_starts.append(len(self.ends) - 1)
                values.append(t)

    def __len__(self) -> int:
        return len(self.ends)

    @property
    def times(self) -> PieceTimes:
        return PieceTimes(self)

    # -- up to a wire event ---------------------------------------------------
    def count_upto(self, event: int) -> int:
        """How many pieces had arrived by the end of wire event `event`."""
        events = self.events
        if not events or events[-1] <= event:
            return len(events)
        return bisect_right(events, event)

    def length_upto(self, event: int) -> int:
        """How many characters had arrived by the end of wire event `event`."""
        count = self.count_upto(event)
        return self.ends[count - 1] if count else 0

    # -- reading ----------------------------------------------------------------
    def text(self) -> str:
        """All of it, as one string kept in place of the buffer until the next append
        (one copy of the text, not two)."""
        whole = self._whole
        if whole is None:
            buffer = self._buffer or bytearray()
            self._whole_has_ed = b"\xed" in buffer
            whole = self._whole = buffer.decode(*UTF8)
            self._buffer = None
        return whole

    def surely_no_surrogates(self) -> bool:
        """True when the text holds no UTF-16 surrogate, lone or paired, told from the
        UTF-8 bytes without encoding the text again: a surrogate is kept as three bytes
        beginning 0xED (as U+D000 to U+D7FF are), and most text has no such byte."""
        buffer = self._buffer
        return b"\xed" not in buffer if buffer is not None else not self._whole_has_ed

    def slice(self, start: int, end: int) -> str:
        """Characters `start` to `end` of the text."""
        end = min(end, self.length)
        if start >= end:
            return ""
        if self._buffer is None:
            return self.text()[start:end]
        ends, starts = self.ends, self._block_starts
        first = bisect_right(ends, start) // BLOCK  # the blocks holding `start` and `end - 1`
        after = bisect_left(ends, end) // BLOCK + 1
        stop = starts[after] if after < len(starts) else len(self._buffer)
        text = self._buffer[starts[first] : stop].decode(*UTF8)
        offset = self.start_of(first * BLOCK)
        return text[start - offset : end - offset]

    def start_of(self, number: int) -> int:
        """The offset where piece `number` (from 0) begins."""
        return self.ends[number - 1] if number else 0

    def piece(self, number: int) -> str:
        return self.slice(self.start_of(number), self.ends[number])

    def pieces(self, first: int = 0, stop: int | None = None) -> Iterator[str]:
        """The texts of pieces `first` to `stop` (a string is made for each)."""
        stop = len(self.ends) if stop is None else min(stop, len(self.ends))
        for number in range(first, stop):
            yield self.piece(number)

    def piece_at(self, offset: int) -> int:
        """The number of the piece holding character `offset`."""
        return bisect_right(self.ends, offset)

    def _unjoined(self) -> bytearray:
        """The buffer again, for a piece that comes after `text` (rare: a fragment
        after the finish)."""
        self._buffer = bytearray(self.text().encode(*UTF8))
        self._whole = None
        return self._buffer
