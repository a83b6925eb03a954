"""`--fail-on KINDS`: the headless run as a stream linter for CI."""

from __future__ import annotations

import re

import pytest

from tests.helpers.cli import CliRunner
from tests.helpers.docs_pages import docs_page, section
from tests.helpers.paths import DATA
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS, COMMON
from toolstream_tui.core.dialects.detect import DIALECTS
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

CAPTURES = DATA / "captures"


def test_a_named_anomaly_fails_the_run_with_exit_3(cli: CliRunner) -> None:
    result = cli(
        "--headless", "--scenario", "name-repeated", "--speed", "0", "--fail-on", "name-repeated"
    )
    assert result.returncode == 3
    assert "--fail-on: name-repeated on call 0" in result.stderr


def test_kinds_that_did_not_occur_pass(cli: CliRunner) -> None:
    result = cli(
        "--headless",
        "--scenario",
        "name-repeated",
        "--speed",
        "0",
        "--fail-on",
        "id-late,index-gap",
    )
    assert result.returncode == 0
    assert "--fail-on" not in result.stderr


@pytest.mark.parametrize(("scenario", "code"), [("weather", 0), ("finish-stop-with-tools", 3)])
def test_any_fails_on_every_kind(cli: CliRunner, scenario: str, code: int) -> None:
    result = cli("--headless", "--scenario", scenario, "--speed", "0", "--fail-on", "any")
    assert result.returncode == code


def test_a_worse_verdict_keeps_its_own_exit_code(cli: CliRunner) -> None:
    result = cli("--headless", "--scenario", "truncated", "--speed", "0", "--fail-on", "any")
    assert result.returncode == EXIT_INCOMPLETE, "truncated keeps its code"
    assert "--fail-on: unterminated-event" in result.stderr


def test_repeated_options_add_up(cli: CliRunner) -> None:
    result = cli(
        "--headless", "--scenario", "schema-mismatch", "--speed", "0",
        "--fail-on", "index-gap", "--fail-on", "unknown-tool",
    )  # fmt: skip
    assert result.returncode == EXIT_INCOMPLETE, "schema errors count like parse errors"
    assert "--fail-on: unknown-tool on call 2" in result.stderr


def test_an_unknown_kind_is_a_usage_error(cli: CliRunner) -> None:
    result = cli("--headless", "--scenario", "weather", "--fail-on", "name-repaeted")
    assert result.returncode == 2
    assert "unknown anomaly kind 'name-repaeted'; see --list-anomalies" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("kinds", ["", ",", " , "])
def test_an_empty_list_is_a_usage_error_not_a_linter_switched_off(
    cli_in_process: CliRunner, kinds: str
) -> None:
    """`--fail-on "$KINDS"` in CI with KINDS unset: linting nothing would pass."""
    result = cli_in_process(
        "--headless", "--scenario", "weather", "--speed", "0", "--fail-on", kinds
    )
    assert result.returncode == 2
    assert f"--fail-on {kinds!r}: the list of anomaly kinds is empty" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_an_empty_option_among_others_is_a_usage_error(cli_in_process: CliRunner) -> None:
    result = cli_in_process(
        "--headless", "--scenario", "weather", "--fail-on", "index-gap", "--fail-on", ""
    )
    assert result.returncode == 2
    assert "--fail-on '': the list of anomaly kinds is empty" in result.stderr


@pytest.mark.parametrize("kinds", ["index-gap,,id-late", "index-gap,", ",index-gap"])
def test_an_empty_item_is_a_usage_error(cli_in_process: CliRunner, kinds: str) -> None:
    """`--fail-on "index-gap,$MORE"` with MORE unset: the list lost a kind unseen."""
    result = cli_in_process("--headless", "--scenario", "weather", "--fail-on", kinds)
    assert result.returncode == 2
    assert f"--fail-on {kinds!r}: an empty anomaly kind" in result.stderr


