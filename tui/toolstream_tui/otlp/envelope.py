"""What a response says of itself beside the calls: the model that answered, its
id and the tokens it counted. The core reads calls, not these, so for a span
they are read from the body's first and last bytes once the stream is over.

`BodyWindow` keeps the first HEAD_BYTES and the last TAIL_BYTES of the body as
it passes (a few list operations per read, nothing decoded until the end);
`read_envelope` then frames what it kept with the core's own framers. The model
and id come in the first events of every dialect that sends them, the usage in
the last ones (Anthropic's input tokens in the first)."""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..core.eventstream import looks_like_eventstream
from ..core.session import FRAMERS

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
# Where a response keeps its model and id: at the top, or in the object an event
# wraps (Anthropic's `message`, OpenAI Responses' `response`); its usage may also
# be in Cohere's `delta`.
WRAPPERS = ("message", "response")
USAGE_WRAPPERS = (*WRAPPERS, "delta")
MODEL_KEYS = ("model", "modelVersion")
ID_KEYS = ("responseId", "messageId")  # Gemini's; the AI SDK's `start` part
# A top-level `id` is the response's in an event of no type (OpenAI chat chunks, a
# complete body) or of these; elsewhere it names a part (the AI SDK's text parts).
ID_TYPES = (None, "message", "message-start")
# The usage object's counts of input and output tokens, as each provider names them.
INPUT_KEYS = ("input_tokens", "prompt_tokens", "promptTokenCount", "inputTokens", "inputTokenCount")
OUTPUT_KEYS = (
    "output_tokens",
    "completion_tokens",
    "candidatesTokenCount",
    "outputTokens",
    "outputTokenCount",
)
# Bedrock's InvokeModel adds its own count to the provider's last event.
USAGE_KEYS = ("usage", "usageMetadata", "amazon-bedrock-invocationMetrics")
OLLAMA_COUNTS = ("prompt_eval_count", "eval_count")  # Ollama counts at the top


@dataclass(slots=True)
class Envelope:
    model: str | None = None
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def take(self, payload: dict[str, Any], outputs: bool = True) -> None:
        """One event's payload: the first model and id win, the latest counts
        (`outputs`: output tokens too; an early event's count is not the total)."""
        wrapped = [payload[key] for key in WRAPPERS if isinstance(payload.get(key), dict)]
        if self.model is None:
            self.model = _first_text([payload, *wrapped], MODEL_KEYS)
        if self.response_id is None:
            top = ("id", *ID_KEYS) if payload.get("type") in ID_TYPES else ID_KEYS
            self.response_id = _first_text([payload], top) or _first_text(wrapped, ("id",))
        for place in [payload, *(payload[key] for key in USAGE_WRAPPERS if key in payload)]:
            if not isinstance(place, dict):
                continue
            for key in USAGE_KEYS:
                usage = place.get(key)
                if isinstance(usage, dict):
                    self._count(usage.get("tokens") if "tokens" in usage else usage, outputs)
        if any(key in payload for key in OLLAMA_COUNTS):
            read, written = (payload.get(key) for key in OLLAMA_COUNTS)
            self._count({"input_tokens": read, "output_tokens": written}, outputs)

    def _count(self, usage: Any, outputs: bool) -> None:
        if not isinstance(usage, dict):
            return
        self.input_tokens = _first_count(usage, INPUT_KEYS, self.input_tokens)
        if outputs:
            self.output_tokens = _first_count(usage, OUTPUT_KEYS, self.output_tokens)


def _first_text(places: list[dict[str, Any]], keys: tuple[str, ...]) -> str | None:
    for place in places:
        for key in keys:
            value = place.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _first_count(usage: dict[str, Any], keys: tuple[str, ...], known: int | None) -> int | None:
    for key in keys:
        value = usage.get(key)
        if type(value) is int and value >= 0:
            return value
    return known


class BodyWindow:
    """The first and last bytes of a body, kept as it passes: a read is let go
    only once the reads after it hold the last `tail_bytes` without it, so the
    tail never starts later than that (and holds at most one read more)."""

    def __init__(self, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> None:
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.gap = False  # bytes between the head and the tail were let go
        self._head_bytes = head_bytes
        self._tail_bytes = tail_bytes

    def keep(self, data: bytes) -> None:
        room = self._head_bytes - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
            if not data:
                return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0]) >= self._tail_bytes:
            self.tail_size -= len(self.tail.popleft())
            self.gap = True

    def pieces(self) -> tuple[bytes, bytes | None]:
        """The head, and the tail when bytes were let go between them (else the
        head is the whole body)."""
        tail = b"".join(self.tail)
        if not self.gap:
            return bytes(self.head) + tail, None
        return bytes(self.head), tail[-self._tail_bytes :]


def read_envelope(window: BodyWindow, mode: str) -> Envelope:
    """The envelope of a body read in `mode` (the session's: a framing, `json` or
    another); fields the kept bytes do not hold stay None."""
    envelope = Envelope()
    head, tail = window.pieces()
    if mode == "json" and tail is None:
        _take_json(envelope, head)
        return envelope
    if mode not in FRAMERS:
        return envelope
    _take_framed(envelope, head, mode, outputs=tail is None)
    rest = None if tail is None else _resynced(tail, mode)
    if rest:
        _take_framed(envelope, rest, mode, outputs=True)
    return envelope


def _take_json(envelope: Envelope, data: bytes) -> None:
    try:
        payload = json.loads(data)
    except ValueError:
        return
    if isinstance(payload, dict):
        envelope.take(payload)


def _take_framed(envelope: Envelope, data: bytes, mode: str, outputs: bool) -> None:
    framer = FRAMERS[mode](len(data) + 1)
    for item in [*framer.feed(data), *framer.close()[0]]:
        text = getattr(item, "data", None)
        if not isinstance(text, str) or "{" not in text[:8]:
            continue
        try:
            payload = json.loads(text)
        except ValueError:
            continue
        if isinstance(payload, dict):
            envelope.take(_provider_event(payload), outputs)


def _provider_event(payload: dict[str, Any]) -> dict[str, Any]:
    """A Bedrock InvokeModelWithResponseStream chunk's provider event (the JSON its
    `bytes` hold in base64), or else the payload itself."""
    encoded = payload.get("bytes")
    if not isinstance(encoded, str):
        return payload
    try:
        event = json.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError):
        return payload
    return event if isinstance(event, dict) else payload


def _resynced(tail: bytes, mode: str) -> bytes | None:
    """The tail from the first event that starts in it (None: none does, or the
    framing cannot tell: a JSON array's elements span lines)."""
    if mode == "json-array":
        return None
    if mode == "eventstream":
        return next(
            (tail[at:] for at in range(len(tail)) if looks_like_eventstream(tail[at : at + 12])),
            None,
        )
    lines = tail.replace(b"\r\n", b"\n")
    separator = b"\n" if mode == "ndjson" else b"\n\n"
    at = lines.find(separator)
    return None if at < 0 else lines[at + len(separator) :]
