"""The OpenAI Responses dialect driven through StreamSession: one rule or anomaly
kind per focused test on small hand-built streams, then a hypothesis round-trip
(any JSON arguments, any fragments interleaved across calls, any byte-level writes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import CHARS, OBJECTS, TEXT, Run, cut, run, serialise, writes
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.events import (
    CallParsed,
    FinishSeen,
    FragmentAppended,
    StreamEvent,
    TextAppended,
    WireEvent,
)
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.state import INTERRUPTED_CALL_ERROR, TRUNCATED_CALL_ERROR

# -- payload builders -----------------------------------------------------------


def response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "output": [], **extra}


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": response("in_progress")}


def in_progress() -> dict[str, Any]:
    return {"type": "response.in_progress", "response": response("in_progress")}


def fc_item(
    item_id: str, call_id: str, name: str, arguments: str = "", status: str = "in_progress"
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def added(output_index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": output_index, "item": item}


def add_call(
    output_index: int, item_id: str = "fc_1", call_id: str = "call_1", name: str = "get_weather"
) -> dict[str, Any]:
    return added(output_index, fc_item(item_id, call_id, name))


def add_message(output_index: int, item_id: str = "msg_1") -> dict[str, Any]:
    item = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    return added(output_index, item)


def add_reasoning(output_index: int, item_id: str = "rs_1") -> dict[str, Any]:
    return added(output_index, {"type": "reasoning", "id": item_id, "summary": []})


def args_delta(output_index: int | None, item_id: str | None, text: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": "response.function_call_arguments.delta", "delta": text}
    if item_id is not None:
        payload["item_id"] = item_id
    if output_index is not None:
        payload["output_index"] = output_index
    return payload


def args_done(output_index: int, item_id: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "item_id": item_id,
        "output_index": output_index,
        "arguments": arguments,
    }


def item_done(output_index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": output_index, "item": item}


def call_done(
    output_index: int,
    arguments: str,
    item_id: str = "fc_1",
    call_id: str = "call_1",
    name: str = "get_weather",
) -> dict[str, Any]:
    return item_done(output_index, fc_item(item_id, call_id, name, arguments, "completed"))


def text_event(kind: str, output_index: int, item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": f"response.{kind}.delta",
        "item_id": item_id,
        "output_index": output_index,
        "content_index": 0,
        "delta": text,
    }


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    """`response.completed`; the real API restates every output item in `output`."""
    return {"type": "response.completed", "response": response("completed", output=list(output))}


def message_item(item_id: str, *texts: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []} for text in texts]
    return {"type": "message", "id": item_id, "role": "assistant", "content": content}


def text_done(output_index: int, item_id: str, text: str, content_index: int = 0) -> dict[str, Any]:
    return {
        "type": "response.output_text.done",
        "item_id": item_id,
        "output_index": output_index,
        "content_index": content_index,
        "text": text,
    }


def incomplete(reason: str | None = "max_output_tokens") -> dict[str, Any]:
    details = {"incomplete_details": {"reason": reason}} if reason else {}
    return {"type": "response.incomplete", "response": response("incomplete", **details)}


def failed(message: str = "The model failed.") -> dict[str, Any]:
    error = {"code": "server_error", "message": message}
    return {"type": "response.failed", "response": response("failed", error=error)}


def error_event(code: str = "rate_limit_exceeded", message: str = "Slow down") -> dict[str, Any]:
    return {"type": "error", "code": code, "message": message, "param": None}


def numbered(payloads: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
    """Each payload with a `sequence_number`, counting from `start`."""
    return [{"type": p["type"], "sequence_number": start + n, **p} for n, p in enumerate(payloads)]


# -- running a stream ----------------------------------------------------------------


def run_sse(*payloads: dict[str, Any] | tuple[str, dict[str, Any]], **options: Any) -> Run:
    event_lines = options.pop("event_lines", True)
    return run(sse(*payloads, named=event_lines), **options)


ARGS_1 = '{"city": "Tokyo"}'
ARGS_2 = '{"timezone": "Asia/Tokyo"}'

TEXTBOOK = numbered(
    [
        created(),
        in_progress(),
        add_message(0, "msg_0"),
        text_event("output_text", 0, "msg_0", "Checking "),
        text_event("output_text", 0, "msg_0", "both."),
        add_call(1, "fc_a", "call_a", "get_weather"),
        add_call(2, "fc_b", "call_b", "get_time"),
        args_delta(1, "fc_a", '{"ci'),
        args_delta(2, "fc_b", '{"time'),
        args_delta(1, "fc_a", 'ty": "To'),
        args_delta(2, "fc_b", 'zone": "Asi'),
        args_delta(1, "fc_a", 'kyo"}'),
        args_delta(2, "fc_b", 'a/Tokyo"}'),
        args_done(1, "fc_a", ARGS_1),
        call_done(1, ARGS_1, "fc_a", "call_a", "get_weather"),
        args_done(2, "fc_b", ARGS_2),
        call_done(2, ARGS_2, "fc_b", "call_b", "get_time"),
        completed(),
    ]
)


# -- the textbook stream ----------------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 6])
@pytest.mark.parametrize("event_lines", [True, False], ids=["event-lines", "data-only"])
def test_textbook_stream_finishes_clean(pieces: int | None, event_lines: bool) -> None:
    r = run_sse(*TEXTBOOK, pieces=pieces, event_lines=event_lines)
    assert r.report["dialect"] == "openai-responses"
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "completed"
    assert r.report["text"] == "Checking both."
    assert r.report["anomalies"] == []
    assert r.code == 0
    assert r.calls == [
        {
            "index": 1,
            "id": "call_a",
            "item_id": "fc_a",
            "name": "get_weather",
            "arguments_raw": ARGS_1,
            "arguments": {"city": "Tokyo"},
            "error": None,
            "error_position": None,
            "fragments": 3,
            "schema_errors": [],
        },
        {
            "index": 2,
            "id": "call_b",
            "item_id": "fc_b",
            "name": "get_time",
            "arguments_raw": ARGS_2,
            "arguments": {"timezone": "Asia/Tokyo"},
            "error": None,
            "error_position": None,
            "fragments": 3,
            "schema_errors": [],
        },
    ]


def test_explicit_dialect_gives_the_same_report_as_detection() -> None:
    detected = run_sse(*TEXTBOOK).report
    assert run_sse(*TEXTBOOK, dialect="openai-responses").report == detected


# -- lanes and identity --------------------------------------------------------------------


def test_lane_is_the_output_index() -> None:
    r = run_sse(
        created(),
        add_reasoning(0),
        text_event("reasoning_summary_text", 0, "rs_1", "think"),
        add_message(1),
        add_call(2, "fc_x", "call_x", "f"),
        args_delta(2, "fc_x", "{}"),
        completed(),
    )
    assert [(c["index"], c["id"], c["item_id"]) for c in r.calls] == [(2, "call_x", "fc_x")]
    assert sorted(r.session.state.calls) == [2]
    assert r.kinds == []


@pytest.mark.parametrize(
    ("indices", "lane", "detail"),
    [
        ([0, 1, 4], 4, "output_index 4 after output_index 1"),
        ([2], 2, "output_index 2 as the first output_index"),
    ],
)
def test_an_output_index_that_skips_a_number_is_an_index_gap(
    indices: list[int], lane: int, detail: str
) -> None:
    payloads = [created()]
    for output_index in indices:
        item_id = f"fc_{output_index}"
        payloads += [add_call(output_index, item_id, f"call_{output_index}", "f")]
        payloads += [args_delta(output_index, item_id, "{}")]
    r = run_sse(*payloads, completed())
    assert [c["index"] for c in r.calls] == indices
    assert r.kinds == ["index-gap"]
    assert (r.anomaly("index-gap")["index"], r.anomaly("index-gap")["detail"]) == (lane, detail)
    assert r.code == 0


def test_an_output_index_gap_before_a_message_is_stream_wide() -> None:
    r = run_sse(created(), add_message(1), completed())
    assert (r.anomaly("index-gap")["index"], r.kinds) == (None, ["index-gap"])


def test_id_is_the_call_id_and_item_id_is_the_fc_id() -> None:
    r = run_sse(created(), add_call(0, "fc_abc", "call_xyz", "f"), completed())
    assert (r.call(0)["id"], r.call(0)["item_id"], r.call(0)["name"]) == (
        "call_xyz",
        "fc_abc",
        "f",
    )


@pytest.mark.parametrize("ref", ["both", "item_id", "output_index"])
def test_deltas_find_their_item_by_item_id_or_output_index(ref: str) -> None:
    item_id = None if ref == "output_index" else "fc_b"
    output_index = None if ref == "item_id" else 1
    r = run_sse(
        created(),
        add_call(0, "fc_a", "call_a", "a"),
        add_call(1, "fc_b", "call_b", "b"),
        args_delta(output_index, item_id, '{"b"'),
        args_delta(0, "fc_a", '{"a": 0}'),
        args_delta(output_index, item_id, ": 1}"),
        completed(),
    )
    assert [(c["index"], c["arguments"]) for c in r.calls] == [(0, {"a": 0}), (1, {"b": 1})]
    assert r.kinds == []


# -- ids that change between the events of one item (GitHub Copilot) -------------------------
# Copilot gives an item a new id on every event, output_index staying; the official
# SDK routes by output_index (and raises at output_item.done, whose id is not the
# added one: see test_sdk_parity). The final response repeats output_item.done's ids.


def rotating(final: bool = True, done: bool = True) -> list[dict[str, Any]]:
    """Text and a call, every event of each item under a new id (`final`: the
    response restates both items; `done`: the .done events are sent)."""
    args = '{"player": "player2"}'
    final_message = message_item("msg_g", "Rolling the die.")
    final_call = fc_item("fc_e", "call_1", "rollDie", args, "completed")
    dones = [
        text_done(0, "msg_e", "Rolling the die."),
        item_done(0, final_message),
        args_done(1, "fc_d", args),
        item_done(1, final_call),
    ]
    payloads = [
        created(),
        add_message(0, "msg_a"),
        text_event("output_text", 0, "msg_b", "Rolling"),
        text_event("output_text", 0, "msg_c", " the die."),
        add_call(1, "fc_a", "call_1", "rollDie"),
        args_delta(1, "fc_b", '{"player": '),
        args_delta(1, "fc_c", '"player2"}'),
        *(dones if done else []),
        completed(final_message, final_call) if final else completed(),
    ]
    return numbered(payloads)


@pytest.mark.parametrize(
    ("final", "done"),
    [(True, True), (False, True), (True, False)],
    ids=["all", "no-final", "no-done"],
)
def test_ids_changing_on_every_event_correlate_by_output_index(final: bool, done: bool) -> None:
    r = run_sse(*rotating(final, done))
    assert r.report["text"] == "Rolling the die."
    assert "text_streamed" not in r.report
    assert [(c["index"], c["id"], c["item_id"], c["arguments"]) for c in r.calls] == [
        (1, "call_1", "fc_a", {"player": "player2"})
    ]
    assert "arguments_streamed" not in r.call(1)
    changed = [(a["index"], a["count"], a["event"]) for a in r.report["anomalies"]]
    assert changed == [(None, 1, 3), (1, 1, 6)]  # once per item, at its first new id
    assert r.kinds == ["item-id-changed", "item-id-changed"]
    assert r.code == 0


def test_an_item_id_change_says_which_ids_and_how_the_item_was_matched() -> None:
    r = run_sse(*rotating())
    details = [a["detail"] for a in r.report["anomalies"]]
    assert details == [
        "item 'msg_a' is 'msg_b' in response.output_text.delta at output_index 0; "
        "matched by output_index",
        "item 'fc_a' is 'fc_b' in response.function_call_arguments.delta at output_index 1; "
        "matched by output_index",
    ]


def test_only_output_item_done_changing_the_id_is_noted_and_the_final_item_found_by_it() -> None:
    args = '{"a": 1}'
    final_call = fc_item("fc_new", "call_1", "f", args, "completed")
    r = run_sse(
        created(),
        add_call(0, "fc_old", "call_1", "f"),
        args_delta(0, "fc_old", args),
        item_done(0, final_call),
        completed(final_call),
    )
    assert [(c["index"], c["item_id"], c["arguments"]) for c in r.calls] == [
        (0, "fc_old", {"a": 1})
    ]
    assert r.kinds == ["item-id-changed"]
    assert "response.output_item.done at output_index 0" in r.anomaly("item-id-changed")["detail"]


def test_a_final_call_with_a_new_id_but_the_same_call_id_is_that_call() -> None:
    """The official SDK tells function calls apart by call_id."""
    r = run_sse(
        created(),
        add_call(0, "fc_a", "call_a", "f"),
        args_delta(0, "fc_a", '{"n": 1}'),
        completed(fc_item("fc_z", "call_a", "f", '{"n": 1}', "completed")),
    )
    assert [(c["index"], c["item_id"], c["arguments"]) for c in r.calls] == [(0, "fc_a", {"n": 1})]
    assert r.kinds == ["item-id-changed"]
    assert r.anomaly("item-id-changed")["detail"].endswith("matched by its position (0)")


def test_a_new_id_at_an_output_index_never_added_is_still_an_item_of_its_own() -> None:
    r = run_sse(created(), add_call(0, "fc_a", "call_a", "f"), args_delta(1, "fc_b", "{}"),
                completed())  # fmt: skip
    assert [c["index"] for c in r.calls] == [0, 1]
    assert r.kinds == ["delta-without-item"]


def test_an_id_for_an_item_added_without_one_is_no_change() -> None:
    item = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}
    r = run_sse(created(), added(0, item), args_delta(0, "fc_1", "{}"), completed())
    assert (r.call(0)["arguments"], r.kinds) == ({}, [])


# -- arguments -----------------------------------------------------------------------------


def test_arguments_are_the_concatenated_deltas() -> None:
    parts = ['{"q', 'uery": "a', "\\u00e9 \\ud83d", '\\ude00", "n": [1, ', "2]}"]
    r = run_sse(created(), add_call(0), *(args_delta(0, "fc_1", p) for p in parts), completed())
    assert r.call(0)["arguments_raw"] == "".join(parts)
    assert r.call(0)["arguments"] == {"query": "aé 😀", "n": [1, 2]}
    assert r.session.state.calls[0].fragments() == parts


def test_integers_beyond_64_bits_keep_their_exact_value() -> None:
    raw = '{"big": 18446744073709551616, "neg": -9223372036854775809, "f": 0.1}'
    r = run_sse(
        created(), add_call(0), args_delta(0, "fc_1", raw[:25]), args_delta(0, "fc_1", raw[25:]),
        completed(),
    )  # fmt: skip
    args = r.call(0)["arguments"]
    assert args == {"big": 2**64, "neg": -(2**63) - 1, "f": 0.1}
    assert type(args["big"]) is int
    assert type(args["neg"]) is int


def test_when_only_done_carries_the_arguments_they_are_used() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_done(0, "fc_1", '{"city": "Lima"}'),
        call_done(0, '{"city": "Lima"}'),
        completed(),
    )
    assert r.call(0)["arguments_raw"] == '{"city": "Lima"}'
    assert r.call(0)["arguments"] == {"city": "Lima"}
    assert r.call(0)["fragments"] == 1
    assert r.kinds == []


def test_when_only_output_item_done_carries_the_arguments_they_are_used() -> None:
    r = run_sse(created(), add_call(0), call_done(0, '{"city": "Lima"}'), completed())
    assert r.call(0)["arguments"] == {"city": "Lima"}
    assert r.kinds == []


def test_done_equal_to_the_deltas_is_clean() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a"'),
        args_delta(0, "fc_1", ": 1}"),
        args_done(0, "fc_1", '{"a": 1}'),
        call_done(0, '{"a": 1}'),
        completed(),
    )
    assert r.call(0)["fragments"] == 2
    assert r.kinds == []


def test_done_differing_from_the_deltas_wins_and_the_deltas_stay_visible() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"city": "Kyo'),
        args_delta(0, "fc_1", 'to"}'),
        args_done(0, "fc_1", '{"city": "Osaka"}'),
        call_done(0, '{"city": "Osaka"}'),
        completed(fc_item("fc_1", "call_1", "get_weather", '{"city": "Osaka"}', "completed")),
    )
    assert r.call(0)["arguments"] == {"city": "Osaka"}
    assert r.call(0)["arguments_raw"] == '{"city": "Osaka"}'
    assert r.call(0)["arguments_streamed"] == '{"city": "Kyoto"}'
    assert r.call(0)["fragments"] == 2
    a = r.anomaly("done-mismatch")
    assert (a["index"], a["count"]) == (0, 1)
    assert a["detail"].startswith(
        "arguments: function_call_arguments.done differs from the joined deltas at char 10: "
    )
    assert '\'{"city": "Osaka"}\' against \'{"city": "Kyoto"}\'' in a["detail"]
    assert r.kinds == ["done-mismatch"]
    assert r.code == 0


def test_a_lost_delta_is_repaired_by_the_final_word() -> None:
    """A delta lost on the way: the deltas join to broken JSON, but `.done`,
    `output_item.done` and `response.completed` all carry the full arguments (the
    official SDK returns the right call; so does the report)."""
    full = '{"city":"Nairobi"}'
    r = run_sse(
        *numbered(
            [
                created(),
                add_call(0),
                args_delta(0, "fc_1", '{"ci'),
                args_delta(0, "fc_1", 'irobi"}'),  # 'ty":"Na' never arrived
                args_done(0, "fc_1", full),
                call_done(0, full),
                completed(fc_item("fc_1", "call_1", "get_weather", full, "completed")),
            ]
        )
    )
    call = r.call(0)
    assert (call["arguments"], call["error"]) == ({"city": "Nairobi"}, None)
    assert call["arguments_raw"] == full
    assert call["arguments_streamed"] == '{"ciirobi"}'
    assert call["fragments"] == 2
    a = r.anomaly("done-mismatch")
    assert (a["index"], a["count"], a["event"]) == (0, 1, 5)
    assert "differs from the joined deltas at char 4" in a["detail"]
    assert r.kinds == ["done-mismatch"]
    assert r.code == 0


def test_only_response_completed_restating_the_arguments_is_enough() -> None:
    full = '{"city":"Nairobi"}'
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"ci'),
        args_delta(0, "fc_1", 'irobi"}'),
        completed(fc_item("fc_1", "call_1", "get_weather", full, "completed")),
    )
    assert r.call(0)["arguments"] == {"city": "Nairobi"}
    assert (
        "response.completed differs from the joined deltas" in r.anomaly("done-mismatch")["detail"]
    )
    assert r.code == 0


def test_output_item_done_differing_from_the_arguments_done_wins_and_is_reported() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a": 1}'),
        args_done(0, "fc_1", '{"a": 1}'),
        call_done(0, '{"a": 2}'),
        completed(),
    )
    assert r.call(0)["arguments"] == {"a": 2}
    assert r.call(0)["arguments_streamed"] == '{"a": 1}'
    assert r.kinds == ["done-mismatch"]
    assert r.anomaly("done-mismatch")["detail"].startswith(
        "arguments: output_item.done differs from function_call_arguments.done at char 6"
    )


def test_response_completed_has_the_last_word_over_output_item_done() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a": 1}'),
        call_done(0, '{"a": 1}'),
        completed(fc_item("fc_1", "call_1", "get_weather", '{"a": 3}', "completed")),
    )
    assert r.call(0)["arguments"] == {"a": 3}
    assert (
        "response.completed differs from output_item.done" in r.anomaly("done-mismatch")["detail"]
    )


def test_response_completed_matches_its_items_by_id_not_position() -> None:
    r = run_sse(
        created(),
        add_message(0, "msg_0"),
        add_call(1, "fc_a", "call_a", "f"),
        args_delta(1, "fc_a", '{"n": 1}'),
        completed(
            fc_item("fc_a", "call_a", "f", '{"n": 1}', "completed"), message_item("msg_0", "")
        ),
    )
    assert r.call(1)["arguments"] == {"n": 1}
    assert r.kinds == []


def test_a_final_item_with_another_id_at_a_streamed_items_position_is_not_that_item() -> None:
    r = run_sse(
        created(),
        add_call(0, "fc_a", "call_a", "f"),
        args_delta(0, "fc_a", '{"n": 1}'),
        completed(fc_item("fc_b", "call_b", "g", '{"n": 2}', "completed")),
    )
    assert [(c["index"], c["item_id"], c["arguments"]) for c in r.calls] == [
        (0, "fc_a", {"n": 1}),
        (1, "fc_b", {"n": 2}),
    ]
    assert r.kinds == ["done-without-item"]


def test_a_final_item_without_an_id_is_the_streamed_item_at_its_position() -> None:
    final = {"type": "function_call", "call_id": "call_a", "name": "f", "arguments": '{"n": 9}'}
    r = run_sse(
        created(), add_call(0, "fc_a", "call_a", "f"), args_delta(0, "fc_a", '{"n": 1}'),
        completed(final),
    )  # fmt: skip
    assert [(c["index"], c["arguments"]) for c in r.calls] == [(0, {"n": 9})]
    assert r.kinds == ["done-mismatch"]


def test_a_call_only_response_completed_lists_gets_a_lane_of_its_own() -> None:
    r = run_sse(
        created(),
        add_call(0, "fc_a", "call_a", "f"),
        args_delta(0, "fc_a", '{"n": 1}'),
        completed(
            fc_item("fc_a", "call_a", "f", '{"n": 1}', "completed"),
            fc_item("fc_b", "call_b", "g", '{"n": 2}', "completed"),
        ),
    )
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "call_a", "f", {"n": 1}),
        (1, "call_b", "g", {"n": 2}),
    ]
    assert (r.kinds, r.anomaly("done-without-item")["index"]) == (["done-without-item"], 1)
    assert r.code == 0


def test_a_lost_text_delta_is_repaired_by_output_text_done() -> None:
    r = run_sse(
        created(),
        add_message(0, "msg_0"),
        text_event("output_text", 0, "msg_0", "Checking "),
        # the delta "both " was lost
        text_event("output_text", 0, "msg_0", "cities."),
        text_done(0, "msg_0", "Checking both cities."),
        item_done(0, message_item("msg_0", "Checking both cities.")),
        add_message(1, "msg_1"),
        text_event("output_text", 1, "msg_1", " Done."),
        completed(message_item("msg_0", "Checking both cities."), message_item("msg_1", " Done.")),
    )
    assert r.report["text"] == "Checking both cities. Done."
    assert r.report["text_streamed"] == "Checking cities. Done."
    a = r.anomaly("done-mismatch")
    assert (a["index"], a["count"]) == (None, 1)
    assert a["detail"].startswith("text: output_text.done differs from the joined deltas at char 9")
    assert r.kinds == ["done-mismatch"]
    assert r.code == 0


def test_text_only_restated_is_the_text_without_an_anomaly() -> None:
    r = run_sse(
        created(),
        add_message(0, "msg_0"),
        text_done(0, "msg_0", "Hello"),
        completed(message_item("msg_0", "Hello")),
    )
    assert r.report["text"] == "Hello"
    assert "text_streamed" not in r.report
    assert r.kinds == []


def test_a_textbook_stream_with_a_complete_final_response_has_nothing_streamed_apart() -> None:
    r = run_sse(
        *TEXTBOOK[:-1],
        completed(
            message_item("msg_0", "Checking both."),
            fc_item("fc_a", "call_a", "get_weather", ARGS_1, "completed"),
            fc_item("fc_b", "call_b", "get_time", ARGS_2, "completed"),
        ),
    )
    assert r.kinds == []
    assert "text_streamed" not in r.report
    assert all("arguments_streamed" not in call for call in r.calls)


# -- the finish -----------------------------------------------------------------------------


def test_completed_is_the_finish() -> None:
    r = run_sse(created(), add_call(0), args_delta(0, "fc_1", "{}"), completed())
    assert r.report["finish_reason"] == "completed"
    assert r.report["status"] == "finished"
    assert r.code == 0


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("max_output_tokens", "incomplete:max_output_tokens"),
        ("content_filter", "incomplete:content_filter"),
        (None, "incomplete"),
    ],
)
def test_incomplete_names_its_reason(reason: str | None, expected: str) -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"query": "long qu'),
        call_done(0, '{"query": "long qu'),
        incomplete(reason),
    )
    assert r.report["finish_reason"] == expected
    assert r.report["status"] == "finished"
    assert r.call(0)["arguments"] is None
    assert r.call(0)["error"].startswith("invalid JSON arguments")
    assert r.code == EXIT_INCOMPLETE


def test_failed_is_an_error() -> None:
    r = run_sse(
        created(),
        add_message(0),
        text_event("output_text", 0, "msg_1", "Let me"),
        failed("The model failed to finish."),
    )
    assert r.report["finish_reason"] == "failed"
    assert r.report["status"] == "error"
    assert "The model failed to finish." in r.report["error"]
    assert r.kinds == ["error-event"]
    assert r.report["text"] == "Let me"
    assert r.code == 1


def test_error_event_is_an_error() -> None:
    r = run_sse(
        *numbered(
            [
                created(),
                add_call(0),
                args_delta(0, "fc_1", '{"ci'),
                error_event("rate_limit_exceeded", "Rate limit reached"),
            ]
        )
    )
    assert r.report["status"] == "error"
    assert r.report["finish_reason"] is None
    assert "rate_limit_exceeded" in r.report["error"]
    assert "Rate limit reached" in r.report["error"]
    assert r.kinds == ["error-event"]
    assert r.call(0)["arguments_raw"] == '{"ci'
    assert r.call(0)["error"] == INTERRUPTED_CALL_ERROR
    assert r.code == 1


def test_no_final_response_event_is_truncated() -> None:
    r = run_sse(
        created(), add_call(0), args_delta(0, "fc_1", '{"ci'), args_delta(0, "fc_1", 'ty": "Na')
    )
    assert r.report["status"] == "truncated"
    assert r.report["finish_reason"] is None
    assert r.call(0)["arguments_raw"] == '{"city": "Na'
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in r.events)
    assert r.code == EXIT_INCOMPLETE


def test_all_done_events_without_response_completed_is_still_truncated() -> None:
    r = run_sse(
        created(), add_call(0), args_delta(0, "fc_1", "{}"), args_done(0, "fc_1", "{}"),
        call_done(0, "{}"),
    )  # fmt: skip
    assert r.report["status"] == "truncated"
    assert r.code == EXIT_INCOMPLETE


def test_arguments_are_parsed_at_the_response_end_not_before() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    before: list[StreamEvent] = []
    for payload in [
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a"'),
        args_delta(0, "fc_1", ": 1}"),
        args_done(0, "fc_1", '{"a": 1}'),
        call_done(0, '{"a": 1}'),
    ]:
        before += session.feed(sse(payload, named=True), 0.0)
    slot = session.state.calls[0]
    assert (slot.parsed, slot.arguments, slot.arguments_raw) == (False, None, '{"a": 1}')
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in before)
    after = session.feed(sse(completed(), named=True), 1.0)
    assert [type(e) for e in after] == [WireEvent, FinishSeen, CallParsed]
    assert after[1] == FinishSeen("completed", "response end")
    assert after[2] == CallParsed(0, {"a": 1}, None, None)


# -- text channels ---------------------------------------------------------------------------


def test_text_reasoning_and_refusal_channels() -> None:
    r = run_sse(
        created(),
        add_reasoning(0),
        text_event("reasoning_summary_text", 0, "rs_1", "**Plan** "),
        text_event("reasoning_text", 0, "rs_1", "call it"),
        add_message(1),
        text_event("output_text", 1, "msg_1", "Hello ☃"),
        text_event("refusal", 1, "msg_1", "I can't"),
        completed(),
    )
    assert r.report["reasoning"] == "**Plan** call it"
    assert r.report["text"] == "Hello ☃"
    assert r.report["refusal"] == "I can't"
    assert r.kinds == []
    channels = [e.channel.value for e in r.events if isinstance(e, TextAppended)]
    assert channels == ["reasoning", "reasoning", "content", "refusal"]


# -- anomalies ---------------------------------------------------------------------------------


def test_delta_without_item_keeps_the_arguments_in_the_output_index_lane() -> None:
    r = run_sse(
        created(),
        args_delta(3, "fc_9", '{"a"'),
        args_delta(3, "fc_9", ": 1}"),
        completed(),
    )
    assert r.call(3)["arguments"] == {"a": 1}
    assert r.call(3)["item_id"] == "fc_9"
    assert (r.call(3)["id"], r.call(3)["name"]) == (None, None)
    a = r.anomaly("delta-without-item")
    assert (a["index"], a["count"]) == (3, 1)
    assert r.kinds == ["delta-without-item"]


def test_delta_after_output_item_done_is_kept_and_reported() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a": 1}'),
        call_done(0, '{"a": 1}'),
        args_delta(0, "fc_1", " "),
        completed(),
    )
    assert r.call(0)["arguments_raw"] == '{"a": 1}'
    assert r.call(0)["arguments_streamed"] == '{"a": 1} '
    assert r.call(0)["arguments"] == {"a": 1}
    assert r.kinds == ["delta-after-done"]
    assert r.anomaly("delta-after-done")["index"] == 0


def test_delta_after_function_call_arguments_done_is_reported() -> None:
    r = run_sse(
        created(),
        add_call(0),
        args_delta(0, "fc_1", '{"a": 1}'),
        args_done(0, "fc_1", '{"a": 1}'),
        args_delta(0, "fc_1", ', "b": 2}'),
        completed(),
    )
    assert r.call(0)["arguments_streamed"] == '{"a": 1}, "b": 2}'  # deltas kept
    assert r.call(0)["arguments"] == {"a": 1}  # .done's word
    assert "delta-after-done" in r.kinds


def test_reused_output_index_starts_a_new_call_in_the_next_free_lane() -> None:
    r = run_sse(
        created(),
        add_call(0, "fc_a", "call_a", "first"),
        args_delta(0, "fc_a", '{"n": 1}'),
        add_call(1, "fc_b", "call_b", "second"),
        args_delta(1, "fc_b", '{"n": 2}'),
        add_call(0, "fc_c", "call_c", "third"),
        args_delta(0, "fc_c", '{"n": 3}'),
        completed(),
    )
    assert [(c["index"], c["id"], c["item_id"], c["arguments"]) for c in r.calls] == [
        (0, "call_a", "fc_a", {"n": 1}),
        (1, "call_b", "fc_b", {"n": 2}),
        (2, "call_c", "fc_c", {"n": 3}),
    ]
    assert r.kinds == ["output-index-reused"]


def test_sequence_gap_is_reported() -> None:
    payloads = numbered([created(), add_call(0), args_delta(0, "fc_1", "{}")])
    payloads += numbered([completed()], start=5)
    r = run_sse(*payloads)
    assert r.kinds == ["sequence-gap"]
    assert "5" in r.anomaly("sequence-gap")["detail"]
    assert r.report["status"] == "finished"


def test_consecutive_sequence_numbers_are_clean_and_absent_ones_are_not_checked() -> None:
    assert run_sse(*numbered([created(), add_call(0), completed()])).kinds == []
    assert run_sse(created(), add_call(0), completed()).kinds == []


def test_data_after_completed_is_reported_and_never_joins_the_answer() -> None:
    r = run_sse(
        *TEXTBOOK,
        {"type": "response.output_text.delta", "item_id": "msg_0", "delta": "late"},
        args_delta(1, "fc_a", "late"),
        add_call(3, "fc_late", "call_late", "late"),
        args_delta(3, "fc_late", "{}"),
        error_event(),
    )
    a = r.anomaly("data-after-completed")
    assert a["count"] == 5
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "completed"
    assert r.report["text"] == "Checking both."
    assert [(c["index"], c["arguments_raw"]) for c in r.calls] == [(1, ARGS_1), (2, ARGS_2)]
    assert r.report["error"] is None
    assert r.kinds == ["data-after-completed"]
    assert r.code == 0


def test_done_marker_after_completed_is_data_after_completed_not_data_not_json() -> None:
    """LiteLLM's proxy ends a Responses stream with `data: [DONE]`, as in chat."""
    r = run(sse(*TEXTBOOK, named=True, done=True))
    assert r.kinds == ["data-after-completed"]
    assert "[DONE]" in r.anomaly("data-after-completed")["detail"]
    assert r.report["status"] == "finished"
    assert r.code == 0


