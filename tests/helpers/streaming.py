"""What the core's tests share: feeding a body to a session and reading the
result, and the hypothesis strategies for arguments, fragments and reads."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.events import StreamEvent

# -- running a stream -------------------------------------------------------------


def untimed(report: dict[str, Any]) -> dict[str, Any]:
    """A report without its arrival times, which differ from run to run."""
    return {key: value for key, value in report.items() if key != "timing"}


def assert_close_timing(a: Any, b: Any, tolerance: float = 0.002) -> None:
    """Same shape and the same times, up to rounding (a recording keeps times to
    the microsecond, a report shows milliseconds). Rates are left out: over a
    few milliseconds, a microsecond of rounding moves them a lot."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            if not key.endswith("_per_second"):
                assert_close_timing(a[key], b[key], tolerance)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_close_timing(x, y, tolerance)
    elif isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= tolerance
    else:
        assert a == b


@dataclass
class Run:
    session: StreamSession
    events: list[StreamEvent]
    report: dict[str, Any]
    code: int

    @property
    def kinds(self) -> list[str]:
        return [anomaly["kind"] for anomaly in self.report["anomalies"]]

    def anomaly(self, kind: str) -> dict[str, Any]:
        found = [a for a in self.report["anomalies"] if a["kind"] == kind]
        assert len(found) == 1, f"expected one {kind!r}, got {self.report['anomalies']}"
        return found[0]

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self.report["tool_calls"]

    def call(self, index: int) -> dict[str, Any]:
        found = [call for call in self.calls if call["index"] == index]
        assert len(found) == 1, f"no lane {index} in {self.calls}"
        return found[0]

    def args(self) -> list[Any]:
        return [call["arguments"] for call in self.calls]


def run(
    body: bytes,
    *,
    pieces: int | None = None,
    dialect: str | None = None,
    status: int = 200,
    content_type: str = "text/event-stream",
) -> Run:
    """Open, feed the body (whole, or in reads of `pieces` bytes), close."""
    session = StreamSession("test", dialect=dialect)
    events = session.open(status, content_type)
    step = pieces or max(len(body), 1)
    for i in range(0, len(body), step):
        events += session.feed(body[i : i + step], float(i))
    events += session.close(99.0)
    return Run(session, events, build_report(session.state), exit_code(session.state))


# -- Chat Completions bodies --------------------------------------------------------


def tc(
    index: int | None = None,
    call_id: str | None = None,
    name: str | None = None,
    args: Any = None,
) -> dict[str, Any]:
    """One `delta.tool_calls[]` fragment; None leaves a key out."""
    fragment: dict[str, Any] = {}
    if index is not None:
        fragment["index"] = index
    if call_id is not None:
        fragment["id"] = call_id
        fragment["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    fragment["function"] = function
    return fragment


def chunk(*tool_calls: dict[str, Any], finish: str | None = None, **delta: Any) -> dict[str, Any]:
    if tool_calls:
        delta["tool_calls"] = list(tool_calls)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


# -- arguments ----------------------------------------------------------------------

CHARS = st.one_of(
    st.characters(codec="utf-8"),  # any scalar value; surrogates excluded
    st.sampled_from('😀🎉é€ß中\u2028\u2029\u0085\u00a0\x00\x7f"\\/\n\r\t{}[],:'),
)
TEXT = st.text(CHARS, max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=10,
)
OBJECTS = st.dictionaries(TEXT, VALUES, max_size=5)

# How a provider serialises arguments: escaped (surrogate pairs for emoji), raw
# UTF-8, compact, or pretty-printed.
STYLES = ("ascii", "unicode", "compact", "indent")


def serialise(obj: dict[str, Any], style: str) -> str:
    if style == "ascii":
        return json.dumps(obj, ensure_ascii=True)
    if style == "compact":
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if style == "indent":
        return json.dumps(obj, ensure_ascii=False, indent=2)
    return json.dumps(obj, ensure_ascii=False)


# -- cutting --------------------------------------------------------------------------


@st.composite
def cut(draw: st.DrawFn, raw: str) -> list[str]:
    """`raw` cut anywhere (repeated cut points give empty fragments)."""
    points = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    bounds = [0, *points, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def writes(draw: st.DrawFn, body: bytes) -> list[bytes]:
    """The body cut into reads anywhere, optionally also between every CR and LF
    and inside every multi-byte UTF-8 character."""
    cuts = set(draw(st.lists(st.integers(1, max(len(body) - 1, 1)), max_size=30)))
    if draw(st.booleans()):
        cuts |= {i + 1 for i in range(len(body) - 1) if body[i : i + 2] == b"\r\n"}
    if draw(st.booleans()):
        cuts |= {i for i in range(1, len(body)) if 0x80 <= body[i] <= 0xBF}
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(body)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]
