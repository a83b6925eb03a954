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
the read that completed it, as without redaction; one held back comes later,
with the time of that read. Events are cut as the session frames them: SSE
events, NDJSON lines, a JSON array's elements, event-stream frames (whose
payloads are edited inside frames made anew)."""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable, Iterable
from functools import partial
from itertools import pairwise

from .events import FragmentAppended, TextAppended, WireEvent
from .eventstream import PRELUDE_BYTES, edited_headers, encode_frame, frame_length, frame_parts
from .framing import JSONArrayDecoder
from .records import Record
from .session import FRAMERS, SNIFF_BYTES, StreamSession, settled_mode, sniffed_mode
from .sse import SSEEvent

REDACTED = "[REDACTED]"
MIN_SECRET = 4  # shorter values would redact ordinary text
HOLD_MIN = 4  # characters of a secret at a piece's end that hold its event back
HOLD_BYTES = 1 << 20  # past this much held back, bytes are let through (a cut secret's
# start then stays, its rest is still removed)
BLOCKS = 4  # a secret's pieces looked for as they are, before any spelling of it
MAX_BACKSLASHES = 4  # `\u002d` nested in JSON strings up to this deep is recognised
ESCAPE_LENGTH = MAX_BACKSLASHES + 5  # the longest spelling of one character
TAIL_CHARS = 32  # a tail that may start a secret is found by its first characters
_BLANK_LINE = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_KEY_END = re.compile(rb"\s*:")


def _blocks(secret: str) -> list[bytes]:
    """`secret` cut into BLOCKS pieces (fewer when it is shorter), as UTF-8."""
    count = min(BLOCKS, len(secret))
    bounds = [len(secret) * part // count for part in range(count + 1)]
    return [secret[start:end].encode() for start, end in pairwise(bounds)]


def _escapes_of(chars: set[str]) -> str:
    """A pattern of the escapes of these characters (the last backslash on), as
    `_spellings` writes them; empty when none of them can be escaped."""
    codes = sorted(f"{ord(char):04x}" for char in chars if ord(char) <= 0xFFFF)
    alternatives = [f"u(?:{'|'.join(codes)})"] if codes else []
    alternatives += ["/"] if "/" in chars else []
    return rf"\\(?:{'|'.join(alternatives)})" if alternatives else ""


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
        self._blocks = [block for secret in self.secrets for block in _blocks(secret)]
        escapes = _escapes_of(set("".join(self.secrets)))
        self._escapes = re.compile(escapes.encode(), re.IGNORECASE) if escapes else None

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
        if not self._may_be_spelled_in(data):
            return data
        return self.data.sub(REDACTED.encode(), data)

    def _may_be_spelled_in(self, data: bytes) -> bool:
        """False when no spelling of any secret can be in `data`, told faster than by
        looking for them: a spelling with fewer escaped characters than BLOCKS leaves
        one block of the secret written as it is, and one with more holds an escape
        of one of its characters."""
        if any(block in data for block in self._blocks):
            return True
        return self._escapes is not None and self._escapes.search(data) is not None

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


Released = tuple[bytes, float]  # bytes let through, and the time of the read that brought them


def _coalesced(parts: list[Released]) -> list[Released]:
    """`parts` without empty ones, those of one time joined."""
    out: list[Released] = []
    for data, t in parts:
        if not data:
            continue
        if out and out[-1][1] == t:
            out[-1] = (out[-1][0] + data, t)
        else:
            out.append((data, t))
    return out


class _Event:
    """The bytes of the events one read completed (SSE events up to their blank
    lines, lines, array elements, frames), and what is to change in them."""

    __slots__ = ("data", "first", "framing", "opens", "pieces", "released", "t")

    def __init__(
        self,
        data: bytes,
        framing: str = "sse",
        first: int | None = None,
        opens: bool = False,
    ) -> None:
        self.data = data
        self.framing = framing
        self.first = first  # the number of the first wire event they made (None: none)
        self.opens = opens  # they begin the body
        self.released = False
        self.pieces: list[_Piece] = []
        self.t = 0.0  # the time of the read that completed them

    def rewritten(self) -> bytes:
        edited = [piece for piece in self.pieces if piece.edits]
        if not edited:
            return self.data
        # Each piece is rewritten in the event that carried it, not in another one of
        # the same read that says the same, and a line of broken JSON (a quote left
        # open) cannot hide the strings of the events after it.
        parts = _events_in(self.framing, self.data, self.opens)
        numbers = _numbers_of(self.framing, parts, self.first, self.opens)
        for piece in edited:
            edit = partial(_reencoded, old=piece.text, new=piece.redacted())
            carriers = [at for at, number in enumerate(numbers) if number == piece.number]
            for at in carriers or range(len(parts)):  # not told apart: wherever it is
                parts[at] = _rewrite(self.framing, parts[at], edit)
        return b"".join(parts)


def _events_in(framing: str, data: bytes, opens: bool) -> list[bytes]:
    """Whole events' bytes (and any rest), one by one, as their framing cuts them
    (`opens`: they begin the body)."""
    if framing == "sse":
        ends = _event_ends(data, 0)
    elif framing == "ndjson":
        ends = _line_ends(data, 0)
    elif framing == "eventstream":
        ends = _frame_ends(data)[0]
    elif framing == "json-array":
        scanner = _array_scanner(opens)
        scanner.feed(data)
        ends = scanner.element_ends or []
    else:
        ends = []
    bounds = [0, *ends]
    if bounds[-1] < len(data):
        bounds.append(len(data))
    return [data[start:end] for start, end in pairwise(bounds)]


def _array_scanner(opens: bool) -> JSONArrayDecoder:
    """A JSON array's element finder, from the body's start or from between two
    of its elements."""
    scanner = JSONArrayDecoder()
    scanner.element_ends = []
    scanner.opened = not opens
    return scanner


def _numbers_of(
    framing: str, parts: list[bytes], first: int | None, opens: bool
) -> list[int | None]:
    """The number of the wire event each part made (None: none, or not one alone),
    read by a framer of their own as the session's read them, from `first` on."""
    if first is None or framing not in FRAMERS:
        return [None] * len(parts)
    framer = _array_scanner(opens) if framing == "json-array" else FRAMERS[framing](sys.maxsize)
    numbers: list[int | None] = []
    number = first
    for part in parts:
        made = sum(1 for item in framer.feed(part) if type(item) is SSEEvent)
        numbers.append(number if made == 1 else None)
        number += made
    return numbers


