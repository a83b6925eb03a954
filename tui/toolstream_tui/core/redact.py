"""Secrets echoed back by a model, removed from the response bytes themselves.

A model may repeat the key it was sent: whole, JSON-escaped (`sk\\u002dlive-…`),
or cut across deltas (`sk-live-SEC` in one event, `RET123` in the next). The
response bytes are what everything else is made from — the report, the screen,
a recording, a bundle, a diff — so the bytes are rewritten, before anything
sees them, such that they decode to the text with the secret replaced by
`[REDACTED]`. A replay of the rewritten bytes then gives the same redacted
report with no secret at hand, and no file holds the secret nor both halves of
a split one.

Two passes, both only when the request carried a secret:

1. Bytes: every encoding of a secret found contiguous in the bytes of one event
   (literal, or any character as a `\\uXXXX` escape, at any JSON nesting) is
   replaced.
2. Pieces: a shadow `StreamSession` reads the same bytes to learn which decoded
   piece (a text delta, an arguments fragment) belongs to which channel (a text
   channel, a call). A secret completed across pieces of one channel is removed
   from the pieces that carry it: the first carrier gets `[REDACTED]`, the
   others lose their part; each rewritten piece's JSON string is re-encoded in
   its event's bytes. An event whose piece ends with the start of a secret (at
   least HOLD_MIN of its characters) is held back until the channel's next
   piece tells, so even that start is removed (as is one that ends inside an
   escape); a shorter start is let through (it is not worth holding the stream
   for) and only the rest is removed.

Events are released whole, in order, so an event's bytes reach the consumer at
the read that completed it, as without redaction."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable

from .events import FragmentAppended, TextAppended
from .records import Record
from .session import StreamSession

REDACTED = "[REDACTED]"
MIN_SECRET = 4  # shorter values would redact ordinary text
HOLD_MIN = 4  # characters of a secret at a piece's end that hold its event back
HOLD_BYTES = 1 << 20  # past this much held back, bytes are let through (a cut secret's
# start then stays, its rest is still removed)
MAX_BACKSLASHES = 4  # `\u002d` nested in JSON strings up to this deep is recognised
ESCAPE_LENGTH = MAX_BACKSLASHES + 5  # the longest spelling of one character
TAIL_CHARS = 32  # a tail that may start a secret is found by its first characters
_BLANK_LINE = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_KEY_END = re.compile(rb"\s*:")


def _hex(code: int) -> str:
    """Four hex digits of `code`, each letter in either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{code:04x}")


def _spellings(char: str) -> list[str]:
    """The ways `char` may be written: itself, or escaped (each way begins with
    one literal character, see `_secret_pattern`)."""
    spellings = [re.escape(char)]
    escaped = rf"\\\\{{0,{MAX_BACKSLASHES - 1}}}"  # one backslash, then up to 3 more
    if ord(char) <= 0xFFFF:
        spellings.append(rf"{escaped}u{_hex(ord(char))}")
    if char == "/":
        spellings.append(rf"{escaped}/")
    return spellings


def _char_pattern(char: str) -> str:
    return "(?:" + "|".join(_spellings(char)) + ")"


def _secret_pattern(secret: str) -> str:
    """Every spelling of `secret`, as one alternative per spelling of its first
    character: a pattern whose alternatives all begin with a literal lets `re`
    skip to the bytes that could begin a match instead of trying a match at every
    byte (about 3x faster over escaped JSON)."""
    rest = "".join(map(_char_pattern, secret[1:]))
    return "|".join(first + rest for first in _spellings(secret[0]))


def _partial_escape(char: str) -> str:
    """The start of an escape of `char`, cut short."""
    parts = re.findall(r"\[..\]|.", _hex(ord(char)))  # a pattern for each of 4 digits
    nested = ""
    for part in reversed(parts[:3]):
        nested = f"(?:{part}{nested})?"
    return rf"\\{{1,{MAX_BACKSLASHES}}}(?:u{nested})?"


def _tail_pattern(secret: str) -> str:
    """A text's tail that may spell the start of `secret`, not all of it: each
    character spelled whole, the last possibly cut inside its escape. Only the
    first TAIL_CHARS characters are checked here (regular expressions nest no
    deeper); `_spelled` checks a candidate whole."""
    nested = "(?!)" if len(secret) <= TAIL_CHARS else ""  # a whole secret is a match
    for char in reversed(secret[1:TAIL_CHARS]):
        nested = rf"(?:\Z|{_char_pattern(char)}{nested}|{_partial_escape(char)}\Z)"
    first = secret[0]
    return rf"(?:{_char_pattern(first)}{nested}|{_partial_escape(first)}\Z)"


