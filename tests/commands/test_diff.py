"""`toolstream-tui diff A B`: json_diff on nested values, diff_states on streams
fed by hand, the command end to end on recordings in tmp_path, and one picture
of the diff app."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.helpers.cli import CliRunner
from tests.helpers.paths import DATA
from tests.helpers.sse import sse
from tests.helpers.streaming import run
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.commands.diff import diff_recordings, exit_code_of, main_diff
from toolstream_tui.core.diff import diff_states, json_diff
from toolstream_tui.core.session import JSON_TYPE, SSE_TYPE
from toolstream_tui.core.state import StreamState
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.recording import Recorder

Snap = Callable[..., bool]

# -- stream builders ---------------------------------------------------------------


def call(index: int, call_id: str | None = None, name: str | None = None, args: str = "") -> str:
    """One chat-completions chunk carrying one tool-call fragment."""
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    fragment: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        fragment["id"] = call_id
    return chunk({"tool_calls": [fragment]})


def text(content: str) -> str:
    return chunk({"content": content})


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return json.dumps(payload, ensure_ascii=False)


def finish() -> str:
    return chunk({}, finish="tool_calls")


def weather(*pieces: str, call_id: str = "call_1") -> list[str]:
    """Lane 0, get_weather, its arguments in the given pieces."""
    return [call(0, call_id, "get_weather"), *(call(0, args=piece) for piece in pieces)]


def state_of(
    body: bytes, source: str = "test", status: int = 200, content_type: str = SSE_TYPE
) -> StreamState:
    state = run(body, status=status, content_type=content_type).session.state
    state.source = source
    return state


def diff_of(a: bytes, b: bytes) -> dict[str, Any]:
    return diff_states(state_of(a, "a"), state_of(b, "b"))


# -- json_diff -------------------------------------------------------------------------


def test_equal_values_have_no_differences() -> None:
    value = {"a": [1, {"b": None}], "c": "x"}
    assert json_diff(value, json.loads(json.dumps(value))) == []


def test_added_removed_and_changed_keys_are_named_by_path() -> None:
    a = {"city": "Paris", "opts": {"unit": "C", "days": 3}}
    b = {"city": "Lyon", "opts": {"unit": "C", "hourly": True}}
    assert json_diff(a, b) == [
        {"path": "$.city", "change": "changed", "a": "Paris", "b": "Lyon"},
        {"path": "$.opts.days", "change": "removed", "a": 3},
        {"path": "$.opts.hourly", "change": "added", "b": True},
    ]


def test_a_type_change_is_a_change_even_where_python_says_equal() -> None:
    a = {"n": 1, "flag": 1, "f": 1, "obj": {"x": 1}}
    b = {"n": "1", "flag": True, "f": 1.0, "obj": [1]}
    changes = {entry["path"]: entry for entry in json_diff(a, b)}
    assert set(changes) == {"$.n", "$.flag", "$.f", "$.obj"}
    assert changes["$.obj"] == {"path": "$.obj", "change": "changed", "a": {"x": 1}, "b": [1]}


def test_lists_are_compared_index_by_index() -> None:
    assert json_diff({"xs": [1, 2, 3]}, {"xs": [1, 5]}) == [
        {"path": "$.xs[1]", "change": "changed", "a": 2, "b": 5},
        {"path": "$.xs[2]", "change": "removed", "a": 3},
    ]
    assert json_diff([[1]], [[1, [2]]]) == [{"path": "$[0][1]", "change": "added", "b": [2]}]


def test_order_is_depth_first_with_sorted_keys() -> None:
    a = {"b": 1, "a": {"z": 1, "y": 1}, "c": 1}
    b = {"c": 2, "a": {"y": 2, "z": 2}}
    assert [entry["path"] for entry in json_diff(a, b)] == ["$.a.y", "$.a.z", "$.b", "$.c"]


def test_keys_that_are_not_identifiers_are_quoted() -> None:
    entries = json_diff({'we"ird key': 1, "中文": 1}, {'we"ird key': 2, "中文": 2})
    assert [entry["path"] for entry in entries] == ['$["we\\"ird key"]', '$["中文"]']


def test_differences_are_capped_and_the_rest_counted() -> None:
    entries = json_diff(list(range(250)), [-1] * 250)
    assert len(entries) == 201
    assert entries[199]["path"] == "$[199]"
    assert entries[-1] == {"path": "$", "change": "more", "count": 50}


def test_deep_nesting_does_not_hit_the_recursion_limit() -> None:
    a: Any = 1
    b: Any = 2
    for _ in range(3000):
        a, b = [a], [b]
    (entry,) = json_diff(a, b)
    assert entry["path"].endswith("[0]" * 3000)


# -- diff_states ------------------------------------------------------------------------


def test_same_arguments_cut_differently_are_identical() -> None:
    a = sse(*weather('{"city":', ' "Paris"}'), finish(), done=True)
    b = sse(*weather('{"ci', 'ty": "Par', 'is"}'), finish(), done=True)
    diff = diff_of(a, b)
    assert diff["identical"] is True
    (lane,) = diff["lanes"]
    assert lane["fragments"] == {"a": 2, "b": 3}
    assert lane["same_boundaries"] is False
    assert lane["boundaries_only_a"] == [8]
    assert lane["boundaries_only_b"] == [4, 13]
    assert lane["boundaries_only_b_total"] == 2
    assert lane["raw_equal"] is True
    assert lane["arguments"] == []


def test_a_different_value_is_named_by_its_path() -> None:
    a = sse(*weather('{"city": "Paris", "unit": "C"}'), finish(), done=True)
    b = sse(*weather('{"city": "Lyon", "unit": "C"}'), finish(), done=True)
    diff = diff_of(a, b)
    assert diff["identical"] is False
    (lane,) = diff["lanes"]
    assert lane["raw_first_difference"] == 10
    assert lane["arguments"] == [{"path": "$.city", "change": "changed", "a": "Paris", "b": "Lyon"}]


def test_an_extra_lane_is_one_sided() -> None:
    a = sse(*weather("{}"), finish(), done=True)
    b = sse(*weather("{}"), call(1, "call_2", "get_time", "{}"), finish(), done=True)
    diff = diff_of(a, b)
    assert diff["identical"] is False
    assert [lane["index"] for lane in diff["lanes"]] == [0, 1]
    assert diff["lanes"][0]["identical"] is True
    extra = diff["lanes"][1]
    assert (extra["only_in"], extra["name"], extra["id"]) == ("b", "get_time", "call_2")
    assert (extra["arguments"], extra["error"], extra["fragments"]) == ({}, None, 1)


def test_an_anomaly_on_one_side_is_a_difference() -> None:
    a = sse(*weather('{"city": "Paris"}'), finish(), done=True)
    b = sse(*weather('{"city": "Paris"}'), call(0, "call_1", "get_weather"), finish(), done=True)
    diff = diff_of(a, b)
    assert diff["identical"] is False
    only_b = diff["lanes"][0]["anomalies"]["only_b"]
    assert {(x["kind"], x["index"]) for x in only_b} == {("id-repeated", 0), ("name-repeated", 0)}
    assert diff["lanes"][0]["anomalies"]["only_a"] == []


def test_new_call_ids_are_reported_but_not_a_difference() -> None:
    diff = diff_of(
        sse(*weather("{}"), finish(), done=True),
        sse(*weather("{}", call_id="call_9"), finish(), done=True),
    )
    assert diff["identical"] is True
    assert diff["lanes"][0]["ids"] == {"a": "call_1", "b": "call_9"}


def test_stream_facts_and_text_are_compared() -> None:
    a = sse(text("Looking it up."), *weather("{}"), finish(), done=True)
    b = sse(text("Looking up."), *weather("{"))
    diff = diff_of(a, b)
    assert diff["identical"] is False
    assert diff["status"] == {"a": "finished", "b": "truncated"}
    assert diff["finish_reason"] == {"a": "tool_calls", "b": None}
    assert "dialect" not in diff
    assert diff["text"] == {"equal": False, "first_difference": 8, "length_a": 14, "length_b": 11}
    lane = diff["lanes"][0]
    assert lane["arguments"] is None
    assert lane["parse_errors"]["a"] is None
    assert "before the finish" in lane["parse_errors"]["b"]


def test_the_same_truncated_stream_twice_is_identical() -> None:
    body = sse(*weather('{"city": "Par'))
    assert diff_of(body, body)["identical"] is True


# -- how the streams ended ------------------------------------------------------------


def error_body(message: str, kind: str = "server_error") -> bytes:
    """An OpenAI-style error body, as an HTTP error carries it."""
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


UNAUTHORIZED = error_body("Incorrect API key provided.", "invalid_request_error")
SERVER_ERROR = error_body("The server had an error.")


def http_error(body: bytes, status: int, source: str) -> StreamState:
    return state_of(body, source, status=status, content_type=JSON_TYPE)


def test_two_http_errors_differ_in_status_error_and_body() -> None:
    diff = diff_states(http_error(UNAUTHORIZED, 401, "a"), http_error(SERVER_ERROR, 500, "b"))
    assert diff["identical"] is False
    assert diff["http_status"] == {"a": 401, "b": 500}
    assert diff["error"] == {
        "a": "HTTP 401: Incorrect API key provided.",
        "b": "HTTP 500: The server had an error.",
    }
    assert "status" not in diff  # both "error"
    assert diff["body"] == {
        "equal": False,
        "first_difference": 23,
        "length_a": len(UNAUTHORIZED),
        "length_b": len(SERVER_ERROR),
    }


def test_error_bodies_that_differ_beyond_their_message_differ() -> None:
    a = http_error(error_body("Overloaded.", "server_error"), 503, "a")
    b = http_error(error_body("Overloaded.", "overloaded_error"), 503, "b")
    diff = diff_states(a, b)
    assert diff["identical"] is False
    assert "error" not in diff and "http_status" not in diff
    assert diff["body"]["equal"] is False


def test_the_same_http_error_twice_is_identical() -> None:
    diff = diff_states(http_error(UNAUTHORIZED, 401, "a"), http_error(UNAUTHORIZED, 401, "b"))
    assert diff["identical"] is True
    assert diff["body"] == {
        "equal": True,
        "first_difference": None,
        "length_a": len(UNAUTHORIZED),
        "length_b": len(UNAUTHORIZED),
    }


def test_in_band_errors_with_different_messages_differ() -> None:
    a = sse(text("Hi"), {"error": {"message": "rate limited"}})
    b = sse(text("Hi"), {"error": {"message": "context too long"}})
    diff = diff_of(a, b)
    assert diff["identical"] is False
    assert diff["error"] == {
        "a": "error in stream: rate limited",
        "b": "error in stream: context too long",
    }
    assert "body" not in diff  # a stream has no body to compare
    assert diff_of(a, a)["identical"] is True


def test_a_failure_against_a_finished_stream_names_each_fact() -> None:
    diff = diff_states(state_of(SAME_A, "a"), http_error(SERVER_ERROR, 500, "b"))
    assert diff["identical"] is False
    assert diff["status"] == {"a": "finished", "b": "error"}
    assert diff["http_status"] == {"a": 200, "b": 500}
    assert diff["error"] == {"a": None, "b": "HTTP 500: The server had an error."}
    assert diff["body"]["length_a"] is None and diff["body"]["length_b"] == len(SERVER_ERROR)


def test_complete_json_answers_are_compared_by_content_not_body() -> None:
    """A JSON completion's body holds a fresh id and time per run; its text and
    calls are what is compared, as for a stream."""

    def completion(answer_id: str, created: int) -> bytes:
        message = {"role": "assistant", "content": "Hello."}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        body = {"id": answer_id, "object": "chat.completion", "created": created}
        return json.dumps({**body, "choices": [choice]}).encode()

    a = state_of(completion("chatcmpl-1", 1), "a", content_type=JSON_TYPE)
    b = state_of(completion("chatcmpl-2", 2), "b", content_type=JSON_TYPE)
    diff = diff_states(a, b)
    assert (a.status.value, a.text) == ("finished", "Hello.")
    assert diff["identical"] is True
    assert "body" not in diff


# -- the command -------------------------------------------------------------------------


SAME_A = sse(text("Checking."), *weather('{"city":', ' "北京"}'), finish(), done=True)
SAME_B = sse(
    text("Checking."), *weather('{"ci', 'ty": "北', '京"}', call_id="call_2"), finish(), done=True
)
OTHER = sse(text("Checking."), *weather('{"city": "上海"}'), finish(), done=True)


def write(path: Path, body: bytes) -> Path:
    path.write_bytes(body)
    return path


def record(
    path: Path, body: bytes, reads: int = 3, status: int = 200, content_type: str = SSE_TYPE
) -> Path:
    """`body` as `Recorder` writes it, in `reads` reads, with its timing file."""
    recorder = Recorder(path, "stub:test")
    recorder.write(ResponseHead(status=status, content_type=content_type))
    step = len(body) // reads + 1
    for number, start in enumerate(range(0, len(body), step)):
        recorder.write(BodyChunk(body[start : start + step], number * 0.01))
    recorder.close()
    return path


def headless(
    capsys: pytest.CaptureFixture[str], a: Path, b: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    code = main_diff([str(a), str(b), "--headless", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_identical_recordings_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, diff = headless(
        capsys, write(tmp_path / "a.sse", SAME_A), write(tmp_path / "b.sse", SAME_B)
    )
    assert code == 0
    assert diff["identical"] is True
    assert diff["sources"] == {"a": str(tmp_path / "a.sse"), "b": str(tmp_path / "b.sse")}
    assert diff["lanes"][0]["boundaries_only_b"] == [4, 11]  # characters, not bytes


def test_different_recordings_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.sse", SAME_A)
    code, diff = headless(capsys, a, write(tmp_path / "b.sse", OTHER), "--dialect", "openai-chat")
    assert code == 1
    (change,) = diff["lanes"][0]["arguments"]
    assert change == {"path": "$.city", "change": "changed", "a": "北京", "b": "上海"}


def test_recordings_with_timing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = record(tmp_path / "a.sse", SAME_A, reads=2)
    b = record(tmp_path / "b.sse", SAME_B, reads=7)
    assert (tmp_path / "b.sse.timing.jsonl").exists()
    code, diff = headless(capsys, a, b)
    assert (code, diff["identical"]) == (0, True)


def test_recordings_of_two_http_errors_differ(cli: CliRunner, tmp_path: Path) -> None:
    """Through the console script, as the stub's status fault answers: a 401 against
    a 500 differs; two recordings of the same 401 are identical."""
    recordings = {}
    for name, code in (("401", 401), ("401-again", 401), ("500", 500)):
        path = tmp_path / f"{name}.sse"
        with StubServer("weather", speed=0, fault="status", fault_params={"code": code}) as stub:
            assert cli("--headless", "--url", stub.url, "--record", str(path)).returncode == 1
        recordings[name] = str(path)
    different = cli("diff", recordings["401"], recordings["500"], "--headless")
    assert different.returncode == 1, different.stderr
    diff = json.loads(different.stdout)
    assert diff["identical"] is False
    assert diff["http_status"] == {"a": 401, "b": 500}
    assert diff["error"]["a"].startswith("HTTP 401")
    assert diff["error"]["b"].startswith("HTTP 500")
    same = cli("diff", recordings["401"], recordings["401-again"], "--headless")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["body"]["equal"] is True


def test_recorded_answers_that_are_not_streams_are_compared_by_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording says a response came (its status and type): an HTML page
    instead of a stream is an outcome to compare, not trouble."""
    page = b"<html><body>Service moved</body></html>"
    other_page = b"<html><body>Login required</body></html>"
    a = record(tmp_path / "a.sse", page, content_type="text/html")
    b = record(tmp_path / "b.sse", other_page, content_type="text/html")
    again = record(tmp_path / "again.sse", page, reads=1, content_type="text/html")
    code, diff = headless(capsys, a, b)
    assert code == 1
    assert diff["body"]["first_difference"] == 12
    assert headless(capsys, a, again)[0] == 0


