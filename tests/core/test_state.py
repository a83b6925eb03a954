"""The per-index accumulator on its own (core/state.py), driven as the dialects
drive it: a slot per call, fragments appended, one parse at the finish, and the
end settling what never finished. Which wire shapes lead to these calls, and
where a reused or missing index goes (index-reused, index-missing), the
dialects decide: their own tests cover that."""

from __future__ import annotations

from typing import TypeVar

import pytest

from toolstream_tui.core.events import (
    AnomalyRecorded,
    CallIdentified,
    CallParsed,
    CallStarted,
    Channel,
    FinishSeen,
    FragmentAppended,
    Status,
    StreamEnded,
    StreamEvent,
    TextAppended,
)
from toolstream_tui.core.schema import declared_tools
from toolstream_tui.core.state import (
    INTERRUPTED_CALL_ERROR,
    TRUNCATED_CALL_ERROR,
    CallSlot,
    StreamState,
)

E = TypeVar("E", bound=StreamEvent)


def wire_event(state: StreamState, number: int, t: float = 0.0) -> None:
    """What the session does as wire event `number` arrives, before the dialect
    handles it."""
    state.events = state.now = number
    state.last_data_at = t


def call_with(state: StreamState, *fragments: str, index: int = 0) -> CallSlot:
    """A call in lane `index` whose arguments came in `fragments`, one per event."""
    slot = state.start_call(index, f"call_{index}", "f", state.last_data_at)
    for fragment in fragments:
        wire_event(state, state.events + 1)
        state.append_fragment(slot, fragment, state.events, state.last_data_at)
    return slot


def kinds(state: StreamState) -> list[str]:
    return [anomaly.kind for anomaly in state.anomalies]


