"""The scores consumer's failures: one the next try recovers from (a flushed Redis) is a
warning without a traceback, then an info that it recovered; one that persists is an error
with the traceback, once."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

from reward_model.service import FAILURES_BEFORE_ERROR, RewardModelService


class Tries(threading.Event):
    """Stops the loop after `outcomes` are used up; waits take no time."""

    def __init__(self, outcomes: list[Exception | None]) -> None:
        super().__init__()
        self.outcomes = outcomes

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()

    def next(self) -> None:
        outcome = self.outcomes.pop(0)
        if not self.outcomes:
            self.set()
        if outcome is not None:
            raise outcome


def run(outcomes: list[Exception | None]) -> None:
    stop = Tries(outcomes)
    consumer = SimpleNamespace(consume_once=stop.next, _log_failure=RewardModelService._log_failure)
    RewardModelService.consume_forever(consumer, stop)  # type: ignore[arg-type]


def test_a_recovered_flush_is_a_warning_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    flushed = ConnectionError("UNBLOCKED the stream key no longer exists")
    with caplog.at_level(logging.INFO, logger="reward_model.service"):
        run([flushed, None])
    warning, recovered = caplog.records
    assert warning.levelno == logging.WARNING
    assert warning.exc_info is None
    assert "UNBLOCKED" in warning.getMessage()
    assert recovered.levelno == logging.INFO
    assert "recovered after 1" in recovered.getMessage()


def test_a_failure_that_persists_is_an_error_with_its_traceback_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down: list[Exception | None] = [ConnectionError("refused")] * (FAILURES_BEFORE_ERROR + 2)
    with caplog.at_level(logging.WARNING, logger="reward_model.service"):
        run(down)
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None
    assert len(caplog.records) == FAILURES_BEFORE_ERROR + 2
