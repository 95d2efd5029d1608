"""What the whole-loop tests share: small training bursts on 2 cores, the koholint command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SMALL_BURST = [
    "--workers=0", "--envs=2", "--batch=512", "--minibatch=128", "--num-epochs=2",
    "--segment-steps=64", "--env-max-episode-steps=128", "--curiosity-weight=0",
    "--archive-restart-every=0", "--checkpoint-every-iterations=1",
]  # fmt: skip
"""`koholint train` flags for a burst of a minute: 2 envs in the driver, 128-step episodes,
every episode exported as two 64-step segments."""


def koholint(*arguments: str, environment: dict[str, str] | None = None, timeout: float = 480,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run the koholint command as a user would; the completed process (output captured)."""
    return subprocess.run(
        [sys.executable, "-m", "koholint.cli", *arguments], capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **(environment or {})}, cwd=cwd, check=False,
    )  # fmt: skip