def test_done_marker_before_the_response_ended_is_an_unknown_event() -> None:
    r = run(sse(created(), add_call(0), args_delta(0, "fc_1", "{}"), named=True, done=True))
    assert r.kinds == ["unknown-event"]
    assert r.report["status"] == "truncated"


def test_event_line_disagreeing_with_the_data_type_is_reported_and_data_wins() -> None:
    r = run_sse(
        created(),
        add_call(0),
        ("response.output_text.delta", args_delta(0, "fc_1", "{}")),
        completed(),
    )
    assert r.call(0)["arguments_raw"] == "{}"
    assert r.report["text"] == ""
    assert r.kinds == ["event-type-mismatch"]


def test_unknown_non_response_event_is_reported() -> None:
    r = run_sse(created(), {"type": "mystery"}, add_call(0), completed())
    assert r.kinds == ["unknown-event"]
    assert "mystery" in r.anomaly("unknown-event")["detail"]


def test_unknown_response_event_is_ignored_silently() -> None:
    r = run_sse(
        created(),
        {"type": "response.web_search_call.searching", "output_index": 0},
        {"type": "response.brand_new_thing"},
        add_call(0),
        completed(),
    )
    assert r.kinds == []
    assert r.code == 0


# -- hypothesis: any arguments, interleaved fragments, any framing, any writes --------------


