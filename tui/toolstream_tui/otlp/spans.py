"""One request as one OpenTelemetry span, following the GenAI semantic
conventions: a pure mapping from the report (`core.report.build_report`) and
what is known of the request, to the span's name, times, attributes and events.
Nothing here imports OpenTelemetry (see `export` for that).

The report is made from bytes whose secrets were already removed (see
sources/secrets.py); every text put on the span goes through `redact` as well,
before the arguments and details are cut to a size a backend keeps (so no cut
leaves the start of a secret behind)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..sources.secrets import model_in_path
from .envelope import Envelope

AttributeValue = str | bool | int | float | list[str]
Attributes = dict[str, AttributeValue]
Redact = Callable[[str], str]
EventTime = Callable[[int], float | None]  # when wire event N arrived (`StreamState.event_time`)

ARGUMENTS_CHARS = 4096  # a call's arguments on its event, at most
DETAIL_CHARS = 1024  # an anomaly's detail, an error message
# Longer than any secret spelled with JSON escapes (9 characters for each of its own).
REDACT_MARGIN = 16 * 1024
MAX_EVENTS = 128  # the SDK's default limit of events per span: past it they would vanish
CUT_MARK = "…"
# The provider each dialect speaks for (the conventions' well-known values; Ollama
# and the AI SDK's UI message stream have none, so their own names).
PROVIDERS = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "ollama": "ollama",
    "ai-sdk-ui": "vercel.ai",
}
OPERATIONS = {"gemini": "generate_content"}  # every other dialect is a chat
DEFAULT_OPERATION = "chat"
# The request's sampling parameters, as each provider's body names them (at the top,
# or in Gemini's `generationConfig`, Bedrock's `inferenceConfig`, Ollama's `options`).
REQUEST_PARAMETERS = {
    "gen_ai.request.max_tokens": (
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "maxOutputTokens",
        "maxTokens",
        "num_predict",
    ),
    "gen_ai.request.temperature": ("temperature",),
    "gen_ai.request.top_p": ("top_p", "topP", "p"),
}
CONFIG_KEYS = ("generationConfig", "inferenceConfig", "options")


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What is known of the request: its URL (secrets already redacted) and body."""

    url: str | None = None
    body: str | None = None
    model: str | None = None  # when the caller read it already

    def payload(self) -> dict[str, Any]:
        """The body as a JSON object (empty when it is not one)."""
        if not self.body:
            return {}
        try:
            payload = json.loads(self.body)
        except ValueError:
            return {}
        return payload if isinstance(payload, dict) else {}

    def requested_model(self) -> str | None:
        if self.model:
            return self.model
        from_body = self.payload().get("model")
        if isinstance(from_body, str) and from_body:
            return from_body
        return model_in_path(_path(self.url))

    def parameters(self) -> Attributes:
        """The sampling parameters the body sets, under the conventions' names."""
        payload = self.payload()
        places = [
            payload,
            *(payload[key] for key in CONFIG_KEYS if isinstance(payload.get(key), dict)),
        ]
        found: Attributes = {}
        for attribute, names in REQUEST_PARAMETERS.items():
            value = next(
                (place[name] for place in places for name in names if _is_number(place.get(name))),
                None,
            )
            if value is not None:
                found[attribute] = value
        return found


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    seconds: float  # since the request was sent
    attributes: Attributes


@dataclass(frozen=True, slots=True)
class SpanPlan:
    """Everything a span is made of. Times are seconds since the request was sent;
    `error` is the status description when the request failed."""

    name: str
    seconds: float
    attributes: Attributes
    events: list[SpanEvent] = field(default_factory=list)
    error: str | None = None


