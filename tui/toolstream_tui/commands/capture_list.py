"""A capture's entries as the proxy's requests (`RequestList`): every entry is fed
to the log as a finished request, so the request list shows them and Enter opens
one, and the headless run prints the proxy's line for each streaming entry."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_LINT, EXIT_OK
from ..core.report import exit_code, printable_json
from ..core.visible import inert
from ..process import write_out
from ..proxy.pipe import Exchange, Note, ResponseEnd
from ..proxy.requests import RequestList, RequestRecord
from ..proxy.server import ProxiedResponse
from ..sources import Limits
from ..sources.captures import NOT_TIMED, Capture, CaptureEntry
from .common import limits_of, lint_failures, one_line_summary

if TYPE_CHECKING:
    from ..app.apps.proxy import RequestListApp
    from ..otlp.export import OtlpExport

PROG = "toolstream-tui"
# The worst first: a stream that failed, one cut short, one --fail-on flags.
WORST_FIRST = (EXIT_FAILED, EXIT_INCOMPLETE, EXIT_LINT)


def capture_log(
    limits: Limits, dialect: str | None, tapes: bool, otlp: OtlpExport | None = None
) -> RequestList:
    """`otlp`: each entry is sent as a span, as a proxied request is."""
    return RequestList(limits, dialect=dialect, keep=1 << 30, tapes=tapes, otlp=otlp)


def feed(log: RequestList, capture: Capture) -> None:
    """Every entry of the capture, in order, into the log as the proxy's requests
    (so entry N is request N), each already over."""
    for entry in capture.entries:
        log.take(entry_response(entry), entry.label(capture.name))


def entry_response(entry: CaptureEntry) -> ProxiedResponse:
    exchange = Exchange(
        method=entry.method,
        path=entry.url,
        url=entry.url,
        headers=entry.request_headers,
        body=entry.request_body or b"",
        started_at=entry.started_at or 0.0,
        started=0.0,
    )
    proxied = ProxiedResponse(exchange)
    for note in entry.notes:
        proxied.put(Note(note))
    for item in entry.response_items(entry.redactor()):
        proxied.put(item)
    proxied.put(ResponseEnd(entry.end_t or entry.head_t or 0.0, len(entry.body)))
    return proxied


async def print_reports(capture: Capture, args: argparse.Namespace, fail_on: frozenset[str]) -> int:
    log = capture_log(limits_of(args), args.dialect, tapes=False, otlp=args.otlp_export)
    feed(log, capture)
    await log.wait_idle()
    codes = []
    for entry in capture.streams:
        record = log.records[entry.number]
        state = record.session.state
        write_out(printable_json(entry_summary(record, capture), compact=True))
        summary = one_line_summary(state)
        failures = lint_failures(state, fail_on)
        for line in [summary] if summary else []:
            print(f"{PROG}: entry {entry.number}: {inert(line)}", file=sys.stderr)
        for line in failures:
            print(f"{PROG}: entry {entry.number}: {inert(line)}", file=sys.stderr)
        codes.append(exit_code(state) or (EXIT_LINT if failures else EXIT_OK))
    return worst(codes)


def entry_summary(record: RequestRecord, capture: Capture) -> dict[str, object]:
    """The proxy's line for a request, naming the capture and its entry."""
    summary = record.summary()
    return {"capture": capture.name, "entry": summary.pop("id"), **summary}


def worst(codes: Sequence[int]) -> int:
    return next((code for code in WORST_FIRST if code in codes), EXIT_OK)


async def run_list_app(capture: Capture, path: Path, args: argparse.Namespace) -> int:
    app = await capture_app(capture, path, limits_of(args), args.dialect, args.otlp_export)
    await app.run_async()
    return EXIT_OK


async def capture_app(
    capture: Capture,
    path: Path,
    limits: Limits,
    dialect: str | None = None,
    otlp: OtlpExport | None = None,
) -> RequestListApp:
    """The request list on every entry of the capture, each already read."""
    app = list_app(capture, path, capture_log(limits, dialect, tapes=True, otlp=otlp))
    await fill(app, capture)
    return app


def list_app(capture: Capture, path: Path, log: RequestList) -> RequestListApp:
    """The request list for the capture's entries, before they are read (`fill`)."""
    from ..app.apps.proxy import RequestListApp  # Textual loads only for the UI
    from ..views.words import plural

    streams = len(capture.streams)
    origin = (
        f"{capture.kind} file {path.name}: {plural(streams, 'stream')} in "
        f"{plural(len(capture.entries), 'request')} · "
        f"{NOT_TIMED}"
    )
    app = RequestListApp(log, str(path), capture.kind, origin=origin)
    app.title = f"toolstream-tui: {path.name}"
    return app


async def fill(app: RequestListApp, capture: Capture) -> None:
    """Every entry read into the app's log, the first stream selected (not the
    newest entry: a favicon, often)."""
    feed(app.request_list, capture)
    await app.request_list.wait_idle()
    if capture.streams:
        app.requests.follow = False
        app.requests.selected = capture.streams[0].number