def of_type(events: list[StreamEvent], kind: type[E]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


@pytest.fixture
def state() -> StreamState:
    return StreamState("test", "openai-chat")


# -- a call's slot ------------------------------------------------------------------------


def test_a_call_takes_its_id_and_name_from_its_first_fragment(state: StreamState) -> None:
    wire_event(state, 3, t=0.5)
    slot = state.start_call(0, "call_a", "get_weather", 0.5, item_id="fc_a")
    assert state.calls == {0: slot}
    assert (slot.call_id, slot.name, slot.item_id, slot.started_at) == (
        "call_a",
        "get_weather",
        "fc_a",
        0.5,
    )
    assert (slot.started_event, slot.id_event, slot.name_event, slot.named_at) == (3, 3, 3, 0.5)
    assert state.drain() == [CallStarted(0, "call_a", "get_weather", 0.5, "fc_a")]


def test_a_call_started_without_id_or_name_is_not_stamped_as_having_them(
    state: StreamState,
) -> None:
    wire_event(state, 2)
    slot = state.start_call(0, None, None, 0.0)
    assert (slot.id_event, slot.name_event, slot.named_at) == (None, None, None)


def test_identify_fills_what_the_first_fragment_lacked_and_stamps_when(
    state: StreamState,
) -> None:
    wire_event(state, 1, t=0.1)
    slot = state.start_call(0, "call_a", None, 0.1)
    wire_event(state, 4, t=0.4)
    state.identify(slot, None, "get_weather")
    assert (slot.call_id, slot.name) == ("call_a", "get_weather")
    assert (slot.id_event, slot.name_event, slot.named_at) == (1, 4, 0.4)
    assert state.drain()[-1] == CallIdentified(0, "call_a", "get_weather")


def test_identify_keeps_the_stamps_of_what_was_known_first(state: StreamState) -> None:
    wire_event(state, 1, t=0.1)
    slot = state.start_call(0, "call_a", "f", 0.1)
    wire_event(state, 5, t=0.5)
    state.identify(slot, "call_b", "g")
    assert (slot.call_id, slot.name) == ("call_b", "g")
    assert (slot.id_event, slot.name_event, slot.named_at) == (1, 1, 0.1)


# -- fragments ----------------------------------------------------------------------------


def test_fragments_are_appended_never_assigned(state: StreamState) -> None:
    slot = call_with(state, '{"ci', 'ty": "Par', 'is"}')
    assert slot.fragments() == ['{"ci', 'ty": "Par', 'is"}']
    assert slot.arguments_raw == '{"city": "Paris"}'
    assert (slot.fragment_count, slot.length) == (3, len('{"city": "Paris"}'))
    assert list(slot.pieces.events) == [1, 2, 3]


def test_each_fragment_is_told_with_its_number_event_and_time(state: StreamState) -> None:
    slot = state.start_call(0, "call_a", "f", 0.0)
    state.drain()
    state.append_fragment(slot, '{"a"', 7, 0.7)
    state.append_fragment(slot, ": 1}", 8, 0.8)
    assert state.drain() == [
        FragmentAppended(0, 1, '{"a"', 7, 0.7),
        FragmentAppended(0, 2, ": 1}", 8, 0.8),
    ]


def test_an_empty_fragment_is_no_fragment(state: StreamState) -> None:
    slot = call_with(state, "{", "", "}")
    assert slot.fragments() == ["{", "}"]
    assert len(of_type(state.drain(), FragmentAppended)) == 2


def test_without_fragment_events_the_fragments_are_still_kept() -> None:
    state = StreamState("test", "openai-chat", fragment_events=False)
    slot = call_with(state, "{", "}")
    assert slot.fragments() == ["{", "}"]
    assert of_type(state.drain(), FragmentAppended) == []


def test_parallel_calls_fill_their_own_slots(state: StreamState) -> None:
    first = state.start_call(0, "call_a", "f", 0.0)
    second = state.start_call(1, "call_b", "g", 0.0)
    for slot, fragment in [(first, '{"a"'), (second, '{"b"'), (first, ": 1}"), (second, ": 2}")]:
        state.append_fragment(slot, fragment, 1, 0.0)
    assert (first.arguments_raw, second.arguments_raw) == ('{"a": 1}', '{"b": 2}')
    state.finish("tool_calls", "finish_reason")
    assert (first.arguments, second.arguments) == ({"a": 1}, {"b": 2})


def test_a_utf16_pair_cut_between_fragments_is_one_character(state: StreamState) -> None:
    slot = call_with(state, '{"e": "\ud83d', '\ude00"}')
    assert slot.arguments_raw == '{"e": "😀"}'


# -- lanes ---------------------------------------------------------------------------------


def test_the_next_free_lane_is_the_lowest_not_taken(state: StreamState) -> None:
    assert state.next_free_index() == 0
    state.start_call(0, None, None, 0.0)
    state.start_call(2, None, None, 0.0)
    assert state.next_free_index() == 1
    state.start_call(1, None, None, 0.0)
    assert state.next_free_index() == 3


# -- the finish: one parse -----------------------------------------------------------------


def test_arguments_are_not_parsed_before_the_finish(state: StreamState) -> None:
    slot = call_with(state, '{"a": 1}')
    assert (slot.parsed, slot.arguments, slot.settled_event) == (False, None, None)


def test_the_finish_parses_every_call_once_in_lane_order(state: StreamState) -> None:
    call_with(state, '{"b": 2}', index=1)
    call_with(state, '{"a": 1}', index=0)
    state.drain()
    wire_event(state, 9, t=0.9)
    state.finish("tool_calls", "finish_reason")
    assert state.drain() == [
        FinishSeen("tool_calls", "finish_reason"),
        CallParsed(0, {"a": 1}, None, None),
        CallParsed(1, {"b": 2}, None, None),
    ]
    assert (state.finish_at, state.finish_event, state.finish_trigger) == (0.9, 9, "finish_reason")
    assert state.calls[0].settled_event == 9

    wire_event(state, 10)
    state.finish("stop", "[DONE]")
    assert state.drain() == []
    assert (state.finish_reason, state.finish_trigger, state.finish_event) == (
        "tool_calls",
        "finish_reason",
        9,
    )
    state.end()
    assert of_type(state.drain(), CallParsed) == []


@pytest.mark.parametrize("raw", ["", "  \n"])
def test_empty_arguments_parse_as_an_empty_object(state: StreamState, raw: str) -> None:
    slot = state.start_call(0, "call_a", "f", 0.0)
    state.append_fragment(slot, raw, 1, 0.0)
    state.finish("tool_calls", "finish_reason")
    assert (slot.parsed, slot.arguments, slot.error) == (True, {}, None)
    assert state.anomalies == []


def test_arguments_that_do_not_parse_keep_the_error_and_where(state: StreamState) -> None:
    slot = call_with(state, '{"a": tru}')
    state.finish("tool_calls", "finish_reason")
    assert slot.parsed and slot.arguments is None
    assert slot.error is not None and slot.error.startswith("invalid JSON arguments: ")
    assert slot.error_position == 6
    assert not state.all_calls_parsed


def test_the_server_s_final_arguments_are_what_is_parsed(state: StreamState) -> None:
    slot = call_with(state, '{"a": 1')
    slot.final_raw = '{"a": 1}'
    state.finish("completed", "response end")
    assert slot.arguments == {"a": 1}
    assert slot.arguments_raw == '{"a": 1'


@pytest.mark.parametrize(("raw", "kind"), [("[1]", "list"), ("null", "null"), ("3", "int")])
def test_arguments_that_are_not_an_object_are_named(
    state: StreamState, raw: str, kind: str
) -> None:
    call_with(state, raw)
    state.finish("tool_calls", "finish_reason")
    (anomaly,) = state.anomalies
    assert (anomaly.kind, anomaly.index, anomaly.event) == ("arguments-not-object", 0, 1)
    assert f"parse to {kind}, not an object" in anomaly.detail


def test_a_reason_known_before_the_trigger_is_kept(state: StreamState) -> None:
    wire_event(state, 4)
    state.set_finish_reason("tool_use")
    wire_event(state, 5)
    state.finish(None, "message_stop")
    assert (state.finish_reason, state.finish_reason_event) == ("tool_use", 4)
    assert state.drain() == [FinishSeen(None, "message_stop")]


def test_a_reason_after_the_trigger_fills_a_missing_one(state: StreamState) -> None:
    wire_event(state, 2)
    state.finish(None, "[DONE]")
    wire_event(state, 3)
    state.finish("stop", "finish_reason")
    assert (state.finish_reason, state.finish_reason_event, state.finish_trigger) == (
        "stop",
        3,
        "[DONE]",
    )


def test_a_fragment_after_the_finish_is_named_and_parsed_again_at_the_end(
    state: StreamState,
) -> None:
    slot = call_with(state, '{"a": 1')
    state.finish("tool_calls", "finish_reason")
    assert slot.error is not None
    wire_event(state, 7)
    state.append_fragment(slot, "}", 7, 0.0)
    assert (slot.parsed, slot.settled_event) == (False, None)
    (anomaly,) = state.anomalies
    assert (anomaly.kind, anomaly.index, anomaly.event) == ("fragment-after-finish", 0, 7)
    assert anomaly.detail == "fragment 2 arrived after the finish; parsed again at the end"
    state.end()
    assert (slot.arguments, slot.error, slot.settled_event) == ({"a": 1}, None, 8)


def test_a_call_after_the_finish_is_named(state: StreamState) -> None:
    wire_event(state, 2)
    state.finish("tool_calls", "finish_reason")
    wire_event(state, 3)
    state.start_call(0, "call_late", "f", 0.0)
    (anomaly,) = state.anomalies
    assert (anomaly.kind, anomaly.index, anomaly.event) == ("call-after-finish", 0, 3)


# -- the end ---------------------------------------------------------------------------------


def test_a_stream_that_ends_before_the_finish_keeps_the_partial_buffers(
    state: StreamState,
) -> None:
    slot = call_with(state, '{"city": ', '"Par')
    state.end(trailing="data: {")
    assert state.status is Status.TRUNCATED
    assert slot.arguments_raw == '{"city": "Par'
    assert (slot.parsed, slot.arguments, slot.error) == (False, None, TRUNCATED_CALL_ERROR)
    assert slot.settled_event == state.end_event == 3
    assert state.drain()[-1] == StreamEnded(Status.TRUNCATED, None, None, "data: {")


def test_a_stream_that_failed_marks_its_calls_interrupted(state: StreamState) -> None:
    slot = call_with(state, '{"a"')
    state.fail("error in stream: overloaded")
    state.fail("a later error")
    state.end()
    assert (state.status, state.error) == (Status.ERROR, "error in stream: overloaded")
    assert (slot.arguments_raw, slot.error) == ('{"a"', INTERRUPTED_CALL_ERROR)


def test_a_finished_stream_parses_at_the_end_what_is_still_pending(state: StreamState) -> None:
    state.finish("tool_calls", "finish_reason")
    slot = call_with(state, "{}")
    state.end()
    assert state.status is Status.FINISHED
    assert (slot.parsed, slot.arguments) == (True, {})
    assert state.all_calls_parsed and state.all_calls_valid


def test_after_the_end_everything_is_stamped_with_the_event_after_the_last(
    state: StreamState,
) -> None:
    wire_event(state, 5)
    state.end()
    assert (state.now, state.end_event) == (6, 6)
    assert state.ended


def test_two_calls_merged_into_one_slot_are_named_when_the_stream_is_cut(
    state: StreamState,
) -> None:
    call_with(state, '{"a": 1', "}", '{"b"', ": 2")
    state.end()
    (anomaly,) = state.anomalies
    assert (anomaly.kind, anomaly.index, anomaly.event, anomaly.count) == (
        "fragment-after-complete-json",
        0,
        3,
        2,
    )
    assert anomaly.detail.startswith("fragment 3 arrived after the arguments already formed")


def test_two_calls_merged_into_one_slot_are_named_at_the_finish(state: StreamState) -> None:
    slot = call_with(state, '{"a": 1}', ' {"b": 2}')
    state.finish("tool_calls", "finish_reason")
    assert slot.error is not None
    assert kinds(state) == ["fragment-after-complete-json"]
    assert state.anomalies[0].event == 2


def test_half_a_utf16_pair_left_at_the_end_is_named(state: StreamState) -> None:
    state.append_text(Channel.CONTENT, "smile \ud83d")
    call_with(state, '{"e": "\ude00"}')
    state.finish("tool_calls", "finish_reason")
    state.end()
    assert [(a.kind, a.index) for a in state.anomalies] == [
        ("lone-surrogate", None),
        ("lone-surrogate", 0),
    ]
    assert "U+D83D at char 6" in state.anomalies[0].detail


def test_arguments_are_looked_at_for_surrogates_whatever_their_bytes(state: StreamState) -> None:
    """A pair cut between fragments is rejoined; Hangul (UTF-8 also beginning 0xED)
    and emoji are left alone; a lone half spelled as an escape in ASCII text, which
    no byte of the fragments shows, is still named."""
    cut = state.start_call(0, None, "a", 0.0)
    state.append_fragment(cut, '{"e": "\ud83d', 1, 0.0)
    state.append_fragment(cut, '\ude00 한 🚀"}', 2, 0.0)
    plain = state.start_call(1, None, "b", 0.0)
    state.append_fragment(plain, '{"e": "한 🚀"}', 3, 0.0)
    escaped = state.start_call(2, None, "c", 0.0)
    state.append_fragment(escaped, '{"e": "\\ud83d"}', 4, 0.0)
    state.finish("tool_calls", "finish_reason")
    state.end()
    assert cut.arguments_raw == '{"e": "😀 한 🚀"}' and cut.arguments == {"e": "😀 한 🚀"}
    assert plain.arguments_raw == '{"e": "한 🚀"}'
    assert [(a.kind, a.index) for a in state.anomalies] == [("lone-surrogate", 2)]


# -- declared tools ------------------------------------------------------------------------

TOOLS = (
    '{"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": '
    '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}'
)


def test_a_call_to_an_undeclared_tool_is_named(state: StreamState) -> None:
    state.declare_tools(declared_tools(TOOLS))
    slot = state.start_call(0, "call_a", "get_time", 0.0)
    state.append_fragment(slot, "{}", 1, 0.0)
    state.finish("tool_calls", "finish_reason")
    (anomaly,) = state.anomalies
    assert (anomaly.kind, anomaly.index) == ("unknown-tool", 0)
    assert "'get_time'" in anomaly.detail and "'get_weather'" in anomaly.detail


def test_arguments_the_schema_rejects_are_named(state: StreamState) -> None:
    state.declare_tools(declared_tools(TOOLS))
    slot = state.start_call(0, "call_a", "get_weather", 0.0)
    state.append_fragment(slot, '{"city": 5}', 1, 0.0)
    state.finish("tool_calls", "finish_reason")
    assert kinds(state) == ["schema-mismatch"]
    assert [error.path for error in slot.schema_errors] == ["$.city"]
    assert state.all_calls_parsed and not state.all_calls_valid


def test_arguments_the_schema_accepts_are_valid(state: StreamState) -> None:
    state.declare_tools(declared_tools(TOOLS))
    slot = state.start_call(0, "call_a", "get_weather", 0.0)
    state.append_fragment(slot, '{"city": "Paris"}', 1, 0.0)
    state.finish("tool_calls", "finish_reason")
    assert state.anomalies == [] and slot.schema_errors == []
    assert state.all_calls_valid


def test_a_declaration_that_cannot_be_used_is_named(state: StreamState) -> None:
    state.declare_tools(declared_tools('{"tools": [5]}'))
    assert kinds(state) == ["tool-declaration-invalid"]


# -- anomalies -------------------------------------------------------------------------------


def test_a_repeated_anomaly_is_counted_not_listed_again(state: StreamState) -> None:
    wire_event(state, 1)
    state.note("id-repeated", 0, "first", 1)
    wire_event(state, 2)
    state.note("id-repeated", 0, "second", 2)
    state.note("id-repeated", 1, "other lane", 2)
    first, other = state.anomalies
    assert (first.detail, first.event, first.count) == ("first", 1, 2)
    assert (first.count_upto(1), first.count_upto(2)) == (1, 2)
    assert state.call_anomalies(0) == [first]
    assert state.call_anomalies(1) == [other]
    assert state.call_anomalies(2) == []
    recorded = of_type(state.drain(), AnomalyRecorded)
    assert [event.anomaly for event in recorded] == [first, other]


# -- text ----------------------------------------------------------------------------------


def test_each_channel_keeps_its_own_text(state: StreamState) -> None:
    wire_event(state, 1, t=0.1)
    state.append_text(Channel.REASONING, "Think. ")
    wire_event(state, 2, t=0.2)
    state.append_text(Channel.CONTENT, "Hello")
    state.append_text(Channel.CONTENT, "")
    wire_event(state, 3, t=0.3)
    state.append_text(Channel.CONTENT, " world")
    state.append_text(Channel.REFUSAL, "No.")
    assert (state.text, state.reasoning, state.refusal) == ("Hello world", "Think. ", "No.")
    assert state.channel_text(Channel.CONTENT, upto=2) == "Hello"
    assert (state.first_text_at, state.last_text_at, state.text_deltas) == (0.2, 0.3, 2)
    assert of_type(state.drain(), TextAppended)[0] == TextAppended(Channel.REASONING, "Think. ")


def test_a_state_not_live_tells_no_text() -> None:
    state = StreamState("test", "openai-chat", live=False)
    state.append_text(Channel.CONTENT, "Hello")
    assert state.text == "Hello"
    assert state.drain() == []