def span_plan(
    report: Mapping[str, Any],
    request: RequestFacts = RequestFacts(),
    envelope: Envelope | None = None,
    redact: Redact = lambda text: text,
    event_time: EventTime = lambda number: None,
) -> SpanPlan:
    """The span of one finished request, from its report (`event_time`: when each
    wire event arrived, which places the anomalies; without it they are placed at
    their call's start, or at the end)."""
    envelope = envelope or Envelope()
    dialect = str(report.get("dialect") or "")
    operation = OPERATIONS.get(dialect, DEFAULT_OPERATION)
    model = request.requested_model()
    attributes: Attributes = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDERS.get(dialect, dialect or "unknown"),
        **_some("gen_ai.request.model", model),
        **request.parameters(),
        **_some("gen_ai.response.model", envelope.model),
        **_some("gen_ai.response.id", envelope.response_id),
        **_some("gen_ai.usage.input_tokens", envelope.input_tokens),
        **_some("gen_ai.usage.output_tokens", envelope.output_tokens),
        **_finish_reasons(report.get("finish_reason")),
        **_server(request.url),
        **_timing_attributes(report.get("timing") or {}),
        **_some("http.response.status_code", report.get("http_status")),
        "toolstream.dialect": dialect,
        "toolstream.status": str(report.get("status")),
        "toolstream.tool_calls": len(report.get("tool_calls") or ()),
        "toolstream.anomalies": len(report.get("anomalies") or ()),
        "toolstream.events": int(report.get("events") or 0),
        "toolstream.bytes": int(report.get("bytes") or 0),
        **_some("toolstream.source", request.url or report.get("source")),
    }
    error = _error(report, redact)
    if error is not None:
        attributes["error.type"] = _error_type(report)
    events = _events(report, redact, event_time)
    if len(events) > MAX_EVENTS:
        attributes["toolstream.span_events_dropped"] = len(events) - MAX_EVENTS
        events = events[:MAX_EVENTS]
    return SpanPlan(
        name=f"{operation} {model}" if model else operation,
        seconds=_duration(report.get("timing") or {}),
        attributes=_redacted(attributes, redact),
        events=[SpanEvent(e.name, e.seconds, _redacted(e.attributes, redact)) for e in events],
        error=error,
    )


def _some(key: str, value: Any) -> Attributes:
    return {} if value is None or value == "" else {key: value}


def _finish_reasons(reason: Any) -> Attributes:
    return {"gen_ai.response.finish_reasons": [str(reason)]} if reason else {}


def _path(url: str | None) -> str:
    try:
        return urlsplit(url or "").path
    except ValueError:
        return ""


def _server(url: str | None) -> Attributes:
    try:
        parts = urlsplit(url or "")
        port = parts.port
    except ValueError:
        return {}
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return {}
    default = 443 if parts.scheme == "https" else 80
    return {"server.address": parts.hostname, "server.port": port or default}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _timing_attributes(timing: Mapping[str, Any]) -> Attributes:
    """The milestones, in seconds since the request was sent."""
    first_token = _earliest(
        timing.get(key) for key in ("first_text", "first_tool_name", "first_argument_byte")
    )
    return {
        **_some("gen_ai.response.time_to_first_chunk", timing.get("first_byte")),
        **_some("toolstream.time_to_first_token", first_token),
        **_some("toolstream.time_to_first_tool_name", timing.get("first_tool_name")),
        **_some("toolstream.time_to_first_argument_byte", timing.get("first_argument_byte")),
        **_some("toolstream.stalls", timing.get("stalls_total") or None),
    }


def _earliest(times: Any) -> float | None:
    known = [t for t in times if isinstance(t, (int, float))]
    return min(known) if known else None


def _duration(timing: Mapping[str, Any]) -> float:
    ends = [timing.get(key) for key in ("last_byte", "finish", "response")]
    return max((t for t in ends if isinstance(t, (int, float))), default=0.0)


def _events(report: Mapping[str, Any], redact: Redact, event_time: EventTime) -> list[SpanEvent]:
    timing = report.get("timing") or {}
    events = []
    first_token = _timing_attributes(timing).get("toolstream.time_to_first_token")
    if isinstance(first_token, (int, float)):
        events.append(SpanEvent("toolstream.first_token", float(first_token), {}))
    call_times = {call.get("index"): call for call in timing.get("calls") or ()}
    for call in report.get("tool_calls") or ():
        events.append(_call_event(call, call_times.get(call.get("index")) or {}, redact))
    for anomaly in report.get("anomalies") or ():
        at = _anomaly_time(anomaly, call_times, event_time)
        events.append(_anomaly_event(anomaly, _duration(timing) if at is None else at, redact))
    return sorted(events, key=lambda event: event.seconds)


