"""``koholint train-reward-model``: fit R_phi once from the score records in the store (what
the service does on POST /v1/train, without a server: the loop's embedded default and the
gitops Job).

Its flags are derived from the service's settings (reward_model/config.py,
``koholint.flags``): a field's docstring is its help, a flag beats the field's environment
variable (``KOHOLINT_REWARD_MODEL_<FIELD>``), which beats the default.
"""

from __future__ import annotations

import argparse
import json
import sys

# At import, not inside register(): without the reward model's dependencies this module fails
# to load, and the CLI lists `train-reward-model` as not installed.
from koholint.flags import add_setting_flags, fields_of, flag_errors, setting_values
from koholint.settings import ConsumerSettings, ServiceSettings
from koholint.web.auth import ControlAccess
from reward_model.config import Settings

SERVER_ONLY = fields_of(ServiceSettings, ConsumerSettings, ControlAccess) | {
    "consumer_name", "train_after_new_pairs",
}  # fmt: skip
"""The settings of the server (its scaffold, its stream consumer, when it trains by itself)
that a one-shot fit does not read."""
SHORT_FLAGS = {"store_url": ["--store"], "accuracy_floor": ["--floor"]}


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train-reward-model",
        help="fit the reward model on the judges' scores in the store",
        description="Every setting: --flag > environment variable > default.",
    )
    parser.add_argument("--scores", default="scores/", help="prefix of the score batch files")
    group = parser.add_argument_group("settings (the reward-model service's)")
    secrets = add_setting_flags(group, Settings, short_flags=SHORT_FLAGS, skip=SERVER_ONLY)
    if secrets:
        group.description = f"secrets from the environment only: {', '.join(secrets)}"
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch
    from pydantic import ValidationError

    from koholint.store import StoreError, open_store
    from reward_model.service import (
        RewardModelService,
        load_comparison_keys,
        load_score_records,
    )

    try:
        settings = Settings(**setting_values(args))
        store = open_store(settings.store_url)
        service = RewardModelService(settings, store)
        torch.set_num_threads(1)
        records = load_score_records(store, args.scores)
    except ValidationError as error:
        print(f"koholint train-reward-model: {flag_errors(error)}", file=sys.stderr)
        return 2
    except StoreError as error:
        print(f"koholint train-reward-model: {error}", file=sys.stderr)
        return 2
    added = sum(service.add_score(prefix, key, score) for prefix, key, score in records)
    compared = sum(service.add_comparisons(key) for key in load_comparison_keys(store, args.scores))
    print(f"scored segments: {len(records)} read, {added} with observations; "
          f"{compared} batches of state comparisons")  # fmt: skip
    status = service.train("koholint train-reward-model")
    print(json.dumps(status.model_dump(mode="json")))
    return 0 if status.state == "published" else 1
