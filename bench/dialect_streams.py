"""Seeded, deterministic streams in the new providers' wire shapes, for
`python -m bench dialects`.

Each stream carries about `target` bytes of tool-call arguments, framed as its
provider frames it: Gemini's SSE `data:` chunks (CRLF-ended) and its JSON array
written element by element, Vertex AI's `partialArgs`, Bedrock ConverseStream
event-stream frames, Cohere v2 SSE, Ollama NDJSON and the AI SDK's UI message
stream. Each generator also returns the calls a correct consumer rebuilds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from toolstream_stubs.eventstream import event_frame
from toolstream_stubs.generators import cut_randomly

from .streams import DEFAULT_SEED, ExpectedCall, make_call, seeded, token

FULL_BYTES = 1_000_000
QUICK_BYTES = 12_000
SUFFIX = {"sse": ".sse", "ndjson": ".ndjson", "json-array": ".json", "eventstream": ".bin"}
GEMINI_MODEL = "gemini-2.5-flash"
TEXTS = ("I'll store the records now.", "Storing the batch: ", "数据流 café 🚀 ")


@dataclass(slots=True)
class DialectStream:
    name: str
    dialect: str  # what the headless report must say it detected
    framing: str  # sse, ndjson, json-array or eventstream
    body: bytes
    events: int
    calls: list[ExpectedCall] = field(default_factory=list)
    ids_on_wire: bool = True  # whether the calls' ids come from the stream

    @property
    def argument_bytes(self) -> int:
        return sum(len(call.arguments_text.encode()) for call in self.calls)


def calls_for(rng: random.Random, target: int, count: int) -> list[ExpectedCall]:
    """`count` calls sharing `target` bytes of arguments (bench/streams.py's documents:
    escapes, \\u escapes, raw UTF-8, emoji, exponents)."""
    return [make_call(rng, index, max(target // count, 1)) for index in range(count)]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def sse_event(data: str, event: str | None = None, end: str = "\n") -> bytes:
    head = f"event: {event}{end}" if event else ""
    return f"{head}data: {data}{end}{end}".encode()


# -- Gemini and Vertex AI ----------------------------------------------------------
def gemini_chunk(
    parts: list[dict[str, Any]], response_id: str, finish: str | None = None
) -> dict[str, Any]:
    """A GenerateContentResponse as the API writes it (camelCase, `usageMetadata`)."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {"candidates": [candidate]}
    chunk["usageMetadata"] = {"promptTokenCount": 211, "totalTokenCount": 211}
    chunk["modelVersion"] = GEMINI_MODEL
    chunk["responseId"] = response_id
    return chunk


