"""Fuzzing the stream core: no input may crash it, hang it, or lose what arrived.

Every case opens a `StreamSession`, feeds a body in arbitrary reads, ends it
(close, interrupt or fail) and checks the invariants in `check`: the report is
JSON, its status and exit code are among the known ones, every byte fed is
counted, and (for SSE bodies) every event an independent reference decoder
dispatches reaches the session, in order, with the same data.

The inputs: arbitrary bytes; SSE-shaped garbage built from field names, JSON
snippets and broken UTF-8; SSE events whose data is JSON in the shape of the
three dialects with arbitrary values; JSON bodies; mutations (drop, duplicate,
swap, truncate, flip) of every stub scenario; and every truncation point of
three representative scenarios, checked against the full run's arguments.
The last section pins, one test each, the bugs these found.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.apps import BIG_SCENARIOS
from tests.helpers.streaming import untimed, writes
from toolstream_stubs import list_scenarios, load_scenario
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS
from toolstream_tui.core.events import WireComment, WireEvent
from toolstream_tui.core.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from toolstream_tui.core.report import report_json
from toolstream_tui.core.session import REPORTED_CHARS

DIALECTS = [None, "openai-chat", "anthropic", "openai-responses"]
CONTENT_TYPES = ["text/event-stream", "application/json", "text/plain", ""]
STATUSES = [200, 401, 500]
ENDINGS = ["close", "interrupt", "fail"]
STATUS_VALUES = {"finished", "truncated", "error"}
REPLACEMENT = "\ufffd"  # what undecodable bytes read as
pytestmark = pytest.mark.slow  # thousands of generated streams
SCENARIOS = [info.name for info in list_scenarios()]


# -- the reference SSE decoder ------------------------------------------------------


@dataclass
class Reference:
    datas: list[str]  # every dispatched event's data, in order
    comments: list[str]
    trailing: str  # the lines of an event that never got its blank line


def reference_sse(body: bytes) -> Reference:
    """The WHATWG event-stream rules applied to the whole body at once, written
    independently of `SSEDecoder` (which works incrementally, on bytes)."""
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    *lines, last = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    datas: list[str] = []
    comments: list[str] = []
    data: list[str] = []
    pending: list[str] = []
    for line in lines:
        if line == "":
            if data:
                datas.append("\n".join(data))
            data, pending = [], []
            continue
        pending.append(line)
        if line.startswith(":"):
            comments.append(line[1:])
            continue
        name, colon, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if colon and value.startswith(" ") else value)
    if last.startswith(":"):
        comments.append(last[1:])
    pending.append(last)
    trailing = "\n".join(line for line in pending if line and not line.startswith(":"))
    return Reference(datas, comments, trailing)


# -- running one case and checking it ------------------------------------------------

CASES = [0]  # how many cases ran (hypothesis examples and exhaustive truncations)


@pytest.fixture(autouse=True)
def every_test_plays_a_case() -> Iterator[None]:
    """A test here that never reached `play` (a strategy that filters out every
    example, a case that returns early) would pass having checked nothing."""
    before = CASES[0]
    yield
    assert CASES[0] > before, "the test played no case"


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@contextmanager
def room_to_compare() -> Iterator[None]:
    """Room for the test's own parsing and comparing of the deepest arguments a
    report can hold (orjson parses up to 1024 levels); the core runs without it."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def check_array_elements(body: bytes, events: list[Any]) -> None:
    """A body that is a JSON array (made by json.dumps) is a stream of its elements:
    each event is one element's text, whole (a piece of the body, when
    the body is not JSON)."""
    datas = [event.data for event in events if isinstance(event, WireEvent)]
    with room_to_compare():
        try:
            elements = json.loads(body)
        except ValueError:  # not JSON (cut short): each event is still a piece of it
            text = body.decode("utf-8", errors="replace")
            assert all(data in text for data in datas)
            return
        # however the array is laid out, each event is one element, whole
        assert [json.dumps(json.loads(data)) for data in datas] == [
            json.dumps(element) for element in elements
        ]


