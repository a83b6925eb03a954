"""The part of a wire event that changes from one event to the next.

Every dialect wraps each piece in an envelope (ids, model names, object types,
sequence numbers) that repeats on every event. A raw log that shows the
envelope buries the piece, so by default it shows the essence: chat's
`choices[0].delta` (and a finish reason), or the `type`, index and `delta` of
Anthropic and Responses events; anything else whole.
"""

from __future__ import annotations

from typing import Any

from .dialects.base import compact_json
from .strict_json import loads_envelope


def essence(data: str) -> str:
    """What a person reads of one event's data, on one line."""
    try:
        payload = loads_envelope(data)
    except ValueError:
        return data
    if not isinstance(payload, dict):
        return data
    choices = payload.get("choices")
    if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict):
        return _choice_essence(choices[0]) or data
    if "delta" in payload:
        return _typed_delta(payload)
    return data


def _choice_essence(choice: dict[str, Any]) -> str | None:
    parts = []
    if "delta" in choice:
        parts.append(f"delta {compact_json(choice['delta'])}")
    if choice.get("finish_reason") is not None:
        parts.append(f"finish_reason {compact_json(choice['finish_reason'])}")
    return " · ".join(parts) or None


def _typed_delta(payload: dict[str, Any]) -> str:
    head = [str(payload.get("type", ""))]
    for key in ("index", "output_index", "content_index"):
        if key in payload:
            head.append(f"#{payload[key]}" if key != "content_index" else f"part {payload[key]}")
    return f"{' '.join(part for part in head if part)} {compact_json(payload['delta'])}".strip()
