"""R_phi in numpy, and the stored versions: written, read back and verified.

The trainer's envs apply R_phi once per step, where torch's per-call overhead would cost ~10x
the arithmetic (as for the RND, ``koholint.env.rnd``): inference here is numpy only. The
reward-model service trains with torch and hands the layers over as arrays.

A version is refused (``RewardModelError``, naming the fix) when a file is missing, its
sha256 does not match the card's, its ``schema_version`` is unknown, a weight is NaN or inf,
the layers do not fit together, or its encoder version is not the env's.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError

from koholint.schemas.reward_model import (
    CARD_SCHEMA_VERSIONS,
    LatestPointer,
    RewardModelCard,
)
from koholint.store import ObjectNotFoundError, ObjectStore, StoreError, put_json

PREFIX = "reward-models"
LATEST_KEY = f"{PREFIX}/latest.json"
WEIGHTS_FILE = "weights.npz"
CARD_FILE = "model.json"


class RewardModelError(ValueError):
    """A reward model that cannot be used; the message names the version and the fix."""


@dataclass(frozen=True)
class RewardFunction:
    """R_phi: a ReLU MLP over observation vectors, as (weight, bias) pairs of numpy arrays.

    ``normalised`` subtracts the training mean and divides by the training std, so that a
    shaping scale means the same thing for every version."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    output_mean: float = 0.0
    output_std: float = 1.0

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        """Raw R_phi of each row of `observations` (n, size) -> (n,)."""
        hidden = np.asarray(observations, np.float32)
        for index, (weight, bias) in enumerate(self.layers):
            hidden = hidden @ weight + bias
            if index < len(self.layers) - 1:
                hidden = np.maximum(hidden, 0.0)
        return hidden[:, 0]

    def normalised(self, observations: np.ndarray) -> np.ndarray:
        return (self(observations) - self.output_mean) / self.output_std

    @property
    def observation_size(self) -> int:
        return int(self.layers[0][0].shape[0])


def merge_ensemble(members: list[RewardFunction]) -> RewardFunction:
    """The mean of `members` (same depth) as one wider MLP: their layers side by side (the
    first stacked on the input, the hidden ones block-diagonal, the last averaged), so an
    ensemble is stored and applied like one R_phi. Its mean and std are the first member's
    until the caller sets them over its data."""
    depth = len(members[0].layers)
    if any(len(member.layers) != depth for member in members):
        raise ValueError("ensemble members must have the same number of layers")
    layers = []
    for index in range(depth):
        weights = [member.layers[index][0] for member in members]
        biases = [member.layers[index][1] for member in members]
        if index == depth - 1:
            weight = np.concatenate(weights, axis=0) / len(members)
            bias = np.mean(biases, axis=0)
        elif index == 0:
            weight, bias = np.concatenate(weights, axis=1), np.concatenate(biases)
        else:
            weight = np.zeros((sum(w.shape[0] for w in weights), sum(w.shape[1] for w in weights)))
            row = column = 0
            for block in weights:
                weight[row : row + block.shape[0], column : column + block.shape[1]] = block
                row, column = row + block.shape[0], column + block.shape[1]
            bias = np.concatenate(biases)
        layers.append((weight.astype(np.float32), np.asarray(bias, np.float32)))
    return RewardFunction(tuple(layers), members[0].output_mean, members[0].output_std)


@dataclass(frozen=True)
class LoadedRewardModel:
    card: RewardModelCard
    function: RewardFunction

    @property
    def version(self) -> str:
        return self.card.version


class RewardModelPotential:
    """R_phi of a stored version, standardised by its training statistics: the potential of
    ``koholint.env.wrappers.ShapingWrapper`` and the reward of ``BonusWrapper``, whose
    `threshold` is the data set's median in the same units (0, the mean, on a card that did
    not record the median)."""

    def __init__(self, model: LoadedRewardModel) -> None:
        self.version = model.version
        self.encoder_version = model.card.encoder_version
        self._function = model.function
        self.threshold = standardised_median(model.card)

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        return self._function.normalised(observations)


def standardised_median(card: RewardModelCard) -> float:
    """The card's median of R_phi in standardised units; 0 (the mean) where none was recorded."""
    if card.output_median is None or not np.isfinite(card.output_median):
        return 0.0
    return (card.output_median - card.output_mean) / card.output_std


