"""What a reward model learns from: the env's observation vector, named by an encoder version.

The encoder version is derived from the observation layout (``koholint.env.encoding.SLOTS``,
the one source of it): a model trained on one layout is refused by an env with another.
"""

from __future__ import annotations

import hashlib
from functools import cache

from koholint.env.encoding import OBSERVATION_SIZE, SLOTS


@cache
def encoder_version() -> str:
    """``obs<size>-<12 hex of the layout's sha256>``; changes whenever a slot changes."""
    layout = "\n".join(
        f"{slot.position}|{slot.name}|{slot.source}|{slot.normalisation}" for slot in SLOTS
    )
    return f"obs{OBSERVATION_SIZE}-{hashlib.sha256(layout.encode()).hexdigest()[:12]}"
