"""The scripted teachers: what this cartridge's scripts know how to do, taught to the policy.

Go-Explore (``koholint.explore``) finds a winning trajectory with no policy and no script;
the teachers work on what it found, each behind one protocol (``teachers.base.Teacher``:
given a ``Lesson``, it returns a ``TaughtReport``):

- ``fights`` — the scripted fighter's clean fights from the demonstration's fight states;
- ``walks`` — the path-finder's clean walks to each room's exit, and its labels on the
  states a policy reaches walking from the same starts (DAgger);
- ``chests`` and ``doors`` — the path-finder's walks to each chest or locked door the
  demonstration opens and the press that opens it, and its labels on the states a policy
  reaches there (DAgger).

The shortening (``shorten``) edits the winning trajectory itself before it is learned: loops
and idle runs cut, the path-finder's shortcuts (``shortcuts``) and errands first
(``errands``) spliced in where the trajectory still wins.

Teachers are found by name (``TEACHERS``, ``teacher``): a run's settings list the names
(``koholint.imitation``). The game knowledge they use is read through ``koholint.game``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from koholint.explore.settings import ExploreSettings
    from koholint.teachers.base import Teacher

TEACHERS: dict[str, str] = {
    "fights": "koholint.teachers.fights",
    "walks": "koholint.teachers.walks",
    "chests": "koholint.teachers.openings:CHESTS",
    "doors": "koholint.teachers.openings:DOORS",
}
"""Each teacher's name and the module whose ``TEACHER`` it is, or ``module:NAME`` (loaded
on first use: the names are read by settings that must not start an emulator import)."""


def teacher(name: str) -> Teacher:
    """The teacher called `name`; a ValueError lists the names there are."""
    if name not in TEACHERS:
        raise ValueError(f"teacher {name!r} is unknown; use one of {', '.join(TEACHERS)}")
    module, _, attribute = TEACHERS[name].partition(":")
    found: Teacher = getattr(import_module(module), attribute or "TEACHER")
    return found


def shorten_win(actions: bytes, start_state: str | None, settings: ExploreSettings) -> bytes:
    """A winning trajectory shortened as `settings` say (errands first, the replays'
    budget), as ``koholint explore`` writes it (``koholint.teachers.shorten``)."""
    from koholint.teachers.shorten import shorten, winner

    check = winner(start_state, budget=settings.shorten_env_steps)
    return shorten(actions, check, errands=settings.errands_first).actions


__all__ = ["TEACHERS", "shorten_win", "teacher"]