def new_version(now: float | None = None) -> str:
    """``rm-YYYYMMDD-HHMMSS-<6 hex>``: sorts by time, unique across replicas."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"rm-{stamp}-{hashlib.sha256(f'{now}{time.perf_counter_ns()}'.encode()).hexdigest()[:6]}"


def weights_bytes(function: RewardFunction) -> bytes:
    arrays = {}
    for index, (weight, bias) in enumerate(function.layers):
        arrays[f"weight_{index}"] = np.asarray(weight, np.float32)
        arrays[f"bias_{index}"] = np.asarray(bias, np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def publish(store: ObjectStore, card: RewardModelCard, function: RewardFunction) -> None:
    """Write the weights, then the card, then move the latest pointer: a reader that finds
    the pointer finds a complete version."""
    data = weights_bytes(function)
    if hashlib.sha256(data).hexdigest() != card.weights_sha256:
        raise RewardModelError(f"{card.version}: card's weights_sha256 is not the weights' sha256")
    store.put(f"{PREFIX}/{card.version}/{WEIGHTS_FILE}", data)
    put_json(store, f"{PREFIX}/{card.version}/{CARD_FILE}", card.model_dump(mode="json"))
    put_json(store, LATEST_KEY, LatestPointer(version=card.version).model_dump(mode="json"))


def latest_version(store: ObjectStore) -> str | None:
    """The version the latest pointer names, or None when nothing was published."""
    try:
        document = json.loads(store.get(LATEST_KEY))
    except ObjectNotFoundError:
        return None
    except StoreError as error:
        raise RewardModelError(
            f"{LATEST_KEY}: {error}; republish a version to rewrite it"
        ) from None
    except (ValueError, RecursionError):
        raise RewardModelError(
            f"{LATEST_KEY} is not JSON; republish a version (POST /v1/train) to rewrite it"
        ) from None
    try:
        return LatestPointer.model_validate(document).version
    except ValidationError as error:
        raise RewardModelError(
            f"{LATEST_KEY} is not a pointer this reader knows ({error.errors()[0]['msg']}); "
            "republish a version (POST /v1/train) to rewrite it"
        ) from None


def list_versions(store: ObjectStore) -> list[str]:
    """Every version with a card in the store, oldest first (names sort by time)."""
    suffix = f"/{CARD_FILE}"
    return sorted(
        key[len(PREFIX) + 1 : -len(suffix)]
        for key in store.list(f"{PREFIX}/")
        if key.endswith(suffix) and key.count("/") == 2
    )


def read_card(store: ObjectStore, version: str) -> RewardModelCard:
    key = f"{PREFIX}/{version}/{CARD_FILE}"
    document = _read_json(store, key, version)
    found = document.get("schema_version")
    if found not in CARD_SCHEMA_VERSIONS:
        raise RewardModelError(
            f"{version}: {CARD_FILE} has schema_version {found!r}, this reader knows "
            f"{list(CARD_SCHEMA_VERSIONS)}; upgrade koholint or retrain the model with this version"
        )
    try:
        return RewardModelCard.model_validate(document)
    except ValidationError as error:
        raise RewardModelError(
            f"{version}: {CARD_FILE} is invalid ({error.errors()[0]['loc']}: "
            f"{error.errors()[0]['msg']}); retrain the model"
        ) from None


def load_version(
    store: ObjectStore, version: str, *, expected_encoder: str | None = None
) -> LoadedRewardModel:
    """Read and verify a version (see the module docstring for what is refused)."""
    card = read_card(store, version)
    if expected_encoder is not None and card.encoder_version != expected_encoder:
        raise RewardModelError(
            f"{version} was trained on encoder {card.encoder_version}, this env encodes "
            f"{expected_encoder}: retrain the reward model on segments exported by this env"
        )
    data = _read(store, f"{PREFIX}/{version}/{WEIGHTS_FILE}", version)
    if hashlib.sha256(data).hexdigest() != card.weights_sha256:
        raise RewardModelError(
            f"{version}: {WEIGHTS_FILE} does not match the card's sha256; the version is "
            "corrupt: delete it and retrain"
        )
    function = _function_from(data, card, version)
    return LoadedRewardModel(card, function)


def _function_from(data: bytes, card: RewardModelCard, version: str) -> RewardFunction:
    try:
        layers = _layers(data)
    except KeyError as error:
        raise RewardModelError(f"{version}: {WEIGHTS_FILE} lacks {error}; retrain") from None
    except Exception as error:  # not an npz, pickled objects, a damaged zip ...: never loaded
        raise RewardModelError(
            f"{version}: {WEIGHTS_FILE} is not an npz of float arrays ({type(error).__name__}: "
            f"{str(error)[:200]}); retrain"
        ) from None
    if not all(np.isfinite(w).all() and np.isfinite(b).all() for w, b in layers):
        raise RewardModelError(f"{version}: weights hold NaN or inf; refused, retrain the model")
    widths = [card.observation_size, *card.hidden_sizes, 1]
    shapes = [(w.shape, b.shape) for w, b in layers]
    if shapes != [((widths[i], widths[i + 1]), (widths[i + 1],)) for i in range(len(widths) - 1)]:
        raise RewardModelError(
            f"{version}: layer shapes {shapes} do not match the card's sizes {widths}; retrain"
        )
    statistics = (card.output_mean, card.output_std, card.output_median or 0.0)
    if not all(np.isfinite(value) for value in statistics):
        raise RewardModelError(f"{version}: output statistics are not finite; retrain")
    return RewardFunction(layers, card.output_mean, card.output_std)


def _layers(data: bytes) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """The (weight, bias) arrays of an npz; refuses anything but plain float arrays."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        count = len(arrays.files) // 2
        layers = tuple(
            (arrays[f"weight_{index}"], arrays[f"bias_{index}"]) for index in range(count)
        )
    for weight, bias in layers:
        if not (
            np.issubdtype(weight.dtype, np.floating) and np.issubdtype(bias.dtype, np.floating)
        ):
            raise TypeError(f"arrays of {weight.dtype} and {bias.dtype}, not floats")
    if not layers:
        raise KeyError("weight_0")
    return layers


def _read(store: ObjectStore, key: str, version: str) -> bytes:
    try:
        return store.get(key)
    except ObjectNotFoundError:
        raise RewardModelError(
            f"{version}: {key} is missing; the version is incomplete: delete "
            f"{PREFIX}/{version}/ and retrain"
        ) from None
    except StoreError as error:
        raise RewardModelError(
            f"{version}: {error}; check the store, or delete and retrain"
        ) from None


def _read_json(store: ObjectStore, key: str, version: str) -> dict[str, object]:
    try:
        document = json.loads(_read(store, key, version))
    except (ValueError, RecursionError) as error:
        raise RewardModelError(
            f"{version}: {key} is not JSON ({str(error)[:200]}); retrain"
        ) from None
    if not isinstance(document, dict):
        raise RewardModelError(f"{version}: {key} is not a JSON object; retrain")
    return document