class _Piece:
    """One decoded piece of a channel and the ranges of it a secret covers."""

    __slots__ = ("edits", "event", "number", "text")

    def __init__(self, text: str, event: _Event, number: int | None = None) -> None:
        self.text = text
        self.event = event
        self.number = number  # the wire event that carried it
        self.edits: list[tuple[int, int, str]] = []

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

    def take_all(
        self, texts: list[str], numbers: list[int], event: _Event, pattern: SecretPattern
    ) -> None:
        """The pieces one read brought to this channel, in order, and the wire events
        that carried them: looked at together, and kept (in `event.pieces`, to be
        rewritten) only where a secret may be."""
        assert pattern.text is not None
        if not self.tail:
            joined = texts[0] if len(texts) == 1 else "".join(texts)
            if not pattern.text.search(joined):  # the usual case: no piece is kept
                partial = pattern.partial(joined)
                if partial is not None:
                    carriers = self._carriers(texts, numbers, partial[0], event)
                    self.tail, self.holds = carriers, partial[1]
                return
        for text, number in zip(texts, numbers, strict=True):
            piece = _Piece(text, event, number)
            event.pieces.append(piece)
            self.take(piece, pattern)

    @staticmethod
    def _carriers(
        texts: list[str], numbers: list[int], begin: int, event: _Event
    ) -> list[tuple[_Piece, int]]:
        """The pieces of `texts` (joined) from character `begin` on, as a tail."""
        carriers: list[tuple[_Piece, int]] = []
        end = sum(map(len, texts))
        for text, number in zip(reversed(texts), reversed(numbers), strict=True):
            if end <= begin:
                break
            end -= len(text)
            carriers.append((_Piece(text, event, number), max(begin - end, 0)))
        carriers.reverse()
        event.pieces += (piece for piece, _ in carriers)
        return carriers

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


