"""Scenario data files: loading them, rendering them to bytes, and splitting them into writes.

A scenario is a JSON file in the `scenarios/` package data directory. It either lists
`events` (each item rendered to the bytes of one event) or gives a non-stream `body`. Its
`framing` says how events are written: `sse` (the default), `ndjson` (a JSON line each:
Ollama), `json-array` (one element each of a progressively written JSON array: Gemini
without `alt=sse`) or `eventstream` (AWS event-stream frames: Bedrock). Its `endpoint`
names the API path it imitates (one of `ENDPOINT_PATTERNS`); `sequence_numbers` numbers
Responses events, and `echo_api_key` lets the server put the request's key into a `body`
in place of `{api_key}`.

A Responses scenario names only what matters in each event's `response` object: it is
rendered with every field the API always sends, and the final event (`response.completed`,
`.incomplete`, `.failed`) restates in its `output` every item done so far, as the API does
(an `output` the scenario gives is kept as it is).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal, NamedTuple, TypeVar

from toolstream_stubs.eventstream import event_frame, exception_frame
from toolstream_stubs.generators import generate_items

SplitMode = Literal["event", "random", "whole"]
SPLIT_MODES: tuple[SplitMode, ...] = ("event", "random", "whole")

CHUNK_ID = "chatcmpl-stub"
CHUNK_CREATED = 1700000000
CHUNK_MODEL = "stub-model"
DEFAULT_CONTENT_TYPE = "text/event-stream; charset=utf-8"
DEFAULT_DELAY_MS = 30.0
LINE_ENDINGS = ("\n", "\r\n", "\r")
FIELD_KEYS = ("event", "id", "retry")
CHAT_ENDPOINT = "/v1/chat/completions"
RESPONSES_ENDPOINT = "/v1/responses"
# Each provider's streaming path, as its SDK calls it (`[^/]+`: a model, project or region).
ENDPOINT_PATTERNS = (
    CHAT_ENDPOINT,
    "/v1/messages",
    RESPONSES_ENDPOINT,
    "/v1beta/models/[^/]+:streamGenerateContent",  # Gemini API
    "/v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/]+"
    ":streamGenerateContent",  # Vertex AI
    "/model/[^/]+/converse-stream",  # Bedrock ConverseStream
    "/model/[^/]+/invoke-with-response-stream",  # Bedrock InvokeModelWithResponseStream
    "/v2/chat",  # Cohere
    "/api/chat",  # Ollama, and an AI SDK backend's usual route
)
ENDPOINT = re.compile("|".join(f"(?:{pattern})" for pattern in ENDPOINT_PATTERNS))
# One path of each pattern (the model named `stub-model`).
ENDPOINTS = (
    CHAT_ENDPOINT,
    "/v1/messages",
    RESPONSES_ENDPOINT,
    "/v1beta/models/stub-model:streamGenerateContent",
    "/v1beta1/projects/stub/locations/us-central1/publishers/google/models/stub-model"
    ":streamGenerateContent",
    "/model/stub-model/converse-stream",
    "/model/stub-model/invoke-with-response-stream",
    "/v2/chat",
    "/api/chat",
)
Framing = Literal["sse", "ndjson", "json-array", "eventstream"]
Choice = TypeVar("Choice", bound=str)  # one of a spec field's allowed values
FRAMINGS: tuple[Framing, ...] = ("sse", "ndjson", "json-array", "eventstream")
FRAMING_CONTENT_TYPES = {
    "sse": DEFAULT_CONTENT_TYPE,
    "ndjson": "application/x-ndjson",
    "json-array": "application/json; charset=UTF-8",
    "eventstream": "application/vnd.amazon.eventstream",
}
RESPONSE_ID = "resp_stub"
FINAL_RESPONSE_EVENTS = ("response.completed", "response.incomplete", "response.failed")
RESPONSE_STATUS = {
    "response.created": "in_progress",
    "response.in_progress": "in_progress",
    "response.queued": "queued",
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
RESPONSE_USAGE = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 24,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 60,
}
API_KEY_PLACEHOLDER = b"{api_key}"

Item = dict[str, Any]
Writes = list[list[bytes]]


class ScenarioNotFound(LookupError):
    """No scenario data file has the requested name."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        super().__init__(f"unknown scenario {name!r}; available: {', '.join(available)}")
        self.name = name
        self.available = list(available)


