"""The app in a real terminal (tmux). Model output reaches it inert: on a stream
carrying a title change (OSC 0), a clipboard write (OSC 52), a screen clear
and C1/bidi controls, the terminal's title and clipboard stay untouched. And
the app leaves it as it found it: after q, and after SIGTERM on the proxy."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.helpers.cli import console_script
from toolstream_stubs import StubServer

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

INJECTION = "before \x1b]0;pwned-title\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J \x9b31m \u202eafter"


ARGUMENTS = json.dumps({"x": INJECTION})


def body() -> bytes:
    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        payload = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"

    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
    return (
        chunk({"content": INJECTION})
        + chunk({"tool_calls": [call]})
        + chunk(
            {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"x": INJECTION})}}]}
        )
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def test_injected_escapes_do_not_reach_the_terminal(tmp_path: Path) -> None:
    stream = tmp_path / "injection.sse"
    stream.write_bytes(body())
    session = f"toolstream-{uuid.uuid4().hex[:8]}"
    app = f"{console_script('toolstream-tui')} --replay {stream} --speed 0"
    command = f"tmux -L {session} wait-for ready; {app}"  # start once the clipboard is on
    tmux("-L", session, "new-session", "-d", "-s", session, "-x", "120", "-y", "36", command)
    try:
        tmux("-L", session, "set-option", "-g", "set-clipboard", "on")
        tmux("-L", session, "wait-for", "-S", "ready")
        screen = ""
        deadline = time.monotonic() + 300  # only catches a hang (see conftest)
        while "parsed" not in screen and time.monotonic() < deadline:  # wait on the screen
            screen = tmux("-L", session, "capture-pane", "-p", "-t", session)
            time.sleep(0.05)
        assert "parsed" in screen and "finished" in screen, screen
        assert "␛]0;pwned-title␇" in screen
        title = tmux("-L", session, "display-message", "-p", "-t", session, "#{pane_title}")
        assert "pwned" not in title
        assert "cHduZWQ" not in tmux("-L", session, "show-buffer")
    finally:
        tmux("-L", session, "kill-server")


class Pane:
    """A command in a tmux pane of its own (120x36). Its exit status comes from
    the shell, not tmux: tmux sometimes marks the pane dead (its terminal closed)
    without ever reporting the status of a process that exits right after
    closing it."""

    def __init__(self, command: str, exit_status: Path) -> None:
        self.session = f"toolstream-{uuid.uuid4().hex[:8]}"
        self.exit_status = exit_status
        part = f"{exit_status}.part"
        shell = f"{command}; echo $? > {part}; mv {part} {exit_status}"
        self.tmux("new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", shell)
        self.tmux("set-option", "-g", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        return tmux("-L", self.session, *args)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def screen_once(self, found: Callable[[str], bool]) -> str:
        screen = ""
        deadline = time.monotonic() + 300  # only catches a hang (see conftest)
        while not found(screen) and time.monotonic() < deadline:  # wait on the screen
            screen = self.screen()
            time.sleep(0.05)
        return screen

    def signal(self, number: signal.Signals) -> None:
        """Send `number` to the command the pane's shell started."""
        shell = self.tmux("display-message", "-p", "-t", self.session, "#{pane_pid}").strip()
        [command] = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        os.kill(int(command), number)

    def status(self) -> str:
        """The command's exit status, once it has ended."""
        deadline = time.monotonic() + 300  # only catches a hang (see conftest)
        while not self.exit_status.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.exit_status.read_text().strip()

    def close(self) -> None:
        self.tmux("kill-server")


def demo_mid_stream(tmp_path: Path, options: str) -> Pane:
    """The app on its demo, once the second call is on screen and the stream goes on
    (the demo paces its events)."""
    app = f"{console_script('toolstream-tui')} --scenario demo {options}"
    pane = Pane(app, tmp_path / "exit-status")
    screen = pane.screen_once(lambda text: "#1 get_weather" in text)
    if "streaming" not in screen:
        pane.close()
        raise AssertionError(screen)
    return pane


def test_quitting_mid_stream_leaves_a_whole_recording(tmp_path: Path) -> None:
    """The app leaves at once after q (no interpreter teardown): what it recorded
    up to then is on disk, body and timing file agreeing, and replays."""
    recording = tmp_path / "demo.sse"
    pane = demo_mid_stream(tmp_path, f"--record {recording}")
    try:
        pane.tmux("send-keys", "-t", pane.session, "q")
        assert pane.status() == "0"
    finally:
        pane.close()
    replay = subprocess.run(
        [console_script("toolstream-tui"), "--headless", "--replay", str(recording)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = json.loads(replay.stdout)
    assert "cannot read recording" not in replay.stderr
    assert report["bytes"] == recording.stat().st_size > 0
    assert [call["name"] for call in report["tool_calls"]] == ["get_weather", "get_weather"]


def test_sigterm_quits_the_app_as_q_does(tmp_path: Path) -> None:
    """`kill` mid-stream: the terminal is given back, --bundle is written as the
    stream stood, and the exit status is the shell's for SIGTERM (143)."""
    bundle = tmp_path / "bundle"
    pane = demo_mid_stream(tmp_path, f"--bundle {bundle}")
    try:
        pane.signal(signal.SIGTERM)
        assert pane.status() == "143"
        assert "get_weather" not in pane.screen(), "the app's screen is gone from the terminal"
    finally:
        pane.close()
    assert any(bundle.iterdir()), "the bundle was written"


def test_sigterm_quits_the_request_list_with_the_fail_on_status(tmp_path: Path) -> None:
    """`kill` on the proxy's request list: the app quits as with q (the terminal is
    given back), and the exit status says --fail-on matched."""
    with StubServer("weather", speed=0) as stub:
        proxy = (
            f"{console_script('toolstream-tui')} proxy --upstream {stub.base_url} "
            "--listen 127.0.0.1:0 --fail-on any"
        )
        pane = Pane(proxy, tmp_path / "exit-status")
        try:
            screen = pane.screen_once(lambda text: "point your agent at" in text)
            found = re.search(r"point your agent at (http://127\.0\.0\.1:\d+)", screen)
            assert found, screen
            with httpx.Client(timeout=60, trust_env=False) as http:
                http.post(found[1] + "/scenarios/name-repeated/v1/chat/completions", content=b"{}")
            screen = pane.screen_once(lambda text: "finished" in text)
            assert "⚠" in screen, screen
            pane.signal(signal.SIGTERM)
            assert pane.status() == "3"
            assert "following" not in pane.screen(), "the request list is gone from the terminal"
        finally:
            pane.close()
