"""A watcher that stops reading (a paused terminal, a stuck or stopped process) or
dies never slows or breaks a client: the forwarder holds at most --watch-buffer
for it, drops the rest for the watcher only (each such request then says so with
a `watch-gap`), records every byte itself, and outlives a killed watcher only
until the requests in flight have ended."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import pty
import re
import signal
import subprocess
import sys
import termios
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.commands.test_proxy import LISTENING, children_of, proxy_process
from tests.helpers.cli import console_script
from tests.helpers.docs_pages import docs_page
from tests.helpers.proxy import WAIT_S, HeldStream
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS
from toolstream_tui.proxy.config import SHUTDOWN_GRACE_S, WATCH_BUFFER_BYTES
from toolstream_tui.proxy.forwarder import WATCHER_GONE
from toolstream_tui.proxy.pipe import Exchange, Note, PipeFeed, ResponseEnd, WatchGap, frame
from toolstream_tui.sources.base import WATCH_GAP, BodyChunk, ResponseHead

HUGE = load_scenario("huge-args").rendered  # 6 MB
WEATHER = load_scenario("weather").rendered  # what HeldStream serves
WATCH_BUFFER = 1 << 20
REQUESTS = 8  # 49 MB: far past the buffer
RSS_SLACK = 24 << 20  # what the forwarder may grow by besides the buffer (it held all: 49 MB)


class PausedPipe:
    """A pipe that takes nothing: the watcher is stopped."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_write_buffer_size(self) -> int:
        return 0


def paused_feed(cap: int) -> PipeFeed:
    feed = PipeFeed(cap)
    feed.transport = PausedPipe()  # type: ignore[assignment]
    feed.pause_writing()
    return feed


def held_frames(feed: PipeFeed) -> list[bytes]:
    feed.resume_writing()
    assert isinstance(feed.transport, PausedPipe)
    return feed.transport.writes


async def test_the_tap_keeps_body_up_to_its_cap_and_counts_the_rest() -> None:
    first, second, third = (
        BodyChunk(b"a" * 100, 0.1),
        BodyChunk(b"b" * 50, 0.2),
        BodyChunk(b"c", 0.3),
    )
    exactly = len(frame(1, first)) + len(second.data)
    for cap, kept, dropped_from in (
        (exactly, [first, second], third),
        (exactly - 1, [first], second),
    ):
        feed = paused_feed(cap)
        for chunk in (first, second, third):
            feed.put(1, chunk)
        feed.put(1, ResponseEnd(0.4, 151))
        gap = WatchGap(151 - sum(len(chunk.data) for chunk in kept), dropped_from.t)
        expected = [frame(1, item) for item in [*kept, gap, ResponseEnd(0.4, 151)]]
        assert held_frames(feed) == [b"".join(expected)], cap


async def test_a_request_past_the_cap_keeps_its_head_and_end_and_its_body_stays_dropped() -> None:
    """Once a body has a hole, what comes after it is not kept either (a core cannot
    read past a hole), even when there is room again; another request's body is."""
    head = ResponseHead(200, "text/event-stream", t=0.0)
    feed = paused_feed(len(frame(1, head)) + 10)
    feed.put(1, head)
    feed.put(1, BodyChunk(b"x" * 11, 0.1))
    feed.put(2, BodyChunk(b"y" * 5, 0.2))
    feed.put(1, BodyChunk(b"z", 0.3))
    feed.put(1, ResponseEnd(0.4, 12))
    wire = [frame(1, head), frame(2, BodyChunk(b"y" * 5, 0.2))]
    wire += [frame(1, WatchGap(12, 0.1)), frame(1, ResponseEnd(0.4, 12))]
    assert held_frames(feed) == [b"".join(wire)]


async def test_a_request_body_past_the_cap_is_not_kept_for_the_watcher() -> None:
    feed = paused_feed(100)
    exchange = Exchange("POST", "/v1/x", "http://h/v1/x", {}, b"{" * 101, 1.0, 2.0)
    feed.put(1, exchange)
    note = "the request body (101 bytes) was not kept for the watcher, which had fallen behind"
    wire = frame(1, Exchange("POST", "/v1/x", "http://h/v1/x", {}, b"", 1.0, 2.0))
    assert held_frames(feed) == [wire + frame(1, Note(note))]


def test_watch_gap_is_a_registered_kind() -> None:
    assert WATCH_GAP in ANOMALY_KINDS


