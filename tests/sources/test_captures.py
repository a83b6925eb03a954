"""Captures other tools saved (tests/data/captures, recorded against the stub by
tools/record_captures.py: Playwright's HAR, Chromium's network log over the
DevTools protocol, mitmdump's flow file, Firefox's own HAR export, Chromium's
DevTools' "Save all as HAR") read as a live watch of the same
stream reads it: the same calls, the secrets gone, what is missing said."""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.helpers.cli import run_in_process
from tests.helpers.paths import DATA
from tests.helpers.virtual_clock import run_on_virtual_clock
from toolstream_stubs import StubServer
from toolstream_tui.cli import main
from toolstream_tui.commands import capture_list, capturing
from toolstream_tui.commands.common import UsageError
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.sources import captures
from toolstream_tui.sources.captures import (
    CUT_BODY,
    EMPTY_BODY,
    FLOWS,
    HAR,
    MAX_DEPTH,
    NOT_TIMED,
    CaptureEntry,
    CaptureError,
    CaptureSource,
    read_capture,
    tnetstring_value,
)

DATA = DATA / "captures"
SECRET = "sk-capture-secret-0123456789abcdef"  # as tools/record_captures.py sends it
BROWSER_STREAMS = [
    "demo",
    "anthropic-parallel",
    "gemini-text-tools",
    "truncated",
    "bedrock-text-tools",
    "anthropic-parallel",
]
CAPTURES = {  # file: its kind, its entries, and the scenarios of its streaming entries
    "playwright.har": (
        HAR,
        5,
        ["demo", "anthropic-parallel", "gemini-text-tools", "truncated"],
    ),
    "playwright-one.har": (HAR, 2, ["demo"]),
    "chromium-cdp.har": (HAR, 4, ["demo", "anthropic-parallel"]),
    "mitmdump.flows": (FLOWS, 3, ["demo", "anthropic-parallel", "truncated"]),
    "mitmdump.har": (HAR, 3, ["demo", "anthropic-parallel", "truncated"]),
    # A browser's own export of a page's fetch()es (Bedrock's body base64'd), then an
    # EventSource: Firefox's network monitor, Chromium's DevTools "Save all as HAR".
    "firefox.har": (HAR, 8, BROWSER_STREAMS),
    "chromium-devtools.har": (HAR, 8, BROWSER_STREAMS),
}


def capture(name: str) -> Any:
    return read_capture((DATA / name).read_bytes(), name)


