"""Where a policy loses from power-on (or another start), and whether it is stuck there.

    .venv/bin/python benchmarks/tools/diagnose_power_on.py POLICY_DIR [EPISODES [START]]

START is any `koholint play --start` (default power-on; `demo:PATH@STEP` plays from a step
of a demonstration).

One line per episode as `koholint play` samples it (sticky 0.25, the rules planner): for a
loss, the room and progress level it ended in, whether Link stood on one pixel for its
last 200 steps, and at the first 30 steps on one pixel, where and the policy's three most
likely actions there; then the losses counted by (room, level, stuck or moving).
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np

from koholint.baselines.trained import (
    PlaySettings,
    load_policy,
    parse_start,
    play_env,
    policy_rng,
    progress_level,
)
from koholint.schemas.env import Action

STILL = 30  # steps on one pixel before the first standstill is described
STUCK = 200  # steps on one pixel at the end that make a loss "stuck"


def main(path: Path, episodes: int, start: str = "power-on") -> None:
    policy = load_policy(path)
    settings = PlaySettings(start=start, episodes=episodes)
    env = play_env(policy, settings, parse_start(start))
    zelda = env.unwrapped
    ends: collections.Counter[tuple[str, int, str]] = collections.Counter()
    for seed in range(episodes):
        rng = policy_rng(seed)
        observation, _ = env.reset(seed=seed)
        still, last, first_still, step = 0, None, "", 0
        terminated = truncated = False
        while not (terminated or truncated):
            if still == STILL and not first_still:
                logits = policy.logits(observation)
                p = np.exp(logits - logits.max())
                p /= p.sum()
                top = " ".join(f"{Action(i).name}:{p[i]:.3f}" for i in np.argsort(-p)[:3])
                first_still = f"still at {last} from step {step - STILL}: {top}"
            action = policy.act(observation, rng)
            observation, _, terminated, truncated, _ = env.step(action)
            step += 1
            raw = zelda.raw_state
            here = (raw.room_key, raw.x, raw.y)
            still = still + 1 if here == last else 0
            last = here
        if terminated:
            print(f"{seed:3d} won")
            continue
        room = f"{raw.room_key[0]}/{raw.room_key[2]:#04x}"
        kind = "stuck" if still >= STUCK else "moving"
        ends[(room, progress_level(raw), kind)] += 1
        print(f"{seed:3d} lost in {room} level {progress_level(raw)}, {kind}; {first_still}")
    print("losses:", sorted(ends.items(), key=lambda item: -item[1]))


if __name__ == "__main__":
    main(
        Path(sys.argv[1]),
        int(sys.argv[2]) if len(sys.argv) > 2 else 30,
        sys.argv[3] if len(sys.argv) > 3 else "power-on",
    )
