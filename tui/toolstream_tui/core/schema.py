"""Check a tool call's finished arguments against the JSON Schema its tool
declared in the request body.

Understands the "tools" list of OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages requests. Nothing here raises on hostile input: a malformed
declaration becomes a line in `DeclaredTools.problems`, and a check that cannot
be completed becomes a single error with keyword "schema". Remote `$ref`s are
never fetched. `jsonschema` is imported only once there is a schema to check.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from typing import Any

from .json_path import json_path
from .records import FrozenRecord, Record
from .strict_json import loads

MAX_ERRORS = 50
PREVIEW_CHARS = 80
MAX_MESSAGE_CHARS = 240

_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x85]+")


class SchemaError(FrozenRecord):
    __slots__ = ("keyword", "message", "path")

    def __init__(self, path: str, message: str, keyword: str) -> None:
        self.path = path  # JSON path of the offending value: "$", "$.items[2].name", '$["a b"]'
        self.message = message  # one bounded line
        self.keyword = keyword  # the failing JSON Schema keyword, or "schema" / "more"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message, "keyword": self.keyword}


class DeclaredTools(Record):
    __slots__ = ("_validators", "problems", "schemas")
    compared = ("schemas", "problems")  # the validators are compiled from the schemas

    def __init__(self, schemas: dict[str, Any | None], problems: list[str]) -> None:
        self.schemas = schemas  # None: declared without a schema, nothing to check
        self.problems = problems
        # tool name -> compiled validator, or None when its schema is absent or invalid
        self._validators: dict[str, Any | None] = {}

    def declares(self, name: str | None) -> bool:
        return name is not None and name in self.schemas

    def check(self, name: str | None, arguments: Any) -> list[SchemaError]:
        """The arguments' errors against the tool's schema, sorted by path then
        message; [] when that tool has no usable schema."""
        if name is None:
            return []
        validator = self._validator(name)
        if validator is None:
            return []
        return _validate(validator, arguments)

    def _validator(self, name: str) -> Any | None:
        if name not in self._validators:
            self._validators[name] = self._compile(name)
        return self._validators[name]

    def _compile(self, name: str) -> Any | None:
        schema = self.schemas.get(name)
        if schema is None:
            return None
        try:
            return _compile_validator(schema)
        except Exception as exc:
            self.problems.append(f"tool {_preview(name)}: schema is invalid: {_reason(exc)}")
            return None


def declared_tools(body: str | bytes | None) -> DeclaredTools | None:
    """None when there is no body, it is not JSON, not an object, or has no "tools" list."""
    if not body:
        return None
    try:
        request = loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    listed, where = request.get("tools"), "tools"
    if not isinstance(listed, list):  # Bedrock's Converse: toolConfig.tools[].toolSpec
        config = request.get("toolConfig")
        listed = config.get("tools") if isinstance(config, dict) else None
        where = "toolConfig.tools"
    if not isinstance(listed, list):
        return None
    tools = DeclaredTools(schemas={}, problems=[])
    for index, entry in enumerate(listed):
        _declare_entry(tools, f"{where}[{index}]", entry)
    for name in tools.schemas:
        tools._validator(name)  # compile now, so `problems` is complete up front
    return tools


# -- reading the "tools" list ----------------------------------------------------


# A Gemini tools entry that declares no function (searching, running code, …).
GEMINI_BUILTIN_TOOLS = frozenset(
    {
        "googleSearch",
        "googleSearchRetrieval",
        "codeExecution",
        "urlContext",
        "retrieval",
        "googleMaps",
        "computerUse",
        "fileSearch",
        "enterpriseWebSearch",
    }
)


def _declare_entry(tools: DeclaredTools, where: str, entry: Any) -> None:
    """One entry of the tools list: a function (OpenAI, Anthropic), Gemini's list of
    function declarations, or a Bedrock toolSpec."""
    if isinstance(entry, dict):
        gemini = entry.get("functionDeclarations", entry.get("function_declarations"))
        if isinstance(gemini, list):
            for number, declaration in enumerate(gemini):
                _declare(tools, f"{where}.functionDeclarations[{number}]", declaration)
            return
        if "toolSpec" in entry or "cachePoint" in entry:  # Bedrock (a cache point is no tool)
            if "toolSpec" in entry:
                _declare(tools, f"{where}.toolSpec", entry["toolSpec"])
            return
        if entry and {_camel(key) for key in entry} <= GEMINI_BUILTIN_TOOLS:
            return
    _declare(tools, where, entry)


def _camel(key: str) -> str:
    """`google_search` as `googleSearch` (Gemini's REST takes either)."""
    first, *rest = key.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _declare(tools: DeclaredTools, where: str, entry: Any) -> None:
    if not isinstance(entry, dict):
        tools.problems.append(f"{where}: expected an object, got {_json_type(entry)}; ignored")
        return
    declaration = entry.get("function", entry)  # Chat Completions nests it under "function"
    if not isinstance(declaration, dict):
        tools.problems.append(f'{where}: "function" is {_json_type(declaration)}; ignored')
        return
    name = declaration.get("name")
    if name is None and _is_builtin(entry):
        return  # OpenAI's web_search, file_search, …: never called as a function
    if not isinstance(name, str) or not name:
        tools.problems.append(f"{where}: {_unusable_name(name, entry)}; ignored")
        return
    if name in tools.schemas:
        tools.problems.append(
            f"{where}: tool {_preview(name)} is declared more than once; the first is used"
        )
        return
    tools.schemas[name] = _schema_of(declaration)


def _is_builtin(entry: dict[str, Any]) -> bool:
    kind = entry.get("type")
    return isinstance(kind, str) and kind not in ("function", "custom") and "function" not in entry


def _schema_of(declaration: dict[str, Any]) -> Any | None:
    # Anthropic: "input_schema"; OpenAI: "parameters". Server tools have neither.
    if "input_schema" in declaration:
        return declaration["input_schema"]
    input_schema = declaration.get("inputSchema")  # Bedrock: {"json": schema}
    if isinstance(input_schema, dict) and "json" in input_schema:
        return input_schema["json"]
    if "parametersJsonSchema" in declaration:  # Gemini's JSON Schema
        return declaration["parametersJsonSchema"]
    parameters = declaration.get("parameters")
    return _json_schema_types(parameters) if isinstance(parameters, dict) else parameters


def _json_schema_types(schema: Any) -> Any:
    """Gemini's OpenAPI-style schema (`"type": "OBJECT"`, as its SDK writes it) with
    JSON Schema's type names; everything else as it is."""
    if isinstance(schema, list):
        return [_json_schema_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _json_schema_types(value) for key, value in schema.items()}
    kind = schema.get("type")
    if isinstance(kind, str) and kind.isupper():
        converted["type"] = kind.lower()
    return converted


def _unusable_name(name: Any, entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    of_type = f" (type {_preview(kind)})" if isinstance(kind, str) else ""
    if name is None:
        return f"no name{of_type}"
    if name == "":
        return f"empty name{of_type}"
    return f"name is {_json_type(name)}, not a string{of_type}"


# -- compiling and validating ----------------------------------------------------


def _compile_validator(schema: Any) -> Any:
    from jsonschema.validators import Draft202012Validator, validator_for

    if not isinstance(schema, dict | bool):
        raise TypeError(f"expected an object or boolean, got {_json_type(schema)}")
    validator_class = validator_for(schema, default=Draft202012Validator)
    validator_class.check_schema(schema)  # type: ignore[arg-type]  # True/False are schemas too
    return validator_class(schema, registry=_offline_registry())


def _offline_registry() -> Any:
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _refuse_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(uri)


def _validate(validator: Any, arguments: Any) -> list[SchemaError]:
    counted = _Counter(validator.iter_errors(arguments))
    try:
        # the key alone orders them (nsmallest breaks ties by arrival, never by error)
        first = heapq.nsmallest(MAX_ERRORS, map(_keyed, counted), key=lambda pair: pair[0])
    except Exception as exc:
        message = _one_line(f"check could not be completed: {_reason(exc)}")
        return [SchemaError("$", message, "schema")]
    errors = [error for _, error in first]
    if counted.count > MAX_ERRORS:
        more = counted.count - MAX_ERRORS
        errors.append(SchemaError("$", f"{more} more errors not shown", "more"))
    return errors


class _Counter:
    """Counts what passes through, so the error total is known without keeping
    every error in memory."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self._items:
            self.count += 1
            yield item


def _keyed(error: Any) -> tuple[tuple[Any, ...], SchemaError]:
    parts = tuple(error.absolute_path)
    # (False, int) sorts array indices numerically and before (True, str) keys
    path_key = tuple((isinstance(part, str), part) for part in parts)
    keyword = "false" if error.validator is None else str(error.validator)  # the `false` schema
    converted = SchemaError(json_path(parts), _message(error), keyword)
    return (path_key, converted.message, converted.keyword), converted


def _message(error: Any) -> str:
    message = str(error.message)
    shown = repr(error.instance)
    if len(shown) > PREVIEW_CHARS:
        message = message.replace(shown, _cut(shown))
    return _one_line(message)


# -- wording -------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply for Python's recursion limit"
    ref = getattr(exc, "ref", None)
    if isinstance(ref, str):  # a referencing.exceptions.Unresolvable, maybe wrapped
        return _unresolvable(exc, ref)
    json_path = getattr(exc, "json_path", None)
    message = getattr(exc, "message", None)
    if isinstance(json_path, str) and isinstance(message, str):  # a jsonschema SchemaError
        return _one_line(f"at {json_path}: {message}")
    return _one_line(f"{type(exc).__name__}: {exc}")


def _unresolvable(exc: BaseException, ref: str) -> str:
    # A pointer or anchor that misses carries the resource it searched; a
    # resource that is missing altogether would have had to be retrieved.
    anchor = getattr(exc, "anchor", None)
    if isinstance(anchor, str):
        return f"$ref anchor {_preview(anchor)} is not defined in the schema"
    if hasattr(exc, "resource"):
        return f"$ref {_preview('#' + ref)} points to nothing in the schema"
    return f"cannot resolve $ref {_preview(ref)} (remote references are never fetched)"


def _one_line(text: str) -> str:
    return _cut(_LINE_BREAKS.sub(" ", text), MAX_MESSAGE_CHARS)


def _preview(value: Any) -> str:
    return _cut(repr(value))


def _cut(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