class ScenarioInfo(NamedTuple):
    name: str
    description: str


@dataclass(frozen=True, eq=False)
class Scenario:
    """A fully rendered scenario. `events` is empty for a non-SSE `body` response."""

    name: str
    description: str
    status: int
    content_type: str
    headers: tuple[tuple[str, str], ...]
    delay_ms: float
    line_ending: str
    events: tuple[bytes, ...]
    rendered: bytes
    endpoint: str = CHAT_ENDPOINT
    echo_api_key: bool = False
    request: bytes | None = None  # the body a client would send (its declared tools)

    @property
    def is_sse(self) -> bool:
        return bool(self.events)

    def with_api_key(self, api_key: str) -> Scenario:
        """This scenario with `{api_key}` in its body replaced by `api_key`.

        Unchanged unless `echo_api_key` is set. In a JSON body the key is escaped as inside
        a JSON string, so a body that was valid JSON stays valid whatever the key holds.
        """
        if not self.echo_api_key:
            return self
        text = json_string_content(api_key) if "json" in self.content_type else api_key
        return replace(self, rendered=self.rendered.replace(API_KEY_PLACEHOLDER, text.encode()))

    def writes(self, split: SplitMode = "event", seed: int = 0, *, paced: bool = True) -> Writes:
        """The exact byte pieces the server writes (one HTTP chunk each), grouped.

        Group k is written after `before_event(k)` (and the pacing delay, for k > 0).
        `event` and paced `random` give one group per event; `whole` and non-SSE bodies give
        a single group. Unpaced `random` cuts the whole body, so a piece may span events; its
        piece lands in the group of the event where the piece starts (some groups may be empty).
        """
        if split not in SPLIT_MODES:
            raise ValueError(f"unknown split mode {split!r}; expected one of {SPLIT_MODES}")
        if split == "whole" or not self.is_sse:
            return [[self.rendered]] if self.rendered else []
        if split == "event":
            return [[event] for event in self.events]
        rng = random.Random(f"{seed}:{self.name}")
        if paced:
            return [random_pieces(rng, event, max_piece_size(len(event))) for event in self.events]
        mean_event_size = len(self.rendered) // len(self.events)
        pieces = random_pieces(rng, self.rendered, max_piece_size(mean_event_size))
        return group_by_event(pieces, self.events)


def max_piece_size(length: int) -> int:
    return max(1, length // 3 + 1)


def random_pieces(rng: random.Random, data: bytes, max_size: int) -> list[bytes]:
    """Cut `data` into consecutive pieces of 1..`max_size` bytes, ignoring character bounds."""
    pieces: list[bytes] = []
    start = 0
    while start < len(data):
        size = rng.randint(1, max_size)
        pieces.append(data[start : start + size])
        start += size
    return pieces


def group_by_event(pieces: list[bytes], events: Sequence[bytes]) -> Writes:
    """Group body pieces by the index of the event holding each piece's first byte."""
    event_ends = list(itertools.accumulate(len(event) for event in events))
    groups: Writes = [[] for _ in events]
    offset = 0
    for piece in pieces:
        groups[bisect.bisect_right(event_ends, offset)].append(piece)
        offset += len(piece)
    return groups


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_string_content(text: str) -> str:
    """`text` escaped for use between the quotes of a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def completion_chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    """An OpenAI `chat.completion.chunk` with one choice."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": CHUNK_CREATED,
        "model": CHUNK_MODEL,
        "choices": [choice],
    }


