"""Dialects on the command line: detection, the override, and recordings that
replay to the same report for each of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.cli import CliRunner
from tests.helpers.docs_pages import docs_page
from tests.helpers.streaming import assert_close_timing, untimed
from toolstream_stubs import StubServer
from toolstream_stubs.scenarios import ENDPOINT, scenario_names
from toolstream_tui.core.dialects.detect import DIALECTS


@pytest.mark.parametrize(
    "scenario", ["demo", "anthropic-thinking", "responses-interleaved", "anthropic-truncated"]
)
def test_recording_replays_to_the_same_report(
    cli: CliRunner, tmp_path: Path, scenario: str
) -> None:
    recording = tmp_path / f"{scenario}.sse"
    with StubServer(scenario, split="random", seed=3, speed=0) as server:
        url = server.url
        live = cli("--headless", "--url", url, "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording), "--speed", "0")
    live_report, replay_report = json.loads(live.stdout), json.loads(replayed.stdout)
    assert replayed.returncode == live.returncode
    del live_report["source"], replay_report["source"]
    assert untimed(replay_report) == untimed(live_report)
    assert_close_timing(replay_report["timing"], live_report["timing"])
    timing = recording.with_name(recording.name + ".timing.jsonl").read_text().splitlines()
    request = json.loads(timing[1])["request"]
    assert request["url"] == url
    assert request["method"] == "GET"


def test_dialect_override_reads_the_stream_as_told(cli: CliRunner) -> None:
    """An Anthropic stream read as chat completions: nothing is lost, and the
    mismatch shows as anomalies rather than as a crash."""
    with StubServer("anthropic-parallel", speed=0) as server:
        detected = json.loads(cli("--headless", "--url", server.url).stdout)
        forced = cli("--headless", "--url", server.url, "--dialect", "openai-chat")
    report = json.loads(forced.stdout)
    assert detected["dialect"] == "anthropic"
    assert report["dialect"] == "openai-chat"
    assert report["tool_calls"] == []
    assert report["status"] == "truncated"
    assert "unexpected-shape" in {anomaly["kind"] for anomaly in report["anomalies"]}
    assert report["events"] == detected["events"]


def test_unknown_dialect_is_a_usage_error(cli: CliRunner) -> None:
    result = cli("--headless", "--dialect", "palm")
    assert result.returncode == 2
    assert "invalid choice: 'palm'" in result.stderr


def documented_dialect_rows() -> dict[str, list[str]]:
    """The docs' dialect table: each `--dialect` name and the paths its rows give."""
    table = docs_page("dialects.md").split("# Dialects\n", 1)[1].strip().split("\n\n", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in table.splitlines()[2:]:
        name_cell, path_cell = line.split(" | ")[:2]
        name = re.findall(r"`([a-z-]+)`", name_cell)[0]
        rows.setdefault(name, []).extend(re.findall(r"`(/[^`?]*)", path_cell))
    return rows


def test_the_docs_table_has_a_row_for_every_dialect_and_no_other() -> None:
    assert set(documented_dialect_rows()) == set(DIALECTS)


def test_every_provider_path_in_the_docs_table_is_one_the_stub_serves() -> None:
    paths = [path for paths in documented_dialect_rows().values() for path in paths]
    concrete = [re.sub(r"[A-Z]+(?=[/:]|$)", "stub", path) for path in paths]
    assert len(concrete) >= len(DIALECTS)
    assert [path for path in concrete if not ENDPOINT.fullmatch(path)] == []


def test_the_stub_page_names_every_stub_scenario_in_its_own_words() -> None:
    prose = docs_page("stub.md").split("<!-- generated:", 1)[0]  # not the generated table
    named = set(re.findall(r"`([a-z0-9-]+)`", prose))
    assert set(scenario_names()) - named == set()
