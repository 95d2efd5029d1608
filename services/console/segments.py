"""A scored segment's frames, read from the trainer's object store (read-only) under the export
layout ``episodes/<run>/<episode>/<segment>/``: the ids are checked against the evaluator's
patterns and only files the segment's manifest lists are served."""

from __future__ import annotations

import json
import re
from typing import Any

from koholint.schemas.evaluator import NAME_PATTERN
from koholint.store import ObjectNotFoundError, ObjectStore, StoreError
from koholint.web.problems import NotFoundError, UnavailableError, UnprocessableError

NAME = rf"^{NAME_PATTERN}$"
SEGMENT = r"^\d{1,9}$"
FRAME_FILE = re.compile(r"^frames/(\d{6})\.png$")


def _prefix(run: str, episode: str, segment: str) -> str:
    return f"episodes/{run}/{episode}/{segment}"


def _get(store: ObjectStore, key: str, what: str) -> bytes:
    try:
        return store.get(key)
    except ObjectNotFoundError:
        raise NotFoundError(f"no {what} in the store: {key}", key=key) from None
    except StoreError as error:
        raise UnavailableError(f"object store: {error}") from error


def segment_frames(store: ObjectStore, run: str, episode: str, segment: str) -> dict[str, Any]:
    """The segment's frame steps (from its manifest), oldest first, and its step count."""
    prefix = _prefix(run, episode, segment)
    try:
        manifest = json.loads(_get(store, f"{prefix}/manifest.json", "segment"))
        files = manifest["files"]
    except (KeyError, TypeError, ValueError) as error:
        raise UnprocessableError(f"the manifest of {prefix} is not readable: {error}") from None
    steps = sorted(int(match[1]) for name in files if (match := FRAME_FILE.match(name)))
    return {"prefix": prefix, "steps": manifest.get("steps"), "frames": steps}


def segment_frame(store: ObjectStore, run: str, episode: str, segment: str, step: int) -> bytes:
    """One frame's PNG, if the segment's manifest lists it."""
    listed = segment_frames(store, run, episode, segment)["frames"]
    if step not in listed:
        raise NotFoundError(f"segment {_prefix(run, episode, segment)} has no frame at step {step}")
    return _get(store, f"{_prefix(run, episode, segment)}/frames/{step:06d}.png", "frame")
