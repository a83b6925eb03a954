"""The final report: one JSON-ready dict per stream, and the exit code it implies."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Collection, Iterator
from typing import Any

import orjson

from .events import Status
from .exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from .state import CallSlot, StreamState
from .strict_json import float_as_json
from .timing import stream_timing
from .visible import json_inert, json_inert_utf8

DEEP_REPORT_FRAMES = 4000  # enough for orjson's nesting limit of 1024, with room
PIECE_CHARS = 64 * 1024  # a report is written in pieces of about this size
_LEAVES = json.JSONEncoder(ensure_ascii=False)  # one scalar or string at a time
ORJSON_DEPTH = 200  # below orjson's nesting limit (255), which it refuses past
# Past this many characters a report is written member by member, never whole: on
# 10 MB of arguments, orjson's text and its two rewrites held 118 MB more at the peak.
WHOLE_REPORT_CHARS = 1 << 22
WHOLE_SCALARS = (int, bool, type(None))  # exact types orjson prints as json does
# orjson refuses, instead of writing its own way, what json.dumps writes otherwise or not
# at all (dataclasses, datetimes, subclasses of str, int, dict and list)
ORJSON_INDENTED = (
    orjson.OPT_INDENT_2
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# Where orjson's float text is not repr's (strict_json says which), in indented text:
# each at a line's end, where only a number ends: e-7 (repr: e-07) and 0.0000x (repr:
# x e-05).
SHORT_EXPONENT = re.compile(rb"e-(?=[1-9],?\n)")
FIXED_TINY = re.compile(rb"0\.0000[1-9][0-9]*(?=,?\n)")


def call_report(slot: CallSlot) -> dict[str, Any]:
    """`arguments_raw` is the text the arguments were parsed from; `arguments_streamed`,
    present only where it differs, the fragments as they arrived. `caller` and
    `started_in` are present only where the wire said them."""
    streamed, parsed = slot.raw_texts()
    return {
        "index": slot.index,
        "id": slot.call_id,
        "item_id": slot.item_id,
        "name": slot.name,
        **_caller(slot),
        **_started_in(slot),
        "arguments_raw": parsed,
        **_streamed_if_different("arguments_streamed", streamed, parsed),
        "arguments": slot.arguments if slot.parsed and slot.error is None else None,
        "error": slot.error,
        "error_position": slot.error_position,
        "fragments": slot.fragment_count,
        "schema_errors": [error.as_dict() for error in slot.schema_errors],
    }


def _caller(slot: CallSlot) -> dict[str, Any]:
    caller = slot.caller
    return {} if caller is None else {"caller": {"type": caller.type, "tool_id": caller.tool_id}}


def _started_in(slot: CallSlot) -> dict[str, Any]:
    """Where a call that arrived whole came from: the event's type and number."""
    if slot.started_in is None:
        return {}
    return {"started_in": {"type": slot.started_in, "event": slot.started_event}}


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
    return "".join(report_pieces(state))


def report_pieces(state: StreamState) -> Iterator[str]:
    """`report_json` in pieces, to be written one after another."""
    report = build_report(state)
    whole = _report_utf8(report)
    if whole is None:
        return printable_pieces(report)
    return (bytes(piece).decode() for piece in _utf8_pieces(whole))


def report_utf8_pieces(state: StreamState) -> Iterator[bytes | memoryview]:
    """`report_json` as UTF-8, in pieces (for a binary stream: no decoding, no encoding)."""
    report = build_report(state)
    whole = _report_utf8(report)
    if whole is None:
        return (piece.encode() for piece in printable_pieces(report))
    return _utf8_pieces(whole)


def _report_utf8(report: dict[str, Any]) -> bytes | None:
    """The report's printable text from orjson in one call, or None where it would
    differ from json's or be too long to hold whole. Each call's parsed arguments come
    from strict_json, which reads no NaN or Infinity: their floats are only rewritten
    in json's form, where the text they were parsed from can hold a float of
    magnitude below 1e-4."""
    if _long_text_in(report) > WHOLE_REPORT_CHARS:
        return None
    calls = [call for call in report["tool_calls"] if call["arguments"] is not None]
    tiny = any(_may_hold_tiny_floats(call["arguments_raw"]) for call in calls)
    return printable_utf8(report, {id(call["arguments"]) for call in calls}, tiny)


def _may_hold_tiny_floats(json_text: str) -> bool:
    """Can this JSON text decode to a float of magnitude below 1e-4 (other than 0)?
    Only a number with a negative exponent or four zeros after its point can."""
    return "e-" in json_text or "E-" in json_text or "0.0000" in json_text


