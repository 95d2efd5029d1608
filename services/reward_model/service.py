"""The reward model's state: the preference dataset, training, publishing, scoring, and the
consumer of ``koholint.scores``.

Scores arrive as ``ScoresEvent`` messages (the evaluator's contract) naming each segment's
prefix and ensemble score; the segment's observations are read from the store
(``koholint.env.export.read_segment``). When ``train_after_new_pairs`` new pairs have
arrived since the last attempt, or when asked, R_phi is fitted and, if its held-out accuracy
beats the floor, published as a new version and announced on ``koholint.reward-models``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np
from pydantic import ValidationError

from koholint.bus import Bus
from koholint.env.encoding import encoder_version
from koholint.env.export import SegmentFormatError, read_segment
from koholint.reward.model import (
    LATEST_KEY,
    PREFIX,
    LoadedRewardModel,
    RewardModelError,
    latest_version,
    list_versions,
    load_version,
    new_version,
    publish,
    read_card,
    weights_bytes,
)
from koholint.reward.truth import (
    MIN_MEASURED_PAIRS,
    denoised_accuracy,
    judge_accuracy,
    label_agreement,
)
from koholint.schemas.evaluator import (
    SCORE_SCHEMA_VERSIONS,
    JudgeAccuracy,
    ScoresEvent,
    StateComparisons,
)
from koholint.schemas.reward_model import (
    ModelList,
    RewardModelCard,
    RewardModelEvent,
    ScoreRequest,
    ScoreResponse,
    TrainStatus,
)
from koholint.store import ObjectStore, StoreError
from koholint.web.problems import ConflictError, NotFoundError, UnprocessableError
from reward_model.bradley_terry import EnsembleResult, FitResult, TrainingError, fit_ensemble
from reward_model.config import Settings
from reward_model.metrics import Metrics
from reward_model.preferences import (
    Preference,
    ScoredSegment,
    build_preferences,
    build_state_preferences,
    scored_segment,
)

logger = logging.getLogger("reward_model.service")
SCORE_RANGE = (0.0, 10.0)
"""The judges' scale: a score outside it (or not finite) is a broken event."""
FAILURES_BEFORE_ERROR = 5
"""consumer failures in a row that are an error (with the traceback); fewer are a warning"""