@dataclass
class ExpectedCall:
    output_index: int
    item_id: str
    call_id: str
    name: str
    obj: dict[str, Any]
    raw: str
    fragments: list[str]


@dataclass
class Scenario:
    calls: list[ExpectedCall]
    text: str
    pieces: list[bytes]
    dialect: str | None


@st.composite
def responses_streams(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, 5))
    objs = [draw(OBJECTS) for _ in range(n)]
    raws = [
        serialise(obj, draw(st.sampled_from(["ascii", "unicode", "compact", "indent"])))
        for obj in objs
    ]
    wires = [draw(cut(raw)) for raw in raws]
    call_ids = draw(
        st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n, unique=True)
    )
    names = draw(st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n))
    labels = [c for c in range(n) for _ in wires[c]]
    order = draw(st.permutations(labels))
    first_seen = list(dict.fromkeys(order))  # calls are added in order of first delta

    payloads: list[dict[str, Any]] = [created()]
    if draw(st.booleans()):
        payloads.append(in_progress())
    text_parts = draw(st.lists(TEXT, max_size=3))
    offset = 0
    if text_parts or draw(st.booleans()):
        payloads.append(add_message(0, "msg_0"))
        payloads += [text_event("output_text", 0, "msg_0", part) for part in text_parts]
        offset = 1
    calls = {
        label: ExpectedCall(
            offset + rank,
            f"fc_{rank}",
            call_ids[rank],
            names[rank],
            objs[label],
            raws[label],
            [part for part in wires[label] if part],
        )
        for rank, label in enumerate(first_seen)
    }
    upfront = draw(st.booleans())
    if upfront:
        payloads += [add_call(c.output_index, c.item_id, c.call_id, c.name) for c in calls.values()]
    ref = draw(st.sampled_from(["both", "item_id", "output_index"]))
    sent: dict[int, int] = {}
    for label in order:
        call = calls[label]
        k = sent.get(label, 0)
        sent[label] = k + 1
        if k == 0 and not upfront:
            payloads.append(add_call(call.output_index, call.item_id, call.call_id, call.name))
        payloads.append(
            args_delta(
                None if ref == "item_id" else call.output_index,
                None if ref == "output_index" else call.item_id,
                wires[label][k],
            )
        )
    for label in draw(st.permutations(first_seen)):
        call = calls[label]
        mode = draw(st.sampled_from(["both", "arguments", "item", "none"]))
        if mode in ("both", "arguments"):
            payloads.append(args_done(call.output_index, call.item_id, call.raw))
        if mode in ("both", "item"):
            payloads.append(
                call_done(call.output_index, call.raw, call.item_id, call.call_id, call.name)
            )
    payloads.append(completed())
    if draw(st.booleans()):
        payloads = numbered(payloads)

    body = draw(sse_body(payloads))
    expected = sorted(calls.values(), key=lambda c: c.output_index)
    dialect = draw(st.sampled_from([None, "openai-responses"]))
    return Scenario(expected, "".join(text_parts), draw(writes(body)), dialect)