def gemini_chunks(rng: random.Random, target: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """Text, then 16 calls whose arguments arrive whole, one functionCall part per
    chunk (as parallel calls come); the last chunk says STOP."""
    calls = calls_for(rng, target, 16)
    response_id = token(rng, 22)
    chunks = [gemini_chunk([{"text": TEXTS[0]}], response_id)]
    for number, call in enumerate(calls):
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
        if number == 0:  # a thinking model signs its first call
            part["thoughtSignature"] = token(rng, 64)
        finish = "STOP" if number == len(calls) - 1 else None
        chunks.append(gemini_chunk([part], response_id, finish))
    return chunks, calls


def gemini_sse_body(chunks: list[dict[str, Any]]) -> bytes:
    """Each chunk a `data:` event, its lines ended by CRLF as the Gemini API ends them."""
    return b"".join(
        sse_event(json.dumps(chunk, ensure_ascii=False), end="\r\n") for chunk in chunks
    )


def gemini_sse(name: str, target: int, seed: int) -> DialectStream:
    chunks, calls = gemini_chunks(seeded(name, seed), target)
    body = gemini_sse_body(chunks)
    return DialectStream(name, "gemini", "sse", body, len(chunks), calls, ids_on_wire=False)


def gemini_array(name: str, target: int, seed: int) -> DialectStream:
    """streamGenerateContent without `alt=sse`: one JSON array, an element per chunk,
    each pretty-printed, separated by `\\r\\n,`."""
    chunks, calls = gemini_chunks(seeded(name, seed), target)
    elements = [json.dumps(chunk, ensure_ascii=False, indent=2) for chunk in chunks]
    body = ("[" + "\r\n,".join(elements) + "\n]").encode()
    return DialectStream(name, "gemini", "json-array", body, len(chunks), calls, ids_on_wire=False)


def vertex_partial(name: str, target: int, seed: int) -> DialectStream:
    """Vertex AI with streamFunctionCallArguments: a call opens with its name and
    `willContinue`; each value then arrives at its JSON path in `partialArgs`, a
    string in pieces of 8 to 40 characters (`willContinue`) closed by an empty one,
    other values whole; an empty functionCall ends the call, and a last chunk the
    turn (STOP)."""
    rng = seeded(name, seed)
    response_id = token(rng, 22)
    calls = [vertex_call(rng, index, target // 4) for index in range(4)]
    chunks = [vertex_chunk({"text": TEXTS[0]}, response_id)]
    for call in calls:
        opening = {"functionCall": {"name": call.name, "willContinue": True}}
        chunks.append(vertex_chunk(opening | {"thoughtSignature": token(rng, 64)}, response_id))
        for partial in partial_args(rng, call.arguments):
            function_call = {"partialArgs": [partial], "willContinue": True}
            chunks.append(vertex_chunk({"functionCall": function_call}, response_id))
        chunks.append(vertex_chunk({"functionCall": {}}, response_id))
    last = vertex_chunk({"text": ""}, response_id)
    last["candidates"][0]["finishReason"] = "STOP"
    last["usageMetadata"] |= {"promptTokenCount": 211, "candidatesTokenCount": 98_000}
    chunks.append(last)
    body = gemini_sse_body(chunks)
    return DialectStream(name, "gemini", "sse", body, len(chunks), calls, ids_on_wire=False)


def vertex_chunk(part: dict[str, Any], response_id: str) -> dict[str, Any]:
    """A Vertex AI GenerateContentResponse: no candidate index, `createTime`."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}}],
        "usageMetadata": {"trafficType": "ON_DEMAND"},
        "modelVersion": "gemini-3.1-pro-preview",
        "createTime": "2026-12-06T04:00:00.000000Z",
        "responseId": response_id,
    }


def vertex_call(rng: random.Random, index: int, target: int) -> ExpectedCall:
    """A document of records (number, title, long body, flag, null notes): values
    at paths such as `$.records[3].body`."""
    records: list[dict[str, Any]] = []
    arguments = {"document_id": token(rng, 12), "records": records}
    size = 0
    while size < target:
        record = {"n": len(records), "title": long_text(rng, 2, 8), "body": long_text(rng, 20, 200)}
        record |= {"active": rng.random() < 0.5, "notes": None}
        records.append(record)
        size += len(compact(record).encode())
    name = rng.choice(("ingest_document", "store_records", "index_batch"))
    return ExpectedCall(index, "", name, compact(arguments), arguments)


def long_text(rng: random.Random, low: int, high: int) -> str:
    words = ("stream", "café", "数据流", "🚀", 'say "hi"', "C:\\temp", "line\nbreak", "tool")
    return " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))


def partial_args(rng: random.Random, value: Any, path: str = "$") -> list[dict[str, Any]]:
    """The partialArgs pieces of `value`, leaf by leaf in document order."""
    if isinstance(value, dict):
        return [
            piece
            for key, item in value.items()
            for piece in partial_args(rng, item, f"{path}.{key}")
        ]
    if isinstance(value, list):
        return [
            piece
            for number, item in enumerate(value)
            for piece in partial_args(rng, item, f"{path}[{number}]")
        ]
    if isinstance(value, str):
        pieces = [
            {"jsonPath": path, "stringValue": piece, "willContinue": True}
            for piece in cut_randomly(rng, value, 8, 40)
        ]
        return [*pieces, {"jsonPath": path, "stringValue": ""}]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": "NULL_VALUE"}]
    return [{"jsonPath": path, "numberValue": value}]


# -- Bedrock ConverseStream ---------------------------------------------------------
def padding(rng: random.Random) -> str:
    """Bedrock pads each event's payload with a `p` field of varying length."""
    return "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[: rng.randint(1, 40)]


def bedrock(name: str, target: int, seed: int) -> DialectStream:
    """ConverseStream: messageStart, a text block, four toolUse blocks whose input
    arrives in fragments of 10 to 30 characters, messageStop, metadata."""
    rng = seeded(name, seed)
    calls = [
        replace(call, call_id="tooluse_" + token(rng, 22)) for call in calls_for(rng, target, 4)
    ]
    frames: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    frames.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": TEXTS[0]}}))
    frames.append(("contentBlockStop", {"contentBlockIndex": 0}))
    for block, call in enumerate(calls, start=1):
        start = {"toolUse": {"toolUseId": call.call_id, "name": call.name}}
        frames.append(("contentBlockStart", {"contentBlockIndex": block, "start": start}))
        for piece in cut_randomly(rng, call.arguments_text, 10, 30):
            delta = {"toolUse": {"input": piece}}
            frames.append(("contentBlockDelta", {"contentBlockIndex": block, "delta": delta}))
        frames.append(("contentBlockStop", {"contentBlockIndex": block}))
    frames.append(("messageStop", {"stopReason": "tool_use"}))
    usage = {"inputTokens": 412, "outputTokens": 98_000, "totalTokens": 98_412}
    frames.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 41_873}}))
    padded = (compact(payload | {"p": padding(rng)}).encode() for _, payload in frames)
    body = b"".join(event_frame(kind, data) for (kind, _), data in zip(frames, padded, strict=True))
    return DialectStream(name, "bedrock", "eventstream", body, len(frames), calls)


