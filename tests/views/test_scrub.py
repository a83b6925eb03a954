"""The scrub bar's view: where anomalies were first seen, by column."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.apps import BIG_SCENARIOS
from tests.helpers.oracles import scenario_session
from toolstream_stubs.scenarios import scenario_names
from toolstream_tui.core.events import Anomaly
from toolstream_tui.views.scrub import first_sighting_columns


def first_seen_at(stamps: list[int]) -> list[Anomaly]:
    anomalies = []
    for number, stamp in enumerate(stamps):
        anomaly = Anomaly("kind", number, "detail")
        anomaly.sighted(stamp, 1)
        anomalies.append(anomaly)
    return anomalies


def column_of_each(anomalies: list[Anomaly], last: int, width: int) -> frozenset[int]:
    """The columns, one anomaly at a time."""
    return frozenset(
        round(min(anomaly.stamps[0], last) * (width - 1) / last) if last else 0
        for anomaly in anomalies
    )


@given(
    stamps=st.lists(st.integers(0, 5_000), max_size=300).map(sorted),
    last=st.integers(0, 5_000),
    width=st.integers(1, 300),
)
def test_the_columns_are_those_of_each_anomaly(stamps: list[int], last: int, width: int) -> None:
    anomalies = first_seen_at(stamps)
    assert first_sighting_columns(anomalies, last, width) == column_of_each(anomalies, last, width)


def test_ten_thousand_anomalies_in_a_few_columns() -> None:
    anomalies = first_seen_at([number // 1000 * 9_000 for number in range(10_000)])
    assert first_sighting_columns(anomalies, 90_000, 11) == frozenset(range(10))


@pytest.mark.parametrize("name", sorted(set(scenario_names()) - BIG_SCENARIOS))
def test_a_stream_records_its_anomalies_in_the_order_they_were_first_seen(name: str) -> None:
    """What the bisection stands on, for every stub scenario."""
    firsts = [anomaly.stamps[0] for anomaly in scenario_session(name, seed=7).state.anomalies]
    assert firsts == sorted(firsts)
