"""`toolstream-tui proxy` as a user runs it: a subprocess on a free loopback port,
a JSON line per finished request, exit codes at shutdown, recordings the rest of
the tool reads."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.cli import CliRunner, console_script
from tests.helpers.proxy import WAIT_S
from tests.helpers.streaming import untimed
from tests.helpers.waiting import until_true
from toolstream_stubs import StubServer
from toolstream_tui.commands.proxy import WATCHER_NICENESS, build_parser, config_of
from toolstream_tui.proxy.server import bind

LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class ProxyProcess:
    """The pipes are unbuffered: a line read here is all that was taken from its
    pipe (a buffered reader takes more, which `communicate` then never sees)."""

    process: subprocess.Popen[bytes]
    url: str
    stderr_head: list[str] = field(default_factory=list)
    forwarders: list[int] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    def send(self, path: str, **options: Any) -> httpx.Response:
        with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
            return http.request(options.pop("method", "POST"), self.url + path, **options)

    def stdout_line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().decode()

    def wait(self) -> int:
        stdout, rest = self.process.communicate(timeout=WAIT_S)
        self.stdout = stdout.decode()
        self.stderr = "".join(self.stderr_head) + rest.decode()
        return self.process.returncode

    @property
    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]


def children_of(pid: int) -> list[int]:
    """The processes `pid` started (Linux: /proc; elsewhere none are known)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def is_forwarder(pid: int) -> bool:
    """A running forwarder (not a zombie, not a process that took its pid since)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    return state != "Z" and b"toolstream_tui.proxy.forwarder" in command


@contextmanager
def proxy_process(*args: str, job: bool = False) -> Iterator[ProxyProcess]:
    """The proxy listening on a free port; `job`: in a process group of its own, as a
    shell starts a command (a Ctrl-C goes to the whole group)."""
    command = [console_script("toolstream-tui"), "proxy", "--listen", "127.0.0.1:0", *args]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        process_group=0 if job else None,
    )
    assert process.stderr is not None
    head: list[str] = []
    forwarders: list[int] = []
    try:
        while not (found := LISTENING.search(head[-1] if head else "")):
            line = process.stderr.readline().decode()
            assert line, f"the proxy ended before listening: {''.join(head)}"
            head.append(line)
        forwarders = children_of(process.pid)
        yield ProxyProcess(process, found.group(1), head, forwarders)
    finally:
        # The forwarder runs in a process group of its own: a failed test kills it
        # too, or it would hold the pipes (and the port) after the test.
        for pid in filter(is_forwarder, forwarders):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_exit_after_with_fail_on_exits_3_and_prints_a_line_per_request(stub: StubServer) -> None:
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--exit-after", "2", "--fail-on", "name-repeated"
    ) as proxy:
        proxy.send("/scenarios/name-repeated/v1/chat/completions", content=b'{"model": "a"}')
        proxy.send("/scenarios/weather/v1/chat/completions", content=b'{"model": "b"}')
        code = proxy.wait()
    assert code == 3, proxy.stderr
    assert [(line["model"], line["method"], line["status"]) for line in proxy.lines] == [
        ("a", "POST", "finished"),
        ("b", "POST", "finished"),
    ]
    assert proxy.lines[0]["path"] == "/scenarios/name-repeated/v1/chat/completions"
    assert proxy.lines[0]["http_status"] == 200 and proxy.lines[0]["duration"] >= 0
    assert "request 1: --fail-on: name-repeated" in proxy.stderr
    assert "stopped after 2 requests, 1 with an anomaly named by --fail-on" in proxy.stderr
    assert "Traceback" not in proxy.stderr


def test_a_listing_through_the_proxy_lints_nothing(stub: StubServer) -> None:
    """GET /scenarios is a JSON array (read as a stream of 88 odd events): it is no
    model's call, and --fail-on any counted it, exiting 3 for a sound agent."""
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--exit-after", "2", "--fail-on", "any"
    ) as proxy:
        proxy.send("/scenarios", method="GET")
        proxy.send("/scenarios/weather/v1/chat/completions", content=b'{"model": "b"}')
        code = proxy.wait()
    assert code == 0, proxy.stderr
    assert ": --fail-on:" not in proxy.stderr


def test_fail_on_without_such_anomalies_exits_0(stub: StubServer) -> None:
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--exit-after", "1", "--fail-on", "any"
    ) as proxy:
        proxy.send("/scenarios/weather/v1/chat/completions")
        assert proxy.wait() == 0, proxy.stderr
    assert len(proxy.lines) == 1


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_proxy_cleanly(stub: StubServer, sent: signal.Signals) -> None:
    with proxy_process("--upstream", stub.base_url, "--headless") as proxy:
        proxy.send("/v1/chat/completions")
        # The line is printed once the request is over; wait for it before the signal.
        first = proxy.stdout_line()
        proxy.process.send_signal(sent)
        code = proxy.wait()
    assert code == 0, proxy.stderr
    assert json.loads(first)["status"] == "finished"
    assert "stopped after 1 request" in proxy.stderr
    assert "Traceback" not in proxy.stderr and "Fatal Python error" not in proxy.stderr


