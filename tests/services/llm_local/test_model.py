"""OpenAI response_format → llama-cpp, and the grammar built from it (no model needed)."""

from __future__ import annotations

from typing import Any

import pytest

from llm_local.model import (
    ENUMERABLE_INTEGERS,
    UnsupportedFormatError,
    grammar_schema,
    json_grammar,
    llama_response_format,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["advance", "choose"]}},
    "required": ["action"],
    "additionalProperties": False,
}


def test_json_schema_becomes_json_object_with_the_schema() -> None:
    openai = {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA, "strict": True}}
    assert llama_response_format(openai) == {"type": "json_object", "schema": SCHEMA}


def test_json_object_passes_through() -> None:
    assert llama_response_format({"type": "json_object"}) == {"type": "json_object"}


@pytest.mark.parametrize("response_format", [None, {"type": "text"}])
def test_text_is_free(response_format: dict[str, Any] | None) -> None:
    assert llama_response_format(response_format) is None
    assert json_grammar(llama_response_format(response_format)) is None


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "grammar"},
        {},
        {"type": "json_schema"},
        {"type": "json_schema", "json_schema": {"schema": ["not", "an", "object"]}},
    ],
)
def test_other_formats_are_400(response_format: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedFormatError) as caught:
        llama_response_format(response_format)
    assert caught.value.status_code == 400


def test_small_integer_ranges_become_enums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "option": {"type": "integer", "minimum": 0, "maximum": 3},
            "level": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 4},
        },
        "$defs": {"Step": {"type": "integer", "minimum": -1, "maximum": 1}},
    }
    rewritten = grammar_schema(schema)
    assert rewritten["properties"]["option"]["enum"] == [0, 1, 2, 3]
    assert rewritten["properties"]["level"]["enum"] == [1, 2, 3]
    assert rewritten["$defs"]["Step"]["enum"] == [-1, 0, 1]
    assert "enum" not in schema["properties"]["option"]  # the caller's schema is untouched


@pytest.mark.parametrize(
    "integer",
    [
        {"type": "integer", "minimum": 0},
        {"type": "integer", "minimum": 0, "maximum": ENUMERABLE_INTEGERS},
        {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 3},
        {"type": "number", "minimum": 0, "maximum": 1},
        {"type": "integer", "enum": [2, 5], "minimum": 0, "maximum": 9},
    ],
)
def test_other_bounds_are_left_to_the_client(integer: dict[str, Any]) -> None:
    assert grammar_schema(integer) == integer


def test_data_is_not_rewritten() -> None:
    looks_like_a_schema = {"type": "integer", "minimum": 0, "maximum": 1}
    schema = {"type": "object", "default": looks_like_a_schema}
    assert grammar_schema(schema)["default"] == looks_like_a_schema


def test_grammar_strings_exclude_control_characters() -> None:
    schema = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 5}}}
    grammar = json_grammar({"type": "json_object", "schema": schema})
    char_rule = next(line for line in grammar._grammar.splitlines() if line.startswith("char ::="))
    assert r"\x00-\x1F" in char_rule


def test_schema_the_converter_cannot_handle_is_400() -> None:
    with pytest.raises(UnsupportedFormatError) as caught:
        json_grammar({"type": "json_object", "schema": {"$ref": "elsewhere.json"}})
    assert "grammar" in caught.value.detail
