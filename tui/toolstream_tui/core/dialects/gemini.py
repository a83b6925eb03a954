"""Google's Gemini API and Vertex AI dialect: `streamGenerateContent`.

Every event (an SSE `data:` line with `alt=sse`, or an element of the JSON array
written without it) is a whole GenerateContentResponse. Candidate 0's
`content.parts[]` carry text (`thought: true` text is reasoning) and
`functionCall`s; its `finishReason` is the finish (STOP also ends a turn with
calls). A Gemini API call arrives whole in one part: its `args` object is one
fragment of compact JSON. Vertex AI with `streamFunctionCallArguments` opens a
call with its name and `willContinue`, sends `partialArgs` pieces (a JSON path
and a value; a string continues over pieces while `willContinue` is set) and
ends it with a part that continues no more; each piece is a fragment (a line
naming its path and value), and the arguments assembled from the paths are the
call's final word (`final_raw`).
"""

from __future__ import annotations

import json
import re
from functools import cache
from types import UnionType
from typing import Any

from ..events import Channel
from ..fields import FieldClock, FieldSighting
from ..sse import SSEEvent
from ..state import CallSlot, StreamState
from ..strict_json import compact_from_orjson
from .base import Dialect, as_dict, as_int, as_list, as_text, compact_json, excerpt

_json_string = json.JSONEncoder(ensure_ascii=False).encode  # a string: as compact_json

# finishReasons that say the model's calls were broken or not allowed.
MALFORMED_CALL_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})
# finishReasons that say a filter stopped the answer.
BLOCKED_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
    }
)
# What a GenerateContentResponse carries: a chunk with none of these is not one.
RESPONSE_KEYS = frozenset({"candidates", "promptFeedback", "usageMetadata"})
VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")
NULL = "NULL_VALUE"  # what a piece's nullValue says (protobuf's NullValue)
VALUE_TYPES: dict[str, type | UnionType] = {
    "stringValue": str,
    "numberValue": int | float,
    "boolValue": bool,
}
MAX_PATH_DEPTH = 256  # deeper paths are not assembled (the value is kept as a fragment)


@cache
def _segment_pattern() -> re.Pattern[str]:
    """One segment of a JSON path: `.key`, `[0]`, `['key']` or `["key"]`. Compiled when
    a path is first read (only Vertex AI sends them): at import it cost every run 1M
    instructions."""
    return re.compile(
        r"""\.(?P<key>[^.\[]+)|\[(?P<index>\d{1,18})\]"""
        r"""|\['(?P<single>(?:[^'\\]|\\.)*)'\]|\["(?P<double>(?:[^"\\]|\\.)*)"\]"""
    )


