"""The `--otlp URL` option and the export it opens: all a command line without
--otlp imports of OpenTelemetry out."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .export import OtlpExport

OTLP_HELP = (
    "send one OpenTelemetry span per request (GenAI semantic conventions; tool calls and "
    "anomalies as span events) to this OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 "
    "(/v1/traces is added when the URL has no path); needs the otlp extra"
)


def add_otlp_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--otlp", metavar="URL", help=OTLP_HELP)


def open_export(url: str | None) -> OtlpExport | None:
    """The export --otlp asks for (None without it). Raises `OtlpUnavailable`
    with a message for the user when it cannot be used."""
    if url is None:
        return None
    from .export import OtlpExport  # the SDK loads only with --otlp

    return OtlpExport(url)
