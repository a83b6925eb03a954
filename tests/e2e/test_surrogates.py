"""UTF-16 surrogates: JavaScript servers cut strings in UTF-16 code units, so a
fragment may end with the escape `\\ud83c` and the next begin with `\\udf38`.
A pair cut anywhere is rejoined into its one character in every output; a
surrogate that stays lone is U+FFFD on screen, `\\udXXX` in JSON, and an anomaly
says where; no output path raises on either."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.streaming import run, untimed
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.apps.diff import DiffApp
from toolstream_tui.app.widgets.wrapped_view import _pairs_rejoined
from toolstream_tui.commands.diff import diff_recordings, replay_state
from toolstream_tui.core import build_report
from toolstream_tui.core.preview import ArgumentsPreview
from toolstream_tui.core.report import printable_json, report_json
from toolstream_tui.core.surrogates import (
    cannot_hold_surrogates,
    lone_in_value,
    lone_offsets,
    may_decode_to_lone_surrogates,
    rejoin_pairs,
)
from toolstream_tui.core.visible import escaped, inert, inert_text, json_inert
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.recording import Tape, TapeSource
from toolstream_tui.views.fragments import FragmentRows
from toolstream_tui.watching.bundle import REPORT, SCREENSHOT, write_bundle
from toolstream_tui.watching.options import WatchOptions

BLOSSOM = "\U0001f338"  # 🌸, sent by JavaScript as the pair \ud83c \udf38
HIGH, LOW = "\ud83c", "\udf38"
DIALECTS = ("openai-chat", "anthropic", "openai-responses")

# -- the surrogates module ---------------------------------------------------------


def test_a_pair_cut_between_pieces_is_one_character_again() -> None:
    assert rejoin_pairs("".join(["x" + HIGH, LOW + "y"])) == f"x{BLOSSOM}y"
    assert rejoin_pairs(f"a{HIGH}{LOW}b{HIGH}c{LOW}") == f"a{BLOSSOM}b{HIGH}c{LOW}"
    assert rejoin_pairs("plain ascii") == "plain ascii"


def test_lone_surrogates_are_found_and_pairs_are_not() -> None:
    assert lone_offsets(f"a{HIGH}{LOW}b") == []
    assert lone_offsets(f"a{HIGH}b{LOW}{LOW}") == [1, 3, 4]
    assert lone_offsets(f"{LOW}{HIGH}") == [0, 1]  # the wrong order is no pair
    assert lone_offsets("北京" + BLOSSOM) == []


def test_a_call_is_passed_over_only_when_nothing_in_it_can_hold_a_surrogate() -> None:
    """The quick look that lets the end of a stream skip most calls."""
    assert cannot_hold_surrogates('{"a":"北京' + BLOSSOM + '"}', "f", "call_1", None)
    assert not cannot_hold_surrogates('{"a":"\\ud83c"}', "f")  # an escape: decode to see
    assert not cannot_hold_surrogates('{"a":"\\uDF38"}')
    assert not cannot_hold_surrogates(f'{{"a":"{HIGH}"}}')
    assert not cannot_hold_surrogates("{}", f"f{LOW}")
    assert not cannot_hold_surrogates("{}", "f", None, f"id{HIGH}")


def test_lone_surrogates_in_a_json_value_are_named_by_path() -> None:
    value = {"ok": BLOSSOM, "a": ["x", f"y{HIGH}"], HIGH: 1, "deep": [[{"k": LOW}]]}
    assert sorted(path for path, _ in lone_in_value(value)) == [
        "$.a[1]",
        "$.deep[0][0].k",
        '$["\ud83c"] (the key)',
    ]


@pytest.mark.parametrize(
    ("json_text", "lone"),
    [
        ('"\\ud83c\\udf38 \\uD83C\\uDF38 \\u00e9"', False),
        ('"\\ud83c"', True),
        ('"\\udf38\\ud83c"', True),
        ('"\\ud83c\\ud83c\\udf38"', True),
        ('"\\ud83c\\udf38\\udf38"', True),
        ('"\\ud83cx\\udf38"', True),
        (f'"{HIGH}"', True),
        ('"plain"', False),
    ],
)
def test_json_text_that_may_decode_to_lone_surrogates_is_told(json_text: str, lone: bool) -> None:
    assert may_decode_to_lone_surrogates(json_text) is lone
    assert has_lone(json.loads(json_text)) is lone  # the quick look agrees with the decode


def test_a_pair_cut_between_fragments_is_drawn_as_one_character() -> None:
    """A lane draws each fragment as its own run (for the shading): the low half
    of a cut pair joins its high half's run, and a lone half shows as U+FFFD."""
    runs = [("x" + HIGH, 0), (LOW + "y" + HIGH, 1), ("z", 0)]
    assert _pairs_rejoined(runs) == [("x" + BLOSSOM, 0), ("y" + HIGH, 1), ("z", 0)]
    assert inert("y" + HIGH) == "y\ufffd"