NOT_A_STREAM = b"hello\n"
BINARY = bytes(range(256)) * 12
BINARY_READ_ALONE = "not an SSE stream (nor a JSON response): \u2400\u2401"  # made inert


@pytest.mark.parametrize(
    ("a", "b", "culprit", "reason"),
    [
        (NOT_A_STREAM, BINARY, "a.txt", "not an SSE stream (nor a JSON response): hello"),
        (NOT_A_STREAM, NOT_A_STREAM, "a.txt", "not an SSE stream (nor a JSON response): hello"),
        (SAME_A, BINARY, "b.bin", BINARY_READ_ALONE),
        (b"{broken", b"{broken", "a.txt", "JSON response does not parse"),
        (b" \n\n", b" \n\n", "a.txt", "empty response: no content type and no bytes"),
    ],
    ids=["text-and-binary", "the-same-text", "a-stream-and-binary", "broken-json", "blank"],
)
def test_files_that_are_not_streams_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    a: bytes,
    b: bytes,
    culprit: str,
    reason: str,
) -> None:
    """As an empty file: without a timing file to say a response came, bytes that
    fail to be read as events or as a JSON answer are not a recording to compare.
    The reason is the one a replay gives, cut short: it may quote the bytes."""
    first, second = write(tmp_path / "a.txt", a), write(tmp_path / "b.bin", b)
    assert main_diff([str(first), str(second), "--headless"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    prefix = f"toolstream-tui diff: not a recording of a stream: {tmp_path / culprit}: {reason}"
    assert captured.err.startswith(prefix)
    assert captured.err.count("\n") == 1 and len(captured.err) < len(prefix) + 120


ANTHROPIC = sse(
    {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
    {"type": "message_stop"},
    named=True,
)


def test_streams_the_dialect_reads_nothing_of_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read as Bedrock, every event of a Chat Completions stream and of an Anthropic
    one is ignored: nothing is left to compare, so it is trouble, not identical."""
    chat, anthropic = write(tmp_path / "chat.sse", SAME_A), write(tmp_path / "an.sse", ANTHROPIC)
    assert main_diff([str(chat), str(anthropic), "--headless", "--dialect", "bedrock"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"toolstream-tui diff: nothing in {chat} could be read as bedrock "
        "(6 of its 6 events ignored)\n"
    )
    assert main_diff([str(chat), str(anthropic), "--headless"]) == 1


def test_model_text_cannot_steer_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = sse(*weather('{"city": "\\u001b[31mred\\u009b"}'), finish(), done=True)
    code = main_diff(
        [str(write(tmp_path / "a.sse", SAME_A)), str(write(tmp_path / "b", hostile)), "--headless"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "\x1b" not in out and "\x9b" not in out
    assert json.loads(out)["lanes"][0]["arguments"][0]["b"] == "\x1b[31mred\x9b"


def test_unreadable_recording_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path / "a.sse", SAME_A)
    missing = tmp_path / "missing.sse"
    assert main_diff([str(a), str(missing), "--headless"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err == f"toolstream-tui diff: cannot read {missing}: no such file or directory\n"
    )


CAPTURES = DATA / "captures"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("mitmdump.flows", "a mitmproxy flow capture"),
        ("playwright.har", "a HAR capture"),
        ("playwright-one.zip", "a zip archive (as Playwright saves a HAR capture)"),
    ],
)
def test_a_capture_is_not_a_recording_to_compare(
    name: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A capture holds several requests: its bytes read as one stream compared
    "identical" to themselves, or gave a lane of some other request. Refused,
    naming what it is and what to do, with none of its bytes."""
    capture = tmp_path / f"my {name}"  # a name to quote in the command it suggests
    capture.write_bytes((CAPTURES / name).read_bytes())
    recording = write(tmp_path / "a.sse", SAME_A)
    for a, b in [(capture, capture), (recording, capture)]:
        assert main_diff([str(a), str(b), "--headless"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"toolstream-tui diff: {capture} is {kind}, not a recording: open it "
            f"(toolstream-tui open '{capture}') and bundle or record the entry to compare\n"
        )


def test_broken_timing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.sse", SAME_A)
    (tmp_path / "a.sse.timing.jsonl").write_text("{not json\n", encoding="utf-8")
    assert main_diff([str(a), str(a), "--headless"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolstream-tui diff: cannot read recording")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_runs_as_a_module_without_importing_textual(tmp_path: Path) -> None:
    a, b = write(tmp_path / "a.sse", SAME_A), write(tmp_path / "b.sse", OTHER)
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['x', {str(a)!r}, {str(b)!r}, '--headless']\n"
        "try:\n"
        "    runpy.run_module('toolstream_tui.commands.diff', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    print([n for n in sys.modules if n.startswith('textual')], file=sys.stderr)\n"
        "    raise\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=False
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == "[]"
    assert json.loads(result.stdout)["identical"] is False


def test_python_dash_m_runs_the_diff_command(tmp_path: Path) -> None:
    a, b = write(tmp_path / "a.sse", SAME_A), write(tmp_path / "b.sse", SAME_B)
    result = subprocess.run(
        [sys.executable, "-m", "toolstream_tui.commands.diff", str(a), str(b), "--headless"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["identical"] is True


def test_two_runs_of_one_request_cut_differently_are_identical(
    cli: CliRunner, tmp_path: Path
) -> None:
    """Through the console script: two recordings of `parallel`, the body cut into
    different random writes, differ in their fragment boundaries only."""
    recordings = []
    for seed in (1, 2):
        path = tmp_path / f"run{seed}.sse"
        with StubServer("parallel", split="random", seed=seed, speed=0) as server:
            assert cli("--headless", "--url", server.url, "--record", str(path)).returncode == 0
        recordings.append(str(path))
    same = cli("diff", *recordings, "--headless")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["identical"] is True
    other = tmp_path / "other.sse"
    with StubServer("name-repeated", speed=0) as server:
        cli("--headless", "--url", server.url, "--record", str(other))
    different = cli("diff", recordings[0], str(other), "--headless")
    assert different.returncode == 1
    assert json.loads(different.stdout)["identical"] is False


# -- the app -----------------------------------------------------------------------------


SNAP_A = sse(
    text("Checking the weather and the time."),
    *weather('{"city": "北京", ', '"unit": "celsius", "days": 3}'),
    call(1, "call_t1", "get_time", '{"tz": "Asia/Shanghai"}'),
    finish(),
    done=True,
)
SNAP_B = sse(
    text("Checking the weather."),
    *weather('{"ci', 'ty": "北京", "unit": "fahr', 'enheit", "hourly": true}', call_id="call_9"),
    call(1, "call_t2", "get_time", '{"tz": '),
    call(1, "call_t2", "get_time", '"Asia/Shanghai"}'),
    call(2, "call_n", "get_news", '{"topic": "\\u001b[31m[b]weather[/b]"}'),
    finish(),
    done=True,
)


async def wait_loaded(pilot: Pilot[Any]) -> None:
    from toolstream_tui.app.apps.diff import DiffApp

    app = pilot.app
    assert isinstance(app, DiffApp)
    await asyncio.wait_for(app.loaded.wait(), 10)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_diff_app(snap_compare: Snap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Header `a.sse vs b.sse · different (stream, 3 of 3 lanes)`. A stream panel:
    status, dialect and finish reason the same, text differs from char 20.
    #0 get_weather (amber): new id "(not a difference)", cut differently with
    the one-sided cuts listed, then `- $.days 3`, `+ $.hourly true`,
    `~ $.unit "celsius" → "fahrenheit"`. #1 get_time (amber): equal arguments,
    id-repeated and name-repeated only in B. #2 get_news (red) only in B, its
    arguments as JSON: the ESC shown as \\u001b and `[b]` printed, not bold."""
    from toolstream_tui.app.apps.diff import DiffApp

    monkeypatch.chdir(tmp_path)  # relative paths keep the header the same on every machine
    diff = diff_recordings(write(Path("a.sse"), SNAP_A), write(Path("b.sse"), SNAP_B))
    app = DiffApp(diff, exit_code_of(diff))
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=(100, 30), run_before=wait_loaded)


def test_diff_app_of_two_failures(
    snap_compare: Snap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Header `a.sse vs b.sse · different (stream)`. The stream panel (amber):
    `HTTP status 401 → 500`, then `error` with A's message on its line (red) and
    B's on the next (green), `text equal (0 chars)`, `body differs from char 23
    (A 86 chars, B 74)`; `no tool calls on either side` below."""
    from toolstream_tui.app.apps.diff import DiffApp

    monkeypatch.chdir(tmp_path)
    a = record(Path("a.sse"), UNAUTHORIZED, status=401, content_type=JSON_TYPE)
    b = record(Path("b.sse"), SERVER_ERROR, status=500, content_type=JSON_TYPE)
    diff = diff_recordings(a, b)
    app = DiffApp(diff, exit_code_of(diff))
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=(100, 16), run_before=wait_loaded)


def test_diff_app_of_a_stream_against_a_failure(
    snap_compare: Snap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`status "finished" → "error"`, `HTTP status 200 → 500`, `finish
    "tool_calls" → null`, `error A none` (dim) and B's message, `text differs from
    char 0 (A 9 chars, B 0)`, `body differs (A none, B 74 chars)`; #0 get_weather
    only in A."""
    from toolstream_tui.app.apps.diff import DiffApp

    monkeypatch.chdir(tmp_path)
    a = record(Path("a.sse"), SAME_A)
    b = record(Path("b.sse"), SERVER_ERROR, status=500, content_type=JSON_TYPE)
    diff = diff_recordings(a, b)
    app = DiffApp(diff, exit_code_of(diff))
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=(100, 20), run_before=wait_loaded)


def test_long_errors_are_shown_where_they_part() -> None:
    """Two messages alike for their first 300 characters: each line shows the
    place where they differ, not the start they share."""
    from toolstream_tui.app.apps.diff import error_lines

    shared = "x" * 300
    line_a, line_b = error_lines({"a": shared + " request req_1", "b": shared + " request req_2"})
    assert "req_1" in line_a.plain and "req_2" in line_b.plain
    assert line_a.plain.startswith("error       A …") and line_b.plain.startswith(" " * 12 + "B …")
    assert len(line_a.plain) < 230


async def test_q_quits_with_the_diff_exit_code() -> None:
    from toolstream_tui.app.apps.diff import DiffApp

    diff = diff_of(SAME_A, OTHER)  # by hand: asyncio.run cannot run inside this test's loop
    app = DiffApp(diff, exit_code_of(diff))
    async with app.run_test() as pilot:
        await wait_loaded(pilot)
        await pilot.press("q")
    assert app.return_value == 1


async def test_sigterm_quits_the_diff_as_a_shell_reports_it() -> None:
    """`kill` quits the app (the terminal given back) with 143, not the diff's code."""
    from toolstream_tui.app.apps.diff import DiffApp

    diff = diff_of(SAME_A, OTHER)
    app = DiffApp(diff, exit_code_of(diff))
    async with app.run_test() as pilot:
        await wait_loaded(pilot)
        os.kill(os.getpid(), signal.SIGTERM)  # handled on this loop while the app runs
        await pilot.pause()
    assert app.return_value == 128 + signal.SIGTERM


def test_another_dialects_stream_ending_in_done_read_as_chat_is_trouble(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The AI SDK's stream ends with `data: [DONE]` as chat's does: read as chat
    completions that sentinel was all it understood, and two different AI SDK
    streams were called identical (exit 0)."""
    a = write(tmp_path / "a.sse", load_scenario("aisdk-text-tools").rendered)
    b = write(tmp_path / "b.sse", load_scenario("aisdk-mismatch").rendered)
    assert main_diff([str(a), str(b), "--headless", "--dialect", "openai-chat"]) == 2
    assert f"nothing in {a} could be read as openai-chat" in capsys.readouterr().err
    assert main_diff([str(a), str(b), "--headless"]) == 1