def scenario_names() -> list[str]:
    """Names of every scenario data file, sorted."""
    files = _scenario_dir().iterdir()
    return sorted(
        entry.name.removesuffix(".json") for entry in files if entry.name.endswith(".json")
    )


def list_scenarios() -> list[ScenarioInfo]:
    """Every scenario's name and description, sorted by name (without rendering any)."""
    return [
        ScenarioInfo(name, _read_spec(name).get("description", "")) for name in scenario_names()
    ]


@functools.cache
def load_scenario(name: str) -> Scenario:
    """Load and render a scenario by name (cached). Raises `ScenarioNotFound`."""
    spec = _read_spec(name)
    line_ending = _checked(name, spec, "line_ending", "\n", LINE_ENDINGS)
    endpoint = spec.get("endpoint", CHAT_ENDPOINT)
    if not ENDPOINT.fullmatch(endpoint):
        raise ValueError(f"scenario {name!r}: endpoint {endpoint!r} matches no API path")
    framing = _checked(name, spec, "framing", "sse", FRAMINGS)
    items = _items(spec, full_responses=endpoint == RESPONSES_ENDPOINT)
    events = render_events(list(items), framing, line_ending)
    body = _render_body(spec["body"]) if "body" in spec else b"".join(events)
    return Scenario(
        name=name,
        description=spec.get("description", ""),
        status=spec.get("status", 200),
        content_type=spec.get("content_type", FRAMING_CONTENT_TYPES[framing]),
        headers=tuple((str(key), str(value)) for key, value in spec.get("headers", {}).items()),
        delay_ms=float(spec.get("delay_ms", DEFAULT_DELAY_MS)),
        line_ending=line_ending,
        events=() if "body" in spec else events,
        rendered=body,
        endpoint=endpoint,
        echo_api_key=bool(spec.get("echo_api_key", False)),
        request=json.dumps(spec["request"]).encode() if "request" in spec else None,
    )


def _checked(
    name: str, spec: dict[str, Any], key: str, default: Choice, allowed: Sequence[Choice]
) -> Choice:
    value = spec.get(key, default)
    if value not in allowed:
        raise ValueError(f"scenario {name!r}: {key} must be one of {allowed}, not {value!r}")
    return value


def render_events(items: list[Item], framing: Framing, line_ending: str) -> tuple[bytes, ...]:
    """Each item as the bytes of one event in `framing`."""
    if framing == "ndjson":
        return tuple(_raw_or_data(item, "\n") for item in items)
    if framing == "json-array":
        last = len(items) - 1
        return tuple(
            _raw_or_data(item).join(
                [b"[" if number == 0 else b"\r\n,", b"\n]" if number == last else b""]
            )
            for number, item in enumerate(items)
        )
    if framing == "eventstream":
        return tuple(_frame_of(item) for item in items)
    return tuple(render_item(item, line_ending).encode("utf-8") for item in items)


def _raw_or_data(item: Item, end: str = "") -> bytes:
    """The item's `raw` text as it is, else its data followed by `end`."""
    return (item["raw"] if "raw" in item else _data_text(item) + end).encode("utf-8")


def _frame_of(item: Item) -> bytes:
    """An event-stream frame: `{"event": type, "chunk": …}` (`bad_crc` spoils it),
    `{"exception": type, "chunk": …}`, or `{"raw_hex": …}` for bytes as they are."""
    if "raw_hex" in item:
        return bytes.fromhex(item["raw_hex"])
    payload = _data_text(item).encode("utf-8")
    if "exception" in item:
        return exception_frame(item["exception"], payload)
    return event_frame(item["event"], payload, bad_crc=bool(item.get("bad_crc")))


def render_item(item: Item, line_ending: str) -> str:
    """Render one scenario item to the text of one SSE event."""
    if "raw" in item:
        return item["raw"]
    if "comment" in item:
        return f":{item['comment']}{line_ending}"
    lines = [*_field_lines(item), *_data_lines(item)]
    return "".join(line + line_ending for line in lines) + line_ending


