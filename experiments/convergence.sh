#!/usr/bin/env bash
# The convergence table of docs/archive/RESULTS-HISTORY.md ("CorgiPile by default:
# convergence and speed"): label-sorted training sets, every strategy with
# train's defaults otherwise, three seeds. Each dataset is split by
# ../shared/tools/sorted_split.py (rows shuffled with seed 1, a test share
# held out, the rest sorted by label), both parts encoded with encode's
# defaults; then per seed one `tocpile train --shuffle
# corgipile,once,none,block --json` run. Prints a markdown table: final
# test accuracy (mean and spread over the seeds) and the median epoch time
# of epochs 1 and later as a ratio to No Shuffle's in the same run.
#
# Usage: bash experiments/convergence.sh [--epochs N] [--seeds "1 2 3"]
#        [DATASET:MODEL:TEST_SHARE ...]
# (default: mnist5k:softmax:0.2 census_fertility:lr:0.2 flights3m:lr:0.1,
# 4 epochs; TOCPILE=path runs that binary instead of building). About 10
# minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=4
seeds="1 2 3"
sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --epochs) epochs=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        *) sets+=("$1"); shift ;;
    esac
done
[ ${#sets[@]} -gt 0 ] || sets=(mnist5k:softmax:0.2 census_fertility:lr:0.2 flights3m:lr:0.1)
bin=${TOCPILE:-target/release/tocpile}
[ -n "${TOCPILE:-}" ] || cargo build --release -p tocpile-cli >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for set in "${sets[@]}"; do
    IFS=: read -r name model share <<< "$set"
    data=../shared/data/$name.libsvm.gz
    mkdir -p "$work/$name"
    python3 ../shared/tools/sorted_split.py "$data" "$work/$name" "$share" 1
    # Both parts over the columns of either.
    cols=0
    for part in train test; do
        "$bin" encode "$work/$name/$part.libsvm" -o "$work/$name/$part.toc" >/dev/null
        c=$("$bin" inspect "$work/$name/$part.toc" --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["cols"])')
        [ "$c" -gt "$cols" ] && cols=$c
    done
    for part in train test; do
        "$bin" encode "$work/$name/$part.libsvm" -o "$work/$name/$part.toc" --cols "$cols" >/dev/null
    done
    for seed in $seeds; do
        "$bin" train "$work/$name/train.toc" --eval "$work/$name/test.toc" --model "$model" \
            --epochs "$epochs" --shuffle corgipile,once,none,block --seed "$seed" --json \
            > "$work/$name-$seed.json"
    done
done
python3 - "$work" "$seeds" "${sets[@]}" <<'PY'
import json, statistics, sys
work, seeds, sets = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
print("| data (model) | strategy | test accuracy per seed | mean | spread | epoch time / No Shuffle | mode |")
print("|---|---|---|---:|---:|---:|---|")
for s in sets:
    name, model, _ = s.split(":")
    runs = {}
    for seed in seeds:
        with open(f"{work}/{name}-{seed}.json") as f:
            for r in json.load(f)["runs"]:
                runs.setdefault(r["strategy"], []).append(r)
    def later(r):
        return statistics.median(e["seconds"] for e in r["epochs"][1:])
    none = [later(r) for r in runs["none"]]
    for strategy, rs in runs.items():
        acc = [r["final_eval"]["accuracy"] for r in rs]
        ratio = statistics.median(later(r) / n for r, n in zip(rs, none))
        print(f"| {name} ({model}) | {strategy} | {', '.join(f'{a:.4f}' for a in acc)} | "
              f"{statistics.mean(acc):.4f} | {max(acc) - min(acc):.4f} | {ratio:.2f} | "
              f"{rs[0]['mode']} |")
PY
