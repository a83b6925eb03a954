"""The documentation: the MkDocs site builds with --strict (no broken link, no page
left out of the nav), its generated reference holds every option, anomaly kind
and dialect of the code, its checks catch a table that drifts, and the README
stays short and keeps its Quickstart."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.docs_pages import DOCS, ROOT, docs_page, reference_generator
from tests.helpers.paths import TESTS
from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS, own_kinds
from toolstream_tui.core.dialects.detect import DIALECTS

README_MAX_LINES = 200
generator = reference_generator()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` writes it (a warning fails the build)."""
    site_dir = tmp_path_factory.mktemp("site")
    where = ["--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site_dir)]
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *where],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    return site_dir


def built_page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", sorted(generator.parsers()))
def test_the_reference_lists_every_option_of_every_command(site: Path, command: str) -> None:
    page = built_page(site, "reference/cli")
    options = generator.option_names(command)
    assert {"--help", "-h"} <= options
    assert sorted(option for option in options if option not in page) == []


def test_the_reference_names_every_anomaly_kind_and_every_dialect(site: Path) -> None:
    kinds = built_page(site, "reference/anomalies")
    dialects = built_page(site, "reference/dialects")
    assert [kind for kind in sorted(ANOMALY_KINDS) if f"<code>{kind}</code>" not in kinds] == []
    assert [name for name in DIALECTS if f"<code>{name}</code>" not in dialects] == []


def test_every_page_in_docs_is_built(site: Path) -> None:
    pages = {path.relative_to(DOCS).with_suffix("") for path in DOCS.rglob("*.md")}
    missing = [
        page
        for page in pages
        if not (site / (page.parent if page.name == "index" else page) / "index.html").exists()
    ]
    assert missing == []


# -- the checks the hook makes (a warning: --strict turns it into a failed build) --------------
def test_a_kind_missing_from_the_meanings_or_one_that_is_no_kind_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    page = docs_page("reference/anomalies.md").replace("| `redirected` |", "| `redirect` |")
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        generator.check_anomaly_meanings(page, "anomalies.md")
    assert [record.getMessage() for record in caplog.records] == [
        "anomalies.md: anomaly kind 'redirected' has no meaning in the table",
        "anomalies.md: the table names 'redirect', which is no anomaly kind",
    ]


def test_the_anomaly_meanings_as_written_agree_with_the_registry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        generator.check_anomaly_meanings(docs_page("reference/anomalies.md"), "anomalies.md")
    assert caplog.records == []


def test_an_option_table_naming_an_option_no_command_takes_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = "| option | meaning |\n|---|---|\n| `--headless` | fine |\n| `--no-such N` | gone |\n"
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        generator.check_option_tables(table, "page.md")
    assert [record.getMessage() for record in caplog.records] == [
        "page.md: the option table names --no-such, which no command takes"
    ]


def test_a_help_line_the_reader_does_not_understand_is_an_error() -> None:
    with pytest.raises(ValueError, match="not understood"):
        generator.read_help("usage: x\n\noptions:\nstray text at the margin\n")


def test_help_read_back_keeps_each_options_text_whole() -> None:
    text = (
        "usage: x [-h]\n\nWhat x does.\n\noptions:\n  -h, --help  show help\n"
        "  --long-option-name LONG\n                        first part\n"
        "                        second part\n\nThe epilog.\n"
    )
    read = generator.read_help(text)
    assert read.description == "What x does."
    assert [(section.title, section.entries) for section in read.sections] == [
        (
            "options",
            [("-h, --help", "show help"), ("--long-option-name LONG", "first part second part")],
        )
    ]
    assert read.epilog == "The epilog."


# -- the README ------------------------------------------------------------------------------
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES


def test_the_quickstart_is_two_commands_and_ci_runs_the_second() -> None:
    quickstart = README.split("## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", quickstart, flags=re.S)
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    assert commands[0].endswith("pip install . && toolstream-tui")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci


def readme_table(heading: str) -> list[list[str]]:
    """The rows of the first table under `heading`, each a list of its cells."""
    part = README.split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]
    table = "|" + part.split("\n|", 1)[1].split("\n\n", 1)[0]
    lines = table.splitlines()[2:]  # past the header and its rule
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_readme_has_a_row_for_every_dialect() -> None:
    named = {row[0].strip("`") for row in readme_table("## Dialects")}
    assert named == set(DIALECTS)


def test_the_readme_lists_each_dialects_own_anomaly_kinds_as_the_registry_does() -> None:
    part = README.split("## Dialects\n", 1)[1].split("\n## ", 1)[0]
    kinds_table = part.split("its own anomaly kinds", 1)[1]
    rows = [line for line in kinds_table.splitlines() if line.startswith("| `")]
    listed = {
        cells[0].strip("` "): set(re.findall(r"`([a-z0-9-]+)`", cells[1]))
        for cells in (row.strip("|").split("|") for row in rows)
    }
    assert listed == {name: set(own_kinds(name)) for name in DIALECTS}


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [target for target in targets if "://" not in target]
    assert "docs/index.md" in local
    assert [target for target in local if not (ROOT / target).exists()] == []


def test_a_key_table_naming_a_key_the_screen_does_not_bind_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = "| key | action |\n|---|---|\n| `q` | quit |\n| `T` or `F1` | fine |\n| `x` | gone |\n"
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        generator.check_key_table(table, "app.md")
        generator.check_key_table(table.replace("`x`", "`Q`"), "app.md")
    assert [record.getMessage() for record in caplog.records] == [
        "app.md: the key table names x, which the stream screen does not bind",
        "app.md: the key table names Q, which the stream screen does not bind",
    ]


def test_the_keys_reference_lists_every_key_of_every_screen(site: Path) -> None:
    page = built_page(site, "reference/keys")
    for bindings in generator.screens().values():
        for binding in bindings:
            for key in generator.binding_keys(binding):
                assert f"<code>{key}</code>" in page


# -- the pictures ------------------------------------------------------------------------------
PICTURES = {  # a docs picture and the snapshot test that draws it
    "demo-streaming.svg": "app/__snapshots__/test_snapshots/test_demo_mid_stream.svg",
    "demo-finished.svg": "app/__snapshots__/test_snapshots/test_demo_finished.svg",
    "preview.svg": "app/__snapshots__/test_snapshots/test_preview_mid_stream.svg",
    "schema-errors.svg": "app/__snapshots__/test_snapshots/test_schema_errors.svg",
    "timeline.svg": "app/__snapshots__/test_timeline/test_timeline_of_a_replay.svg",
    "diff.svg": "commands/__snapshots__/test_diff/test_diff_app.svg",
    "proxy-requests.svg": "app/__snapshots__/test_proxy_app/test_the_request_list.svg",
    "captures-list.svg": "app/__snapshots__/test_captures/test_the_capture_list.svg",
}


@pytest.mark.parametrize("picture", sorted(PICTURES))
def test_a_docs_picture_is_the_screen_as_its_snapshot_draws_it_today(picture: str) -> None:
    """Redrawn snapshots leave the docs showing an old screen unless copied:
    `cp tests/<snapshot> docs/<picture>`."""
    drawn = (TESTS / PICTURES[picture]).read_bytes()
    assert (DOCS / picture).read_bytes() == drawn, f"copy {PICTURES[picture]} to docs/{picture}"
