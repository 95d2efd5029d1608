"""The local model: one llama.cpp `Llama`, a lock around it, and OpenAI → llama-cpp translation.

`response_format` translation (llama-cpp's server answers 500 to ``json_schema``; we do not):

- ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` becomes llama-cpp's
  ``{"type": "json_object", "schema": schema}``: generation is constrained by a grammar built
  from the schema. ``name`` and ``strict`` are accepted and not needed.
- ``{"type": "json_object"}`` (optionally with llama-cpp's own ``schema``) passes through.
- ``{"type": "text"}`` or none: free text. Anything else: 400.

The grammar is the one llama-cpp builds for that form (``json_schema_to_gbnf``, or its JSON
grammar without a schema), built here so that a schema it cannot convert is a 400 rather than
a silent fall back to any JSON, and with one fix: no raw control characters inside strings.

Schemas are limited before any of that (``SCHEMA_LIMITS``: depth, size, enum length): a schema
300 levels deep overflowed the converter's recursion (500) and an enum of 20,000 strings made
an 8-token answer cost 9 s of CPU; both are now a 422 naming the limit.

Answers depend only on the request: each completion starts from an empty context (llama-cpp
would otherwise reuse the previous request's prompt prefix, and the same seed gave different
answers depending on what came before).

The grammar enforces types, ``enum``/``const``, ``required``, ``additionalProperties: false``,
``minLength``/``maxLength`` and ``minItems``/``maxItems``, but not ``minimum``/``maximum``;
so an integer range of at most ``ENUMERABLE_INTEGERS`` values is handed to the grammar as an
``enum`` of its values. Wider or one-sided ranges, ``number`` bounds and ``multipleOf`` are
not enforced: clients validate answers anyway.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koholint.web.problems import PayloadTooLargeError, ProblemError, UnprocessableError
from llm_local.config import INSTALL_HINT, ModelNotFoundError, Settings

# llama.cpp seeds are 32-bit and 0xFFFFFFFF means "pick one at random": reduce below it.
SEED_MODULUS = 2**32 - 1
ENUMERABLE_INTEGERS = 256
# JSON strings may not hold raw control characters; llama-cpp-python 0.3.36's schema converter
# lets them through (a raw newline made up to 1 in 10 free-string answers invalid JSON).
STRICT_CHAR_RULE = r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
_CHAR_RULE = re.compile(r"^char ::= .*$", re.MULTILINE)
MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_CHARS = 16_000
MAX_ENUM_VALUES = 256
SCHEMA_LIMITS = (
    f"a response_format schema is at most {MAX_SCHEMA_CHARS} characters of JSON, "
    f"{MAX_SCHEMA_DEPTH} levels deep, with at most {MAX_ENUM_VALUES} values per enum"
)
# Keywords whose values are data, not subschemas: never rewritten.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


class UnsupportedFormatError(ProblemError):
    title = "Unsupported response_format"


@dataclass(frozen=True)
class Generation:
    """How to sample one answer; `response_format` is in OpenAI's form."""

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    response_format: Mapping[str, Any] | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0


@dataclass(frozen=True)
class Completion:
    id: str
    created: int
    content: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


class ChatModel:
    """Owns the `Llama` instance; `complete` blocks, so call it from a worker thread."""

    def __init__(self, llama: Any, *, path: Path, n_ctx: int, load_seconds: float) -> None:
        self._llama = llama
        # llama.cpp contexts are not thread-safe: one generation at a time.
        self._lock = threading.Lock()
        self.path = path
        self.n_ctx = n_ctx
        self.load_seconds = load_seconds
        self.loaded_at = int(time.time())

    @classmethod
    def load(cls, settings: Settings) -> ChatModel:
        """Read the GGUF file (blocking); errors name the setting or the extra to install."""
        try:
            from llama_cpp import Llama
        except ImportError as error:
            raise ModelNotFoundError(
                f"llama-cpp-python is not installed; {INSTALL_HINT}"
            ) from error
        path = settings.resolved_model_path()
        started = time.perf_counter()
        llama = Llama(
            model_path=str(path), n_ctx=settings.n_ctx, n_threads=settings.n_threads,
            seed=0, verbose=False,
        )  # fmt: skip
        return cls(
            llama, path=path, n_ctx=settings.n_ctx, load_seconds=time.perf_counter() - started
        )

    def close(self) -> None:
        """Free the weights and the context, after the generation in progress."""
        with self._lock:
            self._llama.close()

    def complete(self, messages: Sequence[Mapping[str, str]], generation: Generation) -> Completion:
        """One chat completion, under the lock."""
        grammar = json_grammar(llama_response_format(generation.response_format))
        seed = None if generation.seed is None else generation.seed % SEED_MODULUS
        with self._lock:
            # An empty context: a reused prompt prefix is evaluated in other batches, which
            # changes the logits in their last bits, and so the sampled answer.
            self._llama.reset()
            try:
                answer = self._llama.create_chat_completion(
                    messages=list(messages), max_tokens=generation.max_tokens,
                    temperature=generation.temperature, top_p=generation.top_p, seed=seed,
                    stop=generation.stop, grammar=grammar,
                    presence_penalty=generation.presence_penalty,
                    frequency_penalty=generation.frequency_penalty,
                )  # fmt: skip
            except ValueError as error:
                if "context window" not in str(error):
                    raise
                raise PayloadTooLargeError(
                    f"the prompt does not fit the context window: {error}", limit_tokens=self.n_ctx
                ) from None
        choice, usage = answer["choices"][0], answer["usage"]
        return Completion(
            id=answer["id"], created=answer["created"], content=choice["message"]["content"] or "",
            finish_reason=choice["finish_reason"], prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
        )  # fmt: skip


