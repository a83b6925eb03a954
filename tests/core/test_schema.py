"""Checking finished tool-call arguments against the schemas the request declared."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import chunk, tc
from toolstream_tui.core import StreamSession, exit_code
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.schema import (
    MAX_ERRORS,
    DeclaredTools,
    SchemaError,
    declared_tools,
)

WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "unit": {"enum": ["c", "f"]},
    },
    "required": ["location"],
    "additionalProperties": False,
}


def body(*tools: Any, **extra: Any) -> str:
    return json.dumps({"model": "m", "tools": list(tools), **extra})


def one_tool(schema: Any) -> DeclaredTools:
    tools = declared_tools(body({"name": "t", "input_schema": schema}))
    assert tools is not None
    return tools


def paths_and_keywords(errors: list[SchemaError]) -> list[tuple[str, str]]:
    return [(error.path, error.keyword) for error in errors]


# -- reading the tools list --------------------------------------------------------


def test_openai_chat_completions_tools() -> None:
    tools = declared_tools(
        body({"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}})
    )
    assert tools is not None
    assert tools.schemas == {"get_weather": WEATHER}
    assert tools.problems == []


def test_openai_chat_strict_function_is_checked() -> None:
    declaration = {"name": "get_weather", "parameters": WEATHER, "strict": True}
    tools = declared_tools(body({"type": "function", "function": declaration}))
    assert tools is not None
    assert paths_and_keywords(tools.check("get_weather", {})) == [("$", "required")]


def test_openai_responses_tools() -> None:
    tools = declared_tools(body({"type": "function", "name": "get_weather", "parameters": WEATHER}))
    assert tools is not None
    assert tools.schemas == {"get_weather": WEATHER}


def test_anthropic_tools_and_server_tools() -> None:
    tools = declared_tools(
        body(
            {"name": "get_weather", "description": "d", "input_schema": WEATHER},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        )
    )
    assert tools is not None
    assert tools.schemas == {"get_weather": WEATHER, "web_search": None}
    assert tools.problems == []
    assert tools.declares("web_search")
    assert tools.check("web_search", {"anything": [1, 2]}) == []


GEMINI_WEATHER = {  # as google-genai writes a types.Schema: OpenAPI's type names
    "type": "OBJECT",
    "properties": {"location": {"type": "STRING"}, "days": {"type": "INTEGER"}},
    "required": ["location"],
}


@pytest.mark.parametrize("key", ["functionDeclarations", "function_declarations"])
def test_gemini_function_declarations_and_builtin_tools(key: str) -> None:
    """Every Gemini request that declared tools read as declaring none: each call
    was 'undeclared' and the entry 'no name', so --fail-on failed a sound agent."""
    declarations = [
        {"name": "get_weather", "parameters": GEMINI_WEATHER},
        {"name": "get_time", "parametersJsonSchema": WEATHER},
    ]
    tools = declared_tools(
        json.dumps(
            {
                "contents": [],
                "tools": [{key: declarations}, {"googleSearch": {}}, {"code_execution": {}}],
            }
        )
    )
    assert tools is not None
    assert tools.problems == []
    assert sorted(tools.schemas) == ["get_time", "get_weather"]
    assert tools.check("get_weather", {"location": "Paris", "days": 2}) == []
    assert paths_and_keywords(tools.check("get_weather", {"days": "2"})) == [
        ("$", "required"),
        ("$.days", "type"),
    ]
    assert paths_and_keywords(tools.check("get_time", {"location": 1})) == [("$.location", "type")]


def test_bedrock_tool_specs() -> None:
    request = {
        "messages": [],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER}}},
                {"cachePoint": {"type": "default"}},
            ]
        },
    }
    tools = declared_tools(json.dumps(request))
    assert tools is not None
    assert (tools.schemas, tools.problems) == ({"get_weather": WEATHER}, [])
    assert paths_and_keywords(tools.check("get_weather", {})) == [("$", "required")]


def test_function_without_parameters_has_no_constraints() -> None:
    tools = declared_tools(body({"type": "function", "function": {"name": "ping"}}))
    assert tools is not None
    assert tools.schemas == {"ping": None}
    assert tools.check("ping", "not even an object") == []


def test_declares_and_unknown_names() -> None:
    tools = one_tool(WEATHER)
    assert tools.declares("t")
    assert not tools.declares("other")
    assert not tools.declares(None)
    assert tools.check("other", {}) == []
    assert tools.check(None, {}) == []


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        b"",
        "not json",
        b"\xff\xfe{",
        "[1, 2]",
        '"tools"',
        "{}",
        '{"messages": []}',
        '{"tools": {"name": "x"}}',
        '{"tools": null}',
        '{"tools": [], "n": NaN}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_no_declared_tools(raw: str | bytes | None) -> None:
    assert declared_tools(raw) is None


def test_bytes_body() -> None:
    tools = declared_tools(body({"name": "t", "input_schema": WEATHER}).encode())
    assert tools is not None
    assert tools.declares("t")


def test_empty_tools_list() -> None:
    tools = declared_tools('{"tools": []}')
    assert tools == DeclaredTools(schemas={}, problems=[])


def test_malformed_entries_become_problems() -> None:
    """Every entry that cannot be a callable tool is named, except OpenAI's
    built-in tools (a type and no name), which a model never calls as functions."""
    tools = declared_tools(
        body(
            "get_weather",
            None,
            {"type": "function", "function": "get_weather"},
            {"type": "function", "function": {"parameters": WEATHER}},
            {"name": 42, "input_schema": WEATHER},
            {"name": "", "input_schema": WEATHER},
            {"type": "web_search"},
            {"name": "ok", "input_schema": WEATHER},
            {"name": "ok", "input_schema": {"type": "string"}},
        )
    )
    assert tools is not None
    assert tools.schemas == {"ok": WEATHER}
    assert tools.problems == [
        "tools[0]: expected an object, got a string; ignored",
        "tools[1]: expected an object, got null; ignored",
        'tools[2]: "function" is a string; ignored',
        "tools[3]: no name (type 'function'); ignored",
        "tools[4]: name is a number, not a string; ignored",
        "tools[5]: empty name; ignored",
        "tools[8]: tool 'ok' is declared more than once; the first is used",
    ]


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        ({"type": 12}, "at $.type:"),
        ({"type": "object", "required": "location"}, "at $.required:"),
        ({"pattern": "("}, "at $.pattern:"),
        ([{"type": "object"}], "expected an object or boolean, got an array"),
        ("object", "expected an object or boolean, got a string"),
    ],
)
def test_invalid_schema_is_a_problem_and_is_not_checked(schema: Any, detail: str) -> None:
    tools = one_tool(schema)
    assert tools.declares("t")
    assert len(tools.problems) == 1
    assert tools.problems[0].startswith("tool 't': schema is invalid: ")
    assert detail in tools.problems[0]
    assert tools.check("t", {"location": 1}) == []
    assert len(tools.problems) == 1  # compiled once, reported once


def test_invalid_schema_problem_is_reported_once_when_built_directly() -> None:
    tools = DeclaredTools(schemas={"t": {"type": 12}}, problems=[])
    assert tools.check("t", {}) == []
    assert tools.check("t", {}) == []
    assert len(tools.problems) == 1


def test_boolean_schemas() -> None:
    tools = DeclaredTools(schemas={"yes": True, "no": False}, problems=[])
    assert tools.check("yes", {"a": 1}) == []
    assert paths_and_keywords(tools.check("no", {})) == [("$", "false")]


# -- errors --------------------------------------------------------------------


def test_valid_arguments_have_no_errors() -> None:
    assert one_tool(WEATHER).check("t", {"location": "Paris", "unit": "c"}) == []


def test_required_type_enum_and_additional_properties() -> None:
    errors = one_tool(WEATHER).check("t", {"unit": "k", "extra": 1})
    # sorted by path, then message
    assert paths_and_keywords(errors) == [
        ("$", "required"),
        ("$", "additionalProperties"),
        ("$.unit", "enum"),
    ]
    assert errors[0].message == "'location' is a required property"
    assert errors[1].message == "Additional properties are not allowed ('extra' was unexpected)"
    assert errors[2].message == "'k' is not one of ['c', 'f']"


def test_type_error_message() -> None:
    [error] = one_tool(WEATHER).check("t", {"location": 7})
    assert error == SchemaError("$.location", "7 is not of type 'string'", "type")
    assert error.as_dict() == {
        "path": "$.location",
        "message": "7 is not of type 'string'",
        "keyword": "type",
    }


def test_paths_into_nested_objects_array_items_and_quoted_keys() -> None:
    schema = {
        "type": "object",
        "properties": {
            "order": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    }
                },
            },
            "a b": {"type": "integer"},
            'q"uote': {"type": "integer"},
            "_ok1": {"type": "integer"},
            "1st": {"type": "integer"},
        },
    }
    arguments = {
        "order": {"items": [{"name": "a"}, {"name": "b"}, {"name": 3}, {}]},
        "a b": "x",
        'q"uote': "x",
        "_ok1": "x",
        "1st": "x",
    }
    # sorted by the keys themselves, not their rendering
    assert paths_and_keywords(one_tool(schema).check("t", arguments)) == [
        ('$["1st"]', "type"),
        ("$._ok1", "type"),
        ('$["a b"]', "type"),
        ("$.order.items[2].name", "type"),
        ("$.order.items[3]", "required"),
        ('$["q\\"uote"]', "type"),
    ]


def test_array_indices_sort_numerically() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    errors = one_tool(schema).check("t", [0] * 12)
    assert [error.path for error in errors] == [f"$[{i}]" for i in range(12)]


def test_arguments_that_are_not_an_object_are_still_checked() -> None:
    tools = one_tool(WEATHER)
    assert paths_and_keywords(tools.check("t", [1, 2])) == [("$", "type")]
    assert paths_and_keywords(tools.check("t", None)) == [("$", "type")]


def test_long_values_are_previewed_and_messages_are_one_line() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "integer"}}}
    [error] = one_tool(schema).check("t", {"s": "line\n" * 10_000})
    assert "\n" not in error.message
    assert len(error.message) < 200
    assert error.message.endswith("… is not of type 'integer'")


def test_long_messages_are_bounded() -> None:
    schema = {"enum": ["x" * 1000]}
    [error] = one_tool(schema).check("t", "y")
    assert len(error.message) <= 240
    assert error.keyword == "enum"


def test_errors_are_capped_with_a_count_of_the_rest() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    errors = one_tool(schema).check("t", list(range(200)))
    assert len(errors) == MAX_ERRORS + 1
    assert [error.path for error in errors[:MAX_ERRORS]] == [f"$[{i}]" for i in range(MAX_ERRORS)]
    assert errors[-1] == SchemaError("$", "150 more errors not shown", "more")


def test_exactly_the_cap_has_no_more_entry() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    errors = one_tool(schema).check("t", list(range(MAX_ERRORS)))
    assert len(errors) == MAX_ERRORS
    assert all(error.keyword == "type" for error in errors)


def test_identical_errors_do_not_break_sorting() -> None:
    schema = {"allOf": [{"type": "string"}, {"type": "string"}]}
    errors = one_tool(schema).check("t", 1)
    assert paths_and_keywords(errors) == [("$", "type"), ("$", "type")]


# -- checks that cannot be completed ---------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        pytest.fail(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.usefixtures("no_network")
def test_remote_ref_is_never_fetched() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "http://127.0.0.1:9/schema.json"}},
    }
    tools = one_tool(schema)
    assert tools.problems == []
    [error] = tools.check("t", {"x": 1})
    assert error.path == "$"
    assert error.keyword == "schema"
    assert error.message.startswith("check could not be completed: ")
    assert "http://127.0.0.1:9/schema.json" in error.message


@pytest.mark.usefixtures("no_network")
def test_remote_schema_dialect_is_not_fetched() -> None:
    tools = one_tool({"$schema": "http://127.0.0.1:9/meta.json", "type": "object"})
    assert tools.check("t", []) != []


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        ({"$ref": "#/$defs/missing"}, "'#/$defs/missing' points to nothing"),
        ({"$ref": "#nowhere"}, "anchor 'nowhere' is not defined"),
    ],
)
def test_local_ref_that_misses(schema: dict[str, Any], detail: str) -> None:
    [error] = one_tool(schema).check("t", {})
    assert (error.path, error.keyword) == ("$", "schema")
    assert detail in error.message


def test_local_refs_resolve() -> None:
    schema = {
        "$defs": {"unit": {"enum": ["c", "f"]}},
        "type": "object",
        "properties": {"unit": {"$ref": "#/$defs/unit"}},
    }
    tools = one_tool(schema)
    assert tools.check("t", {"unit": "c"}) == []
    assert paths_and_keywords(tools.check("t", {"unit": "k"})) == [("$.unit", "enum")]


def test_recursive_schema_with_deep_input_does_not_raise() -> None:
    schema = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    tools = one_tool(schema)
    shallow: dict[str, Any] = {"child": {"child": {"child": 1}}}
    assert paths_and_keywords(tools.check("t", shallow)) == [("$.child.child.child", "type")]

    deep: dict[str, Any] = {}
    for _ in range(sys.getrecursionlimit() * 2):
        deep = {"child": deep}
    [error] = tools.check("t", deep)
    assert (error.path, error.keyword) == ("$", "schema")
    assert "could not be completed" in error.message


def test_schema_that_refers_only_to_itself_does_not_raise() -> None:
    [error] = one_tool({"$ref": "#"}).check("t", {})
    assert (error.path, error.keyword) == ("$", "schema")


# -- properties ----------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
EMPTY = DeclaredTools(schemas={"t": {}}, problems=[])
NEEDS_N = DeclaredTools(schemas={"t": N_SCHEMA}, problems=[])


def is_json_schema_integer(value: Any) -> bool:
    # bool is not an integer; a float with no fractional part is (draft 6 onward)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


@settings(max_examples=200, deadline=None)  # the first check imports jsonschema
@given(JSON_VALUES)
def test_empty_schema_accepts_anything(value: Any) -> None:
    assert EMPTY.check("t", value) == []


@settings(max_examples=300, deadline=None)
@given(
    JSON_VALUES
    | st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3).flatmap(
        lambda rest: st.builds(lambda n: {**rest, "n": n}, JSON_VALUES)
    )
)
def test_error_iff_no_integer_n(value: Any) -> None:
    valid = isinstance(value, dict) and "n" in value and is_json_schema_integer(value["n"])
    assert (NEEDS_N.check("t", value) == []) == valid


# -- the import contract ---------------------------------------------------------


def test_importing_the_module_does_not_load_jsonschema() -> None:
    code = (
        "import sys\n"
        "from toolstream_tui.core.schema import declared_tools\n"
        'assert declared_tools(\'{"tools": [{"name": "web_search", "type": "x"}]}\')\n'
        "print(sorted(n for n in sys.modules if n.split('.')[0] in "
        "('jsonschema', 'referencing', 'textual', 'httpx')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# -- in a stream: the session checks each finished call -----------------------------


def checked_run(request: dict[str, Any], *items: dict[str, Any] | str) -> StreamSession:
    session = StreamSession("test")
    session.requested(json.dumps(request))
    session.open(200, "text/event-stream")
    session.feed(sse(*items), 0.0)
    session.close(0.0)
    return session


ONE_TOOL = {
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
}


def test_a_stream_checks_each_parsed_call_and_names_undeclared_tools() -> None:
    session = checked_run(
        ONE_TOOL,
        chunk(tc(0, "c0", "get_weather", '{"unit": 3}')),
        chunk(tc(1, "c1", "delete_everything", "{}")),
        chunk(tc(2, "c2", "get_weather", '{"broken')),
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    state = session.state
    assert [(e.path, e.keyword) for e in state.calls[0].schema_errors] == [
        ("$", "required"),
        ("$.unit", "enum"),
    ]
    assert state.calls[1].schema_errors == state.calls[2].schema_errors == []
    kinds = {(anomaly.kind, anomaly.index) for anomaly in state.anomalies}
    assert kinds == {("schema-mismatch", 0), ("unknown-tool", 1)}
    assert exit_code(state) == EXIT_INCOMPLETE


def test_a_valid_call_passes_and_problems_in_the_declaration_are_named() -> None:
    request = {"tools": [*ONE_TOOL["tools"], {"name": 7}]}
    session = checked_run(
        request,
        chunk(tc(0, "c0", "get_weather", json.dumps({"location": "Oslo", "unit": "c"}))),
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    assert session.state.calls[0].schema_errors == []
    (problem,) = session.state.anomalies
    assert problem.kind == "tool-declaration-invalid" and "tools[1]" in problem.detail
    assert exit_code(session.state) == 0


def test_without_a_request_nothing_is_checked() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(
        sse(chunk(tc(0, "c0", "anything", "{}")), chunk(finish="tool_calls"), "[DONE]"), 0.0
    )
    session.close(0.0)
    assert session.state.tools is None and session.state.anomalies == []
