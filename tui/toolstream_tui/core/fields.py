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
from functools import cache
from typing import Any, Protocol

from .pieces import TextPieces
from .records import FrozenRecord, Record
from .strict_json import compact, compact_from_orjson, value_end
from .surrogates import may_hold_surrogates, rejoin_pairs

_STRUCTURE = re.compile(r'[{}\[\]",:]')
_STRING_STOP = re.compile(r'["\\]')
_SPACE = re.compile(r"[ \t\r\n]*")
SHORT_VALUE = 4096  # an unfinished value this long is tried again at each possible end
# An unfinished value longer than this is read structure by structure, each of its
# elements passed over whole, so the text behind is dropped: waiting for the whole
# value kept its text twice over (10 MB of arguments held 40 MB as a wide string).
LONG_VALUE = 1 << 16
_CLOSER = re.compile(r'["\]}]')


@cache
def _token_begun() -> re.Pattern[str]:
    """What may follow where decoding stopped, if the text was only cut short: the
    start of a number or of true, false or null (or nothing but space). Compiled
    when a value is first found cut short: at import it cost every run 2.5M
    instructions, 1% of a short run."""
    return re.compile(
        r"\s*(?:-?\d*(?:\.\d*)?(?:[eE][-+]?\d*)?|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?)"
    )


class FieldSighting(Record):
    __slots__ = ("complete_at", "key", "named_at")

    def __init__(self, key: str, named_at: int, complete_at: int | None = None) -> None:
        self.key = key
        self.named_at = named_at  # offset of the key's closing quote
        self.complete_at = complete_at  # offset of the character that completed the value


MOST_MEMBERS = 64  # an object of more members is written whole and scanned


class WrittenObject(Record):
    """An object that arrived whole (decoded from its event), as `write_object`
    wrote its text: how long the text is, the fields FieldScanner finds in it, and
    whether parsing the text gives back this very value (`exact`: orjson wrote
    every member, so no integer is past 64 bits, no string holds a surrogate and
    nothing nests past 255; json wrote the rest, exact too when it is a number,
    literal or string without surrogates)."""

    __slots__ = ("exact", "fields", "length", "value")

    def __init__(
        self, value: dict[str, Any], length: int, fields: list[FieldSighting], exact: bool
    ) -> None:
        self.value = value
        self.length = length
        self.fields = fields
        self.exact = exact


def write_object(value: dict[str, Any]) -> tuple[str, WrittenObject] | None:
    """`strict_json.compact(value)` written member by member, and what writing it
    found: each field is named at its key's closing quote and complete at the end
    of a string or container, or at the comma or brace after a number or literal,
    where FieldScanner would find them (passing over each value costs a second
    decoding of it). None for an object of many members or a key that is not a
    string (the usual way takes them); raises what `compact` raises."""
    if len(value) > MOST_MEMBERS or any(type(key) is not str for key in value):
        return None
    texts: list[str] = []
    fields: list[FieldSighting] = []
    exact = True
    at = 1  # where the member begins: after `{` or `,`
    for key, member in value.items():
        key_text = compact(key)
        member_text = compact_from_orjson(member)
        if member_text is None:
            member_text = compact(member)
            exact = exact and _written_exactly(member)
        exact = exact and not may_hold_surrogates(key)
        named = at + len(key_text) - 1
        end = named + 2 + len(member_text)  # just past the value
        complete = end - 1 if member_text[0] in '"{[' else end
        fields.append(FieldSighting(rejoin_pairs(key), named_at=named, complete_at=complete))
        texts.append(f"{key_text}:{member_text}")
        at = end + 1
    text = "{" + ",".join(texts) + "}"
    return text, WrittenObject(value, len(text), fields, exact)


def _written_exactly(member: Any) -> bool:
    """Does json's text of a member that orjson did not write read back as it? A
    number or literal does; a string without surrogates does (pairs would be
    rejoined in the buffer's text)."""
    if type(member) is str:
        return not may_hold_surrogates(member)
    return member is None or type(member) in (bool, int, float)


class FieldReader(Protocol):
    """What finds the fields of a call: `FieldScanner` reads its text as JSON; a
    call whose text is not JSON (Vertex AI's pieces, one `path = value` line each)
    is told of by its dialect as each piece comes."""

    fields: list[FieldSighting]


