"""A segment from the object store, checked against its manifest and condensed into facts.

``load_segment`` reads ``manifest.json``, re-hashes every file it lists, reads ``ram.jsonl``
and returns a ``LoadedSegment`` (facts for the text judges, key frames for the vision
judge). A segment that can never be scored (no manifest, unknown ``schema_version``, a file
that does not match its sha256, a foreign layout, files over the size limit, a step that is
not one, a number that is not finite) raises ``SegmentRejectedError``: the caller
dead-letters it. A store that cannot be reached raises ``StoreError``: try later.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from evaluator.config import Settings
from koholint.game.ram import InventoryItem
from koholint.reward.truth import sample_states
from koholint.schemas.evaluator import SEGMENT_PREFIX_PATTERN, SegmentFacts, StateFacts
from koholint.store import (
    ChecksumMismatchError,
    InvalidKeyError,
    ObjectNotFoundError,
    ObjectStore,
    StoreError,
)

KNOWN_EXPORT_VERSIONS = (1, 2)
"""Export layouts this evaluator reads (2 adds the observation vector to each step)."""
PREFIX_PATTERN = re.compile(SEGMENT_PREFIX_PATTERN)
ITEM_NAMES = {int(item): item.name.lower() for item in InventoryItem if item}
REQUIRED_STATE_KEYS = frozenset((
    "room", "link", "dialog", "inventory", "health", "keys", "kills", "deaths", "rupees",
    "rooms_visited", "has_instrument",
))  # fmt: skip
STATE_FIELDS: dict[str, type] = {
    "room.indoor": bool, "room.map": int, "room.room": int, "link.tile_x": int,
    "link.tile_y": int, "dialog.open": bool, "dialog.choice_shown": bool,
    "inventory.items": int, "health": int, "keys": int, "kills": int, "deaths": int,
    "rupees": int, "rooms_visited": int, "has_instrument": bool,
}  # fmt: skip
"""The state fields the facts are made of, and their types (bool also takes 0 and 1)."""
FILE_NAME_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*")
"""A file named in a manifest: parts inside the segment's folder, none starting with a dot."""
MAX_FILE_NAME_CHARS = 256
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_REASON_CHARS = 500


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
    settings: Settings | None = None,
) -> LoadedSegment:
    """The verified segment, or SegmentRejectedError naming why it cannot be scored, within
    the limits of `settings` (its defaults when None: max_key_frames, max_segment_steps,
    max_segment_bytes, state_stride).

    Whatever in the segment's files fails to read (a step without ``t``, a string where a
    number belongs, nesting too deep for the parser, a name that is no file) is the segment's
    rejection; only a StoreError that is not about the segment's objects escapes (try later).
    """
    ref = parse_prefix(prefix)
    limits = Settings() if settings is None else settings
    try:
        return _load(store, ref, limits.max_key_frames, limits.max_segment_steps,
                     limits.max_segment_bytes, limits.state_stride)  # fmt: skip
    except (SegmentRejectedError, StoreError):
        raise
    except Exception as error:  # anything else the files made the reader do is their fault
        raise SegmentRejectedError(
            f"{ref.prefix}: unreadable ({type(error).__name__}: {error})"[:MAX_REASON_CHARS]
        ) from None


def _load(
    store: ObjectStore,
    ref: SegmentRef,
    max_key_frames: int,
    max_steps: int,
    max_bytes: int,
    state_stride: int,
) -> LoadedSegment:
    sizes = _sizes_within(store, ref, max_bytes)
    manifest_key = f"{ref.prefix}/manifest.json"
    if manifest_key not in sizes:
        raise SegmentRejectedError(f"{manifest_key}: no manifest in the store")
    raw_manifest = _get(store, manifest_key, "manifest")
    manifest = _check_manifest(ref, raw_manifest)
    files = manifest["files"]
    if "ram.jsonl" not in files:
        raise SegmentRejectedError(f"{ref.prefix}: the manifest lists no ram.jsonl")
    _check_files(ref, files, sizes, max_bytes)
    ram = _verified(store, ref, "ram.jsonl", files["ram.jsonl"])
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


def _sizes_within(store: ObjectStore, ref: SegmentRef, max_bytes: int) -> dict[str, int]:
    """The sizes of the segment's objects (listed, not read); refused when they pass the limit."""
    sizes = store.sizes(f"{ref.prefix}/")
    manifest = sizes.get(f"{ref.prefix}/manifest.json", 0)
    if manifest > MAX_MANIFEST_BYTES:
        raise SegmentRejectedError(
            f"{ref.prefix}/manifest.json: {manifest} bytes, over {MAX_MANIFEST_BYTES}"
        )
    return sizes