class SecretPattern:
    """Every spelling of a set of secrets: literal, or with any character written
    as a JSON `\\uXXXX` escape (behind up to MAX_BACKSLASHES backslashes)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {secret for secret in secrets if len(secret) >= MIN_SECRET}
        self.secrets = sorted(unique, key=len, reverse=True)
        source = "|".join(map(_secret_pattern, self.secrets))
        self.text = re.compile(source) if source else None
        self.data = re.compile(source.encode()) if source else None
        self._literals = [secret.encode() for secret in self.secrets]
        self.longest_literal = max(map(len, self.secrets), default=0)
        self.longest = self.longest_literal * ESCAPE_LENGTH
        tails = "|".join(map(_tail_pattern, self.secrets))
        self._tail = re.compile(tails) if tails else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def redact_text(self, text: str) -> str:
        return self.text.sub(REDACTED, text) if self.text else text

    def redact_data(self, data: bytes) -> bytes:
        if not self.data:
            return data
        if b"\\" not in data:  # no escape anywhere: only the literal spellings can occur
            for secret in self._literals:
                data = data.replace(secret, REDACTED.encode())
            return data
        return self.data.sub(REDACTED.encode(), data)

    def partial(self, text: str, start: int = 0) -> tuple[int, bool] | None:
        """Where the longest tail of `text[start:]` that begins some secret's
        spelling starts, and whether that tail should hold its events back: it
        spells HOLD_MIN of the secret's characters, or ends inside an escape (cut
        there, the rest could not be removed without breaking the escape)."""
        at = max(start, len(text) - self.longest)
        while self._tail is not None and (candidate := self._tail.search(text, at)):
            at = candidate.start()
            found = [t for t in (_spelled(s, text, at) for s in self.secrets) if t is not None]
            if found:
                return at, any(done >= HOLD_MIN or inside for done, inside in found)
            at += 1
        return None


def _spelled(secret: str, text: str, at: int) -> tuple[int, bool] | None:
    """If `text[at:]` spells the start of `secret` but not all of it: how many of
    its characters, and whether it ends inside an escape; else None."""
    done = 0
    while at < len(text):
        if done == len(secret):
            return None
        char = secret[done]
        if text[at] == char:
            at, done = at + 1, done + 1
            continue
        if text[at] != "\\":
            return None
        after = at
        while after < len(text) and text[after] == "\\" and after - at < MAX_BACKSLASHES:
            after += 1
        rest = text[after : after + 5].lower()
        spellings = [f"u{ord(char):04x}"] + (["/"] if char == "/" else [])
        whole = next((spelling for spelling in spellings if rest.startswith(spelling)), None)
        if whole is not None:
            at, done = after + len(whole), done + 1
            continue
        ends_inside = after + len(rest) == len(text)
        return (done, True) if ends_inside and any(s.startswith(rest) for s in spellings) else None
    return (done, False) if done < len(secret) else None


# -- rewriting the pieces of a channel ------------------------------------------------


class _Event:
    """The bytes of one SSE event (up to its blank line), and what is to change
    in them."""

    __slots__ = ("data", "pieces", "released")

    def __init__(
        self, data: bytes, released: bool = False, pieces: list[_Piece] | None = None
    ) -> None:
        self.data = data
        self.released = released
        self.pieces = [] if pieces is None else pieces

    def rewritten(self) -> bytes:
        data = self.data
        for piece in self.pieces:
            if piece.edits:
                data = _reencoded(data, piece.text, piece.redacted())
        return data


class _Piece:
    """One decoded piece of a channel and the ranges of it a secret covers."""

    __slots__ = ("edits", "event", "text")

    def __init__(
        self, text: str, event: _Event, edits: list[tuple[int, int, str]] | None = None
    ) -> None:
        self.text = text
        self.event = event
        self.edits = [] if edits is None else edits

    @property
    def editable(self) -> bool:
        return not self.event.released

    def redacted(self) -> str:
        out, at = [], 0
        for start, end, replacement in sorted(self.edits):
            out += [self.text[at:start], replacement]
            at = max(at, end)
        return "".join(out) + self.text[at:]


def _reencoded(data: bytes, old: str, new: str) -> bytes:
    """`data` with every JSON string value that decodes to `old` spelled as `new`
    (escaped to ASCII: a lone surrogate can only have come as an escape)."""

    def swap(match: re.Match[bytes]) -> bytes:
        if _KEY_END.match(data, match.end()):
            return match.group()
        try:
            value = json.loads(match.group())
        except ValueError:
            return match.group()
        if value != old:
            return match.group()
        return json.dumps(new).encode()

    return _JSON_STRING.sub(swap, data)


class _Channel(Record):
    """The tail of a channel that may be the start of a secret, as the pieces
    that carry it: (piece, where in it the tail begins)."""

    __slots__ = ("holds", "tail")

    def __init__(self, tail: list[tuple[_Piece, int]] | None = None, holds: bool = False) -> None:
        self.tail = [] if tail is None else tail
        self.holds = holds  # the tail is long enough to hold its events back

    def held_event(self) -> _Event | None:
        if not self.holds:
            return None
        return next((piece.event for piece, _ in self.tail if piece.editable), None)

    def take(self, piece: _Piece, pattern: SecretPattern) -> None:
        assert pattern.text is not None
        if not self.tail and not pattern.text.search(piece.text):  # the usual case, fast
            partial = pattern.partial(piece.text)
            if partial is not None:
                self.tail, self.holds = [(piece, partial[0])], partial[1]
            return
        spans = [*self.tail, (piece, 0)]
        text = "".join(p.text[start:] for p, start in spans)
        offsets, at = [], 0
        for p, start in spans:
            offsets.append(at)
            at += len(p.text) - start
        end = 0
        for match in pattern.text.finditer(text):
            self._redact(spans, offsets, match.start(), match.end())
            end = match.end()
        partial = pattern.partial(text, end)
        if partial is None:
            self.tail, self.holds = [], False
            return
        begin, self.holds = partial
        self.tail = [
            (p, start + max(0, begin - offset))
            for (p, start), offset in zip(spans, offsets, strict=True)
            if offset + len(p.text) - start > begin
        ]

    @staticmethod
    def _redact(spans: list[tuple[_Piece, int]], offsets: list[int], start: int, end: int) -> None:
        """The secret at text[start:end]: its first editable carrier says
        [REDACTED], the other editable carriers lose their part of it."""
        replacement = REDACTED
        for (piece, begin), offset in zip(spans, offsets, strict=True):
            low = max(start, offset)
            high = min(end, offset + len(piece.text) - begin)
            if low >= high or not piece.editable:
                continue
            piece.edits.append((begin + low - offset, begin + high - offset, replacement))
            replacement = ""


def _event_ends(data: bytes | bytearray, start: int) -> list[int]:
    """Where each event that is complete in `data[start:]` ends (after its blank line)."""
    if b"\r" in data:
        return [match.end() for match in _BLANK_LINE.finditer(data, start)]
    ends = []
    at = data.find(b"\n\n", start)
    while at >= 0:
        ends.append(at + 2)
        at = data.find(b"\n\n", at + 2)
    return ends


class SecretScrubber:
    """Sans-I/O: response bytes in, the same bytes with every echoed secret
    removed out. `open` with the response head, `feed` every read (returns what
    may be released now, possibly nothing), `close` at the end (returns the rest)."""

    def __init__(self, secrets: Iterable[str] | SecretPattern, dialect: str | None = None) -> None:
        """`secrets`, or their pattern already compiled (compiling every spelling of
        a long key takes tens of milliseconds: once per proxied key, not per response)."""
        self.pattern = secrets if isinstance(secrets, SecretPattern) else SecretPattern(secrets)
        self._shadow = StreamSession(
            "redaction", dialect, max_bytes=sys.maxsize, max_event_bytes=sys.maxsize
        )
        self._pending = bytearray()  # bytes of an event still without its blank line
        self._scanned = 0
        self._events: list[_Event] = []  # complete, not yet released
        self._held_bytes = 0
        self._channels: dict[object, _Channel] = {}

    def open(self, status: int, content_type: str) -> None:
        self._shadow.open(status, content_type)

    def feed(self, chunk: bytes) -> bytes:
        self._pending += chunk
        ends = _event_ends(self._pending, max(self._scanned - 3, 0))
        if ends:
            # A secret holds no line end: the complete events are redacted at once,
            # then read one at a time, to tell which event carried which piece.
            complete = self.pattern.redact_data(bytes(self._pending[: ends[-1]]))
            del self._pending[: ends[-1]]
            start = 0
            for end in _event_ends(complete, 0):
                self._take(complete[start:end])
                start = end
        self._scanned = len(self._pending)
        return self._release()

    def close(self) -> bytes:
        tail = self.pattern.redact_data(bytes(self._pending))
        self._pending.clear()
        for event in self._events:
            event.released = True
        released = b"".join(event.rewritten() for event in self._events)
        self._events = []
        return released + tail

    def _take(self, data: bytes) -> None:
        event = _Event(data)
        self._events.append(event)
        self._held_bytes += len(event.data)
        for item in self._shadow.feed(event.data, 0.0):
            if type(item) is TextAppended:
                self._take_piece(("text", item.channel), item.text, event)
            elif type(item) is FragmentAppended:
                self._take_piece(("call", item.lane), item.text, event)

    def _take_piece(self, key: object, text: str, event: _Event) -> None:
        piece = _Piece(text, event)
        event.pieces.append(piece)
        self._channels.setdefault(key, _Channel()).take(piece, self.pattern)

    def _release(self) -> bytes:
        if self._held_bytes + len(self._pending) > HOLD_BYTES:
            return self._release_all()
        held = {id(event) for c in self._channels.values() if (event := c.held_event())}
        out: list[bytes] = []
        while self._events and id(self._events[0]) not in held:
            event = self._events.pop(0)
            event.released = True
            self._held_bytes -= len(event.data)
            out.append(event.rewritten())
        return b"".join(out)

    def _release_all(self) -> bytes:
        """Too much held back: let it all through, but for the end of an event
        still without its blank line that could be the start of a secret."""
        out = []
        for event in self._events:
            event.released = True
            out.append(event.rewritten())
        self._events, self._held_bytes = [], 0
        keep = self.pattern.longest
        if len(self._pending) > keep:
            pending = self.pattern.redact_data(bytes(self._pending))
            head, tail = pending[: len(pending) - keep], pending[len(pending) - keep :]
            self._shadow.feed(head, 0.0)  # no blank line in it: no piece to rewrite
            self._pending, self._scanned = bytearray(tail), 0
            out.append(head)
        return b"".join(out)