class FieldScanner:
    """Follows the top level of one JSON object as its text grows. Only the text
    not yet consumed is kept (a key being read, a value waited for: at most
    `LONG_VALUE` characters of it), so a long stream costs its length once."""

    def __init__(self) -> None:
        self.fields: list[FieldSighting] = []
        self._text = ""  # the text from absolute offset `_base` on
        self._base = 0
        self._pos = 0  # absolute offset of the next character to read
        self._depth = 0
        self._arrays: list[bool] = []  # per open container: is it an array?
        self._too_deep_at: int | None = None  # no element is passed over below this depth
        self._object = False  # the top-level value is an object
        self._in_string = False
        self._string_start = 0
        self._key_string = False
        self._expect_key = False
        self._value_next = False  # a value to pass over starts at the next non-space character
        self._open: FieldSighting | None = None  # the field whose value is not complete
        self._retry_at = 0  # an unfinished value is tried again once the text reaches here
        self._waiting = False  # a top-level value was tried and had not ended yet
        self._held: list[str] = []  # text that came while waiting, not yet joined
        self._held_chars = 0

    def feed(self, text: str, *, final: bool = False) -> None:
        """Read `text`, the next piece of the buffer. `final`: no more text is known
        to be coming for now, so an unfinished value is tried again at once."""
        if self._waiting and not final and not self._worth_a_try(text):
            self._held.append(text)  # joined at the next try: no copy of the value per piece
            self._held_chars += len(text)
            return
        if self._held:
            text = "".join(self._held) + text
            self._held.clear()
            self._held_chars = 0
        self._text += text
        end = self._base + len(self._text)
        if final:
            self._retry_at = 0
        while self._pos < end and self._step(end):
            pass
        keep = self._string_start if self._in_string and self._key_string else self._pos
        self._text = self._text[keep - self._base :]
        self._base = keep

    def read_written(self, written: WrittenObject) -> None:
        """Take the fields of a whole object written as the first text (see
        `write_object`), and stand where reading that text would have left the
        scanner: past the object, at depth 0, ready for any text after it."""
        self.fields = list(written.fields)
        self._base = self._pos = written.length
        self._object = True

    @property
    def kept_chars(self) -> int:
        """The characters held for reading on: what the scanner costs in memory."""
        return len(self._text) + self._held_chars

    def _worth_a_try(self, text: str) -> bool:
        """Could the unfinished top-level value have ended in `text`, just arrived?
        A short value, if it holds a character that can end it; a long one, once
        it has grown by half since the last try."""
        end = self._base + len(self._text) + self._held_chars + len(text)
        if end >= self._retry_at:
            return True
        return end - self._pos <= SHORT_VALUE and _CLOSER.search(text) is not None

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
        """A value is passed over in one call of the C decoder, however deeply
        nested, once it has arrived whole. One cut short is tried again when it
        may have ended (`_worth_a_try`: a long value costs its length a constant
        number of times), and past `LONG_VALUE` characters it is read token by
        token, each element inside it passed over the same way; one that is not
        JSON is read token by token."""
        spaces = _SPACE.match(self._text, self._pos - self._base)
        assert spaces is not None  # the pattern matches the empty string too
        start = spaces.end()
        self._pos = self._base + start
        if start == len(self._text):
            return False
        try:
            stop = value_end(self._text, start)
        except RecursionError:
            self._value_next = self._waiting = False
            self._too_deep_at = self._depth  # each level would fail the same way
            return True
        except json.JSONDecodeError as exc:
            if _cut_short(exc, self._text):
                if len(self._text) - start > LONG_VALUE:
                    self._value_next = self._waiting = False  # its elements, one by one
                    return True
                self._waiting = True
                self._retry_at = end + (len(self._text) - start) // 2
                return False
            self._value_next = self._waiting = False
            return True
        self._value_next = self._waiting = False
        self._pos = self._base + stop
        if self._depth == 1 and self._text[start] in '"{[':  # a number or literal ends
            self._complete(self._pos - 1)  # only at what follows it
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
            self._arrays.append(char == "[")
            self._value_next = char == "[" and self._nested_skip()  # an element begins
        elif char in "}]":
            self._depth -= 1
            if self._arrays:
                self._arrays.pop()
            if self._too_deep_at is not None and self._depth < self._too_deep_at:
                self._too_deep_at = None
            if self._depth <= 1:
                self._complete(at)
        elif char == ",":
            if self._depth == 1:
                self._complete(at)
                self._expect_key = True
            self._value_next = self._nested_skip() and self._arrays[-1]
        elif char == ":" and self._depth >= 1 and not self._arrays[-1]:
            self._value_next = self._object if self._depth == 1 else self._nested_skip()

    def _nested_skip(self) -> bool:
        """Is a value inside a top-level value passed over whole (not where the
        decoder ran out of recursion)?"""
        return self._depth > 1 and (self._too_deep_at is None or self._depth <= self._too_deep_at)

    def _complete(self, at: int) -> None:
        if self._object and self._open is not None and self._open.complete_at is None:
            self._open.complete_at = at
            self._open = None