def check_lines(body: bytes, events: list[Any], report: dict[str, Any]) -> None:
    """An NDJSON body: each non-blank line is an event, whole (the last one too, with
    or without its newline, unless it was cut: then it is the trailing text). A body
    that was one JSON value, one event of a stream, is that event, whole."""
    datas = [event.data for event in events if isinstance(event, WireEvent)]
    text = body.removeprefix(b"\xef\xbb\xbf")
    if datas == [text.decode("utf-8", errors="replace").strip()] and not report["trailing"]:
        return
    lines = text.split(b"\n")
    expected = [
        line.rstrip(b"\r").decode("utf-8", errors="replace") for line in lines if line.strip()
    ]
    if report["trailing"]:  # only what followed the last newline can be left over
        assert report["trailing"] == lines[-1].decode("utf-8", errors="replace")
        expected = expected[:-1]
    assert datas == expected


def end(session: StreamSession, ending: str, t: float) -> list[Any]:
    if ending == "interrupt":
        return session.interrupt("connection reset by peer", t)
    if ending == "fail":
        return session.fail("connection reset by peer", t)
    return session.close(t)


def play(
    reads: list[bytes],
    *,
    dialect: str | None = None,
    status: int = 200,
    content_type: str = "text/event-stream",
    ending: str = "close",
) -> tuple[StreamSession, list[Any], dict[str, Any]]:
    """Open, feed every read, end the stream as `ending` says; check it; return
    the session, every event it emitted, and the report."""
    CASES[0] += 1
    session = StreamSession("fuzz", dialect=dialect)
    events = list(session.open(status, content_type))
    for number, read in enumerate(reads):
        events += session.feed(read, float(number))
    end_t = float(len(reads))
    events += end(session, ending, end_t)
    assert session.close(end_t + 1) == []  # a second end changes nothing
    report = check(session, reads, events, status=status, ending=ending)
    # However the body was cut, and with or without the live detail, the report is
    # the same as for the whole body in one read.
    whole = StreamSession("fuzz", dialect=dialect, live=False)
    whole.open(status, content_type)
    whole.feed(b"".join(reads), 0.0)
    end(whole, ending, 1.0)
    with room_to_compare():
        assert untimed(build_report(whole.state)) == untimed(report), (
            "the report depends on how the body was cut"
        )
    return session, events, report


def check(
    session: StreamSession,
    reads: list[bytes],
    events: list[Any],
    *,
    status: int,
    ending: str,
) -> dict[str, Any]:
    state = session.state
    report = build_report(state)
    text = report_json(state)  # what --headless prints: JSON, without NaN or Infinity
    with room_to_compare():
        assert json.loads(text, parse_constant=_refuse) == report
    assert report["status"] in STATUS_VALUES
    assert {anomaly["kind"] for anomaly in report["anomalies"]} <= ANOMALY_KINDS
    code = exit_code(state)
    assert code in {EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE}
    assert code == {"error": EXIT_FAILED, "truncated": EXIT_INCOMPLETE}.get(report["status"], code)
    if code == 0:
        assert all(call["error"] is None for call in report["tool_calls"])
    if ending == "fail" or status >= 400:
        assert report["status"] == "error"
        assert isinstance(report["error"], str) and report["error"]

    body = b"".join(reads)
    assert state.bytes_received == len(body), "bytes were dropped"
    assert report["bytes"] == len(body)

    if session.mode == "sse" and status < 400:
        ref = reference_sse(body)
        assert state.events == session.decoder.dispatched == len(ref.datas)
        wire = [event.data for event in events if isinstance(event, WireEvent)]
        assert wire == ref.datas, "a dispatched event's data was lost or changed"
        assert [n.number for n in events if isinstance(n, WireEvent)] == list(
            range(1, len(ref.datas) + 1)
        )
        comments = [event.text for event in events if isinstance(event, WireComment)]
        assert comments == ref.comments
        kept = ref.trailing[:REPORTED_CHARS]  # the report keeps the start, and the length
        assert report["trailing"] == kept, "undispatched bytes were lost"
        assert report["trailing_chars"] == len(ref.trailing)
    elif session.mode == "json-array" and status < 400:
        check_array_elements(body, events)
    elif session.mode == "ndjson" and status < 400:
        check_lines(body, events, report)
    elif session.mode == "eventstream" and status < 400:
        assert state.events == session.decoder.dispatched
        # A broken frame's bytes may be cut inside a character, which the whole body's
        # decoding reads on: only the characters both decodings agree on are compared.
        text = body.decode("utf-8", errors="replace").replace(REPLACEMENT, "")
        for event in events:
            if isinstance(event, WireEvent):
                assert event.data.replace(REPLACEMENT, "") in text, "an event's bytes changed"
    else:
        assert state.events == 0

    for call in report["tool_calls"]:
        assert isinstance(call["arguments_raw"], str)
        if call["arguments"] is None and call["arguments_raw"].strip() != "null":
            assert isinstance(call["error"], str) and call["error"], (
                f"call {call['index']} has neither arguments nor an error: {call}"
            )
    for anomaly in report["anomalies"]:
        assert isinstance(anomaly["kind"], str) and anomaly["kind"]
        assert isinstance(anomaly["detail"], str)
    return report


