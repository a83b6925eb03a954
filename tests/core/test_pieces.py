"""Text kept as the pieces it arrived in answers like the list of pieces would,
whatever the pieces and however large their event numbers grow."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.streaming import TEXT
from toolstream_tui.core.pieces import TextPieces

# Event steps that stay small, or jump past what 32 bits hold.
STEPS = st.sampled_from([0, 1, 2, 2**32, 2**40])
# Pieces of one read share its time; 0.0 and -0.0 are told apart.
TIMES = st.sampled_from([0.0, -0.0, 0.5, 1.5, 1e9])
# Halves of a UTF-16 pair cut between pieces, as a JavaScript server sends them.
TEXTS = TEXT.filter(bool) | st.sampled_from(["\ud83d", "\ude80", "a\ud800", "🚀"])
PIECES = st.lists(st.tuples(TEXTS, STEPS, TIMES), max_size=300)


@given(PIECES, st.integers(min_value=0, max_value=2**41), st.data())
def test_pieces_answer_as_the_list_of_them_would(
    arrived: list[tuple[str, int, float]], asked: int, data: st.DataObject
) -> None:
    pieces = TextPieces()
    model: list[tuple[str, int, float]] = []
    event = 0
    read_whole_at = data.draw(st.integers(min_value=0, max_value=len(arrived)))
    for number, (text, step, t) in enumerate(arrived):
        if number == read_whole_at:  # the whole read mid-stream, then more pieces
            assert pieces.text() == "".join(text for text, _, _ in model)
        event += step
        pieces.append(text, event, t if step % 2 else float(repr(t)))  # the same object, or not
        model.append((text, event, t))
    whole = "".join(text for text, _, _ in model)
    assert [pieces.piece(n) for n in range(len(model))] == [text for text, _, _ in model]
    start = data.draw(st.integers(min_value=0, max_value=len(whole)))
    end = data.draw(st.integers(min_value=0, max_value=len(whole) + 2))
    assert pieces.slice(start, end) == whole[start:end]
    assert pieces.text() == whole
    assert pieces.slice(start, end) == whole[start:end]
    assert list(pieces.events) == [event for _, event, _ in model]
    times = [repr(t) for _, _, t in model]
    assert list(map(repr, pieces.times)) == times
    assert [repr(pieces.times[n]) for n in range(-len(model), len(model))] == times + times
    assert list(map(repr, pieces.times[1:-1])) == times[1:-1]
    assert len(pieces.times) == len(model)
    upto = [text for text, event, _ in model if event <= asked]
    assert pieces.count_upto(asked) == len(upto)
    assert pieces.length_upto(asked) == len("".join(upto))


SURROGATES = range(0xD800, 0xE000)
# Surrogates, and characters whose UTF-8 also begins with 0xED (U+D000 to U+D7FF).
NEAR_SURROGATES = st.sampled_from(["\ud7ff", "\ud000", "\ud83d", "\udfff", "\ue000", "한"])


@given(st.lists(TEXTS | NEAR_SURROGATES, max_size=20), st.data())
def test_no_surrogates_is_said_only_of_text_without_any(
    texts: list[str], data: st.DataObject
) -> None:
    """`surely_no_surrogates` is never True of text holding one, before the whole is
    read, after, and after more pieces; and it is True of text without 0xED bytes."""
    pieces = TextPieces()
    read_whole_at = data.draw(st.integers(min_value=0, max_value=len(texts)))
    for number, text in enumerate(texts):
        if number == read_whole_at:
            pieces.text()
            _check_surrogates_said(pieces)
        pieces.append(text, number, 0.0)
        _check_surrogates_said(pieces)
    pieces.text()
    _check_surrogates_said(pieces)


def _check_surrogates_said(pieces: TextPieces) -> None:
    whole = "".join(pieces.pieces())  # read without joining: the buffer stays
    holds = any(ord(char) in SURROGATES for char in whole)
    begins_ed = any(0xD000 <= ord(char) < 0xE000 for char in whole)
    assert pieces.surely_no_surrogates() == (not begins_ed)
    assert not (holds and pieces.surely_no_surrogates())
