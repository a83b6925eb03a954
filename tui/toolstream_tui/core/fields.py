"""When each top-level field of a call's arguments became known.

A field's key is *named* when its closing quote arrives, and its value is
*complete* when the text that ends it arrives: the closing quote, brace or
bracket of a string or container, or the comma or brace after a number or
literal. The scanner reads an append-only buffer and resumes where it stopped,
so following a growing buffer costs its length once. It never raises: text
that is not a JSON object simply yields no fields.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate

from .surrogates import rejoin_pairs

_STRUCTURE = re.compile(r'[{}\[\]",:]')
_STRING_STOP = re.compile(r'["\\]')
_SPACE = re.compile(r"[ \t\r\n]*")
_VALUE = json.JSONDecoder()


@dataclass(slots=True)
class FieldSighting:
    key: str
    named_at: int  # offset of the key's closing quote
    complete_at: int | None = None  # offset of the character that completed the value


class FieldScanner:
    """Follows the top level of one JSON object as its text grows. Only the text
    not yet consumed is kept (and a key being read), so a long stream costs its
    length once."""

    def __init__(self) -> None:
        self.fields: list[FieldSighting] = []
        self._text = ""  # the text from absolute offset `_base` on
        self._base = 0
        self._pos = 0  # absolute offset of the next character to read
        self._depth = 0
        self._object = False  # the top-level value is an object
        self._in_string = False
        self._string_start = 0
        self._key_string = False
        self._expect_key = False
        self._value_next = False  # a top-level value starts at the next non-space character
        self._open: FieldSighting | None = None  # the field whose value is not complete

    def feed(self, text: str) -> None:
        """Read `text`, the next piece of the buffer."""
        self._text += text
        end = self._base + len(self._text)
        while self._pos < end and self._step(end):
            pass
        keep = self._string_start if self._in_string and self._key_string else self._pos
        self._text = self._text[keep - self._base :]
        self._base = keep

    def _step(self, end: int) -> bool:
        """Read up to the next character that matters; False when it has not arrived."""
        if self._in_string:
            return self._step_in_string(end)
        if self._value_next:
            return self._skip_value(end)
        found = _STRUCTURE.search(self._text, self._pos - self._base)
        if found is None:
            self._pos = end
            return False
        self._structure(found.group(), self._base + found.start())
        return True

    def _skip_value(self, end: int) -> bool:
        """A top-level value that has arrived whole is passed over in one call of
        the C decoder, however deeply nested; one that has not is read token by
        token (once: a value is tried only where it starts)."""
        start = _SPACE.match(self._text, self._pos - self._base).end()
        if start == len(self._text):
            self._pos = end
            return False
        self._value_next = False
        try:
            _, stop = _VALUE.raw_decode(self._text, start)
        except (ValueError, RecursionError):
            self._pos = self._base + start
            return True
        self._pos = self._base + stop
        if self._text[start] in '"{[':  # a number or literal ends only at what follows it
            self._complete(self._pos - 1)
        return True

    def _step_in_string(self, end: int) -> bool:
        stop = _STRING_STOP.search(self._text, self._pos - self._base)
        if stop is None:
            self._pos = end
            return False
        at = self._base + stop.start()
        if stop.group() == "\\":
            if at + 1 >= end:  # the escaped character has not arrived yet
                self._pos = at
                return False
            self._pos = at + 2
            return True
        self._in_string = False
        self._pos = at + 1
        if self._key_string:
            quoted = self._text[self._string_start - self._base : at - self._base + 1]
            self._open = FieldSighting(_decoded_key(quoted), named_at=at)
            self.fields.append(self._open)
            self._expect_key = False
        elif self._depth == 1:
            self._complete(at)
        return True

    def _structure(self, char: str, at: int) -> None:
        self._pos = at + 1
        if char == '"':
            self._in_string = True
            self._string_start = at
            self._key_string = self._object and self._depth == 1 and self._expect_key
        elif char in "{[":
            if self._depth == 0:
                self._object = char == "{"
                self._expect_key = self._object
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth <= 1:
                self._complete(at)
        elif char == "," and self._depth == 1:
            self._complete(at)
            self._expect_key = True
        elif char == ":" and self._depth == 1 and self._object:
            self._value_next = True

    def _complete(self, at: int) -> None:
        if self._object and self._open is not None and self._open.complete_at is None:
            self._open.complete_at = at
            self._open = None


def _decoded_key(quoted: str) -> str:
    """The key as text; a UTF-16 pair cut between its fragments made whole."""
    try:
        key = json.loads(quoted)
    except ValueError:
        return rejoin_pairs(quoted[1:-1])
    return rejoin_pairs(key if isinstance(key, str) else quoted[1:-1])


@dataclass(frozen=True, slots=True)
class FieldTiming:
    key: str
    named: float  # seconds: arrival of the fragment that completed the key
    complete: float | None  # arrival of the fragment that completed the value

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "named": self.named, "complete": self.complete}


class FieldClock:
    """A scanner over a call's fragments that turns text offsets into arrival
    times. Feed it fragments as they arrive (or all at once)."""

    def __init__(self) -> None:
        self.scanner = FieldScanner()
        self._ends: list[int] = []  # offset just past each fragment
        self._times: list[float] = []

    def add(self, fragments: list[str], times: list[float]) -> None:
        if not fragments:
            return
        offset = self._ends[-1] if self._ends else 0
        self._ends.extend(accumulate(map(len, fragments), initial=offset))
        del self._ends[-len(fragments) - 1]  # the initial offset, already there or 0
        self._times.extend(times)
        self.scanner.feed("".join(fragments))

    def arrival(self, offset: int) -> float:
        """The arrival time of the fragment holding character `offset`."""
        return self._times[bisect_left(self._ends, offset + 1)]

    @property
    def count(self) -> int:
        return len(self.scanner.fields)

    def timings(self, limit: int | None = None) -> list[FieldTiming]:
        """The fields found so far (the first `limit` of them)."""
        return [
            FieldTiming(
                field.key,
                self.arrival(field.named_at),
                None if field.complete_at is None else self.arrival(field.complete_at),
            )
            for field in self.scanner.fields[:limit]
        ]