# -- 1. arbitrary bytes -------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    body=st.binary(max_size=2048),
    dialect=st.sampled_from(DIALECTS),
    content_type=st.sampled_from(CONTENT_TYPES),
    status=st.sampled_from(STATUSES),
    ending=st.sampled_from(ENDINGS),
)
def test_arbitrary_bytes_in_arbitrary_reads(
    data: st.DataObject,
    body: bytes,
    dialect: str | None,
    content_type: str,
    status: int,
    ending: str,
) -> None:
    reads = data.draw(writes(body))
    play(reads, dialect=dialect, status=status, content_type=content_type, ending=ending)


# -- 2. SSE-shaped garbage ------------------------------------------------------------

FIELDS = [
    b"data: ",
    b"data:",
    b"data",
    b"event: ",
    b"event:",
    b"id: ",
    b"id:",
    b"retry: ",
    b"retry:",
    b": comment",
    b":",
    b"",
    b"\xef\xbb\xbf",
    b" data: ",
    b"DATA: ",
    b"dat",
]
EVENT_TYPES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "response.created",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.output_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
]
SNIPPETS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b'"',
    b"[DONE]",
    b'"choices"',
    b'"delta"',
    b'"tool_calls"',
    b'"index"',
    b'"id"',
    b'"type"',
    b'"function"',
    b'"name"',
    b'"arguments"',
    b'"finish_reason"',
    b'"error"',
    b'"partial_json"',
    b'"input_json_delta"',
    b'"tool_use"',
    b'"function_call"',
    b'"output_index"',
    b'"item"',
    b'"delta":"x"',
    b'"index":0',
    b'"index":1',
    b'"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a',
    b'"}}]}}]}',
    b'"finish_reason":"tool_calls"',
    b'{"type":"message_stop"}',
    b'{"type":"response.completed"}',
    b"0",
    b"1",
    b"-1",
    b"3.5",
    b"12345678901234567890123",
    b"1e400",
    b"null",
    b"true",
    b"\\ud800",
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b"\\u0000",
    "é😀中\u2028".encode(),
    b"\xff\xfe",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\x00",
    b"\t",
    b" ",
    b"\r",
    b"\x1b[31m",
    # nesting past the recursion limit (hypothesis raises it by 2000 while it runs)
    b"[" * 5000,
    b'{"a":' * 5000,
]
OPENERS = [b"", b"{", b"[", b'{"type":', b'{"choices":[', *SNIPPETS[-2:]]
EOLS = [b"\n", b"\r", b"\r\n"]


