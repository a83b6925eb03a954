"""A call's silences are found run by run of pieces that share one time; they are
the silences found piece by piece."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolstream_tui.core.pieces import TextPieces
from toolstream_tui.core.timing import Gap, gaps

# Reads: how many pieces each carried and when it arrived (a repeat of the time
# before continues its run; 0.0 and -0.0 are runs of their own)
READS = st.lists(
    st.tuples(
        st.integers(min_value=1, max_value=4), st.sampled_from([0.0, -0.0, 0.3, 1.0, 2.5, 7.0])
    ),
    max_size=40,
)


@given(
    READS,
    st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    st.none() | st.sampled_from([0.0, 0.1, 5.0]),
)
def test_silences_found_run_by_run_are_those_found_piece_by_piece(
    reads: list[tuple[int, float]], threshold: float, start: float | None
) -> None:
    pieces = TextPieces()
    for event, (count, t) in enumerate(reads, start=1):
        for _ in range(count):
            pieces.append("x", event, t)
    assert gaps(pieces.times, threshold, start) == gaps(list(pieces.times), threshold, start)


def test_a_silence_is_numbered_by_the_first_piece_after_it() -> None:
    pieces = TextPieces()
    for t in (0.0, 0.0, 0.0, 3.0, 3.0):
        pieces.append("x", 1, t)
    assert gaps(pieces.times, 1.0, None) == [Gap(0.0, 3.0, 3)]