def _long_text_in(report: dict[str, Any]) -> int:
    """Roughly how long the report's text is: its strings, and each call's arguments
    twice (as text, and parsed)."""
    size = sum(len(value) for value in report.values() if isinstance(value, str))
    for call in report["tool_calls"]:
        size += 2 * len(call["arguments_raw"]) + len(call.get("arguments_streamed", ""))
    return size


def printable_utf8(
    value: Any, finite: Collection[int] = (), tiny_in_finite: bool = True
) -> bytes | None:
    """`printable_json(value)` in UTF-8, in one orjson call over the whole value
    (the member-by-member walk took most of a 1 MB report's time), or None where
    orjson cannot write what json.dumps writes. `finite`: the ids of containers
    known to hold only plain JSON values with finite floats, not walked;
    `tiny_in_finite`: False where they are known to hold no float of magnitude
    below 1e-4 either, so the text needs no float rewritten (see `json_floats`)
    unless the walk finds one."""
    if type(value) not in (dict, list):
        return None
    tiny = _tiny_floats_outside(value, finite)
    if tiny is None:
        return None
    try:
        text = orjson.dumps(value, option=ORJSON_INDENTED)
    except orjson.JSONEncodeError:  # an int past 64 bits, a lone surrogate, too deep
        return None
    return json_inert_utf8(json_floats(text) if tiny or tiny_in_finite else text) + b"\n"


def _tiny_floats_outside(value: Any, finite: Collection[int]) -> bool | None:
    """None unless every float outside `finite` is finite (orjson writes NaN and
    Infinity as null) and only plain types are there; else whether one of those
    floats is of magnitude below 1e-4 (other than 0), which orjson may write otherwise
    than json."""
    tiny = False
    pending = [value]
    while pending:
        container = pending.pop()
        if id(container) in finite:
            continue
        children = container.values() if type(container) is dict else container
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                pending.append(child)
            elif kind is float:
                if not math.isfinite(child):
                    return None
                tiny = tiny or (child != 0 and -1e-4 < child < 1e-4)
            elif kind is not str and kind not in WHOLE_SCALARS:
                return None
    return tiny


def json_floats(text: bytes) -> bytes:
    """orjson's indented text with each float written as json writes it (repr): orjson
    writes 1e-07 as 1e-7 and 1e-05 as 0.00001. A number is the last thing on its line
    (a string ends with its quote), so a float is told by what follows it."""
    text = SHORT_EXPONENT.sub(b"e-0", text)
    if b"0.0000" not in text:
        return text
    return FIXED_TINY.sub(_tiny_as_repr, text)


def _tiny_as_repr(found: re.Match[bytes]) -> bytes:
    """A float between 1e-05 and 1e-04 written as repr writes it; the same text when
    it is the end of a longer number (10.00001)."""
    text, start = found.string, found.start()
    whole = text[start - 1 : start] == b" " or text[start - 2 : start] == b" -"
    return float_as_json(found.group()) if whole else found.group()


def _utf8_pieces(text: bytes) -> Iterator[memoryview]:
    """`text` in pieces of about PIECE_CHARS bytes, never cut inside a character."""
    view, start = memoryview(text), 0
    while start < len(text):
        cut = start + PIECE_CHARS
        while cut < len(text) and text[cut] & 0xC0 == 0x80:  # a continuation byte
            cut += 1
        yield view[start:cut]
        start = cut


def printable_json(value: Any, compact: bool = False) -> str:
    """Indented JSON (one line with `compact`) with UTF-8 kept readable, but nothing
    in it can steer or hide from a terminal."""
    if not compact:
        return "".join(printable_pieces(value))
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:  # arguments nested ~1000 deep: orjson reads them, json needs room
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + DEEP_REPORT_FRAMES)
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        finally:
            sys.setrecursionlimit(limit)
    return json_inert(text) + "\n"


def printable_pieces(value: Any) -> Iterator[str]:
    """`printable_json(value)` in pieces of about PIECE_CHARS characters, so a report
    holding a 10 MB buffer is written without ever being one string."""
    held: list[str] = []
    size = 0
    for text in indented_json(value):
        held.append(text)
        size += len(text)
        if size >= PIECE_CHARS:
            yield json_inert("".join(held))
            held.clear()
            size = 0
    held.append("\n")
    yield json_inert("".join(held))


