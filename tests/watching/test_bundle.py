"""Repro bundles: the recording, the report, a picture of the screen and a README,
written by key `b` in the app and by `--bundle DIR`, headless or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.apps import make_app, wait_settled
from tests.helpers.cli import CliRunner
from tests.helpers.streaming import assert_close_timing, untimed
from toolstream_stubs import StubServer
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE, EXIT_OUTPUT_FAILED

SIZE = (120, 36)
BUNDLE_FILES = {"stream.sse", "stream.sse.timing.jsonl", "report.json", "screen.svg", "README.md"}


def bundle_files(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir()}


def test_headless_bundle_replays_to_its_own_report(cli: CliRunner, tmp_path: Path) -> None:
    bundle = str(tmp_path / "repro")
    watched = cli(
        "--headless", "--scenario", "schema-mismatch", "--speed", "0", "--bundle", str(bundle)
    )
    assert watched.returncode == EXIT_INCOMPLETE
    assert f"repro bundle written to {bundle}" in watched.stderr
    assert bundle_files(Path(bundle)) == BUNDLE_FILES
    report = json.loads((Path(bundle) / "report.json").read_text(encoding="utf-8"))
    assert untimed(report) == untimed(json.loads(watched.stdout))
    replayed = cli("--headless", "--replay", f"{bundle}/stream.sse", "--speed", "0")
    again = json.loads(replayed.stdout)
    assert replayed.returncode == watched.returncode
    del again["source"], report["source"]
    assert untimed(again) == untimed(report)
    assert_close_timing(again["timing"], report["timing"])
    assert again["declared_tools"] == ["get_weather", "get_time"], "the request travels too"
    readme = (Path(bundle) / "README.md").read_text(encoding="utf-8")
    assert "status: **finished**" in readme and "`unknown-tool` x1" in readme
    assert "toolstream-tui --replay stream.sse" in readme
    screen = (Path(bundle) / "screen.svg").read_text(encoding="utf-8")
    assert "get_weather" in screen and "schema" in screen


@pytest.mark.parametrize(
    ("scenario", "limit"), [("demo", "--max-bytes=3000"), ("huge-args", "--max-bytes=50000")]
)
def test_a_bundle_of_a_stream_stopped_at_a_limit_replays_to_its_report(
    cli: CliRunner, tmp_path: Path, scenario: str, limit: str
) -> None:
    """The read that crossed the limit was kept whole and the stop was not, so the
    replay read on: a different stream, even a finished one. The recording now
    ends where the watch stopped reading, with that stop."""
    bundle = tmp_path / "repro"
    watched = cli(
        "--headless", "--scenario", scenario, "--speed", "0", limit, "--bundle", str(bundle)
    )
    assert watched.returncode == EXIT_INCOMPLETE
    report = json.loads((bundle / "report.json").read_text(encoding="utf-8"))
    assert "limit-reached" in [anomaly["kind"] for anomaly in report["anomalies"]]
    replayed = cli("--headless", "--replay", str(bundle / "stream.sse"), "--speed", "0")
    again = json.loads(replayed.stdout)
    assert replayed.returncode == EXIT_INCOMPLETE
    del again["source"], report["source"]
    assert untimed(again) == untimed(report)


def test_a_bundle_that_cannot_be_written_says_so_and_fails_the_run(
    cli: CliRunner, tmp_path: Path
) -> None:
    """A CI job that keeps the bundle as its artifact must not pass without it."""
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    target = str(blocked / "x")
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--bundle", target)
    assert result.returncode == EXIT_OUTPUT_FAILED
    assert f"cannot write bundle to {target}" in result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["status"] == "finished"


async def test_key_b_writes_a_bundle_of_the_screen_as_it_is(
    app_stub: StubServer, tmp_path: Path
) -> None:
    app = make_app(app_stub, "parallel", output_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("b")
    (bundle,) = tmp_path.iterdir()
    assert bundle.name.startswith("toolstream-bundle-")
    assert bundle_files(bundle) == BUNDLE_FILES
    assert (bundle / "stream.sse").read_bytes().startswith(b"data: ")
    assert "get_weather" in (bundle / "screen.svg").read_text(encoding="utf-8")


async def test_bundle_option_writes_once_the_stream_is_on_screen(
    app_stub: StubServer, tmp_path: Path
) -> None:
    app = make_app(app_stub, "weather", bundle=tmp_path / "repro")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
    report = json.loads((tmp_path / "repro" / "report.json").read_text(encoding="utf-8"))
    assert report["tool_calls"][0]["arguments"] == {"location": "Beijing"}
    screen = (tmp_path / "repro" / "screen.svg").read_text(encoding="utf-8")
    assert "get_weather" in screen, "the picture shows the finished lane, not an earlier frame"


def test_bundle_refuses_a_folder_of_someone_elses_files(cli: CliRunner, tmp_path: Path) -> None:
    """A project folder (its README.md, a report.json of its own) is never written
    into: refused before the stream is read, every file as it was."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# My project\n")
    (project / "report.json").write_text("{}")
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--bundle", str(project))
    assert (result.returncode, result.stdout) == (2, "")
    assert "holds files that are not a bundle's (README.md): name a new or empty folder" in (
        result.stderr
    )
    assert (project / "README.md").read_text() == "# My project\n"
    assert (project / "report.json").read_text() == "{}"


def test_bundle_writes_over_a_bundle_but_not_over_a_bundle_and_more(
    cli: CliRunner, tmp_path: Path
) -> None:
    """A CI job run again writes its bundle where the last one was; a file added
    beside a bundle makes the folder someone's again."""
    bundle = tmp_path / "bundle"
    args = ("--headless", "--scenario", "weather", "--speed", "0", "--bundle", str(bundle))
    assert cli(*args).returncode == 0
    assert cli(*args).returncode == 0
    assert bundle_files(bundle) == BUNDLE_FILES - {"screen.svg"} or bundle_files(bundle) == (
        BUNDLE_FILES
    )
    (bundle / "notes.txt").write_text("mine")
    again = cli(*args)
    assert again.returncode == 2 and "(notes.txt)" in again.stderr
