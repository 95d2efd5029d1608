"""The three judges, their backends, and the vote.

Each judge is a view of a segment and the ``Verdict`` model: the *vision* judge sees key
frames (``/vision``), the *state* judge the RAM facts as text (``/state``), the *progress*
judge the same facts framed as "how much closer to winning" (``/puzzle``, the big reasoning
model). A backend answers one sample of one judge with one seed:

- ``LlmJudges`` asks the llm-d gateway or the llm-local server through ``LlmClient``
  (retries, seed, validation, one repair round, rejection). A text-only model makes the
  vision judge abstain, and the record says so.
- ``RulesJudges`` is the embedded default: deterministic rules over the RAM facts, named
  ``rules`` wherever a model name would go. It reads no frames: its vision judge abstains.
- ``NoisyJudges`` (``noisy``) answers like the rules with probability ``accuracy`` and
  otherwise wrongly, seeded per question: a judge of known quality, to measure what a judge's
  accuracy does to the loop.

Besides scoring segments, the text judges compare two *states* (``compare``): which one is
further along toward the win. Their answers are measured against the RAM ground truth
(``koholint.reward.truth``); ``evaluator.comparisons`` asks, votes and measures.

The vote: a judge's verdict is the majority label of its valid answers (a tie goes to the
label answered first, in seed order) and their median score; it abstains when none is valid.
The ensemble's label is the majority over the judges that voted (a tie goes to the judge
first in ``JUDGES``: progress, then state, then vision) and its score the judges' mean.
"""

from __future__ import annotations

import base64
import hashlib
import random
import statistics
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from evaluator.segments import LoadedSegment
from koholint.llm.client import (
    MAX_PROMPT_CHARS,
    CircuitOpenError,
    LlmClient,
    LlmRejectedError,
    LlmUnavailableError,
    RetryPolicy,
    RouteSettings,
)
from koholint.reward.truth import StateQuestion, further_along
from koholint.schemas.evaluator import (
    JUDGE_ROUTES,
    JUDGES,
    LABELS,
    MAX_EVENT_CHARS,
    MAX_EVENTS,
    MAX_RATIONALE_CHARS,
    AbstainReason,
    JudgeResult,
    Label,
    SampleAnswer,
    SegmentFacts,
    StateFacts,
    Verdict,
)

OBJECTIVES = (
    "find the sword",
    "open the gate by pushing the block onto the plate",
    "enter the dungeon",
    "find the small key",
    "open the locked door",
    "take the instrument (the win)",
)
SYSTEM_PROMPT = (
    "You judge short segments of play of a Game Boy adventure game in which Link explores rooms, "
    "finds a sword, pushes a block onto a plate to open a gate, finds a key, opens a locked door "
    "and takes the instrument to win. Answer with one JSON object that follows the given schema: "
    "score 0 (worst) to 10 (best), label one of progress, exploring, stuck, backtracking, dying, "
    "the events you saw (a few words each) and a one-line rationale."
)
STATE_QUESTION = "How good was this segment of play? Label what Link was doing."
PROGRESS_QUESTION = (
    "Goals in order: {objectives}.\nHow much closer to winning did this segment get? "
    "0 = no closer or further away, 10 = won."
)
VISION_QUESTION = (
    "These are key frames of one segment, in order (first, where the room, health or items "
    "changed, last). How good was this segment of play? Label what Link was doing."
)
IMAGE_BUDGET_CHARS = MAX_PROMPT_CHARS * 3 // 4
"""Base64 frames in one vision prompt at most (the rest of the prompt fits in the remainder)."""
COMPARE_QUESTION = (
    "Goals in order: {objectives}.\nTwo moments of the same game follow. Which is further along "
    "toward winning? Answer further: first, second or same, and a one-line rationale."
)
COMPARING_JUDGES = ("progress", "state")
"""The judges asked to compare states (from text: the vision judge does not compare)."""
PROMPT_HASH = hashlib.sha256(
    "\x00".join(
        (SYSTEM_PROMPT, STATE_QUESTION, PROGRESS_QUESTION, VISION_QUESTION, COMPARE_QUESTION)
    ).encode()
).hexdigest()[:16]
"""Changes whenever a prompt template changes (part of the judge config hash)."""


