"""Every stub scenario of the dialects read beyond OpenAI and Anthropic (Gemini,
Vertex, Bedrock, Cohere, Ollama, the AI SDK's UI stream) works wherever a stream
can come from: live over HTTP, recorded and replayed (with its timing file, and
as a bare capture whose framing is told by its first bytes), through the proxy
byte for byte, and in `diff`. Each is compared with the core's report on the
scenario's own bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.cli import CliRunner
from tests.helpers.oracles import scenario_report
from tests.helpers.proxy import RunningProxy
from tests.helpers.streaming import untimed
from toolstream_stubs import StubServer, load_scenario
from toolstream_stubs.scenarios import scenario_names
from toolstream_tui.core.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from toolstream_tui.sources.recording import timing_path

PREFIXES = ("gemini-", "vertex-", "bedrock-", "cohere-", "ollama-", "aisdk-")
NAMES = [name for name in scenario_names() if name.startswith(PREFIXES)]
TIMEOUT_S = 30.0
# What a stream says, whatever carried it (the source, its timing and byte counts aside).
SAID = ("dialect", "status", "finish_reason", "text", "reasoning", "refusal", "tool_calls")


def said(report: dict[str, Any]) -> dict[str, Any]:
    return {key: untimed(report)[key] for key in SAID}


def headless(cli: CliRunner, *args: str) -> dict[str, Any]:
    result = cli("--headless", *args)
    assert result.returncode in (EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE), result.stderr
    return json.loads(result.stdout)


def test_every_new_dialect_has_scenarios() -> None:
    """The families this file covers are there (a renamed family would skip silently)."""
    assert {prefix for prefix in PREFIXES if any(n.startswith(prefix) for n in NAMES)} >= {
        "gemini-",
        "bedrock-",
        "cohere-",
        "ollama-",
        "aisdk-",
    }


@pytest.mark.parametrize("name", NAMES)
def test_live_recorded_and_replayed_read_as_the_scenario(
    cli: CliRunner, cli_in_process: CliRunner, stub: StubServer, tmp_path: Path, name: str
) -> None:
    """Live through the console script; the replays by the same `main` in process."""
    expected = said(scenario_report(name))
    recording = tmp_path / f"{name}.capture"
    live = headless(cli, "--url", stub.scenario_url(name), "--record", str(recording))
    assert said(live) == expected
    assert said(headless(cli_in_process, "--replay", str(recording))) == expected
    timing_path(recording).unlink()  # a bare capture: its framing told by its first bytes
    bare = headless(cli_in_process, "--replay", str(recording))
    assert said(bare) == expected
    assert recording.read_bytes() == load_scenario(name).rendered


@pytest.mark.parametrize("name", NAMES)
def test_the_proxy_forwards_every_byte_and_watches_the_stream(
    stub: StubServer, proxy: RunningProxy, name: str
) -> None:
    scenario = load_scenario(name)
    path = stub.scenario_url(name).removeprefix(stub.base_url)
    response = httpx.post(proxy.url + path, content=b"{}", timeout=TIMEOUT_S)
    [record] = proxy.finished(1)
    assert response.content == scenario.rendered
    assert response.headers["content-type"] == scenario.content_type
    assert said(record.summary()) == said(scenario_report(name))


@pytest.mark.parametrize("prefix", ["gemini-", "bedrock-", "cohere-", "ollama-", "aisdk-"])
def test_diff_reads_two_recordings_of_one_dialect(
    cli_in_process: CliRunner, tmp_path: Path, prefix: str
) -> None:
    """One scenario recorded twice, cut into different writes, is identical; against
    another scenario of the same dialect it differs."""
    first, other = [name for name in NAMES if name.startswith(prefix)][:2]
    recordings = []
    for seed, name in ((1, first), (2, first), (1, other)):
        path = tmp_path / f"{name}-{seed}.capture"
        with StubServer(name, split="random", seed=seed, speed=0) as server:
            cli_in_process("--headless", "--url", server.url, "--record", str(path))
        recordings.append(str(path))
    same = cli_in_process("diff", recordings[0], recordings[1], "--headless")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["identical"] is True
    different = cli_in_process("diff", recordings[0], recordings[2], "--headless")
    assert different.returncode == 1, different.stderr