def llama_response_format(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI's `response_format` in llama-cpp's form; None means free text."""
    kind = None if response_format is None else response_format.get("type")
    if response_format is None or kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
    elif kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping):
            raise UnsupportedFormatError("json_schema must be an object: {name, schema, strict}")
        schema = spec.get("schema")
    else:
        raise UnsupportedFormatError(
            f"response_format type {kind!r} is not supported; use text, json_object or json_schema"
        )
    if schema is None:
        return {"type": "json_object"}
    if not isinstance(schema, Mapping):
        raise UnsupportedFormatError("the response_format schema must be a JSON object")
    check_schema_limits(schema)
    return {"type": "json_object", "schema": grammar_schema(schema)}


def check_schema_limits(schema: Mapping[str, Any]) -> None:
    """422 for a schema over ``SCHEMA_LIMITS`` (checked without recursion)."""
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        raise _schema_error(f"the schema is over {MAX_SCHEMA_CHARS} characters of JSON")
    pending: list[tuple[Any, int]] = [(schema, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise _schema_error(f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, Mapping):
            enum = node.get("enum")
            if isinstance(enum, list) and len(enum) > MAX_ENUM_VALUES:
                raise _schema_error(f"an enum has {len(enum)} values; at most {MAX_ENUM_VALUES}")
            pending += [(value, depth + 1) for value in node.values()]
        elif isinstance(node, list):
            pending += [(value, depth + 1) for value in node]


def _schema_error(reason: str) -> UnprocessableError:
    return UnprocessableError(
        f"{reason}: {SCHEMA_LIMITS}", field="response_format", limits=SCHEMA_LIMITS
    )


def json_grammar(llama_format: Mapping[str, Any] | None) -> Any:
    """The `LlamaGrammar` llama-cpp builds for its `response_format`, with strict JSON strings.

    llama-cpp would fall back silently to unconstrained JSON for a schema its converter
    cannot handle; we answer 400 instead.
    """
    if llama_format is None:
        return None
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf

    if "schema" not in llama_format:
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    try:
        gbnf = json_schema_to_gbnf(json.dumps(llama_format["schema"]))
    # The converter signals unsupported schemas with asserts, KeyErrors and ValueErrors alike.
    except Exception as error:
        raise UnsupportedFormatError(
            f"the schema cannot be turned into a grammar: {error}"
        ) from None
    strict = _CHAR_RULE.sub(lambda _: STRICT_CHAR_RULE, gbnf)
    return LlamaGrammar.from_string(strict, verbose=False)


def grammar_schema(schema: Any) -> Any:
    """A copy of `schema` where small integer ranges are also an `enum`, which grammars enforce."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    rewritten = {
        key: copy.deepcopy(value) if key in _DATA_KEYWORDS else grammar_schema(value)
        for key, value in schema.items()
    }
    values = _integer_range(rewritten)
    if values is not None:
        rewritten["enum"] = values
    return rewritten


def _integer_range(schema: Mapping[str, Any]) -> list[int] | None:
    """The allowed values of a bounded integer schema, when there are few enough to list."""
    if schema.get("type") != "integer" or {"enum", "const", "multipleOf"} & schema.keys():
        return None
    bounds = [
        schema.get(key) for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
    ]
    if any(bound is not None and not _is_number(bound) for bound in bounds):
        return None  # draft-4 boolean exclusive bounds: left to the client's validation
    minimum, exclusive_minimum, maximum, exclusive_maximum = bounds
    lows = [math.ceil(minimum)] if minimum is not None else []
    lows += [math.floor(exclusive_minimum) + 1] if exclusive_minimum is not None else []
    highs = [math.floor(maximum)] if maximum is not None else []
    highs += [math.ceil(exclusive_maximum) - 1] if exclusive_maximum is not None else []
    if not lows or not highs:
        return None
    low, high = max(lows), min(highs)
    if high < low or high - low + 1 > ENUMERABLE_INTEGERS:
        return None
    return list(range(low, high + 1))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