@st.composite
def garbage_line(draw: st.DrawFn) -> bytes:
    eol = draw(st.sampled_from(EOLS))
    if draw(st.integers(0, 3)) == 0:
        return eol  # a blank line: the end of an event
    if draw(st.booleans()):
        field = draw(st.sampled_from(FIELDS))
    else:  # a data line, opening like JSON does
        field = draw(st.sampled_from([b"data: ", b"data:"])) + draw(st.sampled_from(OPENERS))
    if field.startswith(b"event") and draw(st.booleans()):
        return field + draw(st.sampled_from(EVENT_TYPES)).encode() + eol
    body = b"".join(draw(st.lists(st.sampled_from(SNIPPETS), max_size=12)))
    return field + body + eol


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    lines=st.lists(garbage_line(), max_size=40),
    tail=st.sampled_from([b"", b"data: {", b"\r", b":", b"\xe2"]),
    dialect=st.sampled_from(DIALECTS),
    content_type=st.sampled_from(["text/event-stream", "text/plain", ""]),
    ending=st.sampled_from(ENDINGS),
)
def test_sse_shaped_garbage(
    data: st.DataObject,
    lines: list[bytes],
    tail: bytes,
    dialect: str | None,
    content_type: str,
    ending: str,
) -> None:
    body = b"".join(lines) + tail
    reads = data.draw(writes(body))
    play(reads, dialect=dialect, content_type=content_type, ending=ending)


# -- 2b. events in the shape of the dialects, with arbitrary values ------------------

KEYS = [
    "type",
    "object",
    "choices",
    "index",
    "delta",
    "message",
    "tool_calls",
    "id",
    "function",
    "name",
    "arguments",
    "finish_reason",
    "content",
    "reasoning_content",
    "refusal",
    "error",
    "code",
    "content_block",
    "input",
    "partial_json",
    "text",
    "stop_reason",
    "output",
    "output_index",
    "item",
    "item_id",
    "call_id",
    "sequence_number",
    "response",
    "status",
    "incomplete_details",
    "reason",
]
WORDS = [
    *EVENT_TYPES,
    "function",
    "function_call",
    "message",
    "tool_use",
    "server_tool_use",
    "text",
    "thinking",
    "input_json_delta",
    "text_delta",
    "signature_delta",
    "tool_calls",
    "stop",
    "end_turn",
    "length",
    "chat.completion",
    "chat.completion.chunk",
    "response",
    "completed",
    "incomplete",
    "call_1",
    "fc_1",
    "",
    "{",
    '{"a":',
    "1}",
    "null",
    "[DONE]",
]
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner, max_size=5)
    ),
    max_leaves=14,
)
JSON_OBJECTS = st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, max_size=6)


@st.composite
def shaped_event(draw: st.DrawFn) -> bytes:
    payload = draw(JSON_OBJECTS | JSON_VALUES)
    text = json.dumps(payload, ensure_ascii=draw(st.booleans()))
    head = b""
    if draw(st.booleans()):
        kind = payload.get("type") if isinstance(payload, dict) else None
        name = kind if isinstance(kind, str) else draw(st.sampled_from(EVENT_TYPES))
        head = b"event: " + name.encode("utf-8", errors="surrogatepass") + b"\n"
    return head + b"data: " + text.encode("utf-8", errors="surrogatepass") + b"\n\n"


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    events=st.lists(shaped_event(), max_size=12),
    done=st.booleans(),
    dialect=st.sampled_from(DIALECTS),
    ending=st.sampled_from(ENDINGS),
)
def test_dialect_shaped_events_with_arbitrary_values(
    data: st.DataObject,
    events: list[bytes],
    done: bool,
    dialect: str | None,
    ending: str,
) -> None:
    body = b"".join(events) + (b"data: [DONE]\n\n" if done else b"")
    reads = data.draw(writes(body))
    play(reads, dialect=dialect, ending=ending)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    payload=JSON_OBJECTS | JSON_VALUES,
    dialect=st.sampled_from(DIALECTS),
    content_type=st.sampled_from(["application/json", "application/problem+json", "text/html"]),
    status=st.sampled_from(STATUSES),
    ending=st.sampled_from(ENDINGS),
)
def test_json_bodies_with_arbitrary_values(
    data: st.DataObject,
    payload: Any,
    dialect: str | None,
    content_type: str,
    status: int,
    ending: str,
) -> None:
    depth = data.draw(st.sampled_from([0, 0, 0, 3, 5000]), label="depth")
    body = ("[" * depth + json.dumps(payload) + "]" * depth).encode()
    reads = data.draw(writes(body))
    play(reads, dialect=dialect, status=status, content_type=content_type, ending=ending)


# -- 2c. real events and responses with some values replaced -----------------------

