"""The docs site's reference, written from the code at build time (an MkDocs hook,
named in mkdocs.yml): a marker `<!-- generated: WHAT -->` in a page is replaced by
the options of a command's argparse parser (its own `--help`, so a renamed option
renames itself in the docs), the anomaly kinds of the registry, the dialects, or
the stub's scenarios. A hand-written table that must agree with the code (the
anomaly kinds' meanings, the dialect table) is checked against it; a mismatch is
a warning, which `mkdocs build --strict` turns into a failed build."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

LOG = logging.getLogger("mkdocs.hooks.docs_reference")  # under "mkdocs": --strict counts it
MARKER = re.compile(r"^<!-- generated: ([a-z-]+)(?: ([a-z-]+))? -->$", re.M)
USAGE_COLUMNS = 88  # the width the usage block is wrapped to
UNWRAPPED = 10_000  # help texts on one line each, so no word is cut at a hyphen


# -- the command line ---------------------------------------------------------------------
def parsers() -> dict[str, Callable[[], argparse.ArgumentParser]]:
    """Every command a user types, by the name the docs use for it."""
    from toolstream_stubs import cli as stub_cli
    from toolstream_tui.commands import diff as diffing
    from toolstream_tui.commands import proxy as proxying
    from toolstream_tui.commands import watch

    return {
        "toolstream-tui": watch.build_parser,
        "proxy": proxying.build_parser,
        "diff": diffing.build_parser,
        "toolstream-stub": stub_cli.build_parser,
    }


@contextmanager
def columns(width: int) -> Iterator[None]:
    """argparse wraps its help to the terminal's width, which it reads from COLUMNS."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


@dataclass
class Section:
    title: str
    entries: list[tuple[str, str]] = field(default_factory=list)  # (invocation, help)


@dataclass
class Help:
    description: str
    sections: list[Section]
    epilog: str


ENTRY = re.compile(r"^  (\S.*?)(?: {2,}(\S.*))?$")


def read_help(text: str) -> Help:
    """argparse's `--help` text, unwrapped, as its description, sections and epilog."""
    blocks = text.strip("\n").split("\n\n")
    prose: list[str] = []
    sections: list[Section] = []
    epilog: list[str] = []
    for block in blocks[1:]:  # the first is the usage
        lines = block.split("\n")
        if lines[0].endswith(":") and not lines[0].startswith(" "):
            sections.append(read_section(lines))
        elif sections:
            epilog.append(" ".join(line.strip() for line in lines))
        else:
            prose.append(" ".join(line.strip() for line in lines))
    return Help(" ".join(prose), sections, "\n\n".join(epilog))


def read_section(lines: list[str]) -> Section:
    section = Section(lines[0].removesuffix(":"))
    for line in lines[1:]:
        found = ENTRY.match(line)
        if found:  # an option's invocation, with its help beside it or on the next line
            section.entries.append((found[1], found[2] or ""))
        elif section.entries and line.startswith("    "):
            invocation, help_text = section.entries[-1]
            section.entries[-1] = (invocation, f"{help_text} {line.strip()}".strip())
        else:
            raise ValueError(
                f"a line of --help in section {section.title!r} not understood: {line!r}"
            )
    return section


def cell(text: str) -> str:
    """Help text as a Markdown table cell that shows it literally."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)


def command_reference(name: str) -> str:
    build = parsers()[name]
    with columns(UNWRAPPED):
        help_ = read_help(build().format_help())
    with columns(USAGE_COLUMNS):
        usage = build().format_usage().strip()
    lines = [cell(help_.description), "", "```text", usage, "```"]
    for section in help_.sections:
        lines += ["", f"**{cell(section.title)}**", "", "| option | meaning |", "|---|---|"]
        lines += [f"| `{invocation}` | {cell(text)} |" for invocation, text in section.entries]
    if help_.epilog:
        lines += ["", cell(help_.epilog)]
    return "\n".join(lines)


def option_names(name: str) -> set[str]:
    """The option strings a command takes (`-X`, `--method`, ...), from its --help."""
    with columns(UNWRAPPED):
        help_ = read_help(parsers()[name]().format_help())
    invocations = (inv for section in help_.sections for inv, _ in section.entries)
    return {word for inv in invocations for word in re.findall(r"(?<![\w-])--?[\w][\w-]*", inv)}


# -- anomaly kinds, dialects, scenarios -----------------------------------------------------
def kinds_by_dialect() -> dict[str, list[str]]:
    """Each anomaly kind and who names it: any stream, or the dialects that do."""
    from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS, COMMON, dialects_naming

    return {
        kind: ["any stream"] if kind in COMMON else [f"`{n}`" for n in dialects_naming(kind)]
        for kind in sorted(ANOMALY_KINDS)
    }


def anomaly_kinds_reference() -> str:
    lines = ["| kind | named by |", "|---|---|"]
    for kind, by in kinds_by_dialect().items():
        lines.append(f"| `{kind}` | {', '.join(by)} |")
    return "\n".join(lines)


def dialects_reference() -> str:
    from toolstream_tui.core.anomaly_kinds import own_kinds
    from toolstream_tui.core.dialects.detect import DIALECTS

    lines = ["| `--dialect` | tried | what it reads | kinds it names beyond any stream's |"]
    lines.append("|---|---|---|---|")
    for order, (name, dialect) in enumerate(DIALECTS.items(), start=1):
        summary = (importlib.import_module(dialect.__module__).__doc__ or "").split("\n\n")[0]
        kinds = ", ".join(f"`{kind}`" for kind in sorted(own_kinds(name))) or "none"
        lines.append(f"| `{name}` | {order} | {' '.join(summary.split())} | {kinds} |")
    return "\n".join(lines)


def scenarios_reference() -> str:
    from toolstream_stubs.scenarios import list_scenarios

    lines = ["| scenario | what it sends |", "|---|---|"]
    lines += [f"| `{info.name}` | {cell(info.description)} |" for info in list_scenarios()]
    return "\n".join(lines)


# -- keys -----------------------------------------------------------------------------------
def screens() -> dict[str, list[Any]]:
    """Each screen's key bindings, the app's own first (as Textual looks them up)."""
    from toolstream_tui.app.apps.diff import DiffApp
    from toolstream_tui.app.apps.proxy import RequestListApp, RequestListScreen
    from toolstream_tui.app.apps.watch import ToolstreamApp
    from toolstream_tui.app.screens.stream import StreamScreen

    return {
        "stream": [*ToolstreamApp.BINDINGS, *StreamScreen.BINDINGS],
        "proxy": [*RequestListApp.BINDINGS, *RequestListScreen.BINDINGS],
        "diff": list(DiffApp.BINDINGS),
    }


def binding_keys(binding: Any) -> list[str]:
    """The keys a binding answers, as a user reads them: the character typed where
    there is one (`?` for question_mark, `[`), else the key's name (`f1`, `down`)."""
    from textual.binding import Binding
    from textual.keys import key_to_character

    keys = binding.key if isinstance(binding, Binding) else binding[0]
    shown = []
    for key in (key.strip() for key in keys.split(",")):
        character = key_to_character(key)
        visible = character is not None and character.isprintable() and not character.isspace()
        shown.append(character if visible else key)
    return shown


