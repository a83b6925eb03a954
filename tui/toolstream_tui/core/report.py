"""The final report: one JSON-ready dict per stream, and the exit code it implies."""

from __future__ import annotations

import json
import sys
from typing import Any

from .events import Status
from .state import CallSlot, StreamState
from .timing import stream_timing
from .visible import json_inert

DEEP_REPORT_FRAMES = 4000  # enough for orjson's nesting limit of 1024, with room
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INCOMPLETE = 2


def call_report(slot: CallSlot) -> dict[str, Any]:
    """`arguments_raw` is the text the arguments were parsed from; `arguments_streamed`,
    present only where it differs, the fragments as they arrived."""
    return {
        "index": slot.index,
        "id": slot.call_id,
        "item_id": slot.item_id,
        "name": slot.name,
        "arguments_raw": slot.parsed_raw,
        **_streamed_if_different("arguments_streamed", slot.arguments_raw, slot.parsed_raw),
        "arguments": slot.arguments if slot.parsed and slot.error is None else None,
        "error": slot.error,
        "error_position": slot.error_position,
        "fragments": slot.fragment_count,
        "schema_errors": [error.as_dict() for error in slot.schema_errors],
    }


def answer_text(state: StreamState) -> str:
    """The content text of the answer: the server's final word when it restated it
    (OpenAI Responses), else the deltas as they arrived."""
    return state.text if state.final_text is None else state.final_text


def _streamed_if_different(key: str, streamed: str, final: str) -> dict[str, str]:
    return {} if streamed == final else {key: streamed}


def _streamed_text(state: StreamState, text: str) -> dict[str, str]:
    if state.final_text is None:
        return {}
    return _streamed_if_different("text_streamed", state.text, text)


def build_report(state: StreamState) -> dict[str, Any]:
    text = answer_text(state)
    return {
        "source": state.source,
        "dialect": state.dialect,
        "status": state.status.value,
        "finish_reason": state.finish_reason,
        "text": text,
        **_streamed_text(state, text),
        "reasoning": state.reasoning,
        "refusal": state.refusal,
        "declared_tools": None if state.tools is None else list(state.tools.schemas),
        "tool_calls": [call_report(state.calls[index]) for index in sorted(state.calls)],
        "anomalies": [anomaly.as_dict() for anomaly in state.anomalies],
        "events": state.events,
        "bytes": state.bytes_received,
        "http_status": state.http_status,
        "body": state.body,
        "body_chars": state.body_chars,
        "trailing": state.trailing,
        "trailing_chars": state.trailing_chars,
        "error": state.error,
        "timing": stream_timing(state).as_dict(),
    }


def report_json(state: StreamState) -> str:
    """The report as printed by --headless and written by the app's export."""
    return printable_json(build_report(state))


def printable_json(value: Any, compact: bool = False) -> str:
    """Indented JSON (one line with `compact`) with UTF-8 kept readable, but nothing
    in it can steer or hide from a terminal."""
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": 2}
    try:
        text = json.dumps(value, ensure_ascii=False, **layout)
    except RecursionError:  # arguments nested ~1000 deep: orjson reads them, json needs room
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + DEEP_REPORT_FRAMES)
        try:
            text = json.dumps(value, ensure_ascii=False, **layout)
        finally:
            sys.setrecursionlimit(limit)
    return json_inert(text) + "\n"


def exit_code(state: StreamState) -> int:
    if state.status is Status.ERROR:
        return EXIT_FAILED
    if state.status is Status.TRUNCATED or not state.all_calls_valid:
        return EXIT_INCOMPLETE
    return EXIT_OK
