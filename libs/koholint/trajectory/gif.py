"""Screens of an episode as an animated GIF, played at twice the game's speed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def write_gif(screens: Sequence[np.ndarray], path: Path, *, every: int, frame_skip: int) -> int:
    """Screens taken every `every` steps as an animated GIF (played at twice the game's
    speed; what ``koholint play --export`` and Go-Explore's trajectory GIF write). Returns the
    number of frames."""
    from PIL import Image

    frames = [Image.fromarray(screen).quantize(colors=16) for screen in screens]
    milliseconds = round(1000 * every * frame_skip / 60 / 2)
    frames[0].save(Path(path), save_all=True, append_images=frames[1:], duration=milliseconds,
                   loop=0, optimize=True)  # fmt: skip
    return len(frames)
