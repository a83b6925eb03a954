"""Seeded, deterministic OpenAI chat-completions SSE streams for the benchmark.

Every chunk is a whole `chat.completion.chunk` object as the API sends it, one
`data:` event per chunk; each stream ends with a finish_reason chunk and
`data: [DONE]`. Each generator also returns what a correct consumer must
rebuild: the calls' argument text and objects, and the assistant's text.
"""

from __future__ import annotations

import json
import random
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from toolstream_stubs.generators import cut_randomly

DEFAULT_SEED = 2024
MODEL = "gpt-4o-2024-08-06"

_WORDS = ("alpha", "stream", "delta", "fragment", "payload", "lane", "index", "tool", "chunk")
_NON_ASCII = ("café", "naïve", "Zürich", "数据流", "工具调用", "参数", "🚀", "🧪", "👩‍💻", "✓")
_ESCAPES = ('say "hi"', "C:\\temp\\logs", "line one\nline two", "col\tcol", 'a " and \\ b')
_KEYS = ("id", "name", "title", "tags", "score", "ratio", "active", "owner", "notes", "meta")
_TEXT_PIECES = (
    "The ",
    "stream ",
    "arrives ",
    "in ",
    "pieces",
    ", ",
    ". ",
    "\n",
    "é",
    "数据 ",
    "🚀 ",
)


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One tool call as the generator made it."""

    index: int
    call_id: str
    name: str
    arguments_text: str
    arguments: Any


@dataclass(slots=True)
class GeneratedStream:
    name: str
    body: bytes
    events: int  # SSE events, `[DONE]` included
    calls: list[ExpectedCall] = field(default_factory=list)
    text: str = ""

    @property
    def argument_bytes(self) -> int:
        return sum(len(call.arguments_text.encode()) for call in self.calls)


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big each stream is: argument bytes per big-args stream, per parallel call,
    and the number of text deltas in `chatty`."""

    big_args: dict[str, int]
    parallel_calls: int
    parallel_call_bytes: int
    chatty_deltas: int


FULL = Sizes(
    big_args={"big-args-100k": 100_000, "big-args-300k": 300_000, "big-args-1m": 1_000_000},
    parallel_calls=64,
    parallel_call_bytes=15_625,  # 64 calls of 15,625 B = 1 MB, the size of big-args-1m
    chatty_deltas=200_000,
)
QUICK = Sizes(
    big_args={"big-args-100k": 2_000, "big-args-300k": 6_000, "big-args-1m": 20_000},
    parallel_calls=64,
    parallel_call_bytes=150,  # one record per call
    chatty_deltas=2_000,
)


# -- the chunk envelope ---------------------------------------------------------
class ChunkWriter:
    """Wraps deltas in full chunk objects and frames them as SSE events, kept in
    memory or, with `out`, written there as they are made (a 688 MB body would not
    fit comfortably in memory as Python strings)."""

    def __init__(self, rng: random.Random, out: BinaryIO | None = None) -> None:
        self._envelope: dict[str, Any] = {
            "id": "chatcmpl-" + token(rng, 29),
            "object": "chat.completion.chunk",
            "created": 1_725_000_000 + rng.randrange(1_000_000),
            "model": MODEL,
            "service_tier": "default",
            "system_fingerprint": "fp_" + token(rng, 10).lower(),
        }
        self._parts: list[str] = []
        self._out = out
        self.events = 0

    def _event(self, part: str) -> None:
        self.events += 1
        if self._out is None:
            self._parts.append(part)
        else:
            self._out.write(f"data: {part}\n\n".encode())

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        payload = {**self._envelope, "choices": [choice]}
        self._event(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))

    def call_head(
        self, index: int, call_id: str, name: str, first: bool, arguments: str = ""
    ) -> None:
        call = {"index": index, "id": call_id, "type": "function"}
        call["function"] = {"name": name, "arguments": arguments}
        role = {"role": "assistant", "content": None, "refusal": None} if first else {}
        self.chunk({**role, "tool_calls": [call]})

    def fragment(self, index: int, text: str) -> None:
        self.chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

    def finish(self, reason: str) -> None:
        self.chunk({}, reason)
        self._event("[DONE]")

    def body(self) -> bytes:
        """The whole body; empty when it was written to `out`."""
        return "".join(f"data: {part}\n\n" for part in self._parts).encode()


