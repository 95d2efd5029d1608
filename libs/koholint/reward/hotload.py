"""Finding new reward-model versions between training iterations.

``RewardModelSource.poll()`` is called by the trainer's driver between iterations. It learns
of new versions from ``koholint.reward-models`` when a bus is given (and from the store's
latest pointer on its first call, for a version published before the run began), else by
reading the latest pointer each time. A version that fails to load or verify is logged and
counted, and the previous model stays: shaping never takes the trainer down.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from koholint.bus import STREAM_REWARD_MODELS, Bus
from koholint.env.encoding import encoder_version
from koholint.reward.model import LoadedRewardModel, RewardModelError, latest_version, load_version
from koholint.schemas.reward_model import VERSION_PATTERN, RewardModelEvent
from koholint.store import ObjectStore, StoreError

LATEST = "latest"
logger = logging.getLogger("koholint.reward.hotload")


def check_choice(choice: str) -> str:
    """'' (off), 'latest' (follow new versions) or one version name; else ValueError."""
    if choice in ("", LATEST) or re.fullmatch(VERSION_PATTERN, choice):
        return choice
    raise ValueError(
        f"reward_model={choice!r}: use '' (off), 'latest' or a version such as "
        "rm-20261123-101500-a1b2c3 (GET /v1/models lists them)"
    )


@dataclass
class RewardModelSource:
    """The model the trainer should shape with: a fixed version, or the newest one."""

    store: ObjectStore
    choice: str = LATEST
    bus: Bus | None = None
    group: str = "trainer"
    consumer: str = "trainer-0"
    stream: str = STREAM_REWARD_MODELS
    expected_encoder: str = field(default_factory=encoder_version)
    current: LoadedRewardModel | None = None
    failures: int = 0
    last_error: str | None = None
    _checked_store: bool = False

    def __post_init__(self) -> None:
        check_choice(self.choice)

    def poll(self) -> LoadedRewardModel | None:
        """A model to switch to (newly loaded and verified), or None when nothing changed."""
        if not self.choice:
            return None
        candidate = self._candidate()
        if candidate is None or (self.current and self.current.version == candidate):
            return None
        try:
            model = load_version(self.store, candidate, expected_encoder=self.expected_encoder)
        except (RewardModelError, StoreError) as error:
            self.failures += 1
            self.last_error = str(error)
            kept = self.current.version if self.current else "none"
            logger.warning("reward model %s refused (%s); keeping %s", candidate, error, kept,
                           extra={"event": "reward_model_refused"})  # fmt: skip
            return None
        self.current = model
        return model

    def _candidate(self) -> str | None:
        if self.choice != LATEST:
            return None if self.current or self.failures else self.choice
        if self.bus is None or not self._checked_store:
            self._checked_store = True
            return self._from_store()
        return self._from_bus()

    def _from_store(self) -> str | None:
        try:
            return latest_version(self.store)
        except (RewardModelError, StoreError) as error:
            self.failures += 1
            self.last_error = str(error)
            return None

    def _from_bus(self) -> str | None:
        assert self.bus is not None
        newest = None
        try:
            messages = self.bus.consume(self.stream, self.group, self.consumer, count=100)
        except Exception as error:  # a Redis outage must not stop training: poll again later
            self.last_error = f"bus: {error}"
            logger.warning(
                "reading %s failed: %s", self.stream, error, extra={"event": "bus_failed"}
            )
            return None
        for message in messages:
            try:
                newest = RewardModelEvent.model_validate(message.payload).version
            except ValidationError:
                self.failures += 1
                self.last_error = f"invalid {self.stream} message {message.id}"
        if messages:
            self.bus.ack(self.stream, self.group, [message.id for message in messages])
        return newest
