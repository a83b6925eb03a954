"""Seeded expansion of `generate` scenario items into many tool-call delta items.

Everything here is deterministic: the same spec always yields the same items.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterable, Iterator
from typing import Any

Item = dict[str, Any]

PARALLEL_TOOL_NAMES = ("get_weather", "get_time", "search_web", "read_file")

_CHINESE = ("北京", "上海", "流式传输", "工具调用", "数据块", "参数")
_ACCENTED = ("café", "naïve", "résumé", "Zürich", "São Paulo", "Ångström", "crème brûlée")
_EMOJI = ("😀", "🚀", "🎉", "🌍", "👩‍💻", "🧪")
_NEEDS_ESCAPES = ('say "hi"', "C:\\temp\\logs", "line one\nline two", "col\tcol", 'a " and \\ b')
_PLAIN = ("alpha", "bravo", "stream", "delta", "fragment", "index", "payload", "lane")
_POOLS = (_CHINESE, _ACCENTED, _EMOJI, _NEEDS_ESCAPES, _PLAIN)


def generate_items(spec: dict[str, Any]) -> list[Item]:
    """Expand one `{"generate": spec}` scenario item into delta items."""
    kind = spec.get("kind")
    if kind == "huge-args":
        return huge_args_items(spec)
    if kind == "many-parallel":
        return many_parallel_items(spec)
    raise ValueError(f"unknown generate kind: {kind!r}")


def huge_args_items(spec: dict[str, Any]) -> list[Item]:
    """One call (index 0) whose arguments are about `bytes` bytes of nested JSON."""
    rng = random.Random(spec.get("seed", 0))
    arguments = generated_json(rng, spec.get("bytes", 1_000_000))
    low, high = spec.get("fragment", (16, 64))
    head = call_head_item(0, "call_huge_1", "ingest_document")
    fragments = cut_randomly(rng, arguments, low, high)
    return [head, *(call_fragment_item(0, fragment) for fragment in fragments)]


def many_parallel_items(spec: dict[str, Any]) -> list[Item]:
    """`calls` calls whose heads, then argument fragments, are interleaved round-robin."""
    rng = random.Random(spec.get("seed", 0))
    low, high = spec.get("fragment", (3, 12))
    per_call_bytes = spec.get("bytes_per_call", 600)
    queues = [
        _parallel_call_items(rng, index, per_call_bytes, low, high)
        for index in range(spec.get("calls", 16))
    ]
    return list(round_robin(queues))


def _parallel_call_items(
    rng: random.Random, index: int, target_bytes: int, low: int, high: int
) -> list[Item]:
    name = PARALLEL_TOOL_NAMES[index % len(PARALLEL_TOOL_NAMES)]
    head = call_head_item(index, f"call_p{index:02d}", name)
    fragments = cut_randomly(rng, generated_json(rng, target_bytes), low, high)
    return [head, *(call_fragment_item(index, fragment) for fragment in fragments)]


def round_robin(queues: Iterable[list[Item]]) -> Iterator[Item]:
    """Take one item from each queue in turn until all are empty."""
    for round_items in itertools.zip_longest(*queues):
        yield from (item for item in round_items if item is not None)


def call_head_item(index: int, call_id: str, name: str) -> Item:
    """The first fragment of a call: id, type and name, with empty arguments."""
    function = {"name": name, "arguments": ""}
    call = {"index": index, "id": call_id, "type": "function", "function": function}
    return {"delta": {"tool_calls": [call]}}


def call_fragment_item(index: int, fragment: str) -> Item:
    """A later fragment of a call: only its index and a piece of the arguments."""
    return {"delta": {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}}


def cut_randomly(rng: random.Random, text: str, low: int, high: int) -> list[str]:
    """Cut `text` into consecutive pieces of `low`..`high` characters (the last may be shorter)."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        size = rng.randint(low, high)
        pieces.append(text[start : start + size])
        start += size
    return pieces


def generated_json(rng: random.Random, target_bytes: int) -> str:
    """A JSON object text of at least `target_bytes` UTF-8 bytes built from random sections.

    Every fifth section is serialised with `ensure_ascii=True`, so the text mixes raw
    non-ASCII characters with `\\u00e9`-style and surrogate-pair escapes.
    """
    head, tail = '{"document":"stub-doc","sections":[', "]}"
    sections: list[str] = []
    size = len(head) + len(tail)
    while size < target_bytes:
        section = _section_text(rng, len(sections))
        sections.append(section)
        size += len(section.encode("utf-8")) + 1
    return head + ",".join(sections) + tail


def _section_text(rng: random.Random, number: int) -> str:
    escape_non_ascii = number % 5 == 4
    return json.dumps(_section(rng, number), ensure_ascii=escape_non_ascii, separators=(",", ":"))


def _section(rng: random.Random, number: int) -> dict[str, Any]:
    return {
        "n": number,
        "title": _phrase(rng),
        "tags": [rng.choice(_PLAIN) for _ in range(rng.randint(0, 3))],
        "score": round(rng.uniform(-1000, 1000), 3),
        "count": rng.randint(0, 1_000_000),
        "ok": rng.random() < 0.5,
        "parent": None if rng.random() < 0.3 else rng.randint(0, number),
        "body": [_phrase(rng) for _ in range(rng.randint(1, 4))],
        "grid": [[rng.randint(-9, 9) for _ in range(3)] for _ in range(rng.randint(0, 2))],
        "meta": {"lang": rng.choice(("zh", "fr", "de", "en")), "extra": {}, "refs": []},
    }


def _phrase(rng: random.Random) -> str:
    return " ".join(rng.choice(rng.choice(_POOLS)) for _ in range(rng.randint(2, 6)))