def token(rng: random.Random, length: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(length))


# -- argument documents ---------------------------------------------------------
def json_string(rng: random.Random, text: str) -> str:
    """A JSON string, sometimes with every non-ASCII character as a \\u escape."""
    return json.dumps(text, ensure_ascii=rng.random() < 0.3)


def random_string(rng: random.Random) -> str:
    pool = rng.choice((_WORDS, _WORDS, _NON_ASCII, _ESCAPES))
    return " ".join(rng.choice(pool) for _ in range(rng.randint(1, 4)))


def random_scalar(rng: random.Random) -> tuple[Any, str]:
    kind = rng.randrange(7)
    if kind == 0:
        number = rng.randrange(-(10**9), 10**9)
        return number, str(number)
    if kind == 1:
        ratio = round(rng.uniform(-1e6, 1e6), rng.randint(0, 6))
        return ratio, json.dumps(ratio)
    if kind == 2:
        tiny = rng.uniform(1e-9, 1e-6) * rng.choice((1, -1))  # written with an exponent
        return tiny, json.dumps(tiny)
    if kind == 3:
        flag = rng.random() < 0.5
        return flag, json.dumps(flag)
    if kind == 4:
        return None, "null"
    text = random_string(rng)
    return text, json_string(rng, text)


def random_value(rng: random.Random, depth: int) -> tuple[Any, str]:
    """A value and its JSON text (compact or spaced, escaped or raw UTF-8)."""
    roll = rng.random()
    if depth <= 0 or roll < 0.55:
        return random_scalar(rng)
    if roll < 0.78:
        items = [random_value(rng, depth - 1) for _ in range(rng.randint(0, 5))]
        comma = rng.choice((",", ", "))
        return [value for value, _ in items], "[" + comma.join(text for _, text in items) + "]"
    return random_object(rng, depth - 1)


def random_object(rng: random.Random, depth: int) -> tuple[dict[str, Any], str]:
    keys = rng.sample(_KEYS, rng.randint(1, 5))
    comma, colon = rng.choice(((",", ":"), (", ", ": ")))
    members = [(key, *random_value(rng, depth)) for key in keys]
    text = comma.join(f"{json.dumps(key)}{colon}{value_text}" for key, _, value_text in members)
    return {key: value for key, value, _ in members}, "{" + text + "}"


def record(rng: random.Random, number: int) -> tuple[dict[str, Any], str]:
    """One record: nested values plus strings that always carry the hard cases."""
    body, body_text = random_object(rng, 2)
    escaped = 'é café "quoted" back\\slash\nnew line 中文 🚀'
    value = {"n": number, "escaped": escaped, "raw": escaped, "body": body}
    text = (
        f'{{"n":{number},"escaped":{json.dumps(escaped)},'
        f'"raw":{json.dumps(escaped, ensure_ascii=False)},"body":{body_text}}}'
    )
    return value, text


def document(rng: random.Random, target_bytes: int) -> tuple[dict[str, Any], str]:
    """A JSON object of at least `target_bytes` UTF-8 bytes, with its exact text."""
    doc_id = token(rng, 12)
    head = f'{{"document_id":"{doc_id}","records":['
    records: list[Any] = []
    texts: list[str] = []
    size = len(head) + 2
    while size < target_bytes:
        value, text = record(rng, len(records))
        records.append(value)
        texts.append(text)
        size += len(text.encode()) + 1
    return {"document_id": doc_id, "records": records}, head + ",".join(texts) + "]}"


def make_call(rng: random.Random, index: int, target_bytes: int) -> ExpectedCall:
    arguments, text = document(rng, target_bytes)
    assert json.loads(text) == arguments
    name = rng.choice(("ingest_document", "store_records", "index_batch", "upsert_rows"))
    return ExpectedCall(index, "call_" + token(rng, 24), name, text, arguments)


# -- the streams -----------------------------------------------------------------
def seeded(name: str, seed: int) -> random.Random:
    return random.Random(seed * 1_000_003 + zlib.crc32(name.encode()))