def test_a_preview_reads_a_pair_cut_between_fragments() -> None:
    preview = ArgumentsPreview()
    preview.update('{"a":"x' + HIGH + LOW + "y")
    assert preview.value == {"a": f"x{BLOSSOM}y"}
    preview.update('{"a":"x' + HIGH)  # the other half still to come
    assert preview.value == {"a": "x\ufffd"}


def test_a_lone_surrogate_is_u_fffd_on_screen_and_escaped_in_json() -> None:
    assert inert(f"a{HIGH}b") == "a\ufffdb"
    assert inert_text(f"a{LOW}\nb") == "a\ufffd\nb"
    printed = json_inert(json.dumps({"k": f"a{HIGH}"}, ensure_ascii=False))
    assert printed == '{"k": "a\\ud83c"}'
    assert json.loads(printed) == {"k": f"a{HIGH}"}
    assert escaped(f"x{HIGH}") == '"x\\ud83c"'


# -- streams in each dialect, built from pieces ------------------------------------


@dataclass
class Call:
    call_id: str
    name: str
    fragments: list[str]  # the arguments text as sent, in pieces


@dataclass
class Stream:
    text: list[str]  # text deltas
    calls: list[Call]


def data(payload: dict[str, Any], event: str | None = None) -> str:
    """One SSE event; json.dumps escapes every surrogate as \\udXXX, as JavaScript does."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n"


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return data({"object": "chat.completion.chunk", "choices": [choice]})


def chat_fragment(index: int, **fields: Any) -> str:
    call_id = fields.pop("id", None)
    fragment = {"index": index, "function": fields} | ({"id": call_id} if call_id else {})
    return chat_chunk({"tool_calls": [fragment]})


def chat_body(stream: Stream) -> str:
    out = [chat_chunk({"content": piece}) for piece in stream.text]
    for index, call in enumerate(stream.calls):
        out.append(chat_fragment(index, id=call.call_id, name=call.name))
        out += [chat_fragment(index, arguments=fragment) for fragment in call.fragments]
    finish = "tool_calls" if stream.calls else "stop"
    return "".join([*out, chat_chunk({}, finish), "data: [DONE]\n\n"])


def typed(kind: str, **fields: Any) -> str:
    """An event of a dialect whose events carry their type (Anthropic, Responses)."""
    return data({"type": kind, **fields}, kind)


def anthropic_delta(index: int, kind: str, **fields: Any) -> str:
    return typed("content_block_delta", index=index, delta={"type": kind, **fields})


def anthropic_body(stream: Stream) -> str:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    out = [typed("message_start", message=message)]
    out.append(typed("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    out += [anthropic_delta(0, "text_delta", text=piece) for piece in stream.text]
    out.append(typed("content_block_stop", index=0))
    for index, call in enumerate(stream.calls, start=1):
        block = {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}
        out.append(typed("content_block_start", index=index, content_block=block))
        for fragment in call.fragments:
            out.append(anthropic_delta(index, "input_json_delta", partial_json=fragment))
        out.append(typed("content_block_stop", index=index))
    reason = "tool_use" if stream.calls else "end_turn"
    out.append(typed("message_delta", delta={"stop_reason": reason}))
    out.append(typed("message_stop"))
    return "".join(out)


def responses_body(stream: Stream) -> str:
    out = [
        typed("response.output_text.delta", output_index=0, item_id="msg_1", delta=piece)
        for piece in stream.text
    ]
    for index, call in enumerate(stream.calls, start=1):
        item_id = f"fc_{call.call_id}"
        item = {"type": "function_call", "id": item_id, "call_id": call.call_id}
        item |= {"name": call.name, "arguments": ""}
        out.append(typed("response.output_item.added", output_index=index, item=item))
        for fragment in call.fragments:
            out.append(
                typed(
                    "response.function_call_arguments.delta",
                    output_index=index,
                    item_id=item_id,
                    delta=fragment,
                )
            )
    out.append(typed("response.completed", response={"status": "completed"}))
    return "".join(out)


BODIES = {"openai-chat": chat_body, "anthropic": anthropic_body, "openai-responses": responses_body}


def body_of(dialect: str, stream: Stream) -> bytes:
    return BODIES[dialect](stream).encode()


def first_lane(dialect: str) -> int:
    """The lane of the stream's first call (Anthropic and Responses number the text block 0)."""
    return 0 if dialect == "openai-chat" else 1