def _field_lines(item: Item) -> list[str]:
    return [f"{key}: {item[key]}" for key in FIELD_KEYS if key in item]


def _data_lines(item: Item) -> list[str]:
    prefix = "data:" if item.get("no_space") else "data: "
    return [prefix + line for line in _data_text(item).split("\n")]


def _data_text(item: Item) -> str:
    if "data" in item:
        return item["data"]
    if "chunk" in item:
        return compact_json(item["chunk"])
    if "delta" in item or "finish_reason" in item:
        return compact_json(completion_chunk(item.get("delta", {}), item.get("finish_reason")))
    raise ValueError(f"unrecognised scenario item: {item!r}")


def _render_body(body: str | dict[str, Any]) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    return compact_json(body["json"]).encode("utf-8")


def _items(spec: dict[str, Any], *, full_responses: bool = False) -> Iterator[Item]:
    items = _expanded(spec)
    items = with_full_responses(items) if full_responses else items
    return with_sequence_numbers(items) if spec.get("sequence_numbers") else items


def with_full_responses(items: Iterable[Item]) -> Iterator[Item]:
    """Each Responses chunk's `response` rendered as the API sends it: every field it always
    carries under the scenario's own, and in a final event an `output` restating every item
    done so far, in output_index order."""
    done: dict[int, Any] = {}
    for item in items:
        chunk = item.get("chunk")
        if isinstance(chunk, dict):
            kind = chunk.get("type")
            if kind == "response.output_item.done" and isinstance(chunk.get("output_index"), int):
                done[chunk["output_index"]] = chunk.get("item")
            if isinstance(chunk.get("response"), dict):
                final = kind in FINAL_RESPONSE_EVENTS
                output = [done[index] for index in sorted(done)] if final else []
                response = response_object(str(kind), output) | chunk["response"]
                item = {**item, "chunk": {**chunk, "response": response}}
        yield item


def response_object(kind: str, output: list[Any]) -> dict[str, Any]:
    """The `response` object of a Responses event of type `kind`, with the fields the API
    always sends (the SDK's `Response` type requires some of them)."""
    final = kind in FINAL_RESPONSE_EVENTS
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": CHUNK_CREATED,
        "status": RESPONSE_STATUS.get(kind, "in_progress"),
        "background": False,
        "completed_at": CHUNK_CREATED + 2 if kind == "response.completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": CHUNK_MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": RESPONSE_USAGE if final and kind != "response.failed" else None,
        "user": None,
        "metadata": {},
    }


def with_sequence_numbers(items: Iterable[Item]) -> Iterator[Item]:
    """Number each Responses `chunk` (type `response.*` or `error`) 0, 1, 2, ... in order.

    `sequence_number` goes right after `type`; a chunk that already has one keeps it (and
    still takes its place in the count).
    """
    numbers = itertools.count()
    for item in items:
        yield _numbered(item, next(numbers)) if _is_responses_chunk(item.get("chunk")) else item


def _numbered(item: Item, number: int) -> Item:
    chunk = item["chunk"]
    return {**item, "chunk": {"type": chunk["type"], "sequence_number": number, **chunk}}


def _is_responses_chunk(chunk: Any) -> bool:
    if not isinstance(chunk, dict):
        return False
    kind = chunk.get("type")
    return isinstance(kind, str) and (kind.startswith("response.") or kind == "error")


def _expanded(spec: dict[str, Any]) -> Iterator[Item]:
    for item in spec.get("events", []):
        if "generate" in item:
            yield from generate_items(item["generate"])
        else:
            yield item


def _read_spec(name: str) -> dict[str, Any]:
    available = scenario_names()
    if name not in available:
        raise ScenarioNotFound(name, available)
    return _spec_file(name)


def _spec_file(name: str) -> dict[str, Any]:
    text = (_scenario_dir() / f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _scenario_dir() -> Traversable:
    return resources.files("toolstream_stubs") / "scenarios"