def big_args(
    name: str, target_bytes: int, seed: int = DEFAULT_SEED, out: BinaryIO | None = None
) -> GeneratedStream:
    """One call whose arguments arrive in fragments of 1 to 8 characters."""
    rng = seeded(name, seed)
    writer = ChunkWriter(rng, out)
    call = make_call(rng, 0, target_bytes)
    writer.call_head(0, call.call_id, call.name, first=True)
    for piece in cut_randomly(rng, call.arguments_text, 1, 8):
        writer.fragment(0, piece)
    writer.finish("tool_calls")
    return GeneratedStream(name, writer.body(), writer.events, [call])


def parallel(
    name: str,
    calls: int,
    call_bytes: int,
    seed: int = DEFAULT_SEED,
    out: BinaryIO | None = None,
) -> GeneratedStream:
    """`calls` calls, their fragments interleaved in a seeded order. Calls start in
    index order (the next one may start at any step), as a provider numbers them."""
    rng = seeded(name, seed)
    writer = ChunkWriter(rng, out)
    expected = [make_call(rng, index, call_bytes) for index in range(calls)]
    pending = [deque(cut_randomly(rng, call.arguments_text, 1, 8)) for call in expected]
    started = 0
    live: list[int] = []  # started calls with fragments left
    while live or started < calls:
        index = rng.choice([*live, started] if started < calls else live)
        if index == started:
            writer.call_head(index, expected[index].call_id, expected[index].name, index == 0)
            live.append(index)
            started += 1
            continue
        writer.fragment(index, pending[index].popleft())
        if not pending[index]:
            live.remove(index)
    writer.finish("tool_calls")
    return GeneratedStream(name, writer.body(), writer.events, expected)


def one_chunk_calls(
    name: str, calls: int, seed: int = DEFAULT_SEED, out: BinaryIO | None = None
) -> GeneratedStream:
    """`calls` small calls, each whole in one chunk: id, name and arguments at once."""
    rng = seeded(name, seed)
    writer = ChunkWriter(rng, out)
    expected = []
    for index in range(calls):
        arguments, text = random_object(rng, 0)
        function = rng.choice(("get_weather", "lookup_user", "fetch_page", "add_row"))
        call = ExpectedCall(index, "call_" + token(rng, 24), function, text, arguments)
        writer.call_head(index, call.call_id, call.name, index == 0, call.arguments_text)
        expected.append(call)
    writer.finish("tool_calls")
    return GeneratedStream(name, writer.body(), writer.events, expected)


def chatty(name: str, deltas: int, seed: int = DEFAULT_SEED) -> GeneratedStream:
    """`deltas` text deltas of 1 to 4 characters, then one small call."""
    rng = seeded(name, seed)
    writer = ChunkWriter(rng)
    writer.chunk({"role": "assistant", "content": "", "refusal": None})
    source = "".join(rng.choice(_TEXT_PIECES) for _ in range(deltas * 2))
    pieces = cut_randomly(rng, source, 1, 4)[:deltas]
    assert len(pieces) == deltas, "the source text is too short"
    for piece in pieces:
        writer.chunk({"content": piece})
    arguments = {"query": "数据流 “café” 🚀", "limit": 5, "exact": False}
    text = json.dumps(arguments, ensure_ascii=False)
    call = ExpectedCall(0, "call_" + token(rng, 24), "search_web", text, arguments)
    writer.call_head(0, call.call_id, call.name, first=False)
    for piece in cut_randomly(rng, text, 1, 8):
        writer.fragment(0, piece)
    writer.finish("tool_calls")
    return GeneratedStream(name, writer.body(), writer.events, [call], "".join(pieces))


def generate_all(sizes: Sizes, seed: int = DEFAULT_SEED) -> list[GeneratedStream]:
    """Every benchmark stream, in the order the report shows them."""
    streams = [big_args(name, size, seed) for name, size in sizes.big_args.items()]
    streams.append(parallel("parallel-64", sizes.parallel_calls, sizes.parallel_call_bytes, seed))
    streams.append(chatty("chatty", sizes.chatty_deltas, seed))
    return streams


def write_stream(stream: GeneratedStream, out_dir: Path) -> Path:
    path = out_dir / f"{stream.name}.sse"
    path.write_bytes(stream.body)
    return path