def memory_of(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def kinds(line: dict[str, Any]) -> list[str]:
    return [anomaly["kind"] for anomaly in line["anomalies"]]


def test_a_stopped_watcher_costs_clients_nothing_and_the_forwarder_at_most_its_buffer(
    tmp_path: Path,
) -> None:
    with (
        StubServer("huge-args", speed=0) as stub,
        proxy_process(
            "--upstream", stub.base_url, "--headless", "--record-dir", str(tmp_path),
            "--watch-buffer", str(WATCH_BUFFER),
        ) as proxy,
    ):  # fmt: skip
        [forwarder] = proxy.forwarders
        warm_up = proxy.send("/v1/chat/completions")  # the forwarder has loaded all it uses
        before = memory_of(forwarder)["VmRSS"]
        os.kill(proxy.process.pid, signal.SIGSTOP)
        try:
            bodies = [proxy.send("/v1/chat/completions").content for _ in range(REQUESTS)]
            peak = memory_of(forwarder)["VmHWM"]
        finally:
            os.kill(proxy.process.pid, signal.SIGCONT)
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
    assert code == 0, proxy.stderr
    assert [warm_up.content, *bodies] == [HUGE] * (REQUESTS + 1)
    assert peak - before < WATCH_BUFFER + RSS_SLACK, (before, peak)
    lines = proxy.lines
    assert len(lines) == REQUESTS + 1
    gapped = [line for line in lines if WATCH_GAP in kinds(line)]
    assert gapped, "the watcher cannot have followed 49 MB through a 1 MB buffer"
    for line in lines:
        assert line["forwarded_bytes"] == len(HUGE)
    for line in gapped:
        [gap] = [a for a in line["anomalies"] if a["kind"] == WATCH_GAP]
        dropped = int(gap["detail"].split(" missed ", 1)[1].split()[0])
        assert dropped + line["bytes"] == len(HUGE), "what was not watched is counted"
        assert line["status"] == "truncated"
    recordings = sorted(tmp_path.glob("*.sse"))
    assert [path.read_bytes() for path in recordings] == [HUGE] * (REQUESTS + 1)


@pytest.mark.parametrize("stderr", ["open", "closed"])
def test_a_killed_watcher_lets_the_stream_in_flight_end_then_the_forwarder_exits(
    stderr: str,
) -> None:
    """SIGKILL to the watcher 1 event into a paced stream: the client gets the
    whole stream, then the forwarder (in a process group of its own) says why it
    stops and stops. A closed terminal takes the proxy's stderr with the watcher:
    the forwarder's word cannot be written then, and the stream still ends."""
    held = HeldStream()
    with held.stub, proxy_process("--upstream", held.stub.base_url, "--headless") as proxy:
        [forwarder] = proxy.forwarders
        client = threading.Thread(target=held.pull, args=(proxy.url,))
        client.start()
        assert held.first_sent.wait(WAIT_S)
        if stderr == "closed":
            assert proxy.process.stderr is not None
            proxy.process.stderr.close()  # the forwarder's writes to it now fail (EPIPE)
        proxy.process.kill()
        proxy.process.wait(WAIT_S)
        assert wait_until_refused(proxy.url), "the forwarder went on taking connections"
        held.release.set()  # the rest of the stream, now that the forwarder is stopping
        client.join(WAIT_S)
        assert wait_for_exit(forwarder)
    assert held.error is None and b"".join(held.received) == WEATHER
    if stderr == "open":
        proxy.wait()
        assert WATCHER_GONE.format(drain=5) in proxy.stderr


# A login shell in miniature: a session with the terminal `argv[1]`, which runs the
# command after it as its foreground job (a process group of its own) and stays.
SHELL = """
import os, signal, sys
os.login_tty(os.open(sys.argv[1], os.O_RDWR))
signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # to hand the terminal to the job
job = os.fork()
if job == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpgrp())
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    os.execv(sys.argv[2], sys.argv[2:])
os.waitpid(job, 0)
signal.pause()
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the processes in /proc")
def test_in_a_terminal_set_to_tostop_a_killed_watcher_still_lets_the_stream_end() -> None:
    """`stty tostop` stops a background process group that writes to the terminal,
    and fails the write once that group has lost its parent: the forwarder, in a
    group of its own, still ends the stream in flight and says why it stops."""
    primary, secondary = pty.openpty()
    modes = termios.tcgetattr(secondary)
    modes[3] |= termios.TOSTOP
    termios.tcsetattr(secondary, termios.TCSANOW, modes)
    shown = TerminalOutput(primary)
    held = HeldStream()
    with held.stub:
        command = [console_script("toolstream-tui"), "proxy", "--listen", "127.0.0.1:0"]
        command += ["--upstream", held.stub.base_url, "--headless"]
        shell = subprocess.Popen([sys.executable, "-c", SHELL, os.ttyname(secondary), *command])
        try:
            url = shown.wait_for(LISTENING).group(1)
            [watcher] = children_of(shell.pid)
            [forwarder] = children_of(watcher)
            client = threading.Thread(target=held.pull, args=(url,))
            client.start()
            assert held.first_sent.wait(WAIT_S)
            os.kill(watcher, signal.SIGKILL)
            held.release.set()
            client.join(WAIT_S)
            assert wait_for_exit(forwarder)
        finally:
            shell.kill()
            shell.wait(WAIT_S)
            os.close(secondary)
    assert held.error is None and b"".join(held.received) == WEATHER
    assert shown.wait_for(re.compile(re.escape(WATCHER_GONE.format(drain=5))))


class TerminalOutput:
    """What a terminal's programs write to it, read as it comes."""

    def __init__(self, primary: int) -> None:
        self.text = ""
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(primary,), daemon=True).start()

    def _read(self, primary: int) -> None:
        with contextlib.suppress(OSError):
            while data := os.read(primary, 4096):
                with self._changed:
                    self.text += data.decode(errors="replace").replace("\r\n", "\n")
                    self._changed.notify_all()
        os.close(primary)

    def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """Where `pattern` is found in the output, once it is there."""
        with self._changed:
            found = self._changed.wait_for(lambda: pattern.search(self.text), WAIT_S)
            assert found is not None, self.text
            return found