def facts_text(facts: SegmentFacts) -> str:
    """The RAM trajectory condensed to the lines the text judges read."""
    items = ", ".join(facts.items_gained) or "none"
    return "\n".join((
        f"steps: {facts.steps}",
        f"rooms entered: {facts.rooms_entered} ({facts.new_rooms} never seen before, "
        f"{facts.revisits} re-entered), distinct rooms: {facts.distinct_rooms}",
        f"items gained: {items}; keys change: {facts.keys_delta:+d}; rupees change: {facts.rupees_delta:+d}",
        f"health: {facts.health_start} -> {facts.health_end} (8 per heart), lost {facts.health_lost}",
        f"enemies defeated: {facts.kills}; deaths: {facts.deaths}",
        f"dialogs opened: {facts.dialogs_opened}; questions shown: {facts.choices_shown}",
        f"steps on which Link moved: {facts.tiles_moved}",
        f"instrument taken: {'yes' if facts.instrument_taken else 'no'}; "
        f"won: {'yes' if facts.won else 'no'}",
    ))  # fmt: skip


class StateChoice(BaseModel):
    """A judge's answer to "which state is further along" (sent as the json_schema)."""

    model_config = ConfigDict(extra="forbid")
    further: Literal["first", "second", "same"]
    rationale: str = Field(max_length=MAX_RATIONALE_CHARS, description="one line: why")


CHOICE_VOTES = {"first": 1, "second": -1, "same": 0}


def state_text(state: StateFacts, question: StateQuestion = "progress+rooms") -> str:
    """One sampled state as the lines a text judge reads (not its progress level: that is
    the ground truth the judge is measured against; not the rooms reached when the question
    is the level alone)."""
    rooms = f"rooms visited so far: {state.rooms}; " if question == "progress+rooms" else ""
    return (
        f"room {state.room}; {rooms}items: "
        f"{', '.join(state.items) or 'none'}; small keys: {state.keys}; health: {state.health}; "
        f"instrument: {'yes' if state.has_instrument else 'no'}; credits: {'yes' if state.won else 'no'}"
    )


def compare_messages(
    first: StateFacts, second: StateFacts, question: StateQuestion = "progress+rooms"
) -> list[dict[str, Any]]:
    """The chat messages that ask a text judge which of two states is further along."""
    asked = COMPARE_QUESTION.format(objectives="; ".join(OBJECTIVES))
    shown = (state_text(first, question), state_text(second, question))
    user = f"{asked}\nfirst: {shown[0]}\nsecond: {shown[1]}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def judge_messages(judge: str, segment: LoadedSegment) -> list[dict[str, Any]]:
    """The chat messages that ask `judge` about `segment`."""
    system = {"role": "system", "content": SYSTEM_PROMPT}
    if judge == "vision":
        parts: list[dict[str, Any]] = [{"type": "text", "text": VISION_QUESTION}]
        budget = IMAGE_BUDGET_CHARS
        for step, png in segment.key_frames:
            url = f"data:image/png;base64,{base64.b64encode(png).decode()}"
            budget -= len(url)
            if budget < 0:  # the client refuses prompts over its limit: show fewer frames
                break
            parts.append({"type": "text", "text": f"step {step}:"})
            parts.append({"type": "image_url", "image_url": {"url": url}})
        return [system, {"role": "user", "content": parts}]
    question = (
        STATE_QUESTION
        if judge == "state"
        else PROGRESS_QUESTION.format(objectives="; ".join(OBJECTIVES))
    )
    user = f"What happened in the segment:\n{facts_text(segment.facts)}\n{question}"
    return [system, {"role": "user", "content": user}]


class JudgeBackend(Protocol):
    name: str
    state_question: StateQuestion
    """what makes one state further along when states are compared (koholint.reward.truth)"""

    def models(self) -> dict[str, str]:
        """judge -> the model that answers it."""
        ...

    def abstains(self, judge: str) -> tuple[AbstainReason, str] | None:
        """Why `judge` is never asked with this backend, or None."""
        ...

    def answer(self, judge: str, segment: LoadedSegment, seed: int) -> SampleAnswer: ...

    def compare(
        self, judge: str, first: StateFacts, second: StateFacts, seed: int, question: str
    ) -> int:
        """+1: `first` is further along, -1: `second` is, 0: the same or no valid answer.
        `question` names the pair (the noisy backend seeds its error with it)."""
        ...

    def close(self) -> None: ...