def _rewrite(
    framing: str, data: bytes, edit: Callable[[bytes], bytes], headers: bool = False
) -> bytes:
    """Whole events' bytes with `edit` applied where their JSON is: the bytes
    themselves, or each frame's payload (see `_rewrite_frame`; `headers`: and its
    headers' text)."""
    if framing != "eventstream":
        return edit(data)
    ends, _ = _frame_ends(data)
    out, start = [], 0
    for end in ends:
        out.append(_rewrite_frame(data[start:end], edit, headers))
        start = end
    if start < len(data):  # no frame holds these bytes: they can only be shown as text
        out.append(edit(data[start:]))
    return b"".join(out)


def _rewrite_frame(frame: bytes, edit: Callable[[bytes], bytes], headers: bool = False) -> bytes:
    """A frame with `edit` applied to its payload (and to the provider event an
    InvokeModel chunk carries in base64; `headers`: and to its headers' text, an
    error frame's message), framed again with its lengths and CRCs."""
    parts = frame_parts(frame)
    if parts is None:
        return edit(frame)
    raw_headers, payload, intact = parts
    edited = _inside_chunk(edit(payload), edit)
    new_headers = (edited_headers(raw_headers, edit) if headers else None) or raw_headers
    if edited == payload and new_headers == raw_headers:
        return frame
    return encode_frame(new_headers, edited, intact)


def _inside_chunk(payload: bytes, edit: Callable[[bytes], bytes]) -> bytes:
    """An InvokeModel `chunk` payload with `edit` applied inside the provider event
    its `bytes` hold in base64 (any other payload as it is)."""
    if b'"bytes"' not in payload:
        return payload
    try:
        encoded = json.loads(payload).get("bytes")
        inner = base64.b64decode(encoded, validate=True)
    except (AttributeError, TypeError, ValueError):  # binascii.Error is a ValueError
        return payload
    edited = edit(inner)
    if edited == inner:
        return payload
    return _reencoded(payload, encoded, base64.b64encode(edited).decode())


def _event_ends(data: bytes | bytearray, start: int) -> list[int]:
    """Where each event that is complete in `data[start:]` ends (after its blank line)."""
    if b"\r" in data:
        return [match.end() for match in _BLANK_LINE.finditer(data, start)]
    return _ends_after(data, b"\n\n", start)


def _line_ends(data: bytes | bytearray, start: int) -> list[int]:
    """Where each line that is complete in `data[start:]` ends (after its LF)."""
    return _ends_after(data, b"\n", start)


def _ends_after(data: bytes | bytearray, end: bytes, start: int) -> list[int]:
    """Just past each `end` in `data[start:]`, the next looked for after it."""
    ends = []
    at = data.find(end, start)
    while at >= 0:
        ends.append(at + len(end))
        at = data.find(end, at + len(end))
    return ends


def _frame_ends(data: bytes | bytearray) -> tuple[list[int], bool]:
    """Where each whole frame at the start of `data` ends, and whether a prelude
    that does not hold stopped the count (what follows it cannot be framed)."""
    ends, at = [], 0
    while (total := frame_length(data, at)) is not None and at + total <= len(data):
        at += total
        ends.append(at)
    return ends, len(data) - at >= PRELUDE_BYTES and total is None


