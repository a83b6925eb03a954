"""The one builder of the SSE bodies the tests feed."""

from __future__ import annotations

import json
from typing import Any

Data = dict[str, Any] | str
Item = Data | tuple[str | None, Data]


def sse(
    *items: Item,
    named: bool = False,
    event: str | None = None,
    eol: str = "\n",
    done: bool = False,
) -> bytes:
    """One event per item: a dict is sent as its JSON on one `data:` line, a str
    as the data line verbatim, an (event, data) pair under an `event:` line of
    that name (None: no line).

    named: each dict also under an `event:` line naming its "type", as
    Anthropic, Responses and Cohere send them. event: every item under an
    `event:` line of that name. eol: the line ending ("\\r\\n" as Gemini's SSE).
    done: a last `data: [DONE]` event, as Chat Completions ends."""
    out = []
    for item in [*items, "[DONE]"] if done else items:
        name, data = item if isinstance(item, tuple) else (event_name(item, named, event), item)
        head = f"event: {name}{eol}" if name is not None else ""
        text = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {text}{eol}{eol}")
    return "".join(out).encode()


def event_name(data: Data, named: bool, event: str | None) -> str | None:
    if event is not None:
        return event
    if named and isinstance(data, dict):
        return data.get("type")
    return None