def _json_text(value: Any) -> str:
    """A wire value as compact JSON, or named when it nests too deep for Python to
    write (strict_json reads 1024 levels, past Python's recursion limit)."""
    try:
        return compact_json(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deep to show>"


def _said(value: Any) -> str:
    """A wire value quoted in a detail: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else _json_text(value)


def _is_google_error(payload: dict[str, Any]) -> bool:
    """Google's error object: `{"error": {"code", "message", "status"}}`."""
    error = payload.get("error")
    return isinstance(error, dict) and isinstance(error.get("status"), str) and "code" in error


def _is_gemini(payload: dict[str, Any]) -> bool:
    if "choices" in payload or "type" in payload:
        return False
    return "candidates" in payload or "promptFeedback" in payload or _is_google_error(payload)


# -- partialArgs: assembling arguments from JSON paths ----------------------------------


@cache
def _plain_path_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A path of `.key` and `[0]` segments only (as Vertex AI writes them): whether a
    path is one, and its segments, each found in one call."""
    return re.compile(r"(?:\.[^.\[]+|\[\d{1,18}\])+"), re.compile(r"\.([^.\[]+)|\[(\d{1,18})\]")


def parse_path(path: str) -> list[str | int] | None:
    """`$.a.b[0]` (or `$['a']["b"][0]`) as its segments; None when it is not a path
    below the root."""
    if not path.startswith("$"):
        return None
    plain, segment = _plain_path_patterns()
    if plain.fullmatch(path, 1):  # each key runs to the next `.` or `[`: one way to cut it
        return [key or int(index) for key, index in segment.findall(path, 1)]
    return _parsed_segments(path)


def _parsed_segments(path: str) -> list[str | int] | None:
    """`parse_path` segment by segment, for any path (quoted keys too)."""
    segments: list[str | int] = []
    position = 1
    segment_at = _segment_pattern().match
    while position < len(path):
        match = segment_at(path, position)
        if match is None:
            return None
        segment = _segment(match)
        if segment is None:
            return None
        segments.append(segment)
        position = match.end()
    return segments or None


def _segment(match: re.Match[str]) -> str | int | None:
    if match["key"] is not None:
        return match["key"]
    if match["index"] is not None:
        return int(match["index"])
    if match["single"] is not None:
        return re.sub(r"\\(.)", r"\1", match["single"])
    try:
        return str(json.loads(f'"{match["double"]}"'))
    except ValueError:
        return None


class ObjectNode(dict[str, Any]):
    """An object being assembled (values: nodes or `Leaf`s)."""


class ArrayNode(dict[int, Any]):
    """An array being assembled, keyed by index (elements listed in index order)."""


class Leaf:
    """A value; a string is kept as its pieces (joined once, at the end: a long
    string continued over many pieces would otherwise be copied at each)."""

    __slots__ = ("open", "pieces", "value")

    def __init__(self, value: Any, open: bool = False, pieces: list[str] | None = None) -> None:
        self.value = value
        self.open = open  # a string still to be continued (willContinue)
        self.pieces = pieces

    @classmethod
    def of(cls, value: Any, going_on: bool) -> Leaf:
        return cls(None, going_on, [value]) if isinstance(value, str) else cls(value)

    def continue_with(self, text: str, going_on: bool) -> None:
        assert self.pieces is not None
        self.pieces.append(text)
        self.open = going_on

    @property
    def final(self) -> Any:
        return self.value if self.pieces is None else "".join(self.pieces)


def _kind_of(node: Any) -> str:
    if isinstance(node, ObjectNode):
        return "an object"
    if isinstance(node, ArrayNode):
        return "an array"
    return "a value"


def _plain(node: Any) -> Any:
    if isinstance(node, ObjectNode):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, ArrayNode):
        return [_plain(node[index]) for index in sorted(node)]
    return node.final


class ArgumentTree:
    """The arguments of one streamed call, assembled piece by piece from their paths.
    `add` returns what was wrong with a piece: (anomaly kind, detail), or None."""

    __slots__ = ("leaves", "places", "root")

    def __init__(self) -> None:
        self.root = ObjectNode()
        self.leaves: dict[str, Leaf] = {}  # by path, in order of arrival
        # Each path found before: its segments and container. A container, once made,
        # is never replaced, so the walk to it always ends at the same one (a string
        # continued over many pieces names the same path each time).
        self.places: dict[str, tuple[list[str | int], ObjectNode | ArrayNode]] = {}

    def add(self, piece: dict[str, Any]) -> tuple[str, str] | None:
        path = piece.get("jsonPath")
        if not isinstance(path, str):
            return "unexpected-shape", f"jsonPath {excerpt(_said(path), 80)} names no argument"
        place = self.places.get(path)
        if place is not None and self._continued(place, piece):
            return None
        segments = place[0] if place else parse_path(path)
        if segments is None or len(segments) > MAX_PATH_DEPTH:
            shown = json.dumps(path, ensure_ascii=False)
            return "unexpected-shape", f"jsonPath {excerpt(shown, 80)} names no argument"
        found = _value_of(piece)
        if isinstance(found, str):
            return "unexpected-shape", f"{path}: {found}"
        value, problem = found
        container = place[1] if place else self._container(segments, path)
        if isinstance(container, str):
            return "partial-args-conflict", container
        if place is None:
            self.places[path] = (segments, container)
        going_on = isinstance(value, str) and piece.get("willContinue") is True
        return self._set(container, segments[-1], path, value, going_on) or problem

    def _continued(
        self, place: tuple[list[str | int], ObjectNode | ArrayNode], piece: dict[str, Any]
    ) -> bool:
        """The usual piece, in fewer steps: the next text of an open string at a path
        found before (nothing else in the piece). False: it goes the general way."""
        if len(piece) != 2 + ("willContinue" in piece):
            return False
        value = piece.get("stringValue")
        leaf = place[1].get(place[0][-1])  # type: ignore[arg-type]
        if type(value) is not str or type(leaf) is not Leaf or leaf.pieces is None:
            return False
        if not leaf.open:
            return False
        leaf.continue_with(value, piece.get("willContinue") is True)
        return True

    def _container(self, segments: list[str | int], path: str) -> ObjectNode | ArrayNode | str:
        """The container the path's last segment lives in (made as needed), or what
        contradicts the path."""
        node: ObjectNode | ArrayNode = self.root
        for depth, segment in enumerate(segments):
            if isinstance(segment, int) != isinstance(node, ArrayNode):
                where = "the arguments" if depth == 0 else f"{_shown(segments[:depth])}"
                return (
                    f"{path} treats {where} as {_kind_of(_other(node))}, but it is {_kind_of(node)}"
                )
            if depth == len(segments) - 1:
                return node
            wanted = ArrayNode if isinstance(segments[depth + 1], int) else ObjectNode
            child = node.get(segment)  # type: ignore[arg-type]
            if child is None:
                child = wanted()
                node[segment] = child  # type: ignore[index]
            elif isinstance(child, Leaf):
                return f"{path} goes inside {_shown(segments[: depth + 1])}, which holds a value"
            node = child
        return node

    def _set(
        self,
        container: ObjectNode | ArrayNode,
        key: str | int,
        path: str,
        value: Any,
        going_on: bool,
    ) -> tuple[str, str] | None:
        existing = container.get(key)  # type: ignore[arg-type]
        if existing is None:
            leaf = Leaf.of(value, going_on)
            container[key] = leaf  # type: ignore[index]
            self.leaves[path] = leaf
            return None
        if not isinstance(existing, Leaf):
            return (
                "partial-args-conflict",
                f"{path} holds {_kind_of(existing)}; a value came for it",
            )
        if isinstance(value, str) and existing.pieces is not None:
            was_open = existing.open
            existing.continue_with(value, going_on)
            if was_open:
                return None
            return "partial-args-conflict", f"{path} got more text after it ended; appended"
        was = excerpt(compact_json(existing.final), 60)
        container[key] = self.leaves[path] = Leaf.of(value, going_on)  # type: ignore[index]
        return "partial-args-conflict", f"{path} was {was}, then {excerpt(compact_json(value), 60)}"

    def open_paths(self) -> list[str]:
        return [path for path, leaf in self.leaves.items() if leaf.open]

    def gaps(self) -> list[str]:
        """Arrays whose indexes skip a number (listed in index order, without the gap)."""
        found: list[str] = []
        self._find_gaps(self.root, "$", found)
        return found

    def _find_gaps(self, node: Any, path: str, found: list[str]) -> None:
        if isinstance(node, ArrayNode) and sorted(node) != list(range(len(node))):
            found.append(path)
        if isinstance(node, ObjectNode | ArrayNode):
            for key, child in node.items():
                step = f"[{key}]" if isinstance(key, int) else f".{key}"
                if len(found) < 10:
                    self._find_gaps(child, path + step, found)

    def text(self) -> str:
        return self.written()[0]

    def written(self) -> tuple[str, dict[str, Any] | None]:
        """The arguments' text, and the object it was written from where parsing the
        text gives that object back: where orjson wrote it (no integer past 64 bits,
        no surrogate, nothing nested past 255; the values were decoded strictly)."""
        value = _plain(self.root)
        text = compact_from_orjson(value)
        return (compact_json(value), None) if text is None else (text, value)


def _other(node: ObjectNode | ArrayNode) -> ObjectNode | ArrayNode:
    return ArrayNode() if isinstance(node, ObjectNode) else ObjectNode()


def _shown(segments: list[str | int]) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segments)


def _value_of(piece: dict[str, Any]) -> tuple[Any, tuple[str, str] | None] | str:
    """The piece's value, and a conflict when it carries several; or what is wrong."""
    present = [key for key in VALUE_KEYS if key in piece and piece[key] is not None]
    if not present:
        return "a piece with no value"
    key = present[0]
    value = None if key == "nullValue" else piece[key]
    expected = VALUE_TYPES.get(key)
    if expected is not None and (
        not isinstance(value, expected) or (key == "numberValue" and isinstance(value, bool))
    ):
        return f"{key} is not a {key.removesuffix('Value')}"
    problem = None
    if len(present) > 1:
        problem = ("partial-args-conflict", f"one piece carries {', '.join(present)}; {key} used")
    return value, problem


def text_piece_line(path: str, value: str, going_on: bool) -> str:
    """A piece of string value as its lane shows it (a string is written as
    `compact_json` writes it, without its steps for other values)."""
    return f"{path} = {_json_string(value)}{' …' if going_on else ''}\n"


def piece_text(piece: Any) -> str:
    """A piece as its lane shows it, one line each: `$.city = "San " …` (the `…`:
    it continues). The text is not JSON, so pieces never read as calls merged."""
    if type(piece) is dict and len(piece) == 2 + ("willContinue" in piece):
        path, value = piece.get("jsonPath"), piece.get("stringValue")
        if type(path) is str and type(value) is str:  # the usual piece, in fewer steps
            return text_piece_line(path, value, piece.get("willContinue") is True)
    if not isinstance(piece, dict):
        return f"? {_json_text(piece)}\n"
    path = piece.get("jsonPath")
    shown = path if isinstance(path, str) else _said(path)
    values = [key for key in VALUE_KEYS if piece.get(key) is not None]
    said = " | ".join(_json_text(None if k == "nullValue" else piece[k]) for k in values)
    more = " …" if piece.get("willContinue") is True else ""
    return f"{shown} = {said or '?'}{more}\n"


def piece_of_line(line: str) -> dict[str, Any] | None:
    """A lane's line (`piece_text`) read back as the piece it shows, for a preview
    of the arguments the pieces make up to the display cursor. None for a line
    that shows no one value (a piece that was not an object, or carried none or
    several); where a path holds ` = `, the first reading whose value parses."""
    shown = line.removesuffix("\n")
    going_on = shown.endswith(" …")
    shown = shown.removesuffix(" …")
    at = shown.find(" = ")
    while at >= 0:
        value = _first_value(shown[at + 3 :])
        if value is _NONE:
            at = shown.find(" = ", at + 3)
            continue
        key = _value_key(value)
        if key is None:
            return None
        piece: dict[str, Any] = {"jsonPath": shown[:at], key: NULL if value is None else value}
        if going_on:
            piece["willContinue"] = True
        return piece
    return None


_NONE = object()  # no value read


def _first_value(said: str) -> Any:
    """The value a line says, the first where a piece carried several (`a | b`)."""
    values = said.split(" | ")
    for count in range(1, len(values) + 1):
        try:
            return json.loads(" | ".join(values[:count]))
        except ValueError:
            continue
    return _NONE


def _value_key(value: Any) -> str | None:
    """The key a piece carries `value` under (None: no piece carries it)."""
    if value is None:
        return "nullValue"
    if isinstance(value, bool):
        return "boolValue"
    if isinstance(value, str):
        return "stringValue"
    return "numberValue" if isinstance(value, int | float) else None


def assembled_from_lines(text: str) -> Any:
    """What the pieces a lane shows in `text` (`piece_text` lines; a last line cut
    short is left out) make so far: open strings as far as they came."""
    tree = ArgumentTree()
    for line in text.split("\n"):
        piece = piece_of_line(line)
        if piece is not None:
            tree.add(piece)
    return _plain(tree.root)


class PieceFields:
    """When each top-level field of a call that comes as pieces became known, told
    by the dialect piece by piece (a `FieldReader` that reads no text: the pieces
    are not JSON): a field is named by the first piece at a path inside it, and
    complete once a piece comes for another field, or by its own piece when that
    sets it whole (a value at `$.key` that does not continue). A call's last field
    is complete only by its own piece: the call's end carries no text to time it
    by, and a report cut at any event must be the stream read that far."""

    def __init__(self) -> None:
        self.fields: list[FieldSighting] = []
        self._by_key: dict[str, FieldSighting] = {}
        self._open: FieldSighting | None = None

    def took(self, segments: list[str | int], continues: bool, end: int) -> None:
        """A piece at the path of `segments`, whose line ends at text offset `end`."""
        key = segments[0]
        opened = self._open
        if opened is not None and opened.key == key and continues:
            return  # the usual piece: more of the open field
        if not isinstance(key, str):
            return
        if opened is not None and opened.key != key:
            opened.complete_at = end  # the pieces went on to another field
        field = self._by_key.get(key)
        if field is None:
            field = self._by_key[key] = FieldSighting(key, end)
            self.fields.append(field)
        if field.complete_at is not None:  # a later piece for it contradicts (said)
            self._open = None
        elif len(segments) == 1 and not continues:
            field.complete_at, self._open = end, None
        else:
            self._open = field


class StreamedCall:
    """A call whose arguments come as pieces at JSON paths, one line each."""

    __slots__ = ("fields", "slot", "tree")

    def __init__(self, slot: CallSlot) -> None:
        self.slot = slot
        self.tree = ArgumentTree()
        self.fields = PieceFields()
        slot.in_pieces = True
        slot.time_fields_with(FieldClock(self.fields))

    def took(self, path: str, continues: bool) -> None:
        """Its latest piece (at `path`) was placed: time its field."""
        place = self.tree.places.get(path)
        if place is not None:
            self.fields.took(place[0], continues, self.slot.pieces.length - 1)


# -- the dialect ------------------------------------------------------------------------


class GeminiDialect(Dialect):
    name = "gemini"
    anomaly_kinds = frozenset(
        {
            "blocked",
            "extra-choice",
            "finish-malformed-call",
            "name-missing",
            "partial-args-conflict",
            "partial-args-unended",
            "partial-args-without-call",
        }
    )

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        return payload is not None and _is_gemini(payload)

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return _is_gemini(body)

    def __init__(self, state: StreamState) -> None:
        super().__init__(state)
        self._streamed: StreamedCall | None = None

    def handle(self, event: SSEEvent) -> None:
        payload = self.payload(event)
        if payload is not None and not self._took_pieces(payload):
            self._on_response(payload)

    def _took_pieces(self, payload: dict[str, Any]) -> bool:
        """Vertex AI's usual chunk, in fewer steps (once per piece): one candidate whose
        one part carries only the open call's next partialArgs (no text, name, args,
        finish, feedback or error). Anything else goes the general way. (The keys every
        such chunk has are read by subscript, cheaper than `get`: without one, a chunk
        raises KeyError here and goes the general way.)"""
        if self._streamed is None or "promptFeedback" in payload or "error" in payload:
            return False
        try:
            candidates = payload["candidates"]
            if type(candidates) is not list or len(candidates) != 1:
                return False
            candidate = candidates[0]
            if type(candidate) is not dict or candidate.get("finishReason") is not None:
                return False
            index, content = candidate.get("index", 0), candidate["content"]
            if type(index) is not int or index != 0 or type(content) is not dict:
                return False
            parts = content["parts"]
            if type(parts) is not list or len(parts) != 1 or type(parts[0]) is not dict:
                return False
            call = parts[0]["functionCall"]
            if "text" in parts[0] or type(call) is not dict:
                return False
            pieces = call["partialArgs"]
        except KeyError:
            return False
        if call.get("name") is not None or call.get("args") is not None or type(pieces) is not list:
            return False
        going_on = call.get("willContinue") is True
        if len(pieces) != 1 or not self._continued_string(pieces[0], going_on):
            self._feed(pieces, going_on)
        return True

    def _continued_string(self, piece: Any, call_goes_on: bool) -> bool:
        """The usual piece, in the fewest steps: only the next text of a string the
        open call left open (as `piece_text` and `ArgumentTree.add` would take it)."""
        if type(piece) is not dict or len(piece) != 2 + ("willContinue" in piece):
            return False
        path, value = piece.get("jsonPath"), piece.get("stringValue")
        streamed = self._streamed
        if type(path) is not str or type(value) is not str or streamed is None:
            return False
        place = streamed.tree.places.get(path)
        leaf = None if place is None else place[1].get(place[0][-1])  # type: ignore[arg-type]
        if type(leaf) is not Leaf or leaf.pieces is None or not leaf.open:
            return False
        going_on = piece.get("willContinue") is True
        line = text_piece_line(path, value, going_on)
        self.state.append_fragment(streamed.slot, line, self.event, self.t)
        leaf.pieces.append(value)  # `Leaf.continue_with`, in place
        leaf.open = going_on
        streamed.took(path, going_on)
        if not call_goes_on and not going_on:
            self._close_streamed(None)
        return True

    def on_completion(self, body: Any) -> None:
        """A non-streaming generateContent body: one response, parts complete."""
        if not isinstance(body, dict):
            self.state.fail("JSON response is not a Gemini response")
            return
        self._on_response(body)
        if self.state.error is None:
            self._close_streamed("the response ended")
            self.state.finish(None, "complete response")

    def on_end(self) -> None:
        if self.state.finished:
            self._close_streamed("the stream ended")
        else:
            self._close_streamed(None, truncated=True)

    # -- responses ------------------------------------------------------------------
    def _on_response(self, payload: dict[str, Any]) -> None:
        if payload.get("error") is not None and "candidates" not in payload:
            self._on_error(payload["error"])
            return
        candidates = payload.get("candidates")
        if not isinstance(candidates, list | None):
            self.note("unexpected-shape", None, "candidates is not a list")
        if not RESPONSE_KEYS.intersection(payload):
            self.note("unexpected-shape", None, "a response with no candidates")
        for candidate in as_list(candidates):
            self._on_candidate(candidate)
        feedback = payload.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason") is not None:
            self._on_prompt_blocked(feedback)

    def _on_candidate(self, candidate: Any) -> None:
        if not isinstance(candidate, dict):
            self.note("unexpected-shape", None, "a candidate is not an object")
            return
        index = candidate.get("index", 0)  # proto JSON leaves out an index of 0
        if index != 0 or as_int(index) is None:
            self.note("extra-choice", None, f"candidate {excerpt(_said(index), 40)} ignored")
            return
        content = candidate.get("content")
        if content is not None and not isinstance(content, dict):
            self.note("unexpected-shape", None, "candidate content is not an object")
        parts = as_dict(content).get("parts")
        if not isinstance(parts, list | None):
            self.note("unexpected-shape", None, "content parts is not a list")
        for part in as_list(parts):
            self._on_part(part)
        reason = candidate.get("finishReason")
        if reason is not None:
            self._on_finish(_said(reason), candidate)

    def _on_part(self, part: Any) -> None:
        if not isinstance(part, dict):
            self.note("unexpected-shape", None, "a part is not an object")
            return
        text = part.get("text")
        if isinstance(text, str):
            thought = part.get("thought") is True
            self.state.append_text(Channel.REASONING if thought else Channel.CONTENT, text)
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._on_function_call(call)
        elif call is not None:
            self.note("unexpected-shape", None, "functionCall is not an object")

    def _on_finish(self, reason: str, candidate: dict[str, Any]) -> None:
        self._close_streamed(f"the finish ({reason}) came first")
        message = candidate.get("finishMessage")
        said = f": {excerpt(_said(message))}" if message else ""
        if reason in MALFORMED_CALL_REASONS:
            self.note("finish-malformed-call", None, f"finishReason {reason}{said}")
        elif reason in BLOCKED_REASONS:
            self.note("blocked", None, f"finishReason {reason}: the answer was blocked{said}")
        self.state.finish(reason, "finishReason")

    def _on_prompt_blocked(self, feedback: dict[str, Any]) -> None:
        reason = excerpt(_said(feedback.get("blockReason")), 80)
        message = feedback.get("blockReasonMessage")
        detail = f"the prompt was blocked ({reason})" + (
            f": {excerpt(_said(message))}" if message else ""
        )
        self.note("blocked", None, detail)
        self.state.fail(detail)

    def _on_error(self, error: Any) -> None:
        fields = as_dict(error)
        message = _said(fields.get("message") or error)
        status, code = fields.get("status"), fields.get("code")
        label = " ".join(x for x in (status and _said(status), code and f"({_said(code)})") if x)
        detail = f"{label}: {message}" if label else message
        self.note("error-event", None, excerpt(detail))
        self.state.fail(f"error in stream: {detail}")

    # -- function calls ---------------------------------------------------------------
    def _on_function_call(self, call: dict[str, Any]) -> None:
        name, call_id = as_text(call.get("name")), as_text(call.get("id"))
        pieces = call.get("partialArgs")
        going_on = call.get("willContinue") is True
        has_args = call.get("args") is not None
        if name is not None:
            self._close_streamed("another call started")
            slot = self.state.start_call(self.state.next_free_index(), call_id, name, self.t)
            if has_args:
                self._whole_arguments(slot, call["args"])
            if pieces is not None or going_on:
                self._streamed = StreamedCall(slot)
                self._feed(pieces, going_on)
        elif pieces is not None or going_on:
            if self._streamed is None and pieces is not None:
                self._adopt_pieces(call_id)
            if self._streamed is not None:
                self._feed(pieces, going_on)
        elif has_args:
            slot = self.state.start_call(self.state.next_free_index(), call_id, None, self.t)
            self.note("name-missing", slot.index, "a functionCall with args but no name")
            self._whole_arguments(slot, call["args"])
        else:  # `functionCall: {}` ends the streamed call
            self._close_streamed(None)

    def _whole_arguments(self, slot: CallSlot, args: Any) -> None:
        if isinstance(args, str):
            self.note(
                "unexpected-shape", slot.index, "args is a string, not an object; read as JSON"
            )
            self.state.append_fragment(slot, args, self.event, self.t)
        else:
            self.append_whole_arguments(slot, args)

    def _adopt_pieces(self, call_id: str | None) -> None:
        """partialArgs with no call open: kept in a nameless call of their own."""
        slot = self.state.start_call(self.state.next_free_index(), call_id, None, self.t)
        self.note("partial-args-without-call", slot.index, "partialArgs with no call open")
        self._streamed = StreamedCall(slot)

    def _feed(self, pieces: Any, going_on: bool) -> None:
        streamed = self._streamed
        assert streamed is not None
        if not isinstance(pieces, list | None):
            self.note("unexpected-shape", streamed.slot.index, "partialArgs is not a list")
        piece_goes_on = False
        for piece in as_list(pieces):
            self.state.append_fragment(streamed.slot, piece_text(piece), self.event, self.t)
            if not isinstance(piece, dict):
                self.note(
                    "unexpected-shape", streamed.slot.index, "a partialArgs item is not an object"
                )
                continue
            problem = streamed.tree.add(piece)
            if problem is not None:
                self.note(problem[0], streamed.slot.index, problem[1])
            if problem is None or problem[0] == "partial-args-conflict":  # it was placed
                streamed.took(piece["jsonPath"], piece.get("willContinue") is True)
            piece_goes_on = piece_goes_on or piece.get("willContinue") is True
        if not going_on and not piece_goes_on:
            self._close_streamed(None)

    def _close_streamed(self, cut_by: str | None, *, truncated: bool = False) -> None:
        """The streamed call ended (`cut_by`: what ended it while it was to continue;
        `truncated`: the stream did, unfinished, which says enough): its arguments are
        what the pieces assembled."""
        streamed, self._streamed = self._streamed, None
        if streamed is None:
            return
        lane = streamed.slot.index
        if cut_by is not None:
            self.note("partial-args-unended", lane, f"the call was to continue, but {cut_by}")
        for path in [] if truncated else streamed.tree.open_paths():
            self.note("partial-args-unended", lane, f"{path} was to continue; its end never came")
        for path in streamed.tree.gaps():
            self.note(
                "unexpected-shape", lane, f"{path} skips an index; its elements are listed in order"
            )
        if streamed.slot.fragment_count:
            streamed.slot.restate(*streamed.tree.written())