def _check_files(
    ref: SegmentRef, files: dict[str, str], sizes: dict[str, int], max_bytes: int
) -> None:
    """Every listed name is a file inside the segment, and together they fit `max_bytes`."""
    total = 0
    for name in files:
        if not FILE_NAME_PATTERN.fullmatch(name) or len(name) > MAX_FILE_NAME_CHARS:
            raise SegmentRejectedError(
                f"{ref.prefix}: the manifest lists {name[:80]!r}, not a file name inside the "
                "segment (letters, digits, '_', '-', '.', '/' between parts; no '..')"
            )
        size = sizes.get(f"{ref.prefix}/{name}")
        if size is None:
            raise SegmentRejectedError(f"{ref.prefix}/{name}: no such file in the store")
        total += size
        if total > max_bytes:
            raise SegmentRejectedError(
                f"{ref.prefix}: its files pass max_segment_bytes {max_bytes} at {name} "
                f"({size} bytes)"
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
    except (ChecksumMismatchError, InvalidKeyError) as error:
        raise SegmentRejectedError(f"{key}: {error}") from None


def _check_manifest(ref: SegmentRef, raw: bytes) -> dict[str, Any]:
    try:
        manifest = loads_finite(raw)
    except NonFiniteError as error:
        raise SegmentRejectedError(f"{ref.prefix}: manifest.json: {error}") from None
    except (ValueError, RecursionError):
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
    first_step = manifest.get("first_step")
    if first_step is not None and (not isinstance(first_step, int) or isinstance(first_step, bool)):
        raise SegmentRejectedError(f"{ref.prefix}: manifest first_step is not an integer")
    return manifest


def _verified(store: ObjectStore, ref: SegmentRef, name: str, digest: str) -> bytes:
    data = _get(store, f"{ref.prefix}/{name}", name)
    if hashlib.sha256(data).hexdigest() != digest:
        raise SegmentRejectedError(f"{ref.prefix}/{name}: sha256 differs from the manifest")
    return data


def _parse_steps(ref: SegmentRef, ram: bytes, max_steps: int) -> list[dict[str, Any]]:
    try:
        lines = ram.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise SegmentRejectedError(
            f"{ref.prefix}: ram.jsonl is not UTF-8 (byte {error.start})"
        ) from None
    if not lines:
        raise SegmentRejectedError(f"{ref.prefix}: ram.jsonl is empty")
    if len(lines) > max_steps:
        raise SegmentRejectedError(f"{ref.prefix}: {len(lines)} steps, over {max_steps}")
    steps = []
    for number, line in enumerate(lines, 1):
        where = f"{ref.prefix}: ram.jsonl line {number}"
        try:
            step = loads_finite(line)
        except NonFiniteError as error:
            raise SegmentRejectedError(f"{where}: {error}") from None
        except (ValueError, RecursionError):
            raise SegmentRejectedError(f"{where} is not JSON") from None
        problem = step_problem(step)
        if problem is not None:
            raise SegmentRejectedError(f"{where}: {problem}")
        steps.append(step)
    return steps


def step_problem(step: Any) -> str | None:
    """What makes a parsed ram.jsonl line no step with a game state (None: it is one)."""
    if not isinstance(step, dict):
        return "not a step object"
    if not _is_int(step.get("t")):
        return "t is missing or not an integer"
    reward = step.get("reward", 0.0)
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        return "reward is not a number"
    state = step.get("state")
    if not isinstance(state, dict):
        return "state is missing or not an object"
    missing = sorted(REQUIRED_STATE_KEYS - state.keys())
    if missing:
        return f"state lacks {', '.join(missing)}"
    for path, kind in STATE_FIELDS.items():
        value: Any = state
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not (_is_int(value) if kind is int else isinstance(value, bool | int)):
            return f"state.{path} is {type(value).__name__}, not {kind.__name__}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class NonFiniteError(ValueError):
    """A JSON document holds NaN, Infinity or a number beyond a float's range."""


def loads_finite(text: str | bytes) -> Any:
    """json.loads that refuses NaN, Infinity and overflowing numbers, naming where they are."""

    def refuse(token: str) -> float:
        raise _NonFinite(token)

    def finite_float(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise _NonFinite(token)
        return value

    try:
        return json.loads(text, parse_constant=refuse, parse_float=finite_float)
    except _NonFinite as error:
        path = _non_finite_path(json.loads(text)) or "a number"
        raise NonFiniteError(f"{path} is {error.args[0][:40]}, not a finite number") from None


class _NonFinite(Exception):
    pass


def _non_finite_path(document: Any, path: str = "") -> str | None:
    if isinstance(document, float) and not math.isfinite(document):
        return path or "the document"
    children = (
        document.items() if isinstance(document, dict)
        else enumerate(document) if isinstance(document, list) else ()
    )  # fmt: skip
    for key, child in children:
        found = _non_finite_path(child, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


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
        error, ObjectNotFoundError | ChecksumMismatchError | InvalidKeyError
    )
