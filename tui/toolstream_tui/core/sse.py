"""Incremental Server-Sent-Events decoding: bytes in, events out.

Every source (HTTP, replay file, embedded stub) feeds its bytes through this one
decoder. It follows the WHATWG event-stream rules: LF, CR and CRLF line ends (a
CRLF may be split across reads), comments, `event`/`id`/`retry` fields, `data`
with or without the space after the colon, multi-line data, and UTF-8 characters
split across reads. Bytes of an event that never got its blank line are not
dispatched but are handed back by `close()` so nothing received is lost.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. `number` counts dispatched events from 1."""

    number: int
    event: str
    data: str
    id: str | None
    retry: int | None


@dataclass(frozen=True, slots=True)
class SSEComment:
    """A comment line (`: keep-alive`); kept so the raw log shows it."""

    text: str


SSEItem = SSEEvent | SSEComment


class SSEDecoder:
    def __init__(self) -> None:
        self._text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial_line: list[str] = []
        self._skip_leading_lf = False
        self._at_stream_start = True
        self._pending_lines: list[str] = []
        self._event_type = ""
        self._data: list[str] = []
        self._last_id: str | None = None
        self._retry: int | None = None
        self.dispatched = 0

    def feed(self, chunk: bytes) -> list[SSEItem]:
        return self._feed_text(self._text_decoder.decode(chunk))

    def close(self) -> tuple[list[SSEItem], str]:
        """End of stream: returns items still decodable and the undispatched tail text."""
        items = self._feed_text(self._text_decoder.decode(b"", final=True))
        if self._partial_line:
            self._pending_lines.append("".join(self._partial_line))
            self._partial_line = []
        tail = "\n".join(self._pending_lines)
        self._pending_lines = []
        return items, tail

    def _feed_text(self, text: str) -> list[SSEItem]:
        if not text:
            return []
        if self._at_stream_start:
            self._at_stream_start = False
            text = text.removeprefix("\ufeff")
        if self._skip_leading_lf:
            self._skip_leading_lf = False
            text = text.removeprefix("\n")
        if "\n" not in text and "\r" not in text:
            self._partial_line.append(text)
            return []
        self._skip_leading_lf = text.endswith("\r")
        lines = _LINE_BREAK.split(text)
        lines[0] = "".join(self._partial_line) + lines[0]
        last = lines.pop()
        self._partial_line = [last] if last else []
        items: list[SSEItem] = []
        for line in lines:
            item = self._take_line(line)
            if item is not None:
                items.append(item)
        return items

    def _take_line(self, line: str) -> SSEItem | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return SSEComment(line[1:])
        self._pending_lines.append(line)
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
        return None

    def _dispatch(self) -> SSEEvent | None:
        """A blank line ends the event; per the spec, one without data lines is not
        dispatched (its fields other than `id` are forgotten)."""
        self._pending_lines = []
        if not self._data:
            self._event_type = ""
            self._retry = None
            return None
        self.dispatched += 1
        event = SSEEvent(
            number=self.dispatched,
            event=self._event_type,
            data="\n".join(self._data),
            id=self._last_id,
            retry=self._retry,
        )
        self._event_type = ""
        self._data = []
        self._retry = None
        return event