def _call_event(call: Mapping[str, Any], timing: Mapping[str, Any], redact: Redact) -> SpanEvent:
    """A tool call, at the moment it started (the conventions' attribute names for
    a call's id, name and arguments)."""
    raw = str(call.get("arguments_raw") or "")
    attributes: Attributes = {
        "toolstream.tool_call.index": int(call.get("index") or 0),
        **_some("gen_ai.tool.call.id", call.get("id")),
        **_some("gen_ai.tool.name", call.get("name")),
        "gen_ai.tool.call.arguments": _redacted_cut(raw, ARGUMENTS_CHARS, redact),
        "toolstream.tool_call.arguments_chars": len(raw),
        "toolstream.tool_call.fragments": int(call.get("fragments") or 0),
        **_some("toolstream.tool_call.first_argument_byte", timing.get("first_fragment")),
        **_some("toolstream.tool_call.last_argument_byte", timing.get("last_fragment")),
        **_some("toolstream.tool_call.error", _cut_or_none(call.get("error"), redact)),
        **_some("toolstream.tool_call.schema_errors", len(call.get("schema_errors") or ()) or None),
    }
    return SpanEvent("toolstream.tool_call", float(timing.get("started") or 0.0), attributes)


def _anomaly_time(
    anomaly: Mapping[str, Any], call_times: Mapping[Any, Mapping[str, Any]], event_time: EventTime
) -> float | None:
    """When the wire event an anomaly was seen at arrived, else when its call started."""
    number = anomaly.get("event")
    at = event_time(number) if isinstance(number, int) else None
    if at is None and anomaly.get("index") is not None:
        at = (call_times.get(anomaly.get("index")) or {}).get("started")
    return None if at is None else round(at, 3)


def _anomaly_event(anomaly: Mapping[str, Any], at: float, redact: Redact) -> SpanEvent:
    index = anomaly.get("index")
    attributes: Attributes = {
        "toolstream.anomaly.kind": str(anomaly.get("kind")),
        "toolstream.anomaly.detail": _redacted_cut(
            str(anomaly.get("detail") or ""), DETAIL_CHARS, redact
        ),
        "toolstream.anomaly.count": int(anomaly.get("count") or 1),
        **_some("toolstream.anomaly.tool_call_index", index),
        **_some("toolstream.anomaly.wire_event", anomaly.get("event")),
    }
    return SpanEvent("toolstream.anomaly", float(at), attributes)


def _error(report: Mapping[str, Any], redact: Redact) -> str | None:
    if report.get("status") == "error":
        return _redacted_cut(str(report.get("error") or "the request failed"), DETAIL_CHARS, redact)
    return None


def _error_type(report: Mapping[str, Any]) -> str:
    """Low in cardinality, as the conventions ask: the HTTP status, else `_OTHER`."""
    status = report.get("http_status")
    return str(status) if isinstance(status, int) and status >= 400 else "_OTHER"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(CUT_MARK)] + CUT_MARK


def _cut_or_none(text: Any, redact: Redact) -> str | None:
    return None if text is None else _redacted_cut(str(text), DETAIL_CHARS, redact)


def _redacted_cut(text: str, limit: int, redact: Redact) -> str:
    """`text` redacted, then cut to `limit`. Only its start is redacted (megabytes
    of arguments would hold the loop for a while), and the last REDACT_MARGIN
    characters of that start are never kept: a secret may begin there, cut."""
    if len(text) <= limit + REDACT_MARGIN:
        return _cut(redact(text), limit)
    start = redact(text[: limit + REDACT_MARGIN])
    kept = start[: max(0, len(start) - REDACT_MARGIN)]
    return kept[: limit - len(CUT_MARK)] + CUT_MARK  # cut, whatever its length now


def _redacted(attributes: Attributes, redact: Redact) -> Attributes:
    return {
        key: redact(value)
        if isinstance(value, str)
        else [redact(item) for item in value]
        if isinstance(value, list)
        else value
        for key, value in attributes.items()
    }
