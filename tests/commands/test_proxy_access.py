"""Who may use the proxy: loopback only unless --allow-remote says otherwise (and
then a warning names who can reach it); with --token, a request without it gets
a 407 and never reaches upstream. The token stays out of every output and out of
the forwarder's command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from tests.helpers.proxy import WAIT_S, RunningProxy
from toolstream_stubs import StubServer
from toolstream_tui.commands.proxy import build_parser, config_of, main_proxy, remote_warning
from toolstream_tui.proxy.config import TOKEN_ENV

TOKEN = "proxy-token-5d4c3b2a1f"


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.0.2.7:8787"])
def test_an_address_other_machines_reach_needs_allow_remote(
    listen: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main_proxy(["--upstream", "http://127.0.0.1:9", "--headless", "--listen", listen])
    assert code == 2
    err = capsys.readouterr().err
    assert "is not a loopback address" in err and "add --allow-remote" in err


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "[::1]:0", "localhost:0"])
def test_loopback_needs_nothing(listen: str) -> None:
    config_of(build_parser().parse_args(["--upstream", "http://h", "--listen", listen]))


def test_the_warning_names_who_can_reach_it_and_what_guards_it() -> None:
    def warning(*extra: str) -> str:
        args = ["--upstream", "https://api.example/v1", "--allow-remote", *extra]
        return remote_warning(config_of(build_parser().parse_args(args)))

    assert "every machine on every network this one is on" in warning("--listen", "0.0.0.0:1")
    assert "every machine that can reach 192.0.2.7" in warning("--listen", "192.0.2.7:1")
    assert "nothing stops them: add --token" in warning("--listen", "0.0.0.0:1")
    guarded = warning("--listen", "0.0.0.0:1", "--token", TOKEN)
    assert "only requests with the --token get through" in guarded
    assert TOKEN not in guarded


def test_the_token_comes_from_the_environment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert config_of(build_parser().parse_args(["--upstream", "http://h"])).token == TOKEN


def forwarder_command_lines() -> list[bytes]:
    lines = []
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                lines.append(cmdline.read())
    return lines


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_without_the_token_a_request_gets_407_and_never_reaches_upstream(
    stub: StubServer,
) -> None:
    before = len(stub.requests)
    url = "/v1/chat/completions"
    with (
        RunningProxy(stub.base_url, token=TOKEN) as proxy,
        httpx.Client(timeout=WAIT_S, trust_env=False) as http,
    ):
        command_lines = forwarder_command_lines()
        missing = http.post(proxy.url + url)
        wrong = http.post(proxy.url + url, headers={"proxy-authorization": "Bearer nope"})
        asked_after_refusals = len(stub.requests)
        right = http.post(proxy.url + url, headers={"proxy-authorization": f"Bearer {TOKEN}"})
        # An auth scheme is case-insensitive (RFC 9110): bearer is Bearer.
        lower = http.post(proxy.url + url, headers={"proxy-authorization": f"bearer {TOKEN}"})
        records = proxy.finished(4)
    assert [missing.status_code, wrong.status_code, right.status_code] == [407, 407, 200]
    assert lower.status_code == 200
    assert missing.headers["proxy-authenticate"].startswith("Bearer")
    assert json.loads(missing.content)["error"]["code"] == "proxy_token_required"
    assert asked_after_refusals == before
    assert len(stub.requests) == before + 2
    assert "proxy-authorization" not in {k.lower() for k in stub.requests[-1].headers}
    assert [r.state for r in records[:2]] == ["error", "error"]
    assert all(any("407" in note for note in r.notes) for r in records[:2])
    shown = json.dumps([r.summary() for r in records])
    assert TOKEN not in shown and "nope" not in shown
    assert command_lines and not any(TOKEN.encode() in line for line in command_lines)
    assert os.environ.get(TOKEN_ENV) is None
