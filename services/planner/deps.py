"""FastAPI dependencies of the planner: the objects the lifespan made, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from koholint.web.state import from_state
from planner.service import Planner

PlannerDep = Annotated[Planner, from_state("planner")]
