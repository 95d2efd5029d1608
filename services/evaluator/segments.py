"""A segment from the object store, checked against its manifest and condensed into facts.

``load_segment`` reads ``manifest.json``, re-hashes every file it lists, reads ``ram.jsonl``
and returns a ``LoadedSegment`` (facts for the text judges, key frames for the vision
judge). A segment that can never be scored (no manifest, unknown ``schema_version``, a file
that does not match its sha256, a foreign layout) raises ``SegmentRejectedError``: the
caller dead-letters it. A store that cannot be reached raises ``StoreError``: try later.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from koholint.game.ram import InventoryItem
from koholint.reward.truth import sample_states
from koholint.schemas.evaluator import SEGMENT_PREFIX_PATTERN, SegmentFacts, StateFacts
from koholint.store import ChecksumMismatchError, ObjectNotFoundError, ObjectStore, StoreError

KNOWN_EXPORT_VERSIONS = (1, 2)
"""Export layouts this evaluator reads (2 adds the observation vector to each step)."""
PREFIX_PATTERN = re.compile(SEGMENT_PREFIX_PATTERN)
ITEM_NAMES = {int(item): item.name.lower() for item in InventoryItem if item}
REQUIRED_STATE_KEYS = frozenset((
    "room", "link", "dialog", "inventory", "health", "keys", "kills", "deaths", "rupees",
    "rooms_visited", "has_instrument",
))  # fmt: skip


class SegmentRejectedError(ValueError):
    """The segment can never be scored; the message is the dead-letter reason."""


@dataclass(frozen=True)
class SegmentRef:
    prefix: str
    run: str
    episode: str
    segment: int


@dataclass
class LoadedSegment:
    ref: SegmentRef
    manifest_sha256: str
    facts: SegmentFacts
    key_frames: list[tuple[int, bytes]]  # (step t, PNG)
    load_ms: float = 0.0
    states: list[StateFacts] = field(default_factory=list)
    """every `state_stride`-th step's progress facts and the last's: what the judges compare"""


def parse_prefix(prefix: str) -> SegmentRef:
    """episodes/<run>/<episode>/<segment> -> its parts; anything else is foreign."""
    match = PREFIX_PATTERN.fullmatch(prefix)
    if match is None:
        raise SegmentRejectedError(
            f"{prefix!r} is not a segment prefix (episodes/<run>/<episode>/<segment>)"
        )
    run, episode, index = match.groups()
    return SegmentRef(prefix, run, episode, int(index))


def load_segment(
    store: ObjectStore,
    prefix: str,
    *,
    max_key_frames: int = 6,
    max_steps: int = 4096,
    max_bytes: int = 64 * 1024 * 1024,
    state_stride: int = 16,
) -> LoadedSegment:
    """The verified segment, or SegmentRejectedError naming why it cannot be scored."""
    ref = parse_prefix(prefix)
    raw_manifest = _get(store, f"{ref.prefix}/manifest.json", "manifest")
    manifest = _check_manifest(ref, raw_manifest)
    files = manifest["files"]
    if "ram.jsonl" not in files:
        raise SegmentRejectedError(f"{ref.prefix}: the manifest lists no ram.jsonl")
    ram = _verified(store, ref, "ram.jsonl", files["ram.jsonl"])
    if len(ram) > max_bytes:
        raise SegmentRejectedError(f"{ref.prefix}: ram.jsonl over {max_bytes} bytes")
    steps = _parse_steps(ref, ram, max_steps)
    # Every listed file is re-hashed, frames included, even those no judge looks at.
    frames = {}
    for name, digest in files.items():
        if name != "ram.jsonl":
            data = _verified(store, ref, name, digest)
            if name.startswith("frames/") and name.endswith(".png"):
                frames[name] = data
    facts = condense(steps, manifest.get("first_step"))
    return LoadedSegment(
        ref=ref,
        manifest_sha256=hashlib.sha256(raw_manifest).hexdigest(),
        facts=facts,
        key_frames=select_key_frames(steps, frames, max_key_frames),
        states=_states(ref, steps, state_stride),
    )


def _states(ref: SegmentRef, steps: list[dict[str, Any]], stride: int) -> list[StateFacts]:
    try:
        return sample_states(steps, stride)
    except (KeyError, TypeError, ValueError) as error:
        raise SegmentRejectedError(
            f"{ref.prefix}: a step's state has no progress facts: {error}"
        ) from None


def _get(store: ObjectStore, key: str, what: str) -> bytes:
    try:
        return store.get(key)
    except ObjectNotFoundError:
        raise SegmentRejectedError(f"{key}: no {what} in the store") from None
    except ChecksumMismatchError as error:
        raise SegmentRejectedError(f"{key}: {error}") from None


def _check_manifest(ref: SegmentRef, raw: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise SegmentRejectedError(f"{ref.prefix}: manifest.json is not JSON") from None
    if not isinstance(manifest, dict):
        raise SegmentRejectedError(f"{ref.prefix}: manifest.json is not an object")
    version = manifest.get("schema_version")
    if version not in KNOWN_EXPORT_VERSIONS:
        raise SegmentRejectedError(
            f"{ref.prefix}: manifest schema_version {version!r} is unknown "
            f"(this evaluator reads {list(KNOWN_EXPORT_VERSIONS)})"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(d, str) for d in files.values()):
        raise SegmentRejectedError(f"{ref.prefix}: manifest has no files map of sha256s")
    claimed = (manifest.get("run"), manifest.get("episode"), manifest.get("segment"))
    if claimed != (ref.run, ref.episode, ref.segment):
        raise SegmentRejectedError(f"{ref.prefix}: manifest names another segment {claimed}")
    return manifest


def _verified(store: ObjectStore, ref: SegmentRef, name: str, digest: str) -> bytes:
    data = _get(store, f"{ref.prefix}/{name}", name)
    if hashlib.sha256(data).hexdigest() != digest:
        raise SegmentRejectedError(f"{ref.prefix}/{name}: sha256 differs from the manifest")
    return data


def _parse_steps(ref: SegmentRef, ram: bytes, max_steps: int) -> list[dict[str, Any]]:
    lines = ram.splitlines()
    if not lines:
        raise SegmentRejectedError(f"{ref.prefix}: ram.jsonl is empty")
    if len(lines) > max_steps:
        raise SegmentRejectedError(f"{ref.prefix}: {len(lines)} steps, over {max_steps}")
    steps = []
    for number, line in enumerate(lines, 1):
        try:
            step = json.loads(line)
            if not step["state"].keys() >= REQUIRED_STATE_KEYS:
                raise KeyError("state")
        except (ValueError, KeyError, TypeError):
            raise SegmentRejectedError(
                f"{ref.prefix}: ram.jsonl line {number} is not a step with a game state"
            ) from None
        steps.append(step)
    return steps


def _room(state: dict[str, Any]) -> tuple[bool, int, int]:
    room = state["room"]
    return (bool(room["indoor"]), int(room["map"]), int(room["room"]))


def condense(steps: list[dict[str, Any]], first_step: int | None = None) -> SegmentFacts:
    """The trajectory as the facts a judge is told (one pass, no pydantic per step)."""
    first, last = steps[0]["state"], steps[-1]["state"]
    rooms_seen = {_room(first)}
    previous = first
    entered = revisits = lost = dialogs = choices = moved = 0
    for step in steps[1:]:
        state = step["state"]
        room = _room(state)
        if room != _room(previous):
            entered += 1
            revisits += room in rooms_seen
            rooms_seen.add(room)
        lost += max(int(previous["health"]) - int(state["health"]), 0)
        dialogs += bool(state["dialog"]["open"]) and not previous["dialog"]["open"]
        choices += bool(state["dialog"]["choice_shown"]) and not previous["dialog"]["choice_shown"]
        tile = (state["link"]["tile_x"], state["link"]["tile_y"])
        moved += room != _room(previous) or tile != (
            previous["link"]["tile_x"],
            previous["link"]["tile_y"],
        )
        previous = state
    gained = int(last["inventory"]["items"]) & ~int(first["inventory"]["items"])
    return SegmentFacts(
        steps=len(steps), first_step=first_step, rooms_entered=entered,
        new_rooms=max(int(last["rooms_visited"]) - int(first["rooms_visited"]), 0),
        distinct_rooms=len(rooms_seen), revisits=revisits,
        items_gained=[name for bit, name in ITEM_NAMES.items() if gained & (1 << bit)],
        keys_delta=int(last["keys"]) - int(first["keys"]), health_start=int(first["health"]),
        health_end=int(last["health"]), health_lost=lost,
        kills=max(int(last["kills"]) - int(first["kills"]), 0),
        deaths=max(int(last["deaths"]) - int(first["deaths"]), 0),
        dialogs_opened=dialogs, choices_shown=choices,
        rupees_delta=int(last["rupees"]) - int(first["rupees"]),
        instrument_taken=bool(last["has_instrument"]) and not first["has_instrument"],
        won=any(step["state"].get("mode") == "credits" for step in steps), tiles_moved=moved,
        reward_total=round(sum(float(step.get("reward", 0.0)) for step in steps), 4),
    )  # fmt: skip


def select_key_frames(
    steps: list[dict[str, Any]], frames: dict[str, bytes], limit: int
) -> list[tuple[int, bytes]]:
    """First, last, and the steps where the room, health or inventory changed (at most `limit`)."""
    if not frames:
        return []
    wanted = [0]
    for index in range(1, len(steps)):
        before, after = steps[index - 1]["state"], steps[index]["state"]
        if (
            _room(before) != _room(after)
            or before["health"] != after["health"]
            or before["inventory"]["items"] != after["inventory"]["items"]
        ):
            wanted.append(index)
    changes = wanted[1:]
    if len(changes) > limit - 2:  # keep the changes spread over the segment
        stride = len(changes) / (limit - 2)
        changes = [changes[int(i * stride)] for i in range(limit - 2)]
    chosen = sorted({0, *changes, len(steps) - 1})
    key_frames = []
    for index in chosen:
        name = f"frames/{int(steps[index]['t']):06d}.png"
        if name in frames:
            key_frames.append((int(steps[index]["t"]), frames[name]))
    return key_frames


def is_store_outage(error: Exception) -> bool:
    """A StoreError that is not about the object itself: the store is down, try later."""
    return isinstance(error, StoreError) and not isinstance(
        error, ObjectNotFoundError | ChecksumMismatchError
    )