def cut_utf16(text: str, cuts: list[int]) -> list[str]:
    """`text` cut after the given UTF-16 code units, as JavaScript's `slice` cuts it."""
    units = text.encode("utf-16-le", "surrogatepass")
    bounds = [0, *sorted({2 * c for c in cuts if 0 < 2 * c < len(units)}), len(units)]
    return [units[a:b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(bounds)]


# -- the issue's example, and the same in every field of every dialect --------------

ISSUE_EXAMPLE = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":'
    '{"name":"f","arguments":"{\\"a\\":\\"x\\ud83c"}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
    '{"arguments":"\\udf38y\\"}"}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    "data: [DONE]\n\n"
)


def test_headless_rejoins_the_issues_split_pair(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "split.sse"
    path.write_text(ISSUE_EXAMPLE, encoding="utf-8")
    result = cli("--headless", "--replay", str(path), "--speed", "0")
    assert result.returncode == 0, result.stderr
    call = json.loads(result.stdout)["tool_calls"][0]
    assert call["arguments_raw"] == f'{{"a":"x{BLOSSOM}y"}}'
    assert call["arguments"] == {"a": f"x{BLOSSOM}y"}


def test_headless_escapes_a_lone_surrogate_and_names_it(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "lone.sse"
    path.write_text(ISSUE_EXAMPLE.replace("\\udf38y", "y"), encoding="utf-8")
    bundle = tmp_path / "bundle"
    result = cli("--headless", "--replay", str(path), "--speed", "0", "--bundle", str(bundle))
    assert result.returncode == 0, result.stderr
    assert "no screenshot" not in result.stderr and (bundle / SCREENSHOT).exists()
    assert (bundle / REPORT).read_text(encoding="utf-8") == result.stdout
    assert '"arguments_raw": "{\\"a\\":\\"x\\ud83cy\\"}"' in result.stdout
    report = json.loads(result.stdout)
    assert report["tool_calls"][0]["arguments"] == {"a": f"x{HIGH}y"}
    [anomaly] = report["anomalies"]
    assert (anomaly["kind"], anomaly["index"]) == ("lone-surrogate", 0)
    assert "arguments at $.a" in anomaly["detail"]


SPLIT = Stream(
    text=["x" + HIGH, LOW + "y"],
    calls=[Call("call" + HIGH, "f" + LOW, ['{"a":"x' + HIGH, LOW + 'y"}'])],
)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_split_pair_is_rejoined_and_lone_ones_are_named(dialect: str) -> None:
    r = run(body_of(dialect, SPLIT), pieces=7)
    assert r.report["text"] == f"x{BLOSSOM}y"
    call = r.call(first_lane(dialect))
    assert call["arguments_raw"] == f'{{"a":"x{BLOSSOM}y"}}'
    assert call["arguments"] == {"a": f"x{BLOSSOM}y"}
    assert (call["id"], call["name"]) == ("call" + HIGH, "f" + LOW)
    lone = [a for a in r.report["anomalies"] if a["kind"] == "lone-surrogate"]
    in_item_id = dialect == "openai-responses"  # fc_call\ud83c
    assert [(a["index"], a["count"]) for a in lone] == [(first_lane(dialect), 2 + in_item_id)]
    assert "name (U+DF38 at char 1)" in lone[0]["detail"]
    assert "id (U+D83C at char 4)" in lone[0]["detail"]
    printed = printable_json(r.report)
    printed.encode("utf-8")
    assert f"x{BLOSSOM}y" in printed and "call\\ud83c" in printed


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_lone_surrogate_in_the_text_is_named(dialect: str) -> None:
    r = run(body_of(dialect, Stream(text=["ab" + HIGH, "c"], calls=[])))
    assert r.report["text"] == f"ab{HIGH}c"
    anomaly = r.anomaly("lone-surrogate")
    assert anomaly["index"] is None
    assert "text (U+D83C at char 2)" in anomaly["detail"]


def test_the_inspector_shows_each_fragment_escaped() -> None:
    r = run(body_of("openai-chat", SPLIT))
    rows = FragmentRows(r.session.state.calls[0].pieces)
    assert [rows.row(number).text for number in (1, 2)] == [
        '"{\\"a\\":\\"x\\ud83c"',
        '"\\udf38y\\"}"',
    ]


# -- every output path, with surrogates anywhere -----------------------------------

PAIRED = re.compile("[\ud800-\udbff][\udc00-\udfff]")
PIECE_CHARS = st.one_of(
    st.characters(codec="utf-8", exclude_characters="\x00"),
    st.sampled_from([BLOSSOM, "😀", "𝄞", "北", '"', "\\"]),
    st.characters(categories=["Cs"]),  # lone surrogates
)
# Strings with astral characters and lone surrogates, but no lone high surrogate
# right before a lone low one (they would be a pair).
STRINGS = st.text(PIECE_CHARS, max_size=10).filter(lambda s: PAIRED.search(s) is None)
ASTRAL = st.sampled_from([BLOSSOM, "😀", "𝄞"])
# ... with at least one astral character: one pair for the cuts to split.
PAIR_STRINGS = (
    st.tuples(STRINGS, ASTRAL, STRINGS).map("".join).filter(lambda s: PAIRED.search(s) is None)
)
OBJECTS = st.dictionaries(STRINGS, STRINGS | st.integers(-(2**70), 2**70), max_size=3)
ARGUMENTS = st.builds(
    lambda pair, rest: rest | dict([pair]), st.tuples(PAIR_STRINGS, PAIR_STRINGS), OBJECTS
)
BLANK = st.text(" \t\r\n", min_size=1, max_size=4)  # whitespace-only arguments mean {}
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def pair_splitting_cuts(text: str) -> list[int]:
    """UTF-16 offsets that split a pair: between the halves of an astral
    character, or inside or right after a `\\udXXX` escape."""
    offsets = []
    for at, char in enumerate(text):
        if ord(char) > 0xFFFF:
            offsets.append(utf16_units(text[:at]) + 1)
    for match in SURROGATE_ESCAPE.finditer(text):
        start = utf16_units(text[: match.start()])
        offsets += range(start + 1, start + 7)
    return offsets


@st.composite
def cut_points(draw: st.DrawFn, text: str) -> list[str]:
    """`text` cut anywhere, and (when it holds one) through at least one pair."""
    cuts = draw(st.lists(st.integers(1, max(utf16_units(text), 1)), max_size=6))
    if splitting := pair_splitting_cuts(text):
        cuts += draw(st.lists(st.sampled_from(splitting), min_size=1, max_size=3))
    return cut_utf16(text, cuts)


@dataclass
class Sent:
    text: str
    calls: list[tuple[str, str, dict[str, Any], str]]  # id, name, arguments, arguments text
    stream: Stream
    read_size: int  # the body is read this many bytes at a time


def arguments_text(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    if draw(st.integers(0, 4)) == 0:
        return {}, draw(BLANK)
    arguments = draw(ARGUMENTS)
    return arguments, json.dumps(arguments, ensure_ascii=draw(st.booleans()))


@st.composite
def sent_streams(draw: st.DrawFn) -> Sent:
    """Text, ids, names and arguments each holding a pair; the text and arguments
    cut through one, and the body read in pieces of at most 5 bytes, so every
    6-byte `\\udXXX` escape of an id or a name on the wire is cut inside."""
    text = draw(PAIR_STRINGS)
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        arguments, raw = arguments_text(draw)
        calls.append((draw(PAIR_STRINGS), draw(PAIR_STRINGS), arguments, raw))
    stream = Stream(
        text=draw(cut_points(text)),
        calls=[Call(call_id, name, draw(cut_points(raw))) for call_id, name, _, raw in calls],
    )
    return Sent(text, calls, stream, draw(st.integers(1, 5)))


def has_lone(value: Any) -> bool:
    """Whether a string or key in `value` holds a surrogate: each one the strategies
    put there is lone (they never put a high one right before a low one). Worked
    out here, not by `lone_in_value`, whose answer the report is checked against."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(has_lone(key) or has_lone(child) for key, child in value.items())
    if isinstance(value, list | tuple):
        return any(has_lone(child) for child in value)
    return False


def shown(value: Any) -> str:
    """`value` with every non-ASCII character escaped: compared so, a failure's
    diff holds no lone surrogate, which pytest-xdist cannot send from its worker
    (the run then dies with an INTERNALERROR instead of showing the diff)."""
    return ascii(value)


def check_report(report: dict[str, Any], sent: Sent) -> None:
    """Every pair cut anywhere is whole again; lone surrogates are kept and named."""
    assert report["status"] == "finished"
    assert shown(report["text"]) == shown(sent.text)
    lanes = report["tool_calls"]
    assert len(lanes) == len(sent.calls)
    expected_lone: set[int | None] = {None} if has_lone(sent.text) else set()
    for lane, (call_id, name, arguments, raw) in zip(lanes, sent.calls, strict=True):
        assert shown((lane["id"], lane["name"])) == shown((call_id, name))
        assert shown(lane["arguments_raw"]) == shown(raw)
        assert shown(lane["arguments"]) == shown(arguments)
        if has_lone([call_id, name, arguments]):
            expected_lone.add(lane["index"])
    lone = {a["index"] for a in report["anomalies"] if a["kind"] == "lone-surrogate"}
    assert lone == expected_lone
    printed = printable_json(report)
    assert json.loads(printed.encode("utf-8")) == report


def tape_of(body: bytes) -> Tape:
    tape = Tape("test")
    tape.keep(ResponseHead(200, "text/event-stream", t=0.0))
    tape.keep(BodyChunk(body, 0.001))
    return tape


def fresh_dir(tmp_path: Path) -> Path:
    """A directory of its own for one hypothesis example: they share `tmp_path`, and
    `id()` of an example's value is reused once the previous one is collected."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dialect=st.sampled_from(DIALECTS), sent=sent_streams(), other=sent_streams())
def test_every_output_path_takes_any_surrogates(
    tmp_path: Path, dialect: str, sent: Sent, other: Sent
) -> None:
    r = run(body_of(dialect, sent.stream), pieces=sent.read_size)
    check_report(r.report, sent)
    # a bundle: the recording, the report (and its README)
    example_dir = fresh_dir(tmp_path)
    bundle = example_dir / "bundle"
    write_bundle(bundle, tape_of(body_of(dialect, sent.stream)), r.session.state, None)
    assert shown(json.loads((bundle / REPORT).read_text(encoding="utf-8"))["text"]) == shown(
        sent.text
    )
    # the recording replays to the same report
    replayed = build_report(replay_state(bundle / "stream.sse", None))
    assert shown(untimed(replayed) | {"source": "test"}) == shown(
        untimed(r.report) | {"source": "test"}
    )
    # the diff of two such recordings, and the same stream cut differently
    other_path = example_dir / "other.sse"
    tape_of(body_of(dialect, other.stream)).save(other_path)
    printable_json(diff_recordings(bundle / "stream.sse", other_path)).encode("utf-8")
    whole_calls = [Call(c.call_id, c.name, ["".join(c.fragments)]) for c in sent.stream.calls]
    recut = Stream(["".join(sent.stream.text)], whole_calls)
    recut_path = example_dir / "recut.sse"
    tape_of(body_of(dialect, recut)).save(recut_path)
    assert diff_recordings(bundle / "stream.sse", recut_path)["identical"]


# -- the screen ------------------------------------------------------------------


async def exercise_screen(tape: Tape, output_dir: Path, screens: str = "") -> str:
    """Run the app over the tape, open `screens` (keys), export the report and write
    a bundle; return the SVG of the main screen."""
    app = ToolstreamApp(TapeSource(tape), WatchOptions(clock=lambda: 0.0, output_dir=output_dir))
    app.animation_level = "none"
    async with app.run_test(size=(120, 36)) as pilot:
        await asyncio.wait_for(app.settled_event.wait(), 30)
        await pilot.pause()
        svg = app.export_screenshot()
        for key in screens:
            await pilot.press(key)
            await pilot.pause()
            app.export_screenshot().encode("utf-8")
            await pilot.press(key)  # closes it again
        await pilot.press("e")
        app.stream.write_bundle(output_dir / "bundle")
    return svg


# Each example runs the app (a third of a second): enough for every dialect to see
# pairs split in its text and arguments and lone surrogates in its ids and names.
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dialect=st.sampled_from(DIALECTS), sent=sent_streams())
def test_the_screen_takes_any_surrogates(tmp_path: Path, dialect: str, sent: Sent) -> None:
    out = fresh_dir(tmp_path)
    svg = asyncio.run(exercise_screen(tape_of(body_of(dialect, sent.stream)), out))
    svg.encode("utf-8")
    exported = json.loads((out / "toolstream-report.json").read_text(encoding="utf-8"))
    assert shown(exported["text"]) == shown(sent.text)
    assert (out / "bundle" / SCREENSHOT).read_text(encoding="utf-8").startswith("<svg")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_screen_shows_the_rejoined_pair_and_u_fffd(tmp_path: Path, dialect: str) -> None:
    call = Call("c1", "f", ['{"a":"x' + HIGH, LOW + 'y"}'])
    stream = Stream(["x" + HIGH, LOW + "y!", HIGH], [call])
    screens = "iawl" if dialect == "openai-chat" else ""  # each takes seconds to open
    svg = asyncio.run(exercise_screen(tape_of(body_of(dialect, stream)), tmp_path, screens))
    text = svg.replace("&#160;", " ")
    assert f"x{BLOSSOM}y!\ufffd" in text  # the text pane
    assert f"x{BLOSSOM}y" in text.replace(f"x{BLOSSOM}y!", "")  # the tree


def test_the_diff_screen_takes_surrogates(tmp_path: Path) -> None:
    paths = []
    other = Stream(["x" + HIGH], [Call("c", "g" + HIGH, ["{}"])])
    for number, stream in enumerate((SPLIT, other)):
        paths.append(tmp_path / f"{number}.sse")
        tape_of(body_of("openai-chat", stream)).save(paths[-1])
    diff = diff_recordings(*paths)

    async def screen() -> str:
        app = DiffApp(diff, 1)
        async with app.run_test(size=(120, 40)) as pilot:
            await asyncio.wait_for(app.loaded.wait(), 30)
            await pilot.pause()
            return app.export_screenshot()

    asyncio.run(screen()).encode("utf-8")
    assert json.loads(printable_json(diff))["lanes"][0]["names"]["b"] == "g" + HIGH


def test_report_json_of_lone_surrogates_is_utf8(tmp_path: Path) -> None:
    r = run(body_of("anthropic", SPLIT))
    (tmp_path / "r.json").write_text(report_json(r.session.state), encoding="utf-8")