class RewardModelService:
    def __init__(self, settings: Settings, store: ObjectStore, bus: Bus | None = None,
                 metrics: Metrics | None = None) -> None:  # fmt: skip
        self.settings, self.store, self.bus = settings, store, bus
        self.metrics = metrics or Metrics()
        self.encoder_version = encoder_version(settings.encoding)
        self.last_training: TrainStatus | None = None
        self._segments: OrderedDict[str, ScoredSegment] = OrderedDict()
        self._comparisons: OrderedDict[str, StateComparisons] = OrderedDict()
        self._pairs_at_last_training = 0
        self._dataset_lock = threading.Lock()
        self._training_lock = threading.Lock()
        self._loaded: dict[str, LoadedRewardModel] = {}
        self.restored: int | None = None
        """scored segments rebuilt from the store at start (None: not yet)"""

    # -- the dataset ---------------------------------------------------------------
    def add_score(self, prefix: str, record_key: str, score: float | None) -> bool:
        """Add one scored segment (a newer score of the same segment replaces the older)."""
        if score is None:
            self.metrics.rejected.labels("unscored").inc()  # every judge abstained
            return False
        if not (math.isfinite(score) and SCORE_RANGE[0] <= score <= SCORE_RANGE[1]):
            self.metrics.rejected.labels("invalid_event").inc()
            logger.warning("score %r of %s is outside %s", score, prefix, SCORE_RANGE,
                           extra={"event": "invalid_score"})  # fmt: skip
            return False
        try:
            stored = read_segment(self.store, prefix)
            manifest_encoder = stored.manifest.get("encoder_version")
            if manifest_encoder != self.encoder_version:
                raise SegmentFormatError(
                    f"{prefix}: encoder {manifest_encoder}, not {self.encoder_version}"
                )
            segment = scored_segment(stored, record_key, score)
        except Exception as error:  # whatever the segment's files do, it is this one's refusal
            self.metrics.rejected.labels("segment_unreadable").inc()
            logger.warning("scored segment refused: %s", error, extra={"event": "segment_refused"})
            return False
        with self._dataset_lock:
            self._segments.pop(prefix, None)
            self._segments[prefix] = segment
            while len(self._segments) > self.settings.max_segments:
                self._segments.popitem(last=False)
        return True

    def add_event(self, payload: dict[str, Any]) -> int:
        """The scored segments of one ``koholint.scores`` message; returns how many were added."""
        try:
            event = ScoresEvent.model_validate(payload)
        except ValidationError as error:
            self.metrics.rejected.labels("invalid_event").inc()
            logger.warning("invalid scores event: %s", error, extra={"event": "invalid_event"})
            return 0
        added = sum(self.add_score(r.prefix, r.record_key, r.score) for r in event.records)
        if event.comparisons_key:
            self.add_comparisons(event.comparisons_key)
        return added

    def add_comparisons(self, key: str) -> bool:
        """The judges' state comparisons of one batch (``StateComparisons``) from the store."""
        try:
            document = StateComparisons.model_validate_json(self.store.get(key))
        except (StoreError, ValidationError, ValueError) as error:
            self.metrics.rejected.labels("comparisons_unreadable").inc()
            logger.warning("comparisons refused: %s", error, extra={"event": "comparisons_refused"})
            return False
        with self._dataset_lock:
            self._comparisons.pop(key, None)
            self._comparisons[key] = document
            while len(self._comparisons) > self.settings.max_comparison_batches:
                self._comparisons.popitem(last=False)
        for entry in document.judge_accuracy:
            if entry.accuracy is not None:
                self.metrics.judge_accuracy.labels(entry.judge).set(entry.accuracy)
        return True

    def comparisons(self) -> list[StateComparisons]:
        with self._dataset_lock:
            return list(self._comparisons.values())

    def preferences(
        self, seed: int = 0, with_ties: bool = True
    ) -> tuple[list[ScoredSegment], list[Preference], list[tuple[int, int]]]:
        """(items, pairs, tie pairs): state pairs from the judges' comparisons when they decided
        any (and, with ``tie_weight``, the pairs they called the same), else pairs of whole
        segments from their scores (records written before comparisons, or a batch whose
        states the judges all found alike)."""
        settings, segments = self.settings, self.segments()
        comparisons = self.comparisons()
        if comparisons:
            by_prefix = {segment.prefix: segment for segment in segments}
            items, state_pairs, ties = build_state_preferences(
                by_prefix, comparisons, max_pairs=settings.max_pairs, seed=seed,
                ties=with_ties and settings.tie_weight > 0,
            )  # fmt: skip
            if state_pairs:
                return items, state_pairs, ties
        pairs = build_preferences(
            segments, margin=settings.margin, max_pairs=settings.max_pairs, seed=seed
        )
        return segments, pairs, []

    def restore(self) -> int:
        """Rebuild the dataset from the store's score records (the newest of each segment, the
        newest ``max_segments``): the data set outlives the process. Returns how many."""
        try:
            records = load_score_records(self.store)[-self.settings.max_segments :]
        except StoreError as error:
            logger.warning("restoring the dataset failed: %s", error,
                           extra={"event": "restore_failed"})  # fmt: skip
            records = []
        restored = sum(self.add_score(prefix, key, score) for prefix, key, score in records)
        self.restored = restored
        logger.info("restored %d scored segments from the store", restored,
                    extra={"event": "restored"})  # fmt: skip
        return restored

    def run_background(self, stop: threading.Event) -> None:
        """The service's background work: restore the dataset, then consume (when a bus is set)."""
        self.restore()
        if self.bus is not None and self.settings.consume:
            self.consume_forever(stop)

    def segments(self) -> list[ScoredSegment]:
        with self._dataset_lock:
            return list(self._segments.values())

    def pair_count(self) -> int:
        _, pairs, _ = self.preferences(with_ties=False)  # a count needs no tie pairs
        self.metrics.pairs.set(len(pairs))
        return len(pairs)

    # -- training ------------------------------------------------------------------
    def train_if_due(self) -> TrainStatus | None:
        if self.pair_count() - self._pairs_at_last_training < self.settings.train_after_new_pairs:
            return None
        return self.train("new pairs")

    def train(self, reason: str = "asked") -> TrainStatus:
        """Fit R_phi now and publish it if it beats the floor; the status says what happened."""
        if not self._training_lock.acquire(blocking=False):
            raise ConflictError("a training is already running; GET /v1/models shows its outcome")
        try:
            status = self._train(reason)
        finally:
            self._training_lock.release()
        self.last_training = status
        logger.info("training %s: %s", status.state, status.detail, extra={"event": "training"})
        return status

    def _train(self, reason: str) -> TrainStatus:
        settings = self.settings
        segments, pairs, ties = self.preferences(settings.seed)
        self.metrics.pairs.set(len(pairs))
        self._pairs_at_last_training = len(pairs)
        if not pairs:
            return self._refuse("no_pairs", f"no pair among {len(segments)} scored segments or "
                                f"states differs (segments by the margin {settings.margin}, states "
                                "by the judges' vote): the preference set is empty or "
                                "one-sided; the previous version stays", 0)  # fmt: skip
        if len(pairs) < settings.min_pairs:
            return self._refuse("too_few_pairs", f"{len(pairs)} pairs, fewer than min_pairs "
                                f"{settings.min_pairs}; wait for more scores", len(pairs))  # fmt: skip
        started = time.perf_counter()
        try:
            ensemble = fit_ensemble(segments, pairs, self.settings.fit_config(), ties)
        except TrainingError as error:
            return self._refuse(error.reason, f"{error}; the previous version stays", len(pairs))
        seconds = time.perf_counter() - started
        result = ensemble.merged
        self.metrics.training_seconds.observe(seconds)
        self.metrics.heldout_accuracy.set(result.heldout_accuracy)
        if result.heldout_truth_accuracy is not None:
            self.metrics.heldout_truth_accuracy.set(result.heldout_truth_accuracy)
        if ensemble.disagreement is not None:
            self.metrics.disagreement.set(ensemble.disagreement)
        denoised, read = self._floor_reading(result.heldout_accuracy, segments)
        if (result.heldout_accuracy if denoised is None else denoised) <= settings.accuracy_floor:
            status = self._refuse("below_floor", f"held-out accuracy {read} does not beat the "
                                  f"floor {settings.accuracy_floor}; the previous version stays",
                                  len(pairs), result.heldout_accuracy, seconds)  # fmt: skip
            return status.model_copy(update={"denoised_accuracy": denoised})
        card = self._publish(
            ensemble, segments, [source for pair in pairs for source in pair.sources]
        )
        tied = f" ({len(ties)} tie pairs)" if ties else ""
        return TrainStatus(state="published", detail=f"{reason}: published {card.version}{tied}",
                           version=card.version, pairs=result.pairs,
                           heldout_accuracy=result.heldout_accuracy, seconds=seconds,
                           denoised_accuracy=denoised)  # fmt: skip

    def _floor_reading(
        self, agreement: float, items: list[ScoredSegment]
    ) -> tuple[float | None, str]:
        """(the held-out accuracy corrected for the labels' measured error, or None where the
        floor reads the plain agreement; the accuracy as a refusal says it). Corrected only
        with ``denoised_floor``, on state pairs, with the labels measured on enough pairs."""
        if not (self.settings.denoised_floor and any(item.group for item in items)):
            return None, f"{agreement:.3f}"
        comparisons = self.comparisons()
        truth = [t for document in comparisons for t in document.truth]
        preferred = [p for document in comparisons for p in document.preferred]
        label_accuracy, labelled = label_agreement(truth, preferred)
        denoised = denoised_accuracy(agreement, label_accuracy)
        if labelled < MIN_MEASURED_PAIRS or denoised is None:
            return (
                None,
                f"{agreement:.3f} ({labelled} labels at {label_accuracy:.3f}: not denoised)",
            )
        return denoised, (f"{agreement:.3f} against the labels, {denoised:.3f} denoised "
                          f"(labels {label_accuracy:.3f} right over {labelled})")  # fmt: skip

    def _refuse(self, reason: str, detail: str, pairs: int, accuracy: float | None = None,
                seconds: float = 0.0) -> TrainStatus:  # fmt: skip
        self.metrics.rejected.labels(reason).inc()
        return TrainStatus(state="refused", detail=detail, pairs=pairs,
                           heldout_accuracy=accuracy, seconds=seconds)  # fmt: skip

    def _publish(
        self, ensemble: EnsembleResult, items: list[ScoredSegment], sources: list[str]
    ) -> RewardModelCard:
        result, members = ensemble.merged, ensemble.members
        states = any(item.group for item in items)
        card = RewardModelCard(
            version=new_version(), created_at=time.time(), encoder_version=self.encoder_version,
            observation_size=result.function.observation_size,
            hidden_sizes=[int(bias.shape[0]) for _, bias in result.function.layers[:-1]],
            output_mean=result.function.output_mean,
            output_std=result.function.output_std, output_median=_median_output(result, items),
            pairs=result.pairs,
            heldout_pairs=result.heldout_pairs, heldout_accuracy=result.heldout_accuracy,
            segments=len({item.group or item.prefix for item in items}), epochs=result.steps,
            seed=self.settings.seed,
            weights_sha256=hashlib.sha256(weights_bytes(result.function)).hexdigest(),
            source_scores=sorted(set(sources)), pair_kind="states" if states else "segments",
            states=len(items) if states else 0, ensemble_size=len(members),
            member_hidden_sizes=list(self.settings.hidden_sizes),
            member_heldout_accuracy=[member.heldout_accuracy for member in members],
            disagreement=ensemble.disagreement, member_agreement=ensemble.member_agreement,
            heldout_truth_pairs=result.heldout_truth_pairs,
            heldout_truth_accuracy=result.heldout_truth_accuracy,
            judge_accuracy=pooled_accuracy(self.comparisons()) if states else [],
        )  # fmt: skip
        publish(self.store, card, result.function)
        self.metrics.versions.inc()
        if self.bus is not None:
            event = RewardModelEvent(version=card.version, prefix=f"{PREFIX}/{card.version}",
                                     encoder_version=card.encoder_version,
                                     heldout_accuracy=card.heldout_accuracy)  # fmt: skip
            self.bus.publish(self.settings.models_stream, event.model_dump(mode="json"))
        return card

    # -- versions and scoring -----------------------------------------------------------
    def models(self) -> ModelList:
        cards = []
        for version in list_versions(self.store):
            try:
                cards.append(read_card(self.store, version))
            except RewardModelError as error:
                logger.warning(
                    "unreadable version: %s", error, extra={"event": "version_unreadable"}
                )
        return ModelList(
            models=cards, last_training=self.last_training, segments=len(self.segments()),
            restored=self.restored,
        )  # fmt: skip

    def latest(self) -> LoadedRewardModel:
        try:
            version = latest_version(self.store)
        except RewardModelError as error:
            raise ConflictError(str(error), field=LATEST_KEY) from None
        if version is None:
            raise NotFoundError(
                "no reward model has been published yet: POST /v1/train once scores arrived"
            )
        if not self.store.exists(f"{PREFIX}/{version}/model.json"):
            raise ConflictError(
                f"{LATEST_KEY} names {version}, which has no model.json: republish a version "
                "(POST /v1/train) to rewrite the pointer", field=LATEST_KEY,
            )  # fmt: skip
        return self.load(version)

    def load(self, version: str) -> LoadedRewardModel:
        if version not in self._loaded:
            if not self.store.exists(f"{PREFIX}/{version}/model.json"):
                raise NotFoundError(f"no reward-model version {version}; GET /v1/models lists them")
            try:
                self._loaded[version] = load_version(
                    self.store, version, expected_encoder=self.encoder_version
                )
            except RewardModelError as error:
                raise ConflictError(str(error), field=f"{PREFIX}/{version}") from None
        return self._loaded[version]

    def score(self, request: ScoreRequest) -> ScoreResponse:
        model = self.load(request.version) if request.version else self.latest()
        size = model.function.observation_size
        wrong = next((i for i, row in enumerate(request.observations) if len(row) != size), None)
        if wrong is not None:
            raise UnprocessableError(f"observations[{wrong}] has {len(request.observations[wrong])} "
                                     f"floats; the model takes {size}", field=f"observations.{wrong}")  # fmt: skip
        with np.errstate(over="ignore"):  # beyond float32: inf, refused just below
            observations = np.array(request.observations, np.float32)
        if not np.isfinite(observations).all():
            raise UnprocessableError("observations hold NaN or inf", field="observations")
        with np.errstate(over="ignore", invalid="ignore"):
            rewards = model.function(observations)
        if not np.isfinite(rewards).all():
            row = int(np.flatnonzero(~np.isfinite(rewards))[0])
            raise UnprocessableError(
                f"observations[{row}] drives R_phi beyond a float's range: observations are "
                "the env's encoded vector (values near [-1, 1])", field=f"observations.{row}",
            )  # fmt: skip
        return ScoreResponse(version=model.version, rewards=rewards.tolist(),
                             segment_reward=float(rewards.mean()))  # fmt: skip

    # -- the consumer ------------------------------------------------------------------
    def consume_once(self) -> int:
        """Read and handle one batch of ``koholint.scores`` messages; returns how many."""
        assert self.bus is not None
        settings = self.settings
        messages = self.bus.consume(settings.scores_stream, settings.group, settings.consumer_name,
                                    count=16, block_ms=settings.block_ms)  # fmt: skip
        for message in messages:
            self.add_event(message.payload)
            self.bus.ack(settings.scores_stream, settings.group, [message.id])
        if messages:
            self.train_if_due()
        return len(messages)

    def consume_forever(self, stop: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                self.consume_once()
            except Exception as error:  # the consumer outlives a bad message or a Redis hiccup
                failures += 1
                self._log_failure(error, failures)
                stop.wait(1.0)
                continue
            if failures:
                logger.info("scores consumer recovered after %d failed tries", failures,
                            extra={"event": "consumer_recovered"})  # fmt: skip
            failures = 0

    @staticmethod
    def _log_failure(error: Exception, failures: int) -> None:
        """A failure the next try recovers from (a flushed or restarted Redis: the group is
        made again) is a warning without traceback; one that persists is an error, once."""
        if failures == FAILURES_BEFORE_ERROR:
            logger.error("scores consumer failed %d times in a row; retrying", failures,
                         exc_info=error, extra={"event": "consumer_failed"})  # fmt: skip
        else:
            logger.warning("scores consumer failed (%s: %s); retrying in 1 s",
                           type(error).__name__, error, extra={"event": "consumer_failed"})  # fmt: skip


def pooled_accuracy(comparisons: list[StateComparisons]) -> list[JudgeAccuracy]:
    """Each judge's accuracy summed over the batches' comparisons (the vote is the rule's
    over the pooled pairs)."""
    pooled: dict[str, list[int]] = {}
    for document in comparisons:
        for entry in document.judge_accuracy:
            counts = pooled.setdefault(entry.judge, [0, 0, 0])
            counts[0] += entry.pairs
            counts[1] += entry.correct
            counts[2] += entry.undecided
    accuracies = []
    for judge, (pairs, correct, undecided) in pooled.items():
        truth = [1] * (pairs + undecided)
        votes = [1] * correct + [-1] * (pairs - correct) + [0] * undecided
        accuracies.append(judge_accuracy(judge, truth, votes))
    return accuracies


def load_comparison_keys(store: ObjectStore, prefix: str = "scores/") -> list[str]:
    """The state comparison files under `prefix`, oldest first."""
    return sorted(
        key for key in store.list(prefix) if "/comparisons/" in key and key.endswith(".json")
    )


def load_score_records(
    store: ObjectStore, prefix: str = "scores/"
) -> list[tuple[str, str, float | None]]:
    """(segment prefix, record key, score) of every score record in the batch files under
    `prefix`, the newest record of each segment, oldest first. A file or line that is no score
    record is logged and left out."""
    newest: dict[str, tuple[float, str, float | None]] = {}
    for key in store.list(prefix):
        if not key.endswith(".jsonl"):
            continue
        for record in _score_lines(store, key):
            when = record["scored_at"]
            if record["prefix"] not in newest or newest[record["prefix"]][0] <= when:
                newest[record["prefix"]] = (when, record["record_key"], record["score"])
    ordered = sorted(newest.items(), key=lambda item: (item[1][0], item[0]))
    return [(segment, key, score) for segment, (_, key, score) in ordered]


def _score_lines(store: ObjectStore, key: str) -> list[dict[str, Any]]:
    """The lines of one batch file that name a segment, a record key and a usable score."""
    try:
        lines = store.get(key).decode("utf-8").splitlines()
    except (StoreError, UnicodeDecodeError) as error:
        logger.warning("unreadable scores file %s: %s", key, error,
                       extra={"event": "scores_unreadable"})  # fmt: skip
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line) if line.strip() else None
        except (ValueError, RecursionError):
            record = None
        if (
            not isinstance(record, dict)
            or record.get("schema_version") not in SCORE_SCHEMA_VERSIONS
        ):
            continue
        score, when = record.get("score"), record.get("scored_at", 0.0)
        usable = score is None or (
            _finite_number(score) and SCORE_RANGE[0] <= score <= SCORE_RANGE[1]
        )
        named = isinstance(record.get("prefix"), str) and isinstance(record.get("record_key"), str)
        if not (usable and named and _finite_number(when)):
            continue
        records.append({**record, "scored_at": float(when)})
    return records


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _median_output(result: FitResult, items: list[ScoredSegment]) -> float:
    """R_phi's median over the training steps: the intrinsic bonus pays only above it."""
    steps = np.concatenate([item.observations for item in items])
    return float(np.median(result.function(steps)))
