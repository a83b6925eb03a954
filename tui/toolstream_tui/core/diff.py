"""Two finished streams compared: what the model sent differently, lane by lane.

Pure: no Textual, no I/O. `diff_states` returns a JSON-ready dict; `json_diff`
compares two parsed JSON values path by path.

Fragment boundaries (where the network cut the arguments) and fragment counts
are reported but never count as a difference: two runs of the same request are
always cut differently. Call ids are reported too and are not counted either
(providers mint a fresh id per call)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from .events import Anomaly
from .json_path import ROOT, child_path
from .report import answer_text
from .state import CallSlot, StreamState

DIFF_LIMIT = 200  # json_diff entries kept; the rest are counted
BOUNDARY_LIMIT = 50  # one-sided boundary offsets kept per side; the rest are counted
MORE = "more"

Entry = dict[str, Any]


# -- JSON values ------------------------------------------------------------------


def _same_kind(a: Any, b: Any) -> bool:
    # Strict: True == 1 and 1 == 1.0 in Python, but a tool receives different values.
    return type(a) is type(b)


def _children(a: Any, b: Any) -> list[tuple[str, Any, Any, Any]]:
    """(change, key or index, a's value, b's value) for every key or index of either side,
    in order: dict keys sorted, list indices ascending. `change` is "added",
    "removed", or "both" (present on both sides, compared further)."""
    if isinstance(a, dict):
        keys: list[Any] = sorted(a.keys() | b.keys())
    else:
        keys = list(range(max(len(a), len(b))))
    children = []
    for key in keys:
        in_a = key in a if isinstance(a, dict) else key < len(a)
        in_b = key in b if isinstance(b, dict) else key < len(b)
        change = "both" if in_a and in_b else ("removed" if in_a else "added")
        children.append((change, key, a[key] if in_a else None, b[key] if in_b else None))
    return children


def _walk(a: Any, b: Any, path: str) -> Iterator[Entry]:
    """Every difference, depth first. An explicit stack, so arguments nested a
    thousand deep do not hit the recursion limit."""
    stack: list[tuple[str, str, Any, Any]] = [("both", path, a, b)]
    while stack:
        change, where, left, right = stack.pop()
        if change == "removed":
            yield {"path": where, "change": "removed", "a": left}
        elif change == "added":
            yield {"path": where, "change": "added", "b": right}
        elif _same_kind(left, right) and isinstance(left, dict | list):
            children = _children(left, right)
            stack.extend(
                (kind, child_path(where, key), x, y) for kind, key, x, y in reversed(children)
            )
        elif not _same_kind(left, right) or left != right:
            yield {"path": where, "change": "changed", "a": left, "b": right}


def json_diff(a: Any, b: Any, path: str = ROOT, limit: int = DIFF_LIMIT) -> list[Entry]:
    """The differences between two JSON values: entries `{"path", "change", "a", "b"}`
    with `change` one of "added" (no "a"), "removed" (no "b") or "changed" (a type
    change included). Dicts are compared key by key (sorted), lists index by index;
    the order is depth first. At most `limit` entries; past that, one last entry
    `{"path": path, "change": "more", "count": n}` counts the rest."""
    walk = _walk(a, b, path)
    found = list(islice(walk, limit))
    rest = sum(1 for _ in walk)
    if rest:
        found.append({"path": path, "change": MORE, "count": rest})
    return found


# -- strings and buffers -------------------------------------------------------------


def first_difference(a: str, b: str) -> int | None:
    """The first character position where the strings differ (None when equal)."""
    if a == b:
        return None
    shorter = min(len(a), len(b))
    return next((i for i in range(shorter) if a[i] != b[i]), shorter)


def boundaries(slot: CallSlot) -> list[int]:
    """Character offsets where one fragment ended and the next began."""
    return list(slot.pieces.ends[:-1])


def _capped(offsets: list[int]) -> list[int]:
    return offsets[:BOUNDARY_LIMIT]


def boundary_diff(a: CallSlot, b: CallSlot) -> dict[str, Any]:
    cuts_a, cuts_b = boundaries(a), boundaries(b)
    only_a = sorted(set(cuts_a) - set(cuts_b))
    only_b = sorted(set(cuts_b) - set(cuts_a))
    return {
        "fragments": {"a": a.fragment_count, "b": b.fragment_count},
        "same_boundaries": not only_a and not only_b,
        "boundaries_only_a": _capped(only_a),
        "boundaries_only_a_total": len(only_a),
        "boundaries_only_b": _capped(only_b),
        "boundaries_only_b_total": len(only_b),
    }


# -- anomalies ---------------------------------------------------------------------


def _anomaly_entry(anomaly: Anomaly) -> Entry:
    return {"kind": anomaly.kind, "index": anomaly.index, "detail": anomaly.detail}


def one_sided_anomalies(a: list[Anomaly], b: list[Anomaly]) -> dict[str, list[Entry]]:
    """Anomalies whose (kind, index) appears on one side only."""
    keys_a = {(anomaly.kind, anomaly.index) for anomaly in a}
    keys_b = {(anomaly.kind, anomaly.index) for anomaly in b}
    return {
        "only_a": [_anomaly_entry(x) for x in a if (x.kind, x.index) not in keys_b],
        "only_b": [_anomaly_entry(x) for x in b if (x.kind, x.index) not in keys_a],
    }


def _for_index(anomalies: list[Anomaly], index: int | None) -> list[Anomaly]:
    return [anomaly for anomaly in anomalies if anomaly.index == index]


def _has_any(sides: dict[str, list[Entry]]) -> bool:
    return bool(sides["only_a"] or sides["only_b"])


# -- lanes -------------------------------------------------------------------------


def parsed_ok(slot: CallSlot) -> bool:
    return slot.parsed and slot.error is None


def _one_side_lane(slot: CallSlot, side: str, anomalies: dict[str, list[Entry]]) -> Entry:
    return {
        "index": slot.index,
        "only_in": side,
        "name": slot.name,
        "id": slot.call_id,
        "fragments": slot.fragment_count,
        "arguments_raw_length": len(slot.parsed_raw),
        "arguments": slot.arguments if parsed_ok(slot) else None,
        "error": slot.error,
        "anomalies": anomalies,
        "identical": False,
    }


def _arguments_diff(a: CallSlot, b: CallSlot) -> dict[str, Any]:
    if parsed_ok(a) and parsed_ok(b):
        return {"arguments": json_diff(a.arguments, b.arguments)}
    return {"arguments": None, "parse_errors": {"a": a.error, "b": b.error}}


def _both_sides_lane(a: CallSlot, b: CallSlot, anomalies: dict[str, list[Entry]]) -> Entry:
    raw_at = first_difference(a.parsed_raw, b.parsed_raw)
    lane: Entry = {"index": a.index, "name": a.name}
    if a.name != b.name:
        lane["names"] = {"a": a.name, "b": b.name}
    if a.call_id != b.call_id:
        lane["ids"] = {"a": a.call_id, "b": b.call_id}
    lane |= boundary_diff(a, b)
    lane |= {"raw_equal": raw_at is None, "raw_first_difference": raw_at}
    lane |= _arguments_diff(a, b)
    lane["anomalies"] = anomalies
    lane["identical"] = (
        a.name == b.name and raw_at is None and _same_outcome(a, b) and not _has_any(anomalies)
    )
    return lane


def _same_outcome(a: CallSlot, b: CallSlot) -> bool:
    """Equal parsed arguments, or the same parse error on both sides."""
    if parsed_ok(a) and parsed_ok(b):
        return next(_walk(a.arguments, b.arguments, ROOT), None) is None
    return a.error == b.error


def lane_diff(index: int, a: StreamState, b: StreamState) -> Entry:
    slot_a, slot_b = a.calls.get(index), b.calls.get(index)
    anomalies = one_sided_anomalies(_for_index(a.anomalies, index), _for_index(b.anomalies, index))
    if slot_b is None:
        assert slot_a is not None
        return _one_side_lane(slot_a, "a", anomalies)
    if slot_a is None:
        return _one_side_lane(slot_b, "b", anomalies)
    return _both_sides_lane(slot_a, slot_b, anomalies)


# -- whole streams -------------------------------------------------------------------


def _differing_facts(a: StreamState, b: StreamState) -> dict[str, Any]:
    facts = {
        "status": (a.status.value, b.status.value),
        "http_status": (a.http_status, b.http_status),
        "error": (a.error, b.error),
        "dialect": (a.dialect, b.dialect),
        "finish_reason": (a.finish_reason, b.finish_reason),
    }
    return {name: {"a": x, "b": y} for name, (x, y) in facts.items() if x != y}


def text_diff(a: StreamState, b: StreamState) -> dict[str, Any]:
    text_a, text_b = answer_text(a), answer_text(b)
    at = first_difference(text_a, text_b)
    return {
        "equal": at is None,
        "first_difference": at,
        "length_a": len(text_a),
        "length_b": len(text_b),
    }


def failed_body(state: StreamState) -> tuple[str, int] | None:
    """The body of a response that failed without being read as a stream (an HTTP
    error's body, a page where a stream was expected), with its whole length: all
    that is left of what came. A JSON answer that was read is compared by its text
    and calls instead, as a stream is: its body holds a fresh id and time per run."""
    if state.error is None or state.body is None:
        return None
    return state.body, state.body_chars if state.body_chars is not None else len(state.body)


def body_diff(a: StreamState, b: StreamState) -> dict[str, Any] | None:
    """Where two failed bodies part (None when neither side has one). A length is
    None on a side without one. The state keeps a body's start only; past it, the
    whole lengths tell the bodies apart."""
    body_a, body_b = failed_body(a), failed_body(b)
    if body_a is None and body_b is None:
        return None
    kept_a, length_a = body_a if body_a is not None else ("", None)
    kept_b, length_b = body_b if body_b is not None else ("", None)
    at = first_difference(kept_a, kept_b)
    if at is None and length_a != length_b:
        at = len(kept_a)
    return {"equal": at is None, "first_difference": at, "length_a": length_a, "length_b": length_b}


def diff_states(a: StreamState, b: StreamState) -> dict[str, Any]:
    """Compare two streams. Keys: `identical`; `sources`; `status`, `http_status`,
    `error`, `dialect`, `finish_reason` as `{"a", "b"}` only where they differ;
    `text` (equal flag, first differing character); `body`, shaped as `text`, only
    where a side failed with a body that was not read as a stream (see
    `failed_body`); `anomalies` for the stream as a whole (index None) present on
    one side only; `lanes`, one per tool-call index of either side, sorted.

    `identical` ignores fragment boundaries, fragment counts and call ids: the
    network cuts every run differently and providers mint new ids, so those are
    reported in each lane but are not differences."""
    indices = sorted(a.calls.keys() | b.calls.keys())
    lanes = [lane_diff(index, a, b) for index in indices]
    facts = _differing_facts(a, b)
    text = text_diff(a, b)
    body = body_diff(a, b)
    stream_anomalies = one_sided_anomalies(
        _for_index(a.anomalies, None), _for_index(b.anomalies, None)
    )
    identical = (
        not facts
        and text["equal"]
        and (body is None or body["equal"])
        and not _has_any(stream_anomalies)
        and all(lane["identical"] for lane in lanes)
    )
    return {
        "identical": identical,
        "sources": {"a": a.source, "b": b.source},
        **facts,
        "text": text,
        **({} if body is None else {"body": body}),
        "anomalies": stream_anomalies,
        "lanes": lanes,
    }