def keys_reference(screen: str) -> str:
    from textual.binding import Binding

    lines = ["| key | name | what it does |", "|---|---|---|"]
    for binding in screens()[screen]:
        if isinstance(binding, Binding):
            name, does = binding.description, binding.tooltip or binding.description
        else:
            name = does = binding[2] if len(binding) > 2 else binding[1]
        keys = ", ".join(f"`{key}`" for key in binding_keys(binding))
        lines.append(f"| {keys} | {cell(name)} | {cell(does)} |")
    return "\n".join(lines)


def generated(what: str, argument: str | None) -> str:
    if what == "cli" and argument in parsers():
        return command_reference(argument)
    if what == "keys" and argument in screens():
        return keys_reference(argument)
    if what == "anomaly-kinds":
        return anomaly_kinds_reference()
    if what == "dialects":
        return dialects_reference()
    if what == "scenarios":
        return scenarios_reference()
    raise ValueError(f"no generated reference named {what!r} {argument or ''}")


# -- hand-written tables the code holds to ------------------------------------------------------
def table_kinds(markdown: str) -> set[str]:
    """The kinds named in the first column of a page's anomaly tables."""
    first_cells = re.findall(r"^\| ([^|]*) \|", markdown, flags=re.M)
    return {kind for cells in first_cells for kind in re.findall(r"`([a-z0-9-]+)`", cells)}


def check_anomaly_meanings(markdown: str, where: str) -> None:
    from toolstream_tui.core.anomaly_kinds import ANOMALY_KINDS

    meanings = markdown.split("<!-- generated:", 1)[0]
    documented = table_kinds(meanings)
    for kind in sorted(ANOMALY_KINDS - documented):
        LOG.warning("%s: anomaly kind %r has no meaning in the table", where, kind)
    for kind in sorted(documented - ANOMALY_KINDS):
        LOG.warning("%s: the table names %r, which is no anomaly kind", where, kind)


def check_option_tables(markdown: str, where: str) -> None:
    """Every option a hand-written `| option | meaning |` table names is one a command takes."""
    known = set().union(*(option_names(name) for name in parsers()))
    for table in re.findall(r"^\| option \| meaning \|\n(?:\|.*\n?)+", markdown, flags=re.M):
        first_cells = re.findall(r"^\| (.*?) \| ", table, flags=re.M)
        for option in sorted({o for c in first_cells for o in re.findall(r"`(-[^` ]+)", c)}):
            name = option.split("/")[0].split("=")[0]
            if name not in known and name not in ("-", "--"):
                LOG.warning("%s: the option table names %s, which no command takes", where, name)


def check_key_table(markdown: str, where: str) -> None:
    """Every key the page's `| key | action |` table names is bound on the stream screen
    (a letter as written: `t` and `T` are two keys; a name in any case: `F1` is `f1`)."""
    bound = {key for binding in screens()["stream"] for key in binding_keys(binding)}
    names = {key.lower() for key in bound if len(key) > 1}
    for table in re.findall(r"^\| key \| action \|\n(?:\|.*\n?)+", markdown, flags=re.M):
        first_cells = re.findall(r"^\| (.*?) \| ", table, flags=re.M)[1:]  # past the header
        for key in sorted({key for c in first_cells for key in re.findall(r"`([^`]+)`", c)}):
            if key not in bound and key.lower() not in names:
                LOG.warning(
                    "%s: the key table names %s, which the stream screen does not bind", where, key
                )


CHECKS: dict[str, Callable[[str, str], None]] = {
    "reference/anomalies.md": check_anomaly_meanings,
    "app.md": check_key_table,
}


# -- the MkDocs hook ------------------------------------------------------------------------
def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    where = page.file.src_uri
    if where in CHECKS:
        CHECKS[where](markdown, where)
    check_option_tables(markdown, where)

    def replace(found: re.Match[str]) -> str:
        try:
            return generated(found[1], found[2])
        except ValueError as exc:
            LOG.warning("%s: %s", where, exc)
            return found[0]

    return MARKER.sub(replace, markdown)
