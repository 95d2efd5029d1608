"""The OpenAI chat-completions request and response, as much of them as this server honours.

Unknown request fields are ignored; known ones that cannot be honoured (an image, `n` > 1,
streaming) are refused with 400 when the request is checked, never with a 500.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from koholint.schemas.fields import JsonFloat, JsonInt, number_not_text
from koholint.web.problems import ProblemError

MAX_STOP_STRINGS = 4
TokenCount = Annotated[int, Field(ge=1), BeforeValidator(number_not_text)]


class TextOnlyError(ProblemError):
    title = "Unsupported content"


class ContentPart(BaseModel):
    """One part of a message's content; only `text` parts are understood."""

    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The content as one string; a part that is not text is refused."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        for part in self.content:
            if part.type != "text":
                raise TextOnlyError(
                    f"this model is text-only; a {self.role} message has a {part.type!r} part"
                )
        return "".join(part.text or "" for part in self.content)


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field("", description="any name; the answer reports the served model's")
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: JsonFloat = Field(1.0, ge=0.0, le=2.0)
    top_p: JsonFloat = Field(1.0, ge=0.0, le=1.0)
    max_tokens: TokenCount | None = Field(None, description="default and limit: max_tokens_limit")
    max_completion_tokens: TokenCount | None = Field(None, description="alias of max_tokens")
    seed: JsonInt | None = Field(
        None, description="same seed and prompt, same answer, whatever came before"
    )
    stop: str | Annotated[list[str], Field(max_length=MAX_STOP_STRINGS)] | None = Field(
        None, description=f"up to {MAX_STOP_STRINGS} stop strings"
    )
    response_format: dict[str, Any] | None = Field(
        None, description="text | json_object | json_schema (grammar-constrained)"
    )
    presence_penalty: JsonFloat = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: JsonFloat = Field(0.0, ge=-2.0, le=2.0)
    n: JsonInt = Field(1, ge=1, description="only 1 is supported")
    stream: StrictBool = Field(False, description="not supported")

    def stop_strings(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str | None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "koholint"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