COMPLETIONS = [
    {
        "type": "message",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
        ],
        "stop_reason": "tool_use",
    },
    {
        "object": "response",
        "status": "completed",
        "output": [
            {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "hi"}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "f",
                "arguments": "{}",
            },
        ],
    },
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {"object": "response", "status": "failed", "error": {"code": "e", "message": "m"}},
]


def scenario_events(name: str) -> list[tuple[str, Any]]:
    """A scenario's events as (event line, data): the data decoded when it is JSON."""
    found = []
    text = load_scenario(name).rendered.decode().replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        fields = [line.partition(":")[::2] for line in block.split("\n") if line[:1] != ":"]
        event = next((value.strip() for key, value in fields if key == "event"), "")
        data = "\n".join(value.removeprefix(" ") for key, value in fields if key == "data")
        if data:
            try:
                found.append((event, json.loads(data)))
            except ValueError:
                found.append((event, data))
    return found


SSE_SCENARIOS = [
    name
    for name in SCENARIOS
    if "event-stream" in load_scenario(name).content_type
    and name not in BIG_SCENARIOS
    and len(load_scenario(name).rendered) < 20_000
]
TEMPLATES = [
    *(json.loads(load_scenario(name).rendered) for name in ("json-completion", "http-401")),
    *COMPLETIONS,
]


# values of the wrong type where a list, an object, a string or a number is due
ODD_VALUES = [0, 5, -1, 2**64, 1.5, True, False, None, "", "x", [], [1], [[]], {}, {"a": 1}]


@st.composite
def tweaked(draw: st.DrawFn, value: Any, rate: int = 15) -> Any:
    """`value` with about one part in `rate` replaced by arbitrary JSON, and a few
    keys dropped."""
    if draw(st.integers(1, rate)) == 1:
        return draw(st.sampled_from(ODD_VALUES) | JSON_VALUES)
    if isinstance(value, dict):
        kept = [key for key in value if draw(st.integers(0, 24)) != 0]
        return {key: draw(tweaked(value[key], rate)) for key in kept}
    if isinstance(value, list):
        return [draw(tweaked(item, rate)) for item in value]
    return value


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(SSE_SCENARIOS),
    dialect=st.sampled_from(DIALECTS),
    ending=st.sampled_from(ENDINGS),
)
def test_scenario_events_with_values_replaced(
    data: st.DataObject, name: str, dialect: str | None, ending: str
) -> None:
    body = b""
    for event, payload in scenario_events(name):
        if isinstance(payload, str):
            text = payload
        else:
            text = json.dumps(data.draw(tweaked(payload), label=event or "data"))
        head = f"event: {event}\n" if event else ""
        body += f"{head}data: {text}\n\n".encode("utf-8", errors="surrogatepass")
    reads = data.draw(writes(body), label="reads")
    play(reads, dialect=dialect, ending=ending)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    template=st.sampled_from(TEMPLATES),
    dialect=st.sampled_from(DIALECTS),
    status=st.sampled_from([200, 200, 200, 401, 500]),
    ending=st.sampled_from(ENDINGS),
)
def test_json_responses_with_values_replaced(
    data: st.DataObject, template: Any, dialect: str | None, status: int, ending: str
) -> None:
    body = json.dumps(data.draw(tweaked(template, rate=6), label="body")).encode()
    reads = data.draw(writes(body), label="reads")
    play(reads, dialect=dialect, status=status, content_type="application/json", ending=ending)


# -- 3. mutations of every stub scenario -----------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, body: bytes) -> bytes:
    """`body` after one to three of: bytes dropped, a range duplicated, two ranges
    swapped, truncation, byte flips."""
    for _ in range(draw(st.integers(1, 3))):
        size = len(body)
        position = st.integers(0, size)
        kind = draw(st.sampled_from(["drop", "duplicate", "swap", "truncate", "flip"]))
        if kind == "drop":
            for _ in range(draw(st.integers(1, 4))):
                a = draw(st.integers(0, len(body)))
                b = draw(st.integers(a, min(len(body), a + draw(st.sampled_from([1, 2, 16])))))
                body = body[:a] + body[b:]
        elif kind == "duplicate":
            a, b, at = sorted(draw(st.lists(position, min_size=3, max_size=3)))
            at = draw(st.sampled_from([a, b, at]))
            body = body[:at] + body[a:b] + body[at:]
        elif kind == "swap":
            a, b, c, d = sorted(draw(st.lists(position, min_size=4, max_size=4)))
            body = body[:a] + body[c:d] + body[b:c] + body[a:b] + body[d:]
        elif kind == "truncate":
            body = body[: draw(position)]
        elif size:
            flipped = bytearray(body)
            for _ in range(draw(st.integers(1, 8))):
                flipped[draw(st.integers(0, size - 1))] ^= draw(st.integers(1, 255))
            body = bytes(flipped)
    return body


