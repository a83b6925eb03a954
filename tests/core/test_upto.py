"""The report cut at wire event N (`--until-event N`) against the stream really cut
there: for every stub scenario, the core is fed one event at a time and its
report is taken after each; the report the stamps give for that event, read off
the whole stream's state without reading it again, must be the same.

What the stamps cannot tell is listed, each with why, and left out where it
applies (`UNSTAMPED`)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import console_script
from toolstream_stubs import list_scenarios, load_scenario
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from toolstream_tui.core.upto import (
    cursor_for_event,
    event_at_time,
    next_anomaly,
    next_call_moment,
    previous_anomaly,
    previous_call_moment,
    report_upto,
)

# Scenario -> report keys the stamps cannot give mid-stream, and why.
UNSTAMPED = {
    # The server restates a call's arguments (tool-input-available) before the call
    # settles; when that happened is not stamped, so the cut shows the deltas.
    "aisdk-mismatch": {"tool_calls"},
    # A tool_use whose whole input came in its start event: the input is appended at
    # the block's end but stamped with the event that carried it, so the cut shows
    # it at the start event, where the stream fed so far does not have it yet.
    "anthropic-full-input": {"tool_calls", "timing"},
    "anthropic-message-start-call": {"tool_calls", "timing"},
    # The server's own final word on a call's arguments (`.done`, a partial-args
    # restatement) arrives before the call settles; when is not stamped, so the cut
    # shows the deltas so far.
    "responses-done-mismatch": {"tool_calls"},
    "responses-lost-delta": {"tool_calls"},
    "vertex-partial-args": {"tool_calls"},
    "vertex-partial-contradiction": {"tool_calls"},
}


def fed(name: str, upto: int | None = None) -> StreamSession:
    """The scenario's session fed its first `upto` events (all, and closed, by
    default), one event per read."""
    scenario = load_scenario(name)
    session = StreamSession(f"stub:{name}", live=False)
    session.open(scenario.status, scenario.content_type, dict(scenario.headers))
    for block in scenario.events[:upto]:
        session.feed(block, 0.0)
    if upto is None:
        session.close(0.0)
    return session


def reports_event_by_event(name: str, every: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """The scenario fed one event at a time, and its report after every `every`th
    event (0: after the response head), made as the stream goes."""
    scenario = load_scenario(name)
    session = fed(name, 0)
    yield 0, build_report(session.state)
    for block in scenario.events:
        before = session.state.events
        session.feed(block, 0.0)
        event = session.state.events
        # A block that ends no event (a comment, a cut tail) is the next event's start.
        if event != before and (event % every == 0 or event == len(scenario.events)):
            yield event, build_report(session.state)


# A megabyte of arguments: a report after every event would join it thousands of times.
SAMPLED = {"huge-args": 97}


def without(report: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key not in keys}


@pytest.mark.parametrize("name", [info.name for info in list_scenarios()])
def test_the_report_cut_at_each_event_is_the_stream_fed_that_far(name: str) -> None:
    state = fed(name).state
    skipped = UNSTAMPED.get(name, set())
    for event, report in reports_event_by_event(name, SAMPLED.get(name, 1)):
        if event == 0 and not state.events:
            continue  # a body without events is read, and decided, all at its end
        cut = report_upto(state, event)
        assert cut.pop("as_of") == {
            "event": event,
            "events": state.events,
            "time": None if event == 0 else 0.0,
            "ended": False,
        }
        assert without(cut, skipped) == without(report, skipped), (name, event)
    final = report_upto(state, state.events + 1)
    assert final.pop("as_of")["ended"] is True
    assert final == build_report(state)


def test_cursor_for_an_event_past_the_last_is_the_end() -> None:
    state = fed("parallel").state
    assert cursor_for_event(state, state.events - 1) == state.events - 1
    assert cursor_for_event(state, state.events) == state.events + 1
    assert cursor_for_event(state, state.events + 1) == state.events + 1


def test_jumps_to_anomalies_land_on_every_sighting_in_order() -> None:
    state = fed("anthropic-quirks").state
    sightings = sorted({stamp for anomaly in state.anomalies for stamp in anomaly.stamps})
    assert len(sightings) >= 2
    forward, cursor = [], 0
    while (found := next_anomaly(state, cursor)) is not None:
        forward.append(found)
        cursor = found
    assert forward == sightings
    backward, cursor = [], state.events + 1
    while (found := previous_anomaly(state, cursor)) is not None:
        backward.append(found)
        cursor = found
    assert backward == sightings[::-1] if sightings[-1] < state.events + 1 else sightings[-2::-1]


def test_call_moments_are_starts_names_and_settlements() -> None:
    state = fed("parallel").state
    moments = sorted(
        {
            moment
            for slot in state.calls.values()
            for moment in (slot.started_event, slot.name_event, slot.settled_event)
            if moment is not None
        }
    )
    found, cursor = [], 0
    while (moment := next_call_moment(state, cursor)) is not None:
        found.append(moment)
        cursor = moment
    assert found == [moment for moment in moments if moment > 0]
    one = state.calls[1]
    assert next_call_moment(state, 0, 1) == one.started_event
    assert previous_call_moment(state, state.events + 1, 1) == one.settled_event
    assert previous_call_moment(state, one.started_event, 1) is None


def test_a_time_names_the_last_event_that_had_arrived_by_then() -> None:
    session = StreamSession("timed", live=False)
    session.open(200, "text/event-stream", t=0.1)
    blocks = load_scenario("parallel").events
    for number, block in enumerate(blocks[:4]):
        session.feed(block, 1.0 + number)  # event k+1 arrives at 1 + k seconds
    assert event_at_time(session.state, 0.5) == 0
    assert event_at_time(session.state, 1.0) == 1
    assert event_at_time(session.state, 2.999) == 2
    assert event_at_time(session.state, 3.0) == 3
    assert event_at_time(session.state, 99.0) == 4  # not over yet: the last event


def run_headless(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [console_script("toolstream-tui"), "--headless", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE), done.stderr
    return json.loads(done.stdout)


def test_until_event_prints_the_report_as_it_stood_then() -> None:
    """The command line gives what the core gives: the cut report, marked as_of."""
    printed = run_headless("--scenario", "parallel", "--speed", "0", "--until-event", "7")
    as_of = printed.pop("as_of")
    assert (as_of["event"], as_of["events"], as_of["ended"]) == (7, 24, False)
    expected = build_report(fed("parallel", 7).state)
    # Bytes are counted by read, and a stub at full speed sends events in few reads.
    for key in ("status", "text", "tool_calls", "anomalies", "events"):
        assert printed[key] == expected[key], key


def test_a_headless_bundle_holds_the_report_it_printed(tmp_path: Path) -> None:
    """--until-event with --bundle: the bundle's report is the one printed (as of
    event 7), as the app's b bundles what its cursor shows; the recording is whole."""
    bundle = tmp_path / "bundle"
    args = ("--scenario", "parallel", "--speed", "0", "--until-event", "7")
    printed = run_headless(*args, "--bundle", str(bundle))
    bundled = json.loads((bundle / "report.json").read_text(encoding="utf-8"))
    assert bundled["as_of"]["event"] == 7
    assert without(bundled, {"timing"}) == without(printed, {"timing"})
    assert "As of event 7" in (bundle / "README.md").read_text(encoding="utf-8")


def test_until_event_past_the_end_is_the_whole_report_marked_ended() -> None:
    printed = run_headless("--scenario", "parallel", "--speed", "0", "--until-event", "999")
    assert printed.pop("as_of")["ended"] is True
    whole = run_headless("--scenario", "parallel", "--speed", "0")
    assert without(printed, {"timing"}) == without(whole, {"timing"})


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--until-event", "3"], "--until-event is for --headless"),
        (["--until-time", "1.5"], "--until-time is for --headless"),
        (["--headless", "--at", "3"], "--at opens the app"),
        (["--headless", "--until-event", "-1"], "expected an integer >= 0"),
    ],
)
def test_moments_asked_of_the_wrong_mode_are_usage_errors(args: list[str], says: str) -> None:
    done = subprocess.run(
        [console_script("toolstream-tui"), "--scenario", "parallel", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert says in done.stderr
    assert "Traceback" not in done.stderr