@pytest.mark.parametrize("kinds", ["any,bogus", "bogus,any", "index-gap,bogus"])
def test_every_item_is_checked_any_beside_it_or_not(cli_in_process: CliRunner, kinds: str) -> None:
    result = cli_in_process("--headless", "--scenario", "weather", "--fail-on", kinds)
    assert result.returncode == 2
    assert "unknown anomaly kind 'bogus'; see --list-anomalies" in result.stderr


def test_every_unknown_kind_is_named(cli_in_process: CliRunner) -> None:
    result = cli_in_process("--headless", "--scenario", "weather", "--fail-on", "any,zz,aa")
    assert result.returncode == 2
    assert "unknown anomaly kinds 'aa', 'zz'; see --list-anomalies" in result.stderr


def test_spaces_around_commas_and_repeated_kinds_are_taken(cli: CliRunner) -> None:
    result = cli(
        "--headless", "--scenario", "name-repeated", "--speed", "0",
        "--fail-on", " index-gap , name-repeated,name-repeated ",
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr.count("--fail-on: name-repeated on call 0") == 1


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        ("", "--fail-on '': the list of anomaly kinds is empty"),
        ("name-repeated,", "--fail-on 'name-repeated,': an empty anomaly kind"),
        ("any,bogus", "unknown anomaly kind 'bogus'"),
    ],
)
def test_the_proxy_checks_its_list_the_same_way(
    cli_in_process: CliRunner, kinds: str, message: str
) -> None:
    """Without --headless and without a terminal, a list that passed would end in
    the terminal's usage error: the run stops at once either way."""
    result = cli_in_process("proxy", "--upstream", "http://127.0.0.1:9", "--fail-on", kinds)
    assert result.returncode == 2
    assert message in result.stderr and "terminal" not in result.stderr


def test_a_capture_list_checks_it_before_reading_an_entry(cli_in_process: CliRunner) -> None:
    result = cli_in_process(
        "--headless", "--replay", str(CAPTURES / "playwright.har"), "--fail-on", ","
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "--fail-on ',': the list of anomaly kinds is empty" in result.stderr


def test_without_headless_it_is_a_usage_error(cli: CliRunner) -> None:
    result = cli("--scenario", "weather", "--fail-on", "any")
    assert result.returncode == 2
    assert "--fail-on works with --headless" in result.stderr


def test_an_empty_list_without_headless_is_the_same_usage_error(cli_in_process: CliRunner) -> None:
    result = cli_in_process("--scenario", "weather", "--fail-on", "")
    assert result.returncode == 2
    assert "--fail-on works with --headless" in result.stderr


def test_list_anomalies_prints_every_kind_and_the_dialects_that_name_it(cli: CliRunner) -> None:
    lines = cli("--list-anomalies").stdout.splitlines()
    named_by = dict(line.split(maxsplit=1) for line in lines)
    assert [line.split()[0] for line in lines] == sorted(ANOMALY_KINDS)
    assert named_by["chunk-undecodable"] == "bedrock"  # a Bedrock invoke chunk's base64
    assert named_by["block-index-reused"] == "anthropic, bedrock"
    assert named_by["connection-lost"] == "every dialect"


@pytest.mark.parametrize("dialect", ["ollama", "bedrock"])
def test_list_anomalies_for_one_dialect_lists_what_its_streams_can_show(
    cli: CliRunner, dialect: str
) -> None:
    lines = cli("--list-anomalies", "--dialect", dialect).stdout.splitlines()
    kinds = [line.split()[0] for line in lines]
    assert kinds == sorted(COMMON | DIALECTS[dialect].anomaly_kinds)
    assert ("chunk-undecodable" in kinds) == (dialect == "bedrock")
    assert "connection-lost" in kinds


def test_the_docs_explain_every_kind_and_no_other() -> None:
    table = section(docs_page("reference/anomalies.md"), "## What each kind means")
    documented = set(re.findall(r"^\|.*?\|", table, flags=re.M))
    kinds = {kind for row in documented for kind in re.findall(r"`([a-z0-9-]+)`", row)}
    assert kinds == ANOMALY_KINDS
