"""The final report: one JSON-ready dict per stream, and the exit code it implies."""

from __future__ import annotations

import json
import sys
from typing import Any

from .events import Status
from .state import CallSlot, StreamState
from .timing import stream_timing
from .visible import escaped, json_inert

DEEP_REPORT_FRAMES = 4000  # enough for orjson's nesting limit of 1024, with room
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INCOMPLETE = 2


def call_report(slot: CallSlot) -> dict[str, Any]:
    return {
        "index": slot.index,
        "id": slot.call_id,
        "item_id": slot.item_id,
        "name": slot.name,
        "arguments_raw": slot.arguments_raw,
        "arguments": slot.arguments if slot.parsed and slot.error is None else None,
        "error": slot.error,
        "error_position": slot.error_position,
        "fragments": slot.fragment_count,
        "schema_errors": [error.as_dict() for error in slot.schema_errors],
    }


def build_report(state: StreamState) -> dict[str, Any]:
    return {
        "source": state.source,
        "dialect": state.dialect,
        "status": state.status.value,
        "finish_reason": state.finish_reason,
        "text": state.text,
        "reasoning": state.reasoning,
        "refusal": state.refusal,
        "declared_tools": None if state.tools is None else list(state.tools.schemas),
        "tool_calls": [call_report(state.calls[index]) for index in sorted(state.calls)],
        "anomalies": [anomaly.as_dict() for anomaly in state.anomalies],
        "events": state.events,
        "bytes": state.bytes_received,
        "http_status": state.http_status,
        "body": state.body,
        "trailing": state.trailing,
        "error": state.error,
        "timing": stream_timing(state).as_dict(),
    }


def report_json(state: StreamState) -> str:
    """The report as printed by --headless and written by the app's export."""
    return printable_json(build_report(state))


def printable_json(value: Any) -> str:
    """Indented JSON with UTF-8 kept readable, but nothing in it can steer or hide
    from a terminal."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    except RecursionError:  # arguments nested ~1000 deep: orjson reads them, json needs room
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + DEEP_REPORT_FRAMES)
        try:
            text = json.dumps(value, ensure_ascii=False, indent=2)
        finally:
            sys.setrecursionlimit(limit)
    return json_inert(text) + "\n"


def exit_code(state: StreamState) -> int:
    if state.status is Status.ERROR:
        return EXIT_FAILED
    if state.status is Status.TRUNCATED or not state.all_calls_valid:
        return EXIT_INCOMPLETE
    return EXIT_OK


def parses_alone(fragment: str) -> bool:
    """Would this fragment parse as JSON by itself? (Almost never — which is why
    fragments are accumulated and parsed once, at the finish.)"""
    try:
        json.loads(fragment)
    except (ValueError, RecursionError):
        return False
    return True


def fragment_rows(slot: CallSlot, count: int, limit: int) -> list[dict[str, Any]]:
    """The first `count` fragments of a call (at most `limit`), as the inspector shows them."""
    pieces = slot.pieces
    rows = []
    for number in range(min(count, len(pieces), limit)):
        text = pieces.piece(number)
        rows.append(
            {
                "number": number + 1,
                "event": pieces.events[number],
                "t": pieces.times[number],
                "length": len(text),
                "text": escaped(text),
                "parses_alone": parses_alone(text),
            }
        )
    return rows
