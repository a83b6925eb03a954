"""Captures recorded in the suite by the real tools, where they are installed:
Playwright's Python package driving Chromium (a HAR), mitmdump (a flow file),
Firefox's own HAR export and Chromium's DevTools' "Save all as HAR", each in
front of the stub; every stream in what
they wrote shows the calls of a live run of the same request. Skipped, saying
which tool is missing, where one is not (tools/record_captures.py says how to
get them)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.paths import PROJECT
from tests.sources.test_captures import SECRET, calls, headless, lines, live_report
from toolstream_stubs import StubServer
from toolstream_tui.sources.captures import read_capture

TOOLS = PROJECT / "tools" / "record_captures.py"


def recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_captures", TOOLS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reports_of(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    _, out, err = headless(capsys, "--replay", str(path))
    assert SECRET not in out + err
    read = read_capture(path.read_bytes(), path.name)
    return [json.loads(out)] if len(read.streams) == 1 else lines(out)


def check_against_live(
    path: Path, stub: StubServer, capsys: pytest.CaptureFixture[str], streams: int
) -> None:
    read = read_capture(path.read_bytes(), path.name)
    assert len(read.streams) == streams
    for entry, report in zip(read.streams, reports_of(path, capsys), strict=True):
        assert calls(report) == calls(live_report(stub, entry, capsys)), entry.url


def test_a_har_playwright_records_with_chromium_opens_with_the_live_calls(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("playwright", reason="Playwright's Python package is not installed")
    tools = recorder()
    if not Path(tools.CHROMIUM).exists():
        pytest.skip(f"no Chromium at {tools.CHROMIUM} (apt-get install chromium)")
    har = tmp_path / "run.har"
    tools.playwright_har(stub, har, tools.MANY)
    check_against_live(har, stub, capsys, len(tools.MANY))


def test_a_har_firefox_exports_itself_opens_with_the_live_calls(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = recorder()
    if not Path(tools.FIREFOX).exists():
        pytest.skip(f"no Firefox at {tools.FIREFOX} (apt-get install firefox-esr)")
    har = tmp_path / "firefox.har"
    tools.firefox_har(stub, har)
    check_against_live(har, stub, capsys, len(tools.BROWSER_MANY) + 1)  # and the EventSource


def test_a_har_chromiums_devtools_saves_opens_with_the_live_calls(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("websockets", reason="the websockets package is not installed")
    tools = recorder()
    if not Path(tools.CHROMIUM).exists():
        pytest.skip(f"no Chromium at {tools.CHROMIUM} (apt-get install chromium)")
    har = tmp_path / "chromium-devtools.har"
    tools.devtools_har(stub, har)
    check_against_live(har, stub, capsys, len(tools.BROWSER_MANY) + 1)  # and the EventSource


def test_a_flow_file_and_a_har_mitmdump_records_open_with_the_live_calls(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("mitmdump") is None:
        pytest.skip("mitmdump is not on PATH (pip install mitmproxy, in a venv of its own)")
    tools = recorder()
    flows, har = tmp_path / "run.flows", tmp_path / "run.har"
    tools.mitmdump_flows(stub, flows, har)
    check_against_live(flows, stub, capsys, 3)
    check_against_live(har, stub, capsys, 3)
