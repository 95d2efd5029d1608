"""The `local` backend against the real llm-local server (SmolLM2): structure and validity only.

What a 135M model says about a segment is not asserted, only that every answer went through
the client's validation, that the vision judge abstains honestly (the model is text-only),
and that the record is a valid ScoreRecord.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conftest import ServedApp
from tests.services.evaluator.conftest import segment_prefixes

from evaluator.config import Settings as EvaluatorSettings
from evaluator.judges import make_judges
from evaluator.scoring import Evaluator
from koholint.bus import MemoryBus
from koholint.schemas.evaluator import ScoreRecord
from koholint.store import LocalStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm_local_url() -> Iterator[str]:
    from llm_local.app import create_app
    from llm_local.config import Settings
    from llm_local.model import ChatModel

    settings = Settings(n_ctx=2048, n_threads=1, max_tokens_limit=512)
    model = ChatModel.load(settings)
    try:
        with ServedApp(create_app(settings, model=model)) as server:
            yield server.url
    finally:
        model.close()


def test_local_backend_scores_a_segment_with_smollm2(llm_local_url: str, local_store: LocalStore):
    judges = make_judges("local", base_url=llm_local_url, max_tokens=256, timeout_s=300)
    evaluator = Evaluator(
        local_store, MemoryBus(), judges, EvaluatorSettings(samples=1, in_flight_per_route=1)
    )
    try:
        report = evaluator.evaluate(segment_prefixes(local_store, "run-eval")[:1])
    finally:
        evaluator.close()
    assert [r.outcome for r in report.results] == ["scored"]
    record = ScoreRecord.model_validate_json(report.results[0].record.model_dump_json())
    assert record.backend == "local"
    assert record.models == {"state": "smollm2-135m-instruct", "progress": "smollm2-135m-instruct"}
    judges_by_name = {result.judge: result for result in record.judges}
    assert judges_by_name["vision"].abstain_reason == "no_vision"
    for name in ("state", "progress"):
        result = judges_by_name[name]
        assert len(result.samples) == 1
        sample = result.samples[0]
        assert sample.outcome in ("valid", "repaired", "rejected")
        assert (sample.verdict is not None) == (sample.outcome != "rejected")
        assert result.abstained == (sample.outcome == "rejected")
