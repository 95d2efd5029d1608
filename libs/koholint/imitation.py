"""Imitation: what phase 2's policy learns from someone else's actions, in one place.

- **Cloning.** Before PPO, the policy network is fitted to the winning trajectory's actions
  on its own observations (``koholint.explore.demo``) and to the clean episodes of the
  teachers the settings list (``koholint.teachers``: the scripted fighter's fights, the
  path-finder's walks), ``clone_epochs`` passes over all of it (``lessons``).
- **DAgger** (Ross, Gordon and Bagnell 2011). ``corrections`` rounds after the cloning, and
  one every ``correct_every_env_steps`` during PPO on the policy as PPO has made it: the
  cloned policy plays from the labellers' starts (``labellers``: the fighter, the walker),
  each marks every state it reaches from its own starts with its own step there, and the
  cloning goes on over everything so far (``labeller``). With ``route_episodes``, each round
  during PPO the policy also plays from the curriculum's start across the next rooms of the
  route, and the walker labels the states it reaches there
  (``koholint.teachers.walks.corrected_route``).
- **SIL** (self-imitation learning). During PPO, a loss toward the best segments' actions;
  the winning trajectory is pinned among them (the trainer's ``sil`` settings).

The fitting itself runs where the policy lives (the trainer's learner:
``trainer/ppo/rllib/warm_start.py``); what is fitted, and how it is labelled, is decided here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from koholint.schemas.fields import JsonFloat, JsonInt
from koholint.teachers import TEACHERS, teacher
from koholint.teachers.base import Labeller

TEACHER_NAMES = ", ".join(TEACHERS)

if TYPE_CHECKING:
    from koholint.env.zelda import EnvConfig
    from koholint.teachers.base import Lesson, Policy, TaughtReport


class ImitationSettings(BaseModel):
    """Cloning and DAgger before PPO (the trainer's ``imitation`` settings)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    clone_epochs: JsonInt = Field(0, ge=0, le=10_000)
    """behaviour cloning of the winning trajectory into the policy before PPO: passes over
    its steps and the teachers' (0 = off)"""
    teachers: list[str] = Field(default_factory=list, max_length=len(TEACHERS))
    """scripted teachers (koholint.teachers: fights, walks, chests, doors) whose clean
    episodes from the trajectory's states are cloned with it"""
    teacher_episodes: JsonInt = Field(2, ge=1, le=64)
    """episodes each teacher plays from each of its starts (and each DAgger round's policy)"""
    corrections: JsonInt = Field(0, ge=0, le=8)
    """rounds of DAgger after the cloning, labelled by the labellers; 0 = off"""
    labellers: list[str] = Field(default_factory=list, max_length=len(TEACHERS))
    """the listed teachers whose labels on the cloned policy's own states each DAgger round
    fits (fights, walks, chests, doors)"""
    correct_every_env_steps: JsonInt = Field(0, ge=0, le=10**10)
    """during PPO, a DAgger round on the policy as it is then after the first iteration
    past each multiple of this many env steps (0 = only the rounds before PPO)"""
    label_smoothing: JsonFloat = Field(0.0, ge=0, le=0.5)
    """the cloning's (and DAgger's) cross-entropy target puts this share on the other actions
    alike: hundreds of passes over the labels otherwise drive the policy to probability
    1.000, where a state the labels missed is pressed into a wall for good (no sample
    leaves it, no gradient moves it)"""
    route_episodes: JsonInt = Field(0, ge=0, le=256)
    """in each DAgger round during PPO, episodes the policy plays from the curriculum's start
    across the route's next 4 rooms, every state it reaches labelled by the walker (walks)
    with its step to where the demonstration leaves that room (0 = off)"""

    @field_validator("teachers", "labellers")
    @classmethod
    def _known_teachers(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in TEACHERS]
        if unknown:
            raise ValueError(f"{unknown} are not teachers: choose from {', '.join(TEACHERS)}")
        if len(set(names)) < len(names):
            raise ValueError(f"{names}: name each teacher once")
        return names

    def problem(self) -> tuple[str, str] | None:
        """The field and the fix when the settings cannot work together, else None."""
        for name in ("teachers", "corrections"):
            if getattr(self, name) and not self.clone_epochs:
                return name, (f"imitation.{name} needs imitation.clone_epochs: what the teachers "
                              f"give is cloned with the trajectory; set clone_epochs (the "
                              f"recipe's 400) or leave {name} out")  # fmt: skip
        if self.correct_every_env_steps and not self.labellers:
            return "correct_every_env_steps", (
                f"imitation.correct_every_env_steps needs imitation.labellers ({TEACHER_NAMES}) "
                "and clone_epochs: its rounds are labelled by them and fitted as the cloning is"
            )
        if self.correct_every_env_steps and not self.clone_epochs:
            return "correct_every_env_steps", (
                "imitation.correct_every_env_steps needs imitation.clone_epochs: its rounds "
                "go on with the warm start's cloning"
            )
        if self.route_episodes and not (self.correct_every_env_steps and "walks" in self.labellers):
            return "route_episodes", (
                "imitation.route_episodes labels in DAgger's rounds during PPO with the walker: "
                "set imitation.correct_every_env_steps and list walks in imitation.labellers "
                "(and teachers), or leave route_episodes at 0"
            )
        if self.corrections and not self.labellers:
            return "corrections", ("imitation.corrections needs imitation.labellers: the "
                                   "teachers that label the policy's states in each round "
                                   f"({TEACHER_NAMES})")  # fmt: skip
        unlisted = [name for name in self.labellers if name not in self.teachers]
        if unlisted:
            return "labellers", (f"imitation.labellers {unlisted} are not in imitation.teachers: "
                                 f"a labeller's clean episodes are cloned first; list them there")  # fmt: skip
        mute = [name for name in self.labellers if not isinstance(teacher(name), Labeller)]
        if mute:
            return "labellers", f"imitation.labellers {mute} label no policy's states"
        return None


@dataclass
class Lessons:
    """What cloning fits: the demonstration's and the teachers' observations and actions,
    and what each teacher did (``{name}_starts``, ``{name}_episodes``, ...)."""

    observations: np.ndarray
    actions: np.ndarray
    demo_steps: int
    taught: dict[str, int] = field(default_factory=dict)


def lesson(settings: ImitationSettings, actions: bytes, env_config: EnvConfig) -> Lesson:
    """What the teachers are given: the winning `actions` replayed under the training env
    (`env_config`) as the demonstration the policy sees."""
    from koholint.explore.demo import demo_transitions
    from koholint.teachers.base import Lesson

    demo = demo_transitions(actions, env_config)
    return Lesson(actions, demo, env_config, episodes=settings.teacher_episodes)


def lessons(settings: ImitationSettings, given: Lesson) -> Lessons:
    """The demonstration's steps, and each listed teacher's clean episodes from its states."""
    observations, targets = given.demo.observations, given.demo.actions
    taught: dict[str, int] = {}
    for name in settings.teachers:
        report = teacher(name).teach(given)
        observations = np.concatenate([observations, report.transitions.observations])
        targets = np.concatenate([targets, report.transitions.actions])
        taught |= {f"{name}_starts": report.starts, f"{name}_episodes": report.episodes,
                   f"{name}_clean": report.clean,
                   f"{name}_steps": len(report.transitions.actions)}  # fmt: skip
    return Lessons(observations, targets, len(given.demo.actions), taught)


Correct = Callable[..., "dict[str, TaughtReport]"]
"""One DAgger round's labels for a policy (and, during PPO, the curriculum's start)."""


def labeller(settings: ImitationSettings, given: Lesson) -> Correct | None:
    """One DAgger round's labels for a policy: each labeller's, on the states the policy
    reaches from its starts, and with a curriculum's start (`route`, a demo step) and
    ``route_episodes``, the walker's on its states from there (``route``); None when no
    teacher labels."""
    if not settings.labellers:
        return None
    labellers = {name: teacher(name) for name in settings.labellers}

    def correct(act: Policy, route: int | None = None) -> dict[str, TaughtReport]:
        reports = {name: found.correct(given, act)  # type: ignore[attr-defined]
                   for name, found in labellers.items()}  # fmt: skip
        if route is not None and settings.route_episodes:
            from koholint.teachers.walks import corrected_route

            reports["route"] = corrected_route(
                given.actions, given.demo, given.env_config, act, start=route,
                episodes=settings.route_episodes, every=given.every,
            )  # fmt: skip
        return reports

    return correct
