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

from conftest import console_script
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


def test_quitting_mid_stream_leaves_a_whole_recording(tmp_path: Path) -> None:
    """The app leaves at once after q (no interpreter teardown): what it recorded
    up to then is on disk, body and timing file agreeing, and replays."""
    recording = tmp_path / "demo.sse"
    session = f"toolstream-{uuid.uuid4().hex[:8]}"
    exit_status = tmp_path / "exit-status"
    app = f"{console_script('toolstream-tui')} --scenario demo --record {recording}"
    # The exit status from the shell, not tmux: tmux sometimes marks the pane dead
    # (its terminal closed) without ever reporting the status of a process that
    # exits right after closing it.
    shell = f"{app}; echo $? > {exit_status}.part; mv {exit_status}.part {exit_status}"
    tmux("-L", session, "new-session", "-d", "-s", session, "-x", "120", "-y", "36", shell)
    try:
        tmux("-L", session, "set-option", "-g", "remain-on-exit", "on")
        screen = ""
        deadline = time.monotonic() + 300  # only catches a hang (see conftest)
        while "#1 get_weather" not in screen and time.monotonic() < deadline:
            screen = tmux("-L", session, "capture-pane", "-p", "-t", session)
            time.sleep(0.05)
        assert "streaming" in screen, screen  # the demo paces its events: still going
        tmux("-L", session, "send-keys", "-t", session, "q")
        while not exit_status.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert exit_status.read_text().strip() == "0"
    finally:
        tmux("-L", session, "kill-server")
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


def screen_until(session: str, found: Callable[[str], bool]) -> str:
    screen = ""
    deadline = time.monotonic() + 300  # only catches a hang (see conftest)
    while not found(screen) and time.monotonic() < deadline:  # wait on the screen
        screen = tmux("-L", session, "capture-pane", "-p", "-t", session)
        time.sleep(0.05)
    return screen


def test_sigterm_quits_the_request_list_with_the_fail_on_status(tmp_path: Path) -> None:
    """`kill` on the proxy's request list: the app quits as with q (the terminal is
    given back), and the exit status says --fail-on matched."""
    session = f"toolstream-{uuid.uuid4().hex[:8]}"
    exit_status = tmp_path / "exit-status"
    with StubServer("weather", speed=0) as stub:
        proxy = (
            f"{console_script('toolstream-tui')} proxy --upstream {stub.base_url} "
            "--listen 127.0.0.1:0 --fail-on any"
        )
        shell = f"{proxy}; echo $? > {exit_status}.part; mv {exit_status}.part {exit_status}"
        tmux("-L", session, "new-session", "-d", "-s", session, "-x", "120", "-y", "36", shell)
        try:
            tmux("-L", session, "set-option", "-g", "remain-on-exit", "on")
            screen = screen_until(session, lambda text: "point your agent at" in text)
            found = re.search(r"point your agent at (http://127\.0\.0\.1:\d+)", screen)
            assert found, screen
            with httpx.Client(timeout=60, trust_env=False) as http:
                http.post(found[1] + "/scenarios/name-repeated/v1/chat/completions", content=b"{}")
            screen = screen_until(session, lambda text: "finished" in text)
            assert "⚠" in screen, screen
            shell_pid = tmux("-L", session, "display-message", "-p", "-t", session, "#{pane_pid}")
            [app_pid] = (
                Path(f"/proc/{shell_pid.strip()}/task/{shell_pid.strip()}/children")
                .read_text()
                .split()
            )
            os.kill(int(app_pid), signal.SIGTERM)
            deadline = time.monotonic() + 300  # only catches a hang (see conftest)
            while not exit_status.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert exit_status.read_text().strip() == "3"
            screen = tmux("-L", session, "capture-pane", "-p", "-t", session)
            assert "following" not in screen, "the request list is gone from the terminal"
        finally:
            tmux("-L", session, "kill-server")


def test_sigterm_quits_the_app_as_q_does(tmp_path: Path) -> None:
    """`kill` mid-stream: the terminal is given back, --bundle is written as the
    stream stood, and the exit status is the shell's for SIGTERM (143)."""
    session = f"toolstream-{uuid.uuid4().hex[:8]}"
    exit_status = tmp_path / "exit-status"
    bundle = tmp_path / "bundle"
    app = f"{console_script('toolstream-tui')} --scenario demo --bundle {bundle}"
    shell = f"{app}; echo $? > {exit_status}.part; mv {exit_status}.part {exit_status}"
    tmux("-L", session, "new-session", "-d", "-s", session, "-x", "120", "-y", "36", shell)
    try:
        tmux("-L", session, "set-option", "-g", "remain-on-exit", "on")
        screen = screen_until(session, lambda text: "#1 get_weather" in text)
        assert "streaming" in screen, screen  # the demo paces its events: still going
        pane = tmux("-L", session, "display-message", "-p", "-t", session, "#{pane_pid}")
        [app_pid] = Path(f"/proc/{pane.strip()}/task/{pane.strip()}/children").read_text().split()
        os.kill(int(app_pid), signal.SIGTERM)
        deadline = time.monotonic() + 300  # only catches a hang (see conftest)
        while not exit_status.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert exit_status.read_text().strip() == "143"
        screen = tmux("-L", session, "capture-pane", "-p", "-t", session)
        assert "get_weather" not in screen, "the app's screen is gone from the terminal"
    finally:
        tmux("-L", session, "kill-server")
    assert any(bundle.iterdir()), "the bundle was written"
