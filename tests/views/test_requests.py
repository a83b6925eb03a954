"""The proxy's request list as rows and column widths, computed with no Textual."""

from __future__ import annotations

import pytest

from toolstream_stubs import load_scenario
from toolstream_tui.core import StreamSession
from toolstream_tui.proxy.requests import RequestRecord
from toolstream_tui.views.requests import REQUEST_COLUMNS, column_widths, request_row

TITLES = [title for title, _, _ in REQUEST_COLUMNS]
GEMINI = "/scenarios/gemini-text-tools/v1beta/models/gemini-2.5-flash:streamGenerateContent"
BEDROCK = "/scenarios/bedrock-text-tools/model/anthropic.claude-3/converse-stream"
ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-v1:0"


def record(scenario: str, path: str, model: str | None = None) -> RequestRecord:
    loaded = load_scenario(scenario)
    session = StreamSession(f"https://api.example.com{path}", live=False)
    session.open(loaded.status, loaded.content_type, t=0.01)
    session.feed(loaded.rendered, 0.05)
    session.close(0.05)
    return RequestRecord(
        id=1,
        method="POST",
        path=path,
        started_at=0.0,
        started=0.0,
        session=session,
        model=model,
        duration=0.05,
        over=True,
    )


def drawn(line_width: int) -> dict[str, int]:
    widths = column_widths(line_width)
    return {title: width for title, width in zip(TITLES, widths, strict=True) if width}


def line_length(widths: dict[str, int]) -> int:
    return sum(widths.values()) + len(widths) - 1


def test_every_column_is_drawn_when_the_request_still_has_room() -> None:
    """150 columns (a line of 146): the request has 48 cells beside all the others."""
    widths = drawn(146)
    assert list(widths) == TITLES
    assert widths["request"] >= 48 and line_length(widths) == 146


def test_at_120_columns_the_request_gets_the_room_of_bytes_dialect_and_status() -> None:
    """The least useful columns go first: the bytes (the state says whether it
    ended), the dialect (the path and model say it), HTTP (an error's status is
    in the reason after the path)."""
    widths = drawn(116)
    assert list(widths) == [
        "time",
        "request",
        "model",
        "state",
        "calls",
        "anomalies",
        "duration",
    ]
    assert widths["request"] >= 48 and line_length(widths) == 116


def test_at_80_columns_request_model_state_calls_and_anomalies_are_drawn() -> None:
    widths = drawn(76)
    assert list(widths) == ["request", "model", "state", "calls", "anomalies"]
    assert widths["request"] >= 30 and line_length(widths) == 76


@pytest.mark.parametrize("line_width", range(40, 200))
def test_the_columns_never_pass_the_line(line_width: int) -> None:
    """The request takes what the others leave (never under 12 cells: a line too
    narrow for even that is cut at its end)."""
    widths = drawn(line_width)
    others = line_length(widths) - widths["request"]
    assert widths["request"] == max(12, line_width - others)
    if line_width >= 76:
        assert line_length(widths) == line_width


def test_a_long_path_shows_its_end_not_its_common_start() -> None:
    gemini = request_row(record("gemini-text-tools", GEMINI + "?alt=sse"), 0.0, [0, 48])
    bedrock = request_row(record("bedrock-text-tools", BEDROCK), 0.0, [0, 48])
    assert gemini.cells[1] == "POST …/gemini-2.5-flash:streamGenerateContent?…"
    assert bedrock.cells[1] == "POST …/model/anthropic.claude-3/converse-stream"


def test_a_path_that_fits_is_shown_whole() -> None:
    shown = request_row(record("weather", "/v1/chat/completions"), 0.0, [0, 48])
    assert shown.cells[1] == "POST /v1/chat/completions"
    assert request_row(record("weather", GEMINI), 0.0).cells[1] == f"POST {GEMINI}"


def test_the_reason_after_a_long_path_keeps_its_room() -> None:
    """A truncated request says why, whatever the path's length: the path gives
    way down to its last few cells."""
    cut = record("truncated", "/scenarios/truncated/v1/chat/completions")
    assert request_row(cut, 0.0, [0, 48]).cells[1] == (
        "POST …/v1/chat/completions · unterminated-event"
    )
    narrow = request_row(cut, 0.0, [0, 31]).cells[1]
    assert narrow.startswith("POST …/completions · untermin")


def test_an_arns_model_is_shown_by_its_resource_id() -> None:
    """Every Bedrock ARN starts alike: the row shows what comes after its last `/`."""
    shown = request_row(record("bedrock-text-tools", BEDROCK, ARN), 0.0)
    assert shown.cells[2] == "us.anthropic.claude-3-7-v1:0"
    named = request_row(record("bedrock-text-tools", BEDROCK, "anthropic.claude-3"), 0.0)
    assert named.cells[2] == "anthropic.claude-3"
