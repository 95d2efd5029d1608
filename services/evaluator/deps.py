"""FastAPI dependencies of the evaluator: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from evaluator.service import EvaluatorService
from koholint.web.state import from_state

ServiceDep = Annotated[EvaluatorService, from_state("evaluator")]
