"""``koholint loop``'s settings, from flags or the environment with the prefix KOHOLINT_LOOP_.

The stages' own settings are theirs: each stage reads its ``KOHOLINT_<SERVICE>_*`` variables
from the environment the loop hands on, and ``train_flag``/``evaluate_flag`` add flags to
every ``koholint train``/``koholint evaluate``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from koholint.schemas.env import WorldSetting
from koholint.settings import RunFolderSettings, StoreSettings

MAX_BURSTS = 10
MAX_ENV_STEPS = 10**10


class Settings(BaseSettings, StoreSettings, RunFolderSettings, WorldSetting):
    """The loop, burst after burst, or (``online``) one run judged and refitted as it trains;
    every stage plays `rom`'s world (handed on as $KOHOLINT_ROM)."""

    model_config = SettingsConfigDict(
        env_prefix="KOHOLINT_LOOP_", extra="ignore", use_attribute_docstrings=True
    )

    bursts: int = Field(2, ge=2, le=MAX_BURSTS)
    """training bursts"""
    steps_per_burst: int = Field(4096, ge=1, le=MAX_ENV_STEPS)
    """env steps per burst"""
    name: str = Field("", max_length=100)
    """the runs' name: <name>-b1, <name>-b2, ... (online: <name>); empty: loop-<time> or
    online-<time>"""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """every stage's seed: the runs', R_phi's fit"""
    train_flag: list[str] = Field(default_factory=list, max_length=256)
    """extra flags for every `koholint train`, e.g. --train-flag=--workers=0"""
    evaluate_flag: list[str] = Field(default_factory=list, max_length=256)
    """extra flags for every `koholint evaluate`"""
    online: bool = False
    """one run; the judges and the reward model work beside it"""
    steps: int = Field(20_480, ge=1, le=MAX_ENV_STEPS)
    """online: the run's env steps"""
    refit_every: int = Field(5, ge=1, le=100_000)
    """online: training iterations between refits (the run's checkpoint_every_iterations)"""
    export_every: int = Field(1, ge=1, le=100_000)
    """online: every N-th episode of an env is exported for the judges (the run's
    export_every_episodes)"""