def _cut_short(error: json.JSONDecodeError, text: str) -> bool:
    """Did decoding fail only because the text stops before the value ends: in a
    string, in a \\u escape, or in a number or literal that has only begun?"""
    if error.msg.startswith("Unterminated string"):
        return True
    if error.msg.startswith("Invalid \\uXXXX escape"):
        return len(text) - error.pos < len("\\u0000")
    return _token_begun().fullmatch(text, error.pos) is not None


def _decoded_key(quoted: str) -> str:
    """The key as text; a UTF-16 pair cut between its fragments made whole."""
    try:
        key = json.loads(quoted)
    except ValueError:
        return rejoin_pairs(quoted[1:-1])
    return rejoin_pairs(key if isinstance(key, str) else quoted[1:-1])


class FieldTiming(FrozenRecord):
    __slots__ = ("complete", "key", "named")

    def __init__(self, key: str, named: float, complete: float | None) -> None:
        self.key = key
        self.named = named  # seconds: arrival of the fragment that completed the key
        self.complete = complete  # arrival of the fragment that completed the value

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "named": self.named, "complete": self.complete}


class FieldClock:
    """A scanner that follows a call's fragments (`TextPieces`) and turns text
    offsets into arrival times. Each `follow` reads only what arrived since the
    last one, so following a growing call costs its length once."""

    def __init__(self, scanner: FieldReader | None = None) -> None:
        """`scanner`: what reads the fragments' text (by default, as JSON)."""
        self.scanner: FieldReader = FieldScanner() if scanner is None else scanner
        self._pieces = TextPieces()
        self._read = 0  # characters fed to the scanner
        self._looked = 0  # characters seen to hold no `{` before any was fed
        self._final = False

    @classmethod
    def of_written(cls, written: WrittenObject) -> FieldClock:
        """The clock of a call whose first fragment was `written`, read already."""
        scanner = FieldScanner()
        scanner.read_written(written)
        clock = cls(scanner)
        clock._read = written.length
        return clock

    def follow(self, pieces: TextPieces, *, final: bool = False) -> None:
        """Read what arrived since the last call. `final`: the call will not grow
        (it was parsed or the stream ended), so every field is settled now. Until
        a `{` arrives, no JSON object can have begun: nothing is read. A reader of
        pieces that are not JSON was told of each as it came, and reads no text."""
        self._pieces = pieces
        scanner = self.scanner
        if not isinstance(scanner, FieldScanner):
            return
        if not self._read and "{" not in pieces.slice(self._looked, pieces.length):
            self._looked = pieces.length
            return
        if pieces.length > self._read or (final and not self._final):
            scanner.feed(pieces.slice(self._read, pieces.length), final=final)
            self._read = pieces.length
            self._final = final

    def arrival(self, offset: int) -> float:
        """The arrival time of the fragment holding character `offset`."""
        return self._pieces.times[bisect_left(self._pieces.ends, offset + 1)]

    def count_upto(self, length: int | None = None) -> int:
        """How many fields were named within the first `length` characters."""
        fields = self.scanner.fields
        if length is None or not fields or fields[-1].named_at < length:
            return len(fields)
        return sum(1 for field in fields if field.named_at < length)

    @property
    def count(self) -> int:
        return len(self.scanner.fields)

    def timings(self, limit: int | None = None, length: int | None = None) -> list[FieldTiming]:
        """The fields found (the first `limit` of them), as they stood when the
        first `length` characters had arrived (all of them by default)."""
        known = self.scanner.fields[:limit]
        if length is not None:
            known = [field for field in known if field.named_at < length]
        return [
            FieldTiming(
                field.key,
                self.arrival(field.named_at),
                None
                if field.complete_at is None or (length is not None and field.complete_at >= length)
                else self.arrival(field.complete_at),
            )
            for field in known
        ]