@pytest.mark.parametrize("name", [name for name in SCENARIOS if name not in BIG_SCENARIOS])
@settings(max_examples=10, deadline=None)
@given(
    data=st.data(),
    dialect=st.sampled_from(DIALECTS),
    ending=st.sampled_from(ENDINGS),
)
def test_mutated_scenarios(
    name: str, data: st.DataObject, dialect: str | None, ending: str
) -> None:
    play_mutated(name, data, dialect, ending)


# The big scenarios mutated a few times on their own (their size is the point); left
# out where every example replays a whole scenario.
@pytest.mark.parametrize("name", sorted(BIG_SCENARIOS))
@settings(max_examples=3, deadline=None)
@given(
    data=st.data(),
    dialect=st.sampled_from(DIALECTS),
    ending=st.sampled_from(ENDINGS),
)
def test_mutated_big_scenarios(
    name: str, data: st.DataObject, dialect: str | None, ending: str
) -> None:
    play_mutated(name, data, dialect, ending)


def play_mutated(name: str, data: st.DataObject, dialect: str | None, ending: str) -> None:
    scenario = load_scenario(name)
    body = data.draw(mutated(scenario.rendered), label="body")
    reads = data.draw(writes(body), label="reads")
    play(
        reads,
        dialect=data.draw(st.sampled_from([None, dialect]), label="dialect"),
        status=scenario.status,
        content_type=scenario.content_type,
        ending=ending,
    )


# -- 4. every truncation point of three scenarios -------------------------------------


@pytest.mark.parametrize("name", ["weather", "anthropic-parallel", "responses-interleaved"])
def test_every_truncation_keeps_the_partial_arguments(name: str) -> None:
    scenario = load_scenario(name)
    body = scenario.rendered
    *_, full = play([body], content_type=scenario.content_type)
    assert full["status"] == "finished"
    lanes = {call["index"]: call for call in full["tool_calls"]}
    assert lanes
    for cut in range(len(body) + 1):
        half = cut // 2
        _, _, report = play([body[:half], body[half:cut]], content_type=scenario.content_type)
        assert report["status"] in {"truncated", "finished"}, (cut, report["status"])
        for call in report["tool_calls"]:
            whole = lanes.get(call["index"])
            assert whole is not None, f"cut at {cut}: lane {call['index']} not in the full run"
            assert whole["arguments_raw"].startswith(call["arguments_raw"]), (cut, call)
            assert call["name"] in {None, whole["name"]}, (cut, call)
            if report["status"] == "finished":
                assert call == whole, (cut, call)


# -- a transport failure before any response --------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_failure_before_the_response_head(dialect: str | None) -> None:
    CASES[0] += 1
    session = StreamSession("fuzz", dialect=dialect)
    session.fail("connection refused", 0.0)
    report = check(session, [], [], status=200, ending="fail")
    assert report["error"] == "connection refused"
    assert exit_code(session.state) == 1


# -- what the fuzzing found, pinned ------------------------------------------------------

DEEP = 5000  # nesting past the recursion limit (1000, or 3000 under pytest)


def chat_call(arguments: str, finish: bool = True) -> bytes:
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": arguments}}
    reason = "tool_calls" if finish else None
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": reason}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


FINISH_THEN_CALL = (
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    + chat_call("{}", finish=False)
)