@st.composite
def sse_body(draw: st.DrawFn, payloads: list[dict[str, Any]]) -> bytes:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines_mode = draw(st.sampled_from(["always", "never", "mixed"]))
    prefix = draw(st.sampled_from(["data: ", "data:"]))
    ascii_only = draw(st.booleans())
    out = ["\ufeff"] if draw(st.booleans()) else []
    for payload in payloads:
        if draw(st.integers(0, 5)) == 0:
            out.append(": keep-alive" + eol)
        named = lines_mode == "always" or (lines_mode == "mixed" and draw(st.booleans()))
        head = f"event: {payload['type']}{eol}" if named else ""
        out.append(f"{head}{prefix}{json.dumps(payload, ensure_ascii=ascii_only)}{eol}{eol}")
    return "".join(out).encode()


@settings(max_examples=150, deadline=None)
@given(responses_streams())
def test_any_arguments_interleaved_any_writes_reassemble_exactly(scenario: Scenario) -> None:
    session = StreamSession("property", dialect=scenario.dialect)
    events = session.open(200, "text/event-stream")
    for i, piece in enumerate(scenario.pieces):
        events += session.feed(piece, float(i))
    events += session.close(float(len(scenario.pieces)))
    report = build_report(session.state)

    assert report["tool_calls"] == [
        {
            "index": call.output_index,
            "id": call.call_id,
            "item_id": call.item_id,
            "name": call.name,
            "arguments_raw": call.raw,
            "arguments": call.obj,
            "error": None,
            "error_position": None,
            "fragments": len(call.fragments),
            "schema_errors": [],
        }
        for call in scenario.calls
    ]
    assert report["dialect"] == "openai-responses"
    assert report["status"] == "finished"
    assert report["finish_reason"] == "completed"
    assert report["anomalies"] == []
    assert report["text"] == scenario.text
    assert report["trailing"] == ""
    assert exit_code(session.state) == 0

    # checkpoint: the per-call fragments are the wire's and join to arguments_raw
    for call in scenario.calls:
        slot = session.state.calls[call.output_index]
        assert slot.fragments() == call.fragments
        assert "".join(slot.fragments()) == slot.arguments_raw == call.raw
    appended = [e for e in events if isinstance(e, FragmentAppended)]
    assert len(appended) == sum(len(call.fragments) for call in scenario.calls)

    # checkpoint: one FinishSeen, at response.completed; every CallParsed after it
    finishes = [i for i, e in enumerate(events) if isinstance(e, FinishSeen)]
    parsed = [i for i, e in enumerate(events) if isinstance(e, CallParsed)]
    end_wire = [
        i
        for i, e in enumerate(events)
        if isinstance(e, WireEvent) and json.loads(e.data)["type"] == "response.completed"
    ]
    assert len(finishes) == 1
    assert events[finishes[0]] == FinishSeen("completed", "response end")
    assert end_wire and end_wire[0] < finishes[0]
    assert len(parsed) == len(scenario.calls)
    assert all(i > finishes[0] for i in parsed)


