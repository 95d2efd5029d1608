"""OpenAI-compatible chat completions, at the root and at the llm-d gateway's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from koholint.llm.client import ROUTES
from koholint.web.auth import ControlDep
from koholint.web.problems import (
    NotFoundError,
    PayloadTooLargeError,
    ProblemError,
    UnprocessableError,
    problem_responses,
)
from llm_local.config import Settings
from llm_local.deps import MetricsDep, ModelDep, SettingsDep
from llm_local.metrics import Metrics
from llm_local.model import ChatModel, Completion, Generation
from llm_local.schemas import (
    MAX_STOP_STRINGS,
    AssistantMessage,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    ModelCard,
    ModelList,
    Usage,
)

router = APIRouter(tags=["openai"])


async def known_route(route: str) -> str:
    if route not in ROUTES:
        raise NotFoundError(f"no route {route!r}; the routes are {', '.join(ROUTES)}")
    return route


RouteDep = Annotated[str, Depends(known_route)]


# 400: a request this server cannot honour (n > 1, streaming, an image, a response_format
# it does not know); 401: no token (the rule of koholint.web.auth: an answer spends the
# server's model); 413: over a limit on messages; 422: a field out of range.
CHAT_ERRORS = problem_responses(400, 401, 413, 422, 503)


@router.post("/v1/chat/completions", dependencies=[ControlDep], responses=CHAT_ERRORS)
async def create_chat_completion(
    body: ChatCompletionRequest, model: ModelDep, settings: SettingsDep, metrics: MetricsDep
) -> ChatCompletion:
    """Answer a chat; `response_format` json_schema constrains the answer to the schema."""
    return await answer(body, "default", model, settings, metrics)


@router.post(
    "/{route}/v1/chat/completions",
    dependencies=[ControlDep],
    responses={**CHAT_ERRORS, **problem_responses(404)},
)
async def create_routed_chat_completion(
    route: RouteDep,
    body: ChatCompletionRequest,
    model: ModelDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> ChatCompletion:
    """The same at a gateway route: vision, dialog, puzzle or state."""
    return await answer(body, route, model, settings, metrics)


@router.get("/v1/models", responses=problem_responses(503))
async def list_models(model: ModelDep, settings: SettingsDep) -> ModelList:
    """The one model this server runs."""
    return ModelList(data=[ModelCard(id=settings.model_name, created=model.loaded_at)])


@router.get("/{route}/v1/models", responses=problem_responses(404, 503))
async def list_routed_models(route: RouteDep, model: ModelDep, settings: SettingsDep) -> ModelList:
    """The same at a gateway route, for SDK clients whose base URL is the route."""
    return await list_models(model, settings)


async def answer(
    body: ChatCompletionRequest, route: str, model: ChatModel, settings: Settings, metrics: Metrics
) -> ChatCompletion:
    """Check the request against the limits, generate in a worker thread, count it."""
    messages = llama_messages(body, settings)
    generation = generation_for(body, settings)
    with metrics.completion_seconds.labels(route).time():
        completion = await run_in_threadpool(model.complete, messages, generation)
    metrics.completions.labels(route, completion.finish_reason or "none").inc()
    metrics.tokens.labels("prompt").inc(completion.prompt_tokens)
    metrics.tokens.labels("completion").inc(completion.completion_tokens)
    return chat_completion(completion, settings.model_name)


def llama_messages(body: ChatCompletionRequest, settings: Settings) -> list[dict[str, str]]:
    """The messages as role and text, within the limits; images are refused (400)."""
    if len(body.messages) > settings.max_messages:  # the spec's maxItems: a 422 like any other
        raise UnprocessableError(
            f"{len(body.messages)} messages; at most {settings.max_messages}",
            limit=settings.max_messages, field="messages",
        )  # fmt: skip
    messages = []
    for index, message in enumerate(body.messages):
        text = message.text()
        if len(text) > settings.max_message_chars:
            raise PayloadTooLargeError(
                f"messages[{index}] has {len(text)} characters; at most {settings.max_message_chars}",
                limit=settings.max_message_chars,
            )
        messages.append({"role": message.role, "content": text})
    return messages


def generation_for(body: ChatCompletionRequest, settings: Settings) -> Generation:
    """Sampling settings from the request; what cannot be honoured is refused."""
    if body.n != 1:
        raise ProblemError(f"n={body.n}: only one choice per request (n=1) is supported")
    if body.stream:
        raise ProblemError("streaming is not supported; send stream=false")
    stops = body.stop_strings()
    if len(stops) > MAX_STOP_STRINGS:
        raise UnprocessableError(f"{len(stops)} stop strings; at most {MAX_STOP_STRINGS}")
    limit = settings.max_tokens_limit
    for name in ("max_tokens", "max_completion_tokens"):
        value = getattr(body, name)
        if value is not None and value > limit:
            raise UnprocessableError(
                f"{name}={value} is over the limit {limit}", limit=limit, field=name
            )
    requested = body.max_tokens or body.max_completion_tokens
    return Generation(
        max_tokens=requested or limit, temperature=body.temperature, top_p=body.top_p,
        seed=body.seed, stop=stops, response_format=body.response_format,
        presence_penalty=body.presence_penalty, frequency_penalty=body.frequency_penalty,
    )  # fmt: skip


def chat_completion(completion: Completion, model_name: str) -> ChatCompletion:
    usage = Usage(
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        total_tokens=completion.prompt_tokens + completion.completion_tokens,
    )
    choice = Choice(
        message=AssistantMessage(content=completion.content),
        finish_reason=completion.finish_reason,
    )
    return ChatCompletion(
        id=completion.id,
        created=completion.created,
        model=model_name,
        choices=[choice],
        usage=usage,
    )