class LlmJudges:
    """Judges answered by language models: the llm-d gateway or the llm-local server."""

    def __init__(
        self,
        client: LlmClient,
        *,
        name: str,
        text_only: bool,
        state_question: StateQuestion = "progress+rooms",
    ) -> None:
        self.client, self.name, self.text_only = client, name, text_only
        self.state_question = state_question

    def models(self) -> dict[str, str]:
        return {
            judge: self.client.routes[route].model
            for judge, route in JUDGE_ROUTES.items()
            if route in self.client.routes
        }

    def abstains(self, judge: str) -> tuple[AbstainReason, str] | None:
        if judge == "vision" and self.text_only:
            return "no_vision", f"the {self.name} backend's model is text-only: it takes no images"
        if JUDGE_ROUTES[judge] not in self.client.routes:
            return "not_configured", f"no model configured for /{JUDGE_ROUTES[judge]}"
        return None

    def answer(self, judge: str, segment: LoadedSegment, seed: int) -> SampleAnswer:
        started = time.perf_counter()
        try:
            result = self.client.ask(
                JUDGE_ROUTES[judge], judge_messages(judge, segment), Verdict, seed=seed
            )
        except LlmRejectedError as error:
            return _failed(seed, "rejected", error, started)
        except CircuitOpenError as error:
            return _failed(seed, "circuit_open", error, started)
        except LlmUnavailableError as error:
            return _failed(seed, "unavailable", error, started)
        except ValueError as error:  # the client refused the prompt (over its size limit)
            return _failed(seed, "rejected", error, started)
        outcome = "repaired" if result.record.outcome == "repaired" else "valid"
        return SampleAnswer(
            seed=seed, outcome=outcome, verdict=result.value, latency_ms=_since(started),
            attempts=result.record.attempts,
        )  # fmt: skip

    def compare(
        self, judge: str, first: StateFacts, second: StateFacts, seed: int, question: str
    ) -> int:
        try:
            result = self.client.ask(
                JUDGE_ROUTES[judge],
                compare_messages(first, second, self.state_question),
                StateChoice,
                seed=seed,
            )
        except (LlmRejectedError, CircuitOpenError, LlmUnavailableError, ValueError):
            return 0  # no answer decides nothing; the segment scores carry the outage
        return CHOICE_VOTES[result.value.further]

    def close(self) -> None:
        self.client.close()


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _failed(seed: int, outcome: Any, error: Exception, started: float) -> SampleAnswer:
    return SampleAnswer(
        seed=seed, outcome=outcome, error=str(error)[:1000], latency_ms=_since(started)
    )


class RulesJudges:
    """Deterministic judges over the RAM facts (the embedded default); they see no frames."""

    name = "rules"

    def __init__(self, state_question: StateQuestion = "progress+rooms") -> None:
        self.state_question = state_question

    def models(self) -> dict[str, str]:
        return {"state": "rules", "progress": "rules"}

    def abstains(self, judge: str) -> tuple[AbstainReason, str] | None:
        if judge == "vision":
            return "no_vision", "the rules backend reads RAM facts, not frames"
        return None

    def answer(self, judge: str, segment: LoadedSegment, seed: int) -> SampleAnswer:
        started = time.perf_counter()
        rule = rules_state_verdict if judge == "state" else rules_progress_verdict
        return SampleAnswer(
            seed=seed, outcome="valid", verdict=rule(segment.facts), latency_ms=_since(started)
        )

    def compare(
        self, judge: str, first: StateFacts, second: StateFacts, seed: int, question: str
    ) -> int:
        return further_along(first, second, self.state_question)

    def close(self) -> None:
        return None


class NoisyJudges(RulesJudges):
    """The rules' answers, right with probability `accuracy` and wrong otherwise: a judge of
    known quality. The error is drawn once per question (seeded by `seed`, the judge and the
    question), not per sample, so the M answers agree and the judge's accuracy is `accuracy`
    whatever M. A wrong comparison is the opposite order (one of the two orders for a tie), so
    over the pairs with a truth the judge decides every one and is right on a share p; a
    wrong verdict is a random score and label."""

    name = "noisy"

    def __init__(
        self, accuracy: float, seed: int = 0, state_question: StateQuestion = "progress+rooms"
    ) -> None:
        if not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"noisy accuracy {accuracy} must be within [0, 1]")
        super().__init__(state_question)
        self.accuracy, self.seed = accuracy, seed

    def models(self) -> dict[str, str]:
        model = f"noisy-{self.accuracy:g}"
        return {"state": model, "progress": model}

    def _draw(self, question: str) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}\x00{question}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def answer(self, judge: str, segment: LoadedSegment, seed: int) -> SampleAnswer:
        sample = super().answer(judge, segment, seed)
        draw = self._draw(f"{judge}\x00{segment.ref.prefix}")
        if draw.random() < self.accuracy or sample.verdict is None:
            return sample
        wrong = Verdict(score=draw.randint(0, 10), label=draw.choice(LABELS), events=[],
                        rationale="noisy judge: a random verdict")  # fmt: skip
        return sample.model_copy(update={"verdict": wrong})

    def compare(
        self, judge: str, first: StateFacts, second: StateFacts, seed: int, question: str
    ) -> int:
        truth = further_along(first, second, self.state_question)
        draw = self._draw(f"{judge}\x00{question}")
        if draw.random() < self.accuracy:
            return truth
        return -truth if truth else draw.choice((1, -1))