def test_a_signal_after_a_request_named_by_fail_on_exits_3(stub: StubServer) -> None:
    """The CI recipe: the agent's tests done, the proxy is sent SIGTERM."""
    with proxy_process("--upstream", stub.base_url, "--headless", "--fail-on", "any") as proxy:
        proxy.send("/scenarios/name-repeated/v1/chat/completions")
        first = proxy.stdout_line()
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
    assert code == 3, proxy.stderr
    assert "name-repeated" in [anomaly["kind"] for anomaly in json.loads(first)["anomalies"]]
    assert "stopped after 1 request, 1 with an anomaly named by --fail-on" in proxy.stderr


def test_it_listens_on_loopback_port_8787_unless_told_otherwise() -> None:
    config = config_of(build_parser().parse_args(["--upstream", "http://127.0.0.1:9"]))
    assert (config.host, config.port) == ("127.0.0.1", 8787)


def test_a_non_loopback_address_is_allowed_explicitly_and_warned_about(stub: StubServer) -> None:
    with proxy_process(
        "--upstream", stub.base_url, "--headless", "--listen", "0.0.0.0:0", "--allow-remote"
    ) as proxy:
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.wait() == 0, proxy.stderr
    warning = (
        "warning: 0.0.0.0 is not a loopback address: every machine on every network this one "
        "is on can send requests through this proxy"
    )
    assert warning in proxy.stderr and "nothing stops them: add --token" in proxy.stderr


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the forwarder in /proc")
def test_the_forwarder_ends_when_the_proxy_is_killed(stub: StubServer) -> None:
    """A proxy killed outright (no signal handler runs) leaves no forwarder behind
    holding the port and its pipes: the forwarder sees its stdin close and stops."""
    with proxy_process("--upstream", stub.base_url, "--headless") as proxy:
        assert proxy.send("/v1/chat/completions").status_code == 200
        assert [pid for pid in proxy.forwarders if is_forwarder(pid)] == proxy.forwarders != []
        proxy.process.kill()
        # The forwarder holds the proxy's stdout and stderr: they close when it ends.
        proxy.wait()
        assert not any(is_forwarder(pid) for pid in proxy.forwarders)


WAVE = 32  # requests at once
KEPT = 4  # --keep: the finished requests the watcher holds stay few


def held_by(pid: int) -> tuple[int, int]:
    """A process's open descriptors and threads (Linux: /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(status.split("Threads:", 1)[1].split()[0])
    return len(os.listdir(f"/proc/{pid}/fd")), threads


def send_wave(proxy: ProxyProcess, count: int) -> None:
    """`count` requests at once, each read whole; then their lines on stdout (the
    watcher has finished them)."""

    async def send_all() -> None:
        async with httpx.AsyncClient(timeout=WAIT_S, trust_env=False) as http:
            sent = [http.post(proxy.url + "/v1/chat/completions") for _ in range(count)]
            for response in await asyncio.gather(*sent):
                assert response.status_code == 200

    asyncio.run(send_all())
    for _ in range(count):
        assert json.loads(proxy.stdout_line())["status"] == "finished"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts descriptors in /proc")
def test_finished_requests_leave_no_descriptor_or_thread_behind(stub: StubServer) -> None:
    """Hours of hundreds of streams: after a first wave (code loaded, pools made,
    --keep filled), three more waves leave both processes holding what they held."""
    with proxy_process("--upstream", stub.base_url, "--headless", "--keep", str(KEPT)) as proxy:
        [forwarder] = proxy.forwarders
        send_wave(proxy, WAVE)
        before = held_by(proxy.process.pid), held_by(forwarder)
        for _ in range(3):
            send_wave(proxy, WAVE)
        until_true(
            lambda: (held_by(proxy.process.pid), held_by(forwarder)) == before,
            f"the descriptors and threads held after the first wave, {before}",
        )
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.wait() == 0, proxy.stderr


def nice_of(pid: int) -> int:
    """The nice value of a process's main thread (Linux: /proc)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[16])


def autogroup_of(pid: int) -> str | None:
    """The scheduling group Linux's autogroup put a process in (None: no autogroup).
    Some kernels (and sandboxes) have the file but leave it empty."""
    path = Path(f"/proc/{pid}/autogroup")
    words = path.read_text().split() if path.exists() else []
    return words[0] if words else None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads priorities in /proc")
