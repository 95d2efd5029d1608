#!/usr/bin/env bash
# A/B of `koholint train` between two checkouts, alternating so drifts in the machine's load
# hit both: plain PPO (no curiosity, archive or export) and every feature (the defaults).
#   benchmarks/ab_train.sh OLD_CHECKOUT NEW_CHECKOUT [ROUNDS] [STEPS]
# Both checkouts run with this repository's .venv, each with its own tree first on the path.
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") rounds=${3:-3} steps=${4:-32768}
python=$(realpath "$(dirname "$0")/../.venv/bin/koholint")
work=$(mktemp -d)
plain="--curiosity-weight 0 --archive-restart-every 0 --export-every-episodes 0"
for round in $(seq "$rounds"); do
    for tree in "$old" "$new"; do
        for mode in plain all; do
            extra=$([[ $mode == plain ]] && echo "$plain" || true)
            # shellcheck disable=SC2086  # the flags are words
            line=$(cd "$tree" && PYTHONPATH="$tree/libs:$tree/services" "$python" train \
                --steps "$steps" --store "$work/$round-store" --run-dir "$work/runs" $extra 2>&1 |
                tr '\r' '\n' | grep '/s  rooms' | tail -1)
            echo "round $round  $(basename "$tree")  $mode  $line"
        done
    done
done
rm -rf "$work"