# -- Cohere v2 -------------------------------------------------------------------------
def cohere(name: str, target: int, seed: int) -> DialectStream:
    """/v2/chat: message-start, a tool plan, four calls (tool-call-start with id and
    name, tool-call-delta fragments of 1 to 8 characters, tool-call-end), message-end
    with TOOL_CALL. Each event has its `event:` line."""
    rng = seeded(name, seed)
    calls = [
        replace(call, call_id=f"{call.name}_{token(rng, 12).lower()}")
        for call in calls_for(rng, target, 4)
    ]
    message = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
    message["citations"] = []
    events: list[dict[str, Any]] = [
        {"type": "message-start", "id": token(rng, 36), "delta": {"message": message}}
    ]
    for piece in cut_randomly(rng, TEXTS[1], 1, 8):
        events.append({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}})
    for call in calls:
        function = {"name": call.name, "arguments": ""}
        start = {"id": call.call_id, "type": "function", "function": function}
        events.append(cohere_tool_event("tool-call-start", call.index, start))
        for piece in cut_randomly(rng, call.arguments_text, 1, 8):
            delta = {"function": {"arguments": piece}}
            events.append(cohere_tool_event("tool-call-delta", call.index, delta))
        events.append({"type": "tool-call-end", "index": call.index})
    usage = {"billed_units": {"input_tokens": 412, "output_tokens": 98_000}}
    usage["tokens"] = {"input_tokens": 1_204, "output_tokens": 98_000}
    events.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": usage}})
    body = b"".join(sse_event(compact(event), event["type"]) for event in events)
    return DialectStream(name, "cohere", "sse", body, len(events), calls)


def cohere_tool_event(kind: str, index: int, tool_calls: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "index": index, "delta": {"message": {"tool_calls": tool_calls}}}