def indented_json(value: Any) -> Iterator[str]:
    """The text of `json.dumps(value, ensure_ascii=False, indent=2)`, in small pieces.
    An explicit stack, not recursion: arguments nest as deep as orjson reads them.
    A long string comes in slices (JSON escapes character by character)."""
    if (whole := _whole_container(value, 0)) is not None:
        yield whole
        return
    yield from _leaf_or_opening(value)
    open_members: list[tuple[Iterator[tuple[str, Any]], str]] = []
    if isinstance(value, (dict, list, tuple)) and value:
        open_members.append(_members(value, 0))
    while open_members:
        members, closing = open_members[-1]
        for prefix, child in members:
            yield prefix
            if (whole := _whole_container(child, len(open_members))) is not None:
                yield whole
                continue
            yield from _leaf_or_opening(child)
            if isinstance(child, (dict, list, tuple)) and child:
                open_members.append(_members(child, len(open_members)))
                break
        else:
            open_members.pop()
            yield closing


def _whole_container(value: Any, depth: int) -> str | None:
    """A small container's whole text at `depth`, from orjson in one call (member by
    member, a report of 10,000 calls took seconds to print); None where orjson would
    print it otherwise than json.dumps, or it is too big for one piece."""
    if type(value) not in (dict, list, tuple) or not value or not _orjson_prints_as_json(value):
        return None
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:  # an int past 64 bits, a lone surrogate
        return None
    if len(text) > PIECE_CHARS:
        return None
    return text.replace("\n", _indent(depth)) if depth else text


def _orjson_prints_as_json(value: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> bool:
    """Whether orjson's indented text of `value` is json.dumps's: only plain types,
    string keys, floats that orjson writes as repr does (not 1e-05), not too deep;
    and roughly one piece of text at most (the walk stops there)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    size = 0
    while pending:
        container, depth = pending.pop()
        if depth > ORJSON_DEPTH:
            return False
        if type(container) is dict:
            if any(type(key) is not str for key in container):
                return False
            size += sum(map(len, container))
            children: Any = container.values()
        else:
            children = container
        size += 8 * len(container) * (depth + 1)  # punctuation and indent, roughly
        if size > PIECE_CHARS:
            return False
        for child in children:
            kind = type(child)
            if kind is str:
                size += len(child)
            elif kind is dict or kind is list or kind is tuple:
                pending.append((child, depth + 1))
            elif kind is float:
                if orjson.dumps(child) != float.__repr__(child).encode():
                    return False
            elif kind not in WHOLE_SCALARS:
                return False
        if size > PIECE_CHARS:
            return False
    return True


def _members(
    container: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int
) -> tuple[Iterator[tuple[str, Any]], str]:
    """What precedes each member of a non-empty container at `depth` (its key, with
    the line break and indent), and the text that closes it."""
    inner, outer = _indent(depth + 1), _indent(depth)
    if isinstance(container, dict):
        keyed = (
            (f"{inner if number == 0 else ',' + inner}{_key(key)}: ", child)
            for number, (key, child) in enumerate(container.items())
        )
        return keyed, outer + "}"
    listed = (
        (inner if number == 0 else "," + inner, child) for number, child in enumerate(container)
    )
    return listed, outer + "]"


def _indent(depth: int) -> str:
    return "\n" + "  " * depth


def _leaf_or_opening(value: Any) -> Iterator[str]:
    """A scalar's text, or what opens a container (all of an empty one)."""
    if isinstance(value, str):
        if len(value) <= PIECE_CHARS:
            yield _LEAVES.encode(value)
            return
        yield '"'
        for start in range(0, len(value), PIECE_CHARS):
            yield _LEAVES.encode(value[start : start + PIECE_CHARS])[1:-1]
        yield '"'
    elif isinstance(value, dict):
        yield "{" if value else "{}"
    elif isinstance(value, (list, tuple)):
        yield "[" if value else "[]"
    else:
        yield _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    return _LEAVES.encode(value)  # floats (NaN as json writes it); anything else refused


def _key(key: Any) -> str:
    """A member's name as json writes it: a string, or a scalar turned into one."""
    if isinstance(key, str):
        return _LEAVES.encode(key)
    if isinstance(key, (bool, int, float)) or key is None:
        return _LEAVES.encode(_scalar(key).strip('"'))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


# A call that failed where the provider parsed it (Gemini's MALFORMED_FUNCTION_CALL
# finish): no call arrives to fail here, but the model's call failed all the same.
MALFORMED_CALL = "finish-malformed-call"


def exit_code(state: StreamState) -> int:
    if state.status is Status.ERROR:
        return EXIT_FAILED
    if state.status is Status.TRUNCATED or not state.all_calls_valid:
        return EXIT_INCOMPLETE
    if any(anomaly.kind == MALFORMED_CALL for anomaly in state.anomalies):
        return EXIT_INCOMPLETE
    return EXIT_OK