@settings(max_examples=100, deadline=None)
@given(
    obj=OBJECTS,
    style=st.sampled_from(["ascii", "unicode", "compact", "indent"]),
    text=TEXT,
    data=st.data(),
)
def test_any_deltas_lost_the_final_words_give_the_answer(
    obj: dict[str, Any], style: str, text: str, data: st.DataObject
) -> None:
    """Arguments and text cut anywhere, any of their deltas lost, and the final words
    the server restates (any subset of them) carry the whole: the answer is the
    whole, the deltas that came stay visible, and a difference is one anomaly."""
    raw = serialise(obj, style)
    fragments = [part for part in data.draw(cut(raw)) if part]
    kept = [part for part in fragments if data.draw(st.booleans())]
    text_parts = [part for part in data.draw(cut(text)) if part]
    kept_text = [part for part in text_parts if data.draw(st.booleans())]
    words = data.draw(st.sets(st.sampled_from(["done", "item", "completed"]), min_size=1))
    payloads = [created(), add_message(0, "msg_0")]
    payloads += [text_event("output_text", 0, "msg_0", part) for part in kept_text]
    payloads += [text_done(0, "msg_0", text)] if "done" in words else []
    payloads += [item_done(0, message_item("msg_0", text))] if "item" in words else []
    payloads += [add_call(1)] + [args_delta(1, "fc_1", part) for part in kept]
    payloads += [args_done(1, "fc_1", raw)] if "done" in words else []
    payloads += [call_done(1, raw)] if "item" in words else []
    output = [message_item("msg_0", text), fc_item("fc_1", "call_1", "get_weather", raw)]
    payloads += [completed(*output) if "completed" in words else completed()]

    r = run_sse(*payloads)

    assert (r.call(1)["arguments"], r.call(1)["arguments_raw"]) == (obj, raw)
    assert r.call(1).get("arguments_streamed", raw) == ("".join(kept) if kept else raw)
    assert (r.report["text"], r.report.get("text_streamed", text)) == (
        text,
        "".join(kept_text) or text,
    )
    arguments_lost, text_lost = (
        bool(kept) and kept != fragments,
        bool(kept_text) and kept_text != text_parts,
    )
    expected_anomalies = [(1, 1)] if arguments_lost else []
    expected_anomalies += [(None, 1)] if text_lost else []
    got = [(a["index"], a["count"]) for a in r.report["anomalies"]]
    assert r.kinds == ["done-mismatch"] * len(got)
    assert sorted(got, key=str) == sorted(expected_anomalies, key=str)
    assert r.code == 0