def _activity(facts: SegmentFacts) -> Label:
    if facts.deaths or (facts.health_end == 0 and facts.health_start > 0):
        return "dying"
    if facts.items_gained or facts.keys_delta > 0 or facts.instrument_taken or facts.won:
        return "progress"
    if facts.new_rooms:
        return "exploring"
    if facts.rooms_entered and facts.revisits >= facts.rooms_entered:
        return "backtracking"
    if facts.tiles_moved < max(1, facts.steps // 8) and not facts.rooms_entered:
        return "stuck"
    return "exploring"


def _clamp(value: float) -> int:
    return max(0, min(10, round(value)))


def rules_state_verdict(facts: SegmentFacts) -> Verdict:
    """How well Link played: finds and fights count, damage and deaths cost."""
    label = _activity(facts)
    score = (
        4 + 3 * len(facts.items_gained) + 2 * max(facts.keys_delta, 0) + facts.new_rooms
        + 0.5 * min(facts.kills, 4) - 3 * facts.deaths - facts.health_lost / 8
    )  # fmt: skip
    if label == "stuck":
        score = min(score, 1)
    if facts.won or facts.instrument_taken:
        score = 10
    events = _events(facts)
    return Verdict(
        score=_clamp(score), label=label, events=events,
        rationale=f"rules over RAM facts: {label}, {', '.join(events) or 'nothing happened'}"[:MAX_RATIONALE_CHARS],
    )  # fmt: skip


def rules_progress_verdict(facts: SegmentFacts) -> Verdict:
    """How much closer to winning: only milestones of the objective list count."""
    milestones = 4 * ("sword" in facts.items_gained) + 3 * max(facts.keys_delta, 0)
    milestones += 2 * (facts.choices_shown > 0) + min(facts.new_rooms, 2)
    score = 10 if (facts.won or facts.instrument_taken) else milestones
    if facts.deaths:
        label: Label = "dying"
    elif score > 0:
        label = "progress"
    elif facts.rooms_entered and facts.revisits >= facts.rooms_entered:
        label = "backtracking"
    elif facts.tiles_moved < max(1, facts.steps // 8):
        label = "stuck"
    else:
        label = "exploring"
    return Verdict(
        score=_clamp(score), label=label, events=_events(facts),
        rationale=f"rules over RAM facts: {milestones} milestone points toward the win"[:MAX_RATIONALE_CHARS],
    )  # fmt: skip


def _events(facts: SegmentFacts) -> list[str]:
    events = [f"gained {item}" for item in facts.items_gained]
    for count, what in (
        (facts.new_rooms, "new rooms"), (facts.keys_delta, "keys gained"),
        (facts.kills, "enemies defeated"), (facts.deaths, "deaths"),
        (facts.dialogs_opened, "dialogs opened"), (facts.revisits, "rooms re-entered"),
    ):  # fmt: skip
        if count > 0:
            events.append(f"{count} {what}")
    if facts.instrument_taken:
        events.append("took the instrument")
    return [event[:MAX_EVENT_CHARS] for event in events[:MAX_EVENTS]]


# -- the vote ---------------------------------------------------------------------
def majority(labels: Sequence[Label]) -> Label:
    """The most common label; a tie goes to the one that comes first in `labels`."""
    counts = Counter(labels)
    top = max(counts.values())
    return next(label for label in labels if counts[label] == top)


def judge_vote(judge: str, model: str, samples: list[SampleAnswer]) -> JudgeResult:
    """Majority label and median score of the valid answers; abstains when none is valid."""
    valid = [sample.verdict for sample in samples if sample.verdict is not None]
    route = JUDGE_ROUTES[judge]
    if not valid:
        down = [s for s in samples if s.outcome in ("unavailable", "circuit_open")]
        reason: AbstainReason = "unavailable" if down else "rejected"
        detail = f"all {len(samples)} answers {reason}: {(down or samples)[-1].error or ''}"
        return JudgeResult(
            judge=judge, route=route, model=model, samples=samples, abstained=True,
            abstain_reason=reason, abstain_detail=detail[:1000],
        )  # fmt: skip
    return JudgeResult(
        judge=judge, route=route, model=model, samples=samples,
        label=majority([verdict.label for verdict in valid]),
        score=float(statistics.median(verdict.score for verdict in valid)), abstained=False,
    )  # fmt: skip


def abstained(judge: str, model: str, reason: AbstainReason, detail: str) -> JudgeResult:
    """A judge never asked (e.g. vision on a text-only backend)."""
    return JudgeResult(
        judge=judge, route=JUDGE_ROUTES[judge], model=model, samples=[], abstained=True,
        abstain_reason=reason, abstain_detail=detail,
    )  # fmt: skip


def ensemble_vote(
    results: Sequence[JudgeResult], excluded: Collection[str] = ()
) -> tuple[Label | None, float | None]:
    """Majority label over the judges that voted (ties: the judge first in JUDGES) and the
    mean of their scores; (None, None) when every judge abstained. `excluded` judges (no
    better than chance against the RAM ground truth) have no vote."""
    voters = sorted(
        (result for result in results if not result.abstained and result.judge not in excluded),
        key=lambda result: JUDGES.index(result.judge),
    )
    if not voters:
        return None, None
    label = majority([voter.label for voter in voters if voter.label is not None])
    scores = [voter.score for voter in voters if voter.score is not None]
    return label, round(statistics.fmean(scores), 4)


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa over items rated by a varying number of raters (items with < 2 raters
    are left out); None when no item has two raters. 1 = full agreement, 0 = chance."""
    items = [Counter(labels) for labels in ratings if len(labels) >= 2]
    if not items:
        return None
    agreement = []
    totals: Counter[str] = Counter()
    for counts in items:
        raters = sum(counts.values())
        agreement.append((sum(n * n for n in counts.values()) - raters) / (raters * (raters - 1)))
        totals.update(counts)
    observed = statistics.fmean(agreement)
    all_ratings = sum(totals.values())
    expected = sum((count / all_ratings) ** 2 for count in totals.values())
    if expected >= 1.0:
        return 1.0  # every rating in the batch is the same label
    return round((observed - expected) / (1 - expected), 4)


def make_judges(
    backend: str,
    *,
    base_url: str = "",
    models: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    attempts: int = 4,
    max_tokens: int = 256,
    temperature: float | None = None,
    noisy_accuracy: float = 0.8,
    seed: int = 0,
    state_question: StateQuestion = "progress+rooms",
    api_key: str = "",
) -> JudgeBackend:
    """`rules`; `noisy` (the rules right with probability `noisy_accuracy`); `local`
    (llm-local, SmolLM2 on the text routes); `llm-d` (the gateway, a model name per judge in
    `models`). `api_key`: the bearer token the server wants (llm-local's when it has one)."""
    from koholint.planning.backends import LOCAL_MODEL

    if backend == "rules":
        return RulesJudges(state_question)
    if backend == "noisy":
        return NoisyJudges(noisy_accuracy, seed, state_question)
    if backend == "local":
        base_url = base_url or "http://127.0.0.1:8090"
        models = {"state": LOCAL_MODEL, "progress": LOCAL_MODEL}
        # A 135M model at temperature 0 repeats one answer for every seed; sampling makes
        # the M answers differ and stays reproducible through the seeds.
        temperature = 0.7 if temperature is None else temperature
    elif backend != "llm-d":
        raise ValueError(f"backend {backend!r} is unknown; use rules, noisy, local or llm-d")
    if not base_url:
        raise ValueError("the llm-d backend needs the gateway's base URL (llm_base_url)")
    if not models:
        raise ValueError("the llm-d backend needs a model name per judge")
    routes = {
        JUDGE_ROUTES[judge]: RouteSettings(
            model=model, timeout_s=timeout_s, max_tokens=max_tokens, temperature=temperature or 0.0
        )
        for judge, model in models.items()
    }
    client = LlmClient(
        base_url, routes, retry=RetryPolicy(attempts=attempts), api_key=api_key or None
    )
    return LlmJudges(
        client, name=backend, text_only=backend == "local", state_question=state_question
    )