def wait_until_refused(url: str) -> bool:
    """Until the proxy's port refuses connections (its listening socket is closed)."""
    host, port = httpx.URL(url).host, httpx.URL(url).port

    async def poll() -> None:
        while True:
            try:
                _, writer = await asyncio.open_connection(host, port)
            except ConnectionRefusedError:
                return
            writer.close()
            await asyncio.sleep(0.05)

    try:
        asyncio.run(asyncio.wait_for(poll(), WAIT_S))
    except TimeoutError:
        return False
    return True


def wait_for_exit(pid: int) -> bool:
    """Until `pid` (not our child) is gone or a zombie."""

    async def poll() -> None:
        while (path := Path(f"/proc/{pid}/stat")).exists():
            if path.read_text().rpartition(")")[2].split()[0] == "Z":
                return
            await asyncio.sleep(0.05)

    try:
        asyncio.run(asyncio.wait_for(poll(), WAIT_S))
    except TimeoutError:
        return False
    return True


def test_the_documented_buffer_and_drain_are_the_defaults() -> None:
    page = docs_page("proxy-under-load.md")
    assert (
        f"| `--watch-buffer BYTES` | {WATCH_BUFFER_BYTES} ({WATCH_BUFFER_BYTES >> 20} MiB) |"
        in page
    )
    assert f"| `--drain SECONDS` | {SHUTDOWN_GRACE_S:g} |" in page


# Run in a thread of its own, as the forwarder's loop is: 16 MiB freed (which
# raises glibc's own threshold), then 64 blocks of 1 MiB made and freed.
LARGE_BLOCKS_PROBE = """
import sys, threading
from toolstream_tui.proxy.pipe import give_large_blocks_back_at_once

def rss_mb():
    status = open("/proc/self/status").read()
    return int(status.split("VmRSS:")[1].split()[0]) // 1024

def work():
    big = bytearray(16 << 20)
    del big
    before = rss_mb()
    blocks = [bytearray(b"y" * (1 << 20)) for _ in range(64)]
    during = rss_mb()
    del blocks
    print(before, during, rss_mb())

give_large_blocks_back_at_once()
threading.Thread(target=work).start()
"""


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or not Path("/proc/self/status").exists(),
    reason="glibc's allocator, read in /proc",
)
def test_the_forwarder_gives_large_freed_blocks_back_to_the_system() -> None:
    """A backlog held for a lagging watcher and freed once it caught up must leave
    the forwarder's RSS where it was (without the fixed threshold: ~30 MB kept)."""
    result = subprocess.run(
        [sys.executable, "-c", LARGE_BLOCKS_PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=WAIT_S,
    )
    before, during, after = map(int, result.stdout.split())
    assert during - before >= 48, "the blocks were made"
    assert after - before <= 8, (before, during, after)