# -- Ollama ------------------------------------------------------------------------------
def ollama(name: str, target: int, seed: int) -> DialectStream:
    """/api/chat: NDJSON, a message line of text, then 16 lines each with one whole
    tool call (its id, and `function.index`; arguments an object), then the `done`
    line with its counts and durations."""
    rng = seeded(name, seed)
    calls = [replace(call, call_id="call_" + token(rng, 8)) for call in calls_for(rng, target, 16)]
    lines = [ollama_line({"role": "assistant", "content": TEXTS[0]})]
    for call in calls:
        function = {"index": call.index, "name": call.name, "arguments": call.arguments}
        tool_call = {"id": call.call_id, "function": function}
        lines.append(ollama_line({"role": "assistant", "content": "", "tool_calls": [tool_call]}))
    done = ollama_line({"role": "assistant", "content": ""})
    done.update(done=True, done_reason="stop", total_duration=41_873_000_000)
    done.update(load_duration=21_000_000, prompt_eval_count=412, prompt_eval_duration=24_000_000)
    done.update(eval_count=98_000, eval_duration=41_800_000_000)
    lines.append(done)
    body = b"".join(compact(line).encode() + b"\n" for line in lines)
    return DialectStream(name, "ollama", "ndjson", body, len(lines), calls)


def ollama_line(message: dict[str, Any]) -> dict[str, Any]:
    created = "2026-12-06T04:00:00.000000Z"
    return {"model": "qwen3:8b", "created_at": created, "message": message, "done": False}


# -- the AI SDK's UI message stream --------------------------------------------------------
def ai_sdk_ui(name: str, target: int, seed: int) -> DialectStream:
    """The AI SDK 5 UI message stream: start, start-step, text, four calls
    (tool-input-start, tool-input-delta of 1 to 8 characters, tool-input-available
    with the whole input), finish-step, finish, `[DONE]`."""
    rng = seeded(name, seed)
    calls = calls_for(rng, target, 4)
    parts: list[dict[str, Any]] = [{"type": "start", "messageId": "msg-" + token(rng, 24)}]
    parts.append({"type": "start-step"})
    text_id = token(rng, 16)
    parts.append({"type": "text-start", "id": text_id})
    parts.append({"type": "text-delta", "id": text_id, "delta": TEXTS[0]})
    parts.append({"type": "text-end", "id": text_id})
    for call in calls:
        head = {"toolCallId": call.call_id, "toolName": call.name}
        parts.append({"type": "tool-input-start", **head})
        for piece in cut_randomly(rng, call.arguments_text, 1, 8):
            delta = {"toolCallId": call.call_id, "inputTextDelta": piece}
            parts.append({"type": "tool-input-delta", **delta})
        parts.append({"type": "tool-input-available", **head, "input": call.arguments})
    parts += [{"type": "finish-step"}, {"type": "finish", "finishReason": "tool-calls"}]
    body = b"".join(sse_event(compact(part)) for part in parts) + sse_event("[DONE]")
    return DialectStream(name, "ai-sdk-ui", "sse", body, len(parts) + 1, calls)


Generator = Callable[[str, int, int], DialectStream]
GENERATORS: dict[str, Generator] = {
    "gemini-sse": gemini_sse,
    "gemini-array": gemini_array,
    "vertex-partial-args": vertex_partial,
    "bedrock-converse": bedrock,
    "cohere-v2": cohere,
    "ollama-chat": ollama,
    "ai-sdk-ui": ai_sdk_ui,
}


def generate(name: str, target: int, seed: int = DEFAULT_SEED) -> DialectStream:
    return GENERATORS[name](name, target, seed)


def write_stream(stream: DialectStream, out_dir: Path, stem: str | None = None) -> Path:
    path = out_dir / f"{stem or stream.name}{SUFFIX[stream.framing]}"
    path.write_bytes(stream.body)
    return path