def test_the_watching_process_steps_behind_the_forwarder(stub: StubServer) -> None:
    """When the cores are busy the forwarder (the agent's streams) goes first and the
    watching process (the core, the screen) second: its nice value is higher, and
    the two share a session, so that Linux's autogroup (a scheduling group per
    session, between which nice does nothing) weighs them against each other. The
    forwarder has a process group of its own: a Ctrl-C reaches only the watcher."""
    with proxy_process("--upstream", stub.base_url, "--headless") as proxy:
        proxy.send("/v1/chat/completions")  # the signal handlers are in place by then
        pid = proxy.process.pid
        [forwarder] = proxy.forwarders
        watching, forwarding = nice_of(pid), nice_of(forwarder)
        sessions = os.getsid(pid), os.getsid(forwarder)
        groups = os.getpgid(pid), os.getpgid(forwarder)
        autogroups = autogroup_of(pid), autogroup_of(forwarder)
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.wait() == 0, proxy.stderr
    assert watching == min(19, forwarding + WATCHER_NICENESS)
    assert sessions[0] == sessions[1] and groups[0] != groups[1] == forwarder
    assert autogroups[0] == autogroups[1]


def test_without_a_terminal_the_request_list_says_to_add_headless(stub: StubServer) -> None:
    """Piped or under a job runner, the request list cannot draw: one line, exit 2,
    before anything listens."""
    result = subprocess.run(
        [console_script("toolstream-tui"), "proxy", "--upstream", stub.base_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "add --headless" in result.stderr and "listening" not in result.stderr


def test_secrets_reach_neither_stdout_stderr_nor_recordings(
    stub: StubServer, tmp_path: Path
) -> None:
    secrets = ["sk-cli-bearer-8b7a6c5d", "sk-cli-xapi-2c3d4e5f", "cli-query-key-6e7f8a9b"]
    headers = {"Authorization": f"Bearer {secrets[0]}", "x-api-key": secrets[1]}
    with proxy_process(
        "--upstream",
        stub.base_url,
        "--headless",
        "--exit-after",
        "2",
        "--record-dir",
        str(tmp_path),
    ) as proxy:
        echoed = proxy.send(
            f"/scenarios/http-401-echo/v1/chat/completions?key={secrets[2]}", headers=headers
        )
        proxy.send(
            "/v1/chat/completions", headers=headers, content=b'{"note": "sk-cli-xapi-2c3d4e5f"}'
        )
        assert proxy.wait() == 0, proxy.stderr
    assert secrets[0] in echoed.text  # the client gets its own key back, untouched
    written = "".join(p.read_text(encoding="utf-8", errors="replace") for p in tmp_path.iterdir())
    assert len(list(tmp_path.iterdir())) == 4
    for secret in secrets:
        assert secret not in proxy.stdout + proxy.stderr + written


def test_recordings_replay_and_diff_like_any_other(
    stub: StubServer, tmp_path: Path, cli: CliRunner
) -> None:
    with proxy_process(
        "--upstream",
        stub.base_url,
        "--headless",
        "--exit-after",
        "2",
        "--record-dir",
        str(tmp_path),
    ) as proxy:
        for _ in range(2):
            proxy.send("/scenarios/demo/v1/chat/completions", content=b"{}")
        assert proxy.wait() == 0, proxy.stderr
    first, second = (Path(line["recording"]) for line in proxy.lines)
    replayed = cli("--headless", "--replay", str(first), "--speed", "0")
    assert replayed.returncode == 0, replayed.stderr
    report = json.loads(replayed.stdout)
    line = proxy.lines[0]
    assert {**untimed(report), "source": None} == {
        key: value for key, value in {**untimed(line), "source": None}.items() if key in report
    }
    compared = cli("diff", str(first), str(second), "--headless")
    assert compared.returncode == 0, compared.stdout + compared.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--upstream", "ftp://example.com"], "must be an http:// or https:// URL"),
        (["--upstream", "http://127.0.0.1:9", "--listen", "nowhere"], "is not HOST:PORT"),
        (["--upstream", "http://127.0.0.1:9", "--fail-on", "no-such-kind"], "unknown anomaly"),
        (["--upstream", "http://127.0.0.1:9", "--exit-after", "0"], "--exit-after"),
    ],
)
def test_usage_errors_are_one_line(cli: CliRunner, args: list[str], message: str) -> None:
    done = cli("proxy", *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("seconds", ["0", "-1", "nan"])
def test_a_timeout_that_would_refuse_every_request_is_a_usage_error(
    cli: CliRunner, seconds: str
) -> None:
    done = cli("proxy", "--upstream", "http://127.0.0.1:9", "--timeout", seconds)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.endswith(
        f"expected a number > 0, got {seconds!r} (see toolstream-tui proxy --help)"
    )


def test_a_port_in_use_is_one_line_and_exit_1(cli: CliRunner) -> None:
    taken = bind("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        listen = f"127.0.0.1:{port}"
        done = cli("proxy", "--headless", "--upstream", "http://127.0.0.1:9", "--listen", listen)
    finally:
        taken.close()
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
