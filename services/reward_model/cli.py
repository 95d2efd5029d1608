"""``koholint train-reward-model``: fit R_phi once from the score records in the store (what
the service does on POST /v1/train, without a server: the loop's embedded default and the
gitops Job)."""

from __future__ import annotations

import argparse
import json
import sys


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train-reward-model", help="fit the reward model on the judges' scores in the store"
    )
    parser.add_argument("--store", default=None, help="object store URL (default: the setting)")
    parser.add_argument("--scores", default="scores/", help="prefix of the score batch files")
    parser.add_argument("--margin", type=float, default=None, help="score gap of a pair")
    parser.add_argument("--min-pairs", type=int, default=None)
    parser.add_argument("--floor", type=float, default=None, help="held-out accuracy to beat")
    parser.add_argument("--seed", type=int, default=None)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch
    from pydantic import ValidationError

    from koholint.store import StoreError, open_store
    from reward_model.config import Settings
    from reward_model.service import (
        RewardModelService,
        load_comparison_keys,
        load_score_records,
    )

    overrides = {name: value for name, value in (
        ("store_url", args.store), ("margin", args.margin), ("min_pairs", args.min_pairs),
        ("accuracy_floor", args.floor), ("seed", args.seed)) if value is not None}  # fmt: skip
    try:
        settings = Settings(**overrides)
        store = open_store(settings.store_url)
        service = RewardModelService(settings, store)
        torch.set_num_threads(1)
        records = load_score_records(store, args.scores)
    except (ValidationError, StoreError) as error:
        print(f"koholint train-reward-model: {error}", file=sys.stderr)
        return 2
    added = sum(service.add_score(prefix, key, score) for prefix, key, score in records)
    compared = sum(service.add_comparisons(key) for key in load_comparison_keys(store, args.scores))
    print(f"scored segments: {len(records)} read, {added} with observations; "
          f"{compared} batches of state comparisons")  # fmt: skip
    status = service.train("koholint train-reward-model")
    print(json.dumps(status.model_dump(mode="json")))
    return 0 if status.state == "published" else 1
