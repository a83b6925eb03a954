"""The core's and the sources' records (plain classes with __slots__) behave as the
dataclasses they replaced: == field by field and only within one class, a repr
naming every field, a hash for those that were frozen, none for the others, and a
pickle (the proxy sends source items between processes that way)."""

from __future__ import annotations

import pickle

import pytest

from toolstream_tui.core.events import CallParsed, CallStarted, FinishSeen, Status, StreamEnded
from toolstream_tui.core.schema import DeclaredTools, SchemaError
from toolstream_tui.core.state import CallSlot, StreamState
from toolstream_tui.core.timing import Gap
from toolstream_tui.sources.base import BodyChunk, RequestSent, ResponseHead, TransportError


def test_records_are_equal_field_by_field_and_only_within_one_class() -> None:
    started = CallStarted(0, "call_1", "get_weather", 0.5)
    assert started == CallStarted(0, "call_1", "get_weather", 0.5, None)
    assert started != CallStarted(0, "call_1", "get_weather", 0.5, "fc_1")
    assert started != CallStarted(1, "call_1", "get_weather", 0.5)
    assert FinishSeen("stop", "finish_reason") != ("stop", "finish_reason")
    parsed = CallParsed(0, {"city": "Paris"}, None, None)
    assert parsed == CallParsed(0, {"city": "Paris"}, None, None)
    assert parsed != CallParsed(0, {"city": "Rome"}, None, None)


def test_defaults_are_fresh_for_each_record() -> None:
    first, second = CallSlot(0, None, None, 0.0), CallSlot(1, None, None, 0.0)
    first.schema_errors.append(SchemaError("$", "wrong", "type"))
    assert second.schema_errors == []
    assert first.pieces is not second.pieces
    assert StreamState("a", "chat").calls is not StreamState("a", "chat").calls
    assert ResponseHead(200, "text/event-stream").headers == {}


def test_a_repr_names_every_field() -> None:
    shown = repr(StreamEnded(Status.FINISHED, "stop", None))
    assert shown.startswith("StreamEnded(")
    for part in ("status=", "finish_reason='stop'", "error=None", "trailing=''"):
        assert part in shown


def test_records_that_were_frozen_hash_by_value_and_the_others_do_not_hash() -> None:
    assert hash(Gap(1.0, 2.0, 3)) == hash(Gap(1.0, 2.0, 3))
    assert len({SchemaError("$", "m", "type"), SchemaError("$", "m", "type")}) == 1
    with pytest.raises(TypeError):
        hash(CallStarted(0, None, None, 0.0))


def test_declared_tools_compare_by_what_was_declared_not_by_what_was_compiled() -> None:
    compiled = DeclaredTools({"f": {"type": "object"}}, [])
    compiled.check("f", {})  # compiles and keeps the validator
    assert compiled == DeclaredTools({"f": {"type": "object"}}, [])
    assert "_validators" not in repr(compiled)


@pytest.mark.parametrize(
    "item",
    [
        RequestSent("POST", "http://127.0.0.1/v1", {"accept": "*/*"}, "{}"),
        ResponseHead(200, "text/event-stream", "OK", "http://127.0.0.1/", {}, ("http://a/",), 1.5),
        BodyChunk(b"data: {}\n\n", 0.25),
        TransportError("the connection was reset", 2.0, "transport"),
    ],
)
def test_source_items_survive_a_pickle(item: object) -> None:
    assert pickle.loads(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)) == item


def test_a_request_is_written_to_a_recording_as_its_fields() -> None:
    request = RequestSent("POST", "http://127.0.0.1/v1", {"accept": "*/*"}, None)
    assert request.as_dict() == {
        "method": "POST",
        "url": "http://127.0.0.1/v1",
        "headers": {"accept": "*/*"},
        "body": None,
    }