def headless(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    result = run_in_process(capsys, "--headless", "--speed", "0", *args)
    return result.returncode, result.stdout, result.stderr


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def calls(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a watch makes of a stream: its calls, their arguments, how it ended."""
    return [
        (call["name"], call["arguments_raw"], call["arguments"], call["error"])
        for call in report["tool_calls"]
    ] + [(report["status"], report["finish_reason"], report["text"])]


def live_report(stub: StubServer, entry: CaptureEntry, capsys: pytest.CaptureFixture[str]) -> Any:
    """The report of a live run of the entry's request against the stub."""
    parts = urlsplit(entry.url)
    url = stub.base_url + parts.path + (f"?{parts.query}" if parts.query else "")
    body = (entry.request_body or b"").decode()
    _code, out, _ = headless(capsys, "--url", url, "-d", body)
    return json.loads(out)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_every_capture_is_read_with_its_streams(name: str) -> None:
    kind, count, scenarios = CAPTURES[name]
    read = capture(name)
    assert read.kind == kind
    assert len(read.entries) == count
    assert [urlsplit(e.url).path.split("/")[2] for e in read.streams] == scenarios
    for entry in read.streams:
        assert entry.status == 200 and entry.body, "a real stream, with its body"
        assert entry.head_t is not None and entry.end_t is not None
        assert 0 <= entry.head_t <= entry.end_t, "the capture's own timings"


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_each_stream_of_a_capture_has_the_calls_of_a_live_run(
    name: str, stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    read = capture(name)
    _code, out, err = headless(capsys, "--replay", str(DATA / name))
    if len(read.streams) == 1:
        reports = [json.loads(out)]  # one stream: the report a recording's replay prints
    else:
        reports = lines(out)
        assert [line["entry"] for line in reports] == [e.number for e in read.streams]
    assert len(reports) == len(read.streams)
    for entry, report in zip(read.streams, reports, strict=True):
        assert calls(report) == calls(live_report(stub, entry, capsys)), entry.url
    assert f"{NOT_TIMED} in a" in err


def test_one_stream_opens_as_a_recording_with_its_capture_in_its_label(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _err = headless(capsys, "--replay", str(DATA / "playwright-one.har"))
    report = json.loads(out)
    assert code == 0
    assert report["source"].startswith("playwright-one.har #2: POST http://127.0.0.1:")
    assert report["source"].endswith(f" · {NOT_TIMED}"), "the status bar says it"


def test_open_is_replay_as_one_verb(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "mitmdump.flows")
    assert main(["open", path, "--headless", "--speed", "0"]) == EXIT_INCOMPLETE
    opened = capsys.readouterr().out
    assert main(["--replay", path, "--headless", "--speed", "0"]) == EXIT_INCOMPLETE
    assert capsys.readouterr().out == opened
    with pytest.raises(SystemExit):
        main(["open", path, "--url", "http://127.0.0.1:9/"])
    assert "takes no other source" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_no_secret_of_a_capture_reaches_a_report(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SECRET.encode() in (DATA / name).read_bytes(), "the capture holds the key"
    _, out, err = headless(capsys, "--replay", str(DATA / name))
    assert SECRET not in out + err
    assert SECRET[3:] not in out + err


def test_the_request_is_kept_with_its_secrets_redacted() -> None:
    entry = capture("playwright-one.har").streams[0]
    sent = next(iter(entry.items()))
    assert entry.request_headers["Authorization"] == f"Bearer {SECRET}"
    assert sent.headers["Authorization"] == "[REDACTED]"
    assert json.loads(sent.body)["stream"] is True


def test_a_har_entry_carries_timing_from_its_own_timings() -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    timings = document["log"]["entries"][1]["timings"]
    timings.update(blocked=1, dns=-1, connect=2, ssl=1, send=3, wait=40, receive=250)
    entry = read_capture(json.dumps(document).encode(), "t.har").streams[0]
    assert entry.head_t == pytest.approx(0.046), "blocked + connect + send + wait (ssl in connect)"
    assert entry.end_t == pytest.approx(0.296)
    del document["log"]["entries"][1]["timings"]
    untimed = read_capture(json.dumps(document).encode(), "t.har").streams[0]
    assert untimed.head_t is None and "no timings" in untimed.notes[0]


def har_with_body(**content: Any) -> bytes:
    document = json.loads((DATA / "playwright-one.har").read_text())
    response = document["log"]["entries"][1]["response"]
    response["content"] = {**response["content"], **content}
    if "text" not in content:
        response["content"].pop("text", None)
    return json.dumps(document).encode()


def stream_of(data: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Any:
    path = tmp_path / "capture.har"
    path.write_bytes(data)
    code, out, err = headless(capsys, "--replay", str(path))
    return code, json.loads(out), err


def test_a_status_written_as_text_is_the_same_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    as_number = stream_of(json.dumps(document).encode(), capsys, tmp_path)
    document["log"]["entries"][1]["response"]["status"] = "200"
    as_text = stream_of(json.dumps(document).encode(), capsys, tmp_path)
    assert as_text[1]["status"] == "finished"
    assert as_text == as_number


@pytest.mark.parametrize("encoding", ["base64", "gzip+base64", "gzip as latin-1"])
def test_encoded_bodies_read_as_the_plain_one(
    encoding: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = capture("playwright-one.har").streams[0].body
    _, expected, _ = stream_of((DATA / "playwright-one.har").read_bytes(), capsys, tmp_path)
    if encoding == "base64":
        content = {"text": base64.b64encode(plain).decode(), "encoding": "base64"}
    elif encoding == "gzip+base64":
        content = {"text": base64.b64encode(gzip.compress(plain)).decode(), "encoding": "base64"}
    else:
        content = {"text": gzip.compress(plain).decode("latin-1")}
    _code, report, err = stream_of(har_with_body(**content), capsys, tmp_path)
    assert calls(report) == calls(expected)
    said = {"base64": "base64-encoded; decoded", "gzip+base64": "gzip'd; unzipped"}
    said["gzip as latin-1"] = "gzip'd; unzipped"
    assert said[encoding] in err


def test_an_empty_body_is_said_plainly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, report, err = stream_of(har_with_body(text="", size=5210), capsys, tmp_path)
    assert report["tool_calls"] == [] and report["bytes"] == 0
    assert EMPTY_BODY.format(size=", though 5210 bytes were received") in err
    assert code != 0, "a stream with no body is not a sound stream"


def test_a_body_that_does_not_decode_ends_the_stream_with_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = base64.b64encode(gzip.compress(b"data: {}\n\n")[:-12]).decode()
    code, report, _err = stream_of(har_with_body(text=broken, encoding="base64"), capsys, tmp_path)
    assert code == 1 and report["status"] == "error"
    assert report["error"].startswith("the body begins as gzip but does not unzip")
    assert report["bytes"] == 0


@pytest.mark.parametrize("name", ["firefox.har", "chromium-devtools.har"])
def test_a_browser_keeps_a_binary_stream_base64d_and_that_is_said(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A browser's export stores a body of a type it does not take for text
    (Bedrock's binary event stream) base64'd, and the text streams as text."""
    _code, out, _err = headless(capsys, "--replay", str(DATA / name))
    notes = {urlsplit(line["path"]).path.split("/")[2]: line["notes"] for line in lines(out)}
    assert notes["bedrock-text-tools"] == ["the body was stored base64-encoded; decoded"]
    assert notes["demo"] == notes["gemini-text-tools"] == []


def test_a_body_firefox_cut_is_shown_to_the_cut_and_ends_saying_why(
    stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """firefox-cut.har: Firefox with devtools.netmonitor.responseBodyLimit at 4096
    characters, cutting the demo stream as it cuts any body past 1 MiB: the HAR
    holds the body's start and the whole body's size, and no other mark."""
    read = capture("firefox-cut.har")
    cut, whole = read.streams  # the fetch() cut, the EventSource under the limit
    code, out, err = headless(capsys, "--replay", str(DATA / "firefox-cut.har"))
    first, second = lines(out)
    live = live_report(stub, cut, capsys)
    assert code == 1 and SECRET not in out + err
    assert first["status"] == "error" and first["bytes"] == len(cut.body) < live["bytes"]
    assert first["error"] == CUT_BODY.format(held=len(cut.body), size=live["bytes"])
    assert [call["name"] for call in first["tool_calls"]] == ["get_weather", "get_weather"]
    for call, live_call in zip(first["tool_calls"], live["tool_calls"], strict=False):
        assert live_call["arguments_raw"].startswith(call["arguments_raw"]), "up to the cut"
    assert calls(second) == calls(live_report(stub, whole, capsys)), "a whole body is whole"


@pytest.mark.parametrize(
    ("size", "cut"), [(99, False), (100, False), (101, True), ("101", False), (True, False)]
)
def test_a_body_is_cut_when_the_capture_gives_a_bigger_size(size: Any, cut: bool) -> None:
    """Only a size (an int) past the bytes held: a gzip'd body's smaller size is no cut."""
    said = captures.body_cut({"size": size}, b"x" * 100)
    assert said == (CUT_BODY.format(held=100, size=size) if cut else "")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b'{"log": {"entries": [', "not JSON at line 1"),
        (b'{"log": {"pages": []}}', '"log": {"entries": [...]}'),
        (b'{"log": {"entries": [{"request": 1}]}}', 'entry 1 has no "request" object'),
        (b'{"log": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3001, "JSON nested too deeply to read"),
        (b'{"log": {"entries": [' + b"1" * 25_000 + b"]}}", "a number in it is too long to read"),
        (b"30:4:type;4:http;7:request;", "cut short"),
        (b"11:4:type;1:x,}3:0:~]", "flow 2 is not a dictionary"),
    ],
)
def test_a_broken_capture_is_one_clear_line(
    data: bytes, why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.har"
    path.write_bytes(data)
    code, out, err = headless(capsys, "--replay", str(path))
    assert code == 1 and out == ""
    assert why in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def nested(depth: int) -> bytes:
    value = b"0:~"
    for _ in range(depth):
        value = b"%d:%s]" % (len(value), value)
    return value


def test_tnetstring_nesting_is_read_to_its_limit_and_refused_past_it() -> None:
    _value, end = tnetstring_value(nested(MAX_DEPTH), 0, 0)
    assert end == len(nested(MAX_DEPTH))
    with pytest.raises(CaptureError, match=f"deeper than {MAX_DEPTH}"):
        tnetstring_value(nested(MAX_DEPTH + 1), 0, 0)


def test_flows_that_are_not_http_are_skipped_and_counted() -> None:
    data = (DATA / "mitmdump.flows").read_bytes()
    tcp = b"22:4:type;3:tcp;2:id;1:x;}"
    read = read_capture(data + tcp, "mixed.flows")
    assert len(read.entries) == 3
    assert read.notes == ("1 tcp flow(s) skipped: not HTTP",)


def test_a_gzipped_flow_body_is_decoded_and_said() -> None:
    entry = capture("mitmdump.flows").streams[1]
    assert entry.response_headers["Content-Encoding"] == "gzip"
    assert entry.notes == ("the body was sent gzip-encoded; decoded",)
    assert entry.body.startswith(b"event: message_start")


def test_a_recording_is_not_taken_for_a_capture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An NDJSON recording begins with `{` too: only `{"log":` is a HAR."""
    path = tmp_path / "ollama.ndjson"
    path.write_bytes(b'{"model":"m","message":{"role":"assistant","content":"hi"},"done":true}\n')
    code, out, err = headless(capsys, "--replay", str(path))
    assert code == 0 and json.loads(out)["source"] == str(path)
    assert "capture" not in err


def test_the_worst_entry_sets_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    """playwright.har: three sound streams and one cut short (exit 4); --fail-on
    names the anomaly of the cut one, but a stream cut short is worse than a lint.
    The cut one is named on stderr, with or without --fail-on, as one stream is."""
    code, out, err = headless(capsys, "--replay", str(DATA / "playwright.har"))
    assert code == EXIT_INCOMPLETE
    assert [line["status"] for line in lines(out)] == ["finished"] * 3 + ["truncated"]
    assert err.splitlines() == [
        "toolstream-tui: note: per-event times not recorded in a HAR file",
        "toolstream-tui: entry 5: stream truncated before the finish after 8 events",
    ]
    code, out, err = headless(
        capsys, "--replay", str(DATA / "playwright.har"), "--fail-on", "unterminated-event"
    )
    assert code == EXIT_INCOMPLETE
    assert "entry 5: --fail-on: unterminated-event" in err
    code, out, err = headless(
        capsys, "--replay", str(DATA / "chromium-cdp.har"), "--fail-on", "any"
    )
    assert code == 0


def test_a_capture_without_a_stream_says_so_headless(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    del document["log"]["entries"][1]
    path = tmp_path / "page.har"
    path.write_text(json.dumps(document))
    code, out, err = headless(capsys, "--replay", str(path))
    assert code == 1 and out == ""
    assert "holds no streaming response among its 1 requests" in err


@pytest.mark.parametrize(("size", "refused"), [(999, False), (1000, False), (1001, True)])
def test_a_body_inflating_past_the_limit_is_refused(
    size: int, refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(captures, "MAX_INFLATED", 1000)
    plain, problem = captures.inflated(gzip.compress(b"x" * size), "gzip")
    assert (problem == "it inflates past 0 MiB") is refused
    assert plain == (b"" if refused else b"x" * size)


@pytest.mark.parametrize("wrapped", [True, False])
def test_a_deflated_flow_body_is_inflated_zlib_wrapped_or_raw(wrapped: bool) -> None:
    body = b"data: {}\n\n" * 50
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
    packed = packer.compress(body) + packer.flush()
    plain, notes, problem = captures.flow_body(packed, {"Content-Encoding": "deflate"})
    assert (plain, notes, problem) == (body, ["the body was sent deflate-encoded; decoded"], "")


def test_a_flow_body_in_an_encoding_not_read_is_an_error_with_why() -> None:
    plain, _, problem = captures.flow_body(b"\x0b\x02\x80", {"Content-Encoding": "br"})
    assert plain == b"" and problem == "cannot decode the body: unsupported Content-Encoding: br"


def test_timings_that_are_not_numbers_count_as_zero() -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    timings = document["log"]["entries"][1]["timings"]
    timings.update(blocked=5, dns=-1, connect=-1, ssl=-1, send=True, wait=None, receive="12")
    entry = read_capture(json.dumps(document).encode(), "t.har").streams[0]
    assert (entry.head_t, entry.end_t) == (0.005, 0.005)


@pytest.mark.parametrize(
    ("timings", "why"),
    [
        ({"receive": 1e12}, "timings.receive is 1e+12 ms"),
        ({"wait": float("inf")}, "timings.wait is inf ms"),  # JSON can say Infinity
        ({"blocked": 10**400}, "timings.blocked is a 401-digit number of ms"),
        ({"wait": 86_400_000, "receive": 1000}, "its timings add up to 86401 seconds"),
    ],
)
def test_har_timings_past_a_day_are_refused_as_a_timing_files_are(
    timings: dict[str, Any], why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A replay waited for them (for ever), or reported a last byte 31 years on."""
    document = json.loads((DATA / "playwright-one.har").read_text())
    document["log"]["entries"][1]["timings"].update(timings)
    path = tmp_path / "t.har"
    path.write_text(json.dumps(document))
    code, out, err = headless(capsys, "--replay", str(path))
    assert code == 1 and out == ""
    assert err == (
        f"toolstream-tui: cannot read capture t.har: entry 2: {why}, outside 0..86400 seconds\n"
    )


def tnetstring(value: Any) -> bytes:
    """`value` as a tnetstring, as mitmproxy writes flows (for flows made in tests)."""
    if value is None:
        return b"0:~"
    if isinstance(value, bool):
        word = b"true" if value else b"false"
        return b"%d:%s!" % (len(word), word)
    if isinstance(value, dict):
        items = [tnetstring(part) for pair in value.items() for part in pair]
        return b"%d:%s}" % (sum(map(len, items)), b"".join(items))
    if isinstance(value, list):
        items = [tnetstring(item) for item in value]
        return b"%d:%s]" % (sum(map(len, items)), b"".join(items))
    kinds = {int: b"#", float: b"^", bytes: b",", str: b";"}
    payload = value if isinstance(value, bytes) else str(value).encode()
    return b"%d:%s%s" % (len(payload), payload, kinds[type(value)])


@pytest.mark.parametrize(("key", "later"), [("timestamp_start", 1e9), ("timestamp_end", 86_401)])
def test_flow_times_past_a_day_after_the_request_are_refused(
    key: str, later: float, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flow, _ = tnetstring_value((DATA / "mitmdump.flows").read_bytes(), 0, 0)
    flow["response"][key] = flow["request"]["timestamp_start"] + later
    path = tmp_path / "t.flows"
    path.write_bytes(tnetstring(flow))
    code, out, err = headless(capsys, "--replay", str(path))
    assert code == 1 and out == ""
    assert err == (
        f"toolstream-tui: cannot read capture t.flows: flow 1: response.{key} is {later:g} "
        "seconds after the request, outside 0..86400 seconds\n"
    )


def test_a_flow_time_past_a_floats_range_is_no_time() -> None:
    """It was a traceback (an int too large to convert to float)."""
    flow, _ = tnetstring_value((DATA / "mitmdump.flows").read_bytes(), 0, 0)
    flow["response"]["timestamp_end"] = 10**400
    entry = read_capture(tnetstring(flow), "t.flows").entries[0]
    assert entry.end_t is None


@pytest.mark.parametrize("status", ["200", [], True, None])
def test_a_flow_response_without_a_status_code_is_an_error_with_why(status: Any) -> None:
    flow, _ = tnetstring_value((DATA / "mitmdump.flows").read_bytes(), 0, 0)
    assert tnetstring_value(tnetstring(flow), 0, 0)[0] == flow, "the test's writer"
    flow["response"]["status_code"] = status
    entry = read_capture(tnetstring(flow), "f.flows").entries[0]
    assert entry.status is None and entry.error == "the flow's response has no status code"
    items = list(entry.items())
    assert items[-1].message == entry.error


@pytest.mark.parametrize("option", ["--record", "--bundle"])
def test_record_and_bundle_take_one_stream_not_a_list(
    option: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "out"
    code, out, err = headless(capsys, "--replay", str(DATA / "playwright.har"), option, str(target))
    assert code == 2 and out == "" and not target.exists()
    assert "take one stream and playwright.har holds 4 streams" in err
    code, out, _ = headless(
        capsys, "--replay", str(DATA / "playwright-one.har"), option, str(target)
    )
    assert code == 0 and target.exists(), "one stream: recorded or bundled as any watch"


@pytest.mark.parametrize(("option", "value"), [("--until-event", "3"), ("--until-time", "0.1")])
def test_a_moment_takes_one_stream_not_a_list(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each entry's whole report was printed, the option silently not applied."""
    code, out, err = headless(capsys, "--replay", str(DATA / "playwright.har"), option, value)
    assert code == 2 and out == ""
    assert err == (
        f"toolstream-tui: {option} takes one stream and playwright.har holds 4 streams; "
        f"bundle the one you want (in the app, b on its stream view) and replay the "
        f"bundle's stream.sse with {option}\n"
    )
    code, out, _ = headless(capsys, "--replay", str(DATA / "playwright-one.har"), option, value)
    assert code == 0 and json.loads(out)["as_of"], "one stream: cut as any replay"


def test_the_app_is_not_opened_at_a_moment_of_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--at N` on a list of streams opened the list, ignoring it."""
    opened: list[Path] = []

    async def open_list(capture: Any, path: Path, args: argparse.Namespace) -> int:
        opened.append(path)
        return 0

    monkeypatch.setattr(capture_list, "run_list_app", open_list)
    listing = capturing.CaptureList(capture("playwright.har"), DATA / "playwright.har")
    args = argparse.Namespace(
        record=None, bundle=None, until_event=None, until_time=None, at=3, headless=False
    )
    with pytest.raises(UsageError, match=r"^--at takes one stream and playwright.har holds 4"):
        capturing.watch_list(listing, args, frozenset())
    assert opened == []


def loaded_after_headless(capture: str, *roots: str) -> tuple[list[str], list[str]]:
    """The report lines of a headless run on `capture`, and the modules under
    `roots` it loaded."""
    code = (
        "import sys\n"
        "from toolstream_tui.cli import main\n"
        f"main(['--headless', '--speed', '0', '--replay', {str(DATA / capture)!r}])\n"
        f"print([n for n in sys.modules if n.split('.')[0] in {roots!r}], file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return result.stdout.splitlines(), json.loads(result.stderr.splitlines()[-1].replace("'", '"'))


def test_a_headless_capture_of_one_stream_at_speed_0_needs_no_event_loop() -> None:
    """As a recording's replay: neither asyncio nor Textual is loaded."""
    report, loaded = loaded_after_headless("playwright-one.har", "asyncio", "textual")
    assert '  "status": "finished",' in report and loaded == []


def test_a_headless_capture_of_several_streams_never_loads_textual() -> None:
    report, loaded = loaded_after_headless("playwright.har", "textual")
    assert len(report) == 4 and loaded == []


def test_a_request_the_browser_got_no_response_to_is_an_error_saying_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Chromium writes a failed request as status 0 with its `_error`."""
    document = json.loads((DATA / "playwright-one.har").read_text())
    response = document["log"]["entries"][1]["response"]
    response.update(status=0, _error="net::ERR_CONNECTION_REFUSED")
    response["content"].pop("text")
    code, report, _ = stream_of(json.dumps(document).encode(), capsys, tmp_path)
    assert code == 1 and report["status"] == "error"
    assert report["error"] == "net::ERR_CONNECTION_REFUSED" and report["http_status"] is None


def test_a_zip_capture_is_read_with_its_attached_bodies(
    stub: StubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Playwright's .zip: the HAR names each body's file in the archive."""
    code, out, err = headless(capsys, "--replay", str(DATA / "playwright-one.zip"))
    report = json.loads(out)
    assert code == 0 and report["source"].startswith("playwright-one.zip #2: POST")
    assert "note: the body was read from the attached file " in err
    assert SECRET not in out + err
    entry = capture("playwright-one.har").streams[0]
    assert calls(report) == calls(live_report(stub, entry, capsys))


def unzipped(tmp_path: Path) -> Path:
    with zipfile.ZipFile(DATA / "playwright-one.zip") as archive:
        archive.extractall(tmp_path)
    return tmp_path / "har.har"


def test_attached_bodies_are_read_beside_the_har_and_their_absence_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    har = unzipped(tmp_path)
    code, out, _ = headless(capsys, "--replay", str(har))
    assert code == 0 and len(json.loads(out)["tool_calls"]) == 2
    body = json.loads(har.read_text())["log"]["entries"][1]["response"]["content"]["_file"]
    (tmp_path / body).unlink()
    code, out, _ = headless(capsys, "--replay", str(har))
    report = json.loads(out)
    assert code == 1 and report["status"] == "error" and report["bytes"] == 0
    assert report["error"] == f"the body is in the attached file {body}, missing or over 256 MiB"


@pytest.mark.parametrize("name", ["../secret.txt", "/etc/passwd", ".hidden", "a/b.dat", ""])
def test_an_attached_file_outside_the_hars_folder_is_never_read(name: str) -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    content = document["log"]["entries"][1]["response"]["content"]
    del content["text"]
    content["_file"] = name
    asked: list[str] = []
    read = read_capture(json.dumps(document).encode(), "t.har", lambda n: asked.append(n))
    assert asked == [], "never asked for"
    why = f"the body is in {name!r}, which is not a file name beside the HAR"
    assert read.streams[0].unreadable == why


@pytest.mark.parametrize(("size", "read"), [(99, True), (100, True), (101, False)])
def test_an_attached_file_is_read_up_to_the_limit(
    size: int, read: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(capturing, "MAX_INFLATED", 100)
    (tmp_path / "body.dat").write_bytes(b"x" * size)
    got = capturing.beside(tmp_path / "t.har")("body.dat")
    assert got == (b"x" * size if read else None)


def test_cookies_and_query_keys_of_a_capture_are_redacted_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads((DATA / "playwright-one.har").read_text())
    entry = document["log"]["entries"][1]
    entry["request"]["url"] += "?key=query-secret-123"
    entry["request"]["headers"].append({"name": "Cookie", "value": "session=cookie-secret-456"})
    entry["response"]["headers"].append({"name": "Set-Cookie", "value": "id=set-secret-789"})
    entry["response"]["headers"].append({"name": "X-Echo", "value": "got query-secret-123"})
    data = json.dumps(document).encode()
    _, report, err = stream_of(data, capsys, tmp_path)
    shown = json.dumps(report) + err
    assert "key=[REDACTED]" in report["source"]
    sent, head = list(read_capture(data, "t.har").streams[0].items())[:2]
    assert sent.headers["Cookie"] == "[REDACTED]" and "key=[REDACTED]" in sent.url
    assert "Set-Cookie" not in head.headers and head.headers["X-Echo"] == "got [REDACTED]"
    for secret in ("query-secret-123", "cookie-secret-456", "set-secret-789"):
        assert secret not in shown + repr(sent) + repr(head)


async def arrival_times(source: CaptureSource) -> list[tuple[str, float, float]]:
    """Each item's kind, its recorded time and when (by the loop's clock) it came."""
    start = asyncio.get_running_loop().time()
    seen = []
    async for item in source.items():
        recorded = getattr(item, "t", None)
        if recorded is not None:
            now = asyncio.get_running_loop().time() - start
            seen.append((type(item).__name__, recorded, round(now, 1)))
    return seen


@pytest.mark.parametrize(("speed", "head_at", "body_at"), [(1.0, 4.0, 10.0), (2.0, 2.0, 5.0)])
def test_a_capture_replays_at_its_recorded_pace(
    speed: float, head_at: float, body_at: float
) -> None:
    """The head at the HAR's blocked+…+wait, the body at the end of receive,
    scaled by --speed; the times shown stay the recorded ones."""
    document = json.loads((DATA / "playwright-one.har").read_text())
    timings = document["log"]["entries"][1]["timings"]
    timings.update(blocked=-1, dns=-1, connect=-1, ssl=-1, send=0, wait=4000, receive=6000)
    entry = read_capture(json.dumps(document).encode(), "t.har").streams[0]

    async def replayed() -> list[tuple[str, float, float]]:
        clock = asyncio.get_running_loop().time
        return await arrival_times(CaptureSource(entry, "t.har", speed=speed, clock=clock))

    seen = run_on_virtual_clock(replayed())
    assert seen[0] == ("ResponseHead", 4.0, head_at)
    assert set(seen[1:]) == {("BodyChunk", 10.0, body_at)}
