"""The library's EvaluatorClient against the evaluator really served over HTTP."""

from __future__ import annotations

import pytest
from tests.services.evaluator.conftest import segment_prefixes

from evaluator.app import create_app
from evaluator.config import Settings
from koholint.bus import MemoryBus
from koholint.clients.evaluator import EvaluatorClient, EvaluatorError
from koholint.store import LocalStore


def test_client_evaluates_a_run_and_reads_the_records(serve, local_store: LocalStore):
    url = serve(create_app(Settings(consume=False), store=local_store, bus=MemoryBus()))
    client = EvaluatorClient(url)
    prefixes = segment_prefixes(local_store, "run-eval")
    status = client.wait(client.evaluate(run="run-eval").id, timeout_s=60, poll_s=0.05)
    assert (status.state, status.scored) == ("succeeded", len(prefixes))
    records = client.scores("run-eval", limit=1000)
    assert sorted(r.prefix for r in records) == prefixes
    assert client.segment_score(prefixes[0]).record_key == next(
        r.record_key for r in records if r.prefix == prefixes[0]
    )
    assert client.segment_score("episodes/run-eval/none/00000") is None
    with pytest.raises(EvaluatorError) as error:
        client.evaluate(run="no-such-run")
    assert error.value.status == 404
    client.close()