class SecretScrubber:
    """Sans-I/O: response bytes in, the same bytes with every echoed secret
    removed out. `open` with the response head, `feed` every read (returns what
    may be released now, possibly nothing), `close` at the end (returns the rest).

    The body is cut into events as the session will frame it (told by the content
    type, or by the first bytes as the session tells them): each event is released
    at the read that completes it, or later, with that read's time (`feed_timed`),
    when the next piece of its text must tell whether it ends with a secret's
    start. A body that is not a stream of events goes on as it comes, but for a
    tail that could start a secret."""

    def __init__(self, secrets: Iterable[str] | SecretPattern, dialect: str | None = None) -> None:
        """`secrets`, or their pattern already compiled (compiling every spelling of
        a long key takes tens of milliseconds: once per proxied key, not per response)."""
        self.pattern = secrets if isinstance(secrets, SecretPattern) else SecretPattern(secrets)
        self._shadow = StreamSession(
            "redaction", dialect, max_bytes=sys.maxsize, max_event_bytes=sys.maxsize
        )
        self._framing: str | None = None  # None until the first bytes tell it
        self._unframed = False  # an event-stream prelude did not hold: the rest is text
        self._array: JSONArrayDecoder | None = None  # finds a JSON array's element ends
        self._pending = bytearray()  # bytes of an event not yet complete
        self._pending_at = 0  # where `_pending` begins in the body
        self._let_through = False  # the start of the pending event was released
        self._now = 0.0  # the time of the read being taken
        self._scanned = 0
        self._events: list[_Event] = []  # complete, not yet released
        self._held_bytes = 0
        self._channels: dict[object, _Channel] = {}

    def open(self, status: int, content_type: str) -> None:
        self._shadow.open(status, content_type)

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(data for data, _ in self.feed_timed(chunk, self._now))

    def feed_timed(self, chunk: bytes, t: float) -> list[Released]:
        """`feed`, with the time of the read: what may be released now, each part
        with the time of the read that completed it (an event held back for the
        next piece of its text keeps its own time)."""
        self._now = t
        self._pending += chunk
        ends = self._complete_ends(chunk)
        if ends:
            # An event whose start was let through is taken alone: read from its middle,
            # its JSON strings could not be told apart from the next events'.
            first = ends[0] if self._let_through else 0
            for start, end in ((0, first), (first, ends[-1])):
                if end > start:
                    self._take(bytes(self._pending[start:end]))
            del self._pending[: ends[-1]]
            self._pending_at += ends[-1]
            self._let_through = False
        self._scanned = len(self._pending)
        return _coalesced(self._release())

    def _complete_ends(self, chunk: bytes) -> list[int]:
        """Where the events complete in the pending bytes end (none while the
        framing is not yet told, or when the body is no stream of events)."""
        framing = self._framing or self._settle_framing()
        pending = self._pending
        if framing == "sse":
            return _event_ends(pending, max(self._scanned - 3, 0))
        if framing == "ndjson":
            return _line_ends(pending, self._scanned)
        if framing == "eventstream" and not self._unframed:
            ends, self._unframed = _frame_ends(pending)
            return ends
        if framing == "json-array" and self._array is not None:
            if self._array.element_ends is None:  # just told: all that came so far
                self._array.element_ends = []
                self._array.feed(bytes(pending))
            else:
                self._array.feed(chunk)
            ends = [end - self._pending_at for end in self._array.element_ends]
            self._array.element_ends.clear()
            return ends
        return []

    def _settle_framing(self, final: bool = False) -> str | None:
        """The framing, once the head's content type or the first bytes tell it
        (`final`: no more bytes will come)."""
        mode = self._shadow.mode
        if self._shadow.sniffing:
            head = bytes(self._pending[:SNIFF_BYTES])
            settled = settled_mode(mode, sniffed_mode(head, final))
            if settled is None:
                return None
            mode = settled
        self._framing = mode
        if mode == "json-array":
            self._array = JSONArrayDecoder()
        return mode

    @property
    def held_since(self) -> float | None:
        """The time of the first event held back (None: none is): their times come
        with them, in order, so no later read's time may come before."""
        return self._events[0].t if self._events else None

    def close(self) -> bytes:
        return b"".join(data for data, _ in self.close_timed())

    def close_timed(self) -> list[Released]:
        """`close`, each part with the time of the read that completed it."""
        first: list[Released] = []
        if self._framing is None and self._settle_framing(final=True) is not None:
            first = self.feed_timed(b"", self._now)
        if self._framing in FRAMERS:
            self._take(bytes(self._pending), last=True)  # a last event may lack its end
            self._pending.clear()
        tail = self.pattern.redact_data(bytes(self._pending))
        self._pending.clear()
        for event in self._events:
            event.released = True
        released = [(event.rewritten(), event.t) for event in self._events]
        self._events = []
        return _coalesced([*first, *released, (tail, self._now)])

    def _take(self, data: bytes, last: bool = False) -> None:
        """The events one read completed (`last`: and the body's end), as one."""
        framing = self._framing or "sse"
        redacted = self._redacted(framing, data)
        items = self._shadow.feed(redacted, 0.0)
        if last:
            items += self._shadow.close(0.0)
        by_channel: dict[object, tuple[list[str], list[int]]] = {}
        first = number = 0  # wire events are numbered from 1
        for item in items:
            if type(item) is WireEvent:
                number = item.number
                first = first or number
                continue
            if type(item) is FragmentAppended:
                key: object = ("call", item.lane)
            elif type(item) is TextAppended:
                key = ("text", item.channel)
            else:
                continue
            texts, numbers = by_channel.setdefault(key, ([], []))
            texts.append(item.text)
            numbers.append(number)
        event = _Event(redacted, framing, first or None, opens=self._pending_at == 0)
        event.t = self._now
        self._events.append(event)
        self._held_bytes += len(event.data)
        for key, (texts, numbers) in by_channel.items():
            self._channels.setdefault(key, _Channel()).take_all(texts, numbers, event, self.pattern)

    def _redacted(self, framing: str, data: bytes) -> bytes:
        """`data` with every secret found whole in it replaced; in frames, inside
        their payloads (the frames' own bytes are looked at first: no payload holds
        a secret they do not, but for InvokeModel's base64)."""
        redacted = self.pattern.redact_data(data)
        if framing != "eventstream" or (redacted == data and b'"bytes"' not in data):
            return redacted
        return _rewrite(framing, data, self.pattern.redact_data, headers=True)

    def _release(self) -> list[Released]:
        if self._held_bytes + len(self._pending) > HOLD_BYTES:
            return self._release_all()
        held = {id(event) for c in self._channels.values() if (event := c.held_event())}
        out: list[Released] = []
        while self._events and id(self._events[0]) not in held:
            event = self._events.pop(0)
            event.released = True
            self._held_bytes -= len(event.data)
            out.append((event.rewritten(), event.t))
        if self._framing is not None and self._framing not in FRAMERS:
            # No events (a whole JSON response, an error body): all may go as it comes
            # but for a tail that may start a secret; the session reads it at its end.
            out.append((self._let_through_head(), self._now))
        return out

    def _release_all(self) -> list[Released]:
        """Too much held back: let it all through, but for the end of an event
        still without its end that could be the start of a secret. A frame still
        coming stays whole (its prelude bounds it): cut, it could not be framed."""
        out = []
        for event in self._events:
            event.released = True
            out.append((event.rewritten(), event.t))
        self._events, self._held_bytes = [], 0
        if self._framing != "eventstream" or self._unframed:
            out.append((self._let_through_head(), self._now))
        return out

    def _let_through_head(self) -> bytes:
        """The pending bytes, redacted, but for the last that could start a secret."""
        cut = self._cut_before_last(self.pattern.longest)
        if cut <= 0:
            return b""
        head = self.pattern.redact_data(bytes(self._pending[:cut]))
        if self._framing in FRAMERS:
            self._shadow.feed(head, 0.0)  # no event ends in it: no piece to rewrite
            self._let_through = True
        del self._pending[:cut]
        self._pending_at += cut
        self._scanned = 0
        return head

    def _cut_before_last(self, keep: int) -> int:
        """Where to cut the pending bytes so that the last `keep` stay, moved back
        to the start of a secret that spans the cut: what is let through is
        redacted whole, and nothing of a secret is left on either side."""
        cut = len(self._pending) - keep
        if cut <= 0 or self.pattern.data is None:
            return max(cut, 0)
        for match in self.pattern.data.finditer(self._pending, max(cut - keep, 0)):
            if match.start() < cut < match.end():
                return match.start()
        return cut
