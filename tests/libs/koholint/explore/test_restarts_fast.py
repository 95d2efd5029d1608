"""Go-Explore on the env's fast path finds the same cells, steps and states as on the reference path."""

from __future__ import annotations

import numpy as np
import pytest

from koholint.env.zelda import ZeldaEnv
from koholint.explore.archive import Archive
from koholint.explore.restarts import GoExploreWrapper, LocalArchiveSource
from koholint.game import fastpath

pytestmark = pytest.mark.skipif(not fastpath.COMPILED, reason="the compiled fast path is not built")


def explore(fast: bool) -> dict:
    archive = Archive()
    env = ZeldaEnv(max_episode_steps=400, info_state=False, sticky_action_probability=0.25)
    env.fast_path = fast
    wrapped = GoExploreWrapper(env, LocalArchiveSource(archive), restart_every=2)
    wrapped.reset(seed=1)
    rng = np.random.default_rng(2)
    for _ in range(1600):
        *_, terminated, truncated, _ = wrapped.step(int(rng.integers(9)))
        if terminated or truncated:
            wrapped.reset()
    wrapped.close()
    return {cell: (record.steps, archive.state(record)) for cell, record in archive.cells.items()}


def test_fast_and_reference_paths_archive_the_same_cells_and_states():
    fast, reference = explore(True), explore(False)
    assert len(fast) > 10
    assert fast.keys() == reference.keys()
    assert fast == reference