CRASHES = {
    # RecursionError out of json.loads: detect.py catches only ValueError
    "deep-data-detected": (b"data: " + b"[" * DEEP + b"\n\n", None, 200, "text/event-stream"),
    # RecursionError out of strict_json.loads (its json.loads fallback), and for
    # arguments then out of CallSlot.merged_json_fragment (raw_decode)
    "deep-data-chat": (b"data: " + b"[" * DEEP + b"\n\n", "openai-chat", 200, ""),
    "deep-data-anthropic": (b"data: " + b"[" * DEEP + b"\n\n", "anthropic", 200, ""),
    "deep-arguments": (chat_call("[" * DEEP), "openai-chat", 200, ""),
    # RecursionError in session._error_message / _settle_json
    "deep-error-body": (b"[" * DEEP, None, 401, "application/json"),
    "deep-json-body": (b"[" * DEEP, None, 200, "application/json"),
    # arguments nested 1020 deep parse (orjson allows 1024) but do not serialise
    "arguments-nested-1020": (chat_call("[" * 1020 + "]" * 1020), "openai-chat", 200, ""),
    # RecursionError out of chat's error message: an error object nested 1010 deep
    # (orjson reads it; neither str() nor repr() can walk it)
    "error-message-nested-1010": (
        b'data: {"error": {"message": ' + b'{"a":' * 1010 + b"1" + b"}" * 1012 + b"\n\n",
        None,
        200,
        "text/event-stream",
    ),
    # TypeError, unhashable: detect.py `kind in MESSAGE_EVENTS` with a non-string type
    "type-is-a-list": (b'data: {"type": []}\n\n', None, 200, "text/event-stream"),
    # TypeError, unhashable: responses.py `_by_item_id[entry.item_id]` with a non-string id
    "item-id-is-a-list": (
        b'data: {"type":"response.output_item.added","output_index":0,'
        b'"item":{"type":"function_call","id":[1]}}\n\n',
        None,
        200,
        "text/event-stream",
    ),
    "delta-item-id-is-an-object": (
        b'data: {"type":"response.function_call_arguments.delta",'
        b'"item_id":{"a":1},"delta":"x"}\n\n',
        None,
        200,
        "text/event-stream",
    ),
    # TypeError, not iterable: a complete JSON response with a non-list field
    "responses-output-is-a-number": (
        b'{"object":"response","output":5}',
        None,
        200,
        "application/json",
    ),
    "responses-content-is-a-number": (
        b'{"object":"response","output":[{"type":"message","content":5}]}',
        None,
        200,
        "application/json",
    ),
    "chat-tool-calls-is-a-number": (
        b'{"choices":[{"message":{"tool_calls":5}}]}',
        None,
        200,
        "application/json",
    ),
    "anthropic-content-is-a-number": (
        b'{"type":"message","content":5}',
        None,
        200,
        "application/json",
    ),
    # not a crash: an overflowing number parses to inf, and the report is not JSON
    # (json.dumps writes Infinity)
    "arguments-overflow-to-infinity": (chat_call('{"x": 1e400}'), None, 200, ""),
    # not a crash: a call begun after the finish, then an in-stream error, is
    # reported with neither arguments nor an error
    "call-after-finish-then-error": (
        FINISH_THEN_CALL + b'data: {"error":{"message":"boom"}}\n\n',
        None,
        200,
        "",
    ),
}


@pytest.mark.parametrize("name", list(CRASHES))
def test_found_by_fuzzing(name: str) -> None:
    body, dialect, status, content_type = CRASHES[name]
    play([body], dialect=dialect, status=status, content_type=content_type)


def test_call_after_finish_then_transport_failure_keeps_an_error() -> None:
    play([FINISH_THEN_CALL], ending="fail")


def test_anomaly_order_does_not_depend_on_the_reads() -> None:
    # invalid-utf8 is noted once per read, after the events of that read: cut
    # after event 1 it comes before event 2's error-event, fed whole it comes after.
    first = b"data: \xff\n\n"
    second = b'data: {"error":{"message":"boom"}}\n\n'
    *_, split = play([first, second], dialect="openai-chat")
    *_, whole = play([first + second], dialect="openai-chat")
    assert [a["kind"] for a in split["anomalies"]] == [a["kind"] for a in whole["anomalies"]]
