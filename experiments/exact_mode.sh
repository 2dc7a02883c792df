#!/usr/bin/env bash
# Exact mode against page mode, per epoch (docs/archive/RESULTS-HISTORY.md, "Exact mode
# without re-encoding"). Each dataset is encoded with the defaults, then
# trained by `tocpile train` in both modes, with pages resident (the
# default --memory) and streamed (--memory 0), the four runs interleaved
# in each round. Reports the median epoch time of epochs 1 and later over
# all rounds (epoch 0 reads and validates the file and fills the resident
# cache), exact / page, the median wait share and the CPU seconds of a run
# (user + sys, all threads).
#
# Usage: bash experiments/exact_mode.sh [--epochs N] [--rounds N] [DATASET:MODEL ...]
# (default: flights3m:lr census_fertility:lr mnist5k:softmax, 6 epochs,
# 3 rounds; TOCPILE=path runs that binary instead of building). Needs GNU
# time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=6
rounds=3
sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --epochs) epochs=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        *) sets+=("$1"); shift ;;
    esac
done
[ ${#sets[@]} -gt 0 ] || sets=(flights3m:lr census_fertility:lr mnist5k:softmax)
bin=${TOCPILE:-target/release/tocpile}
[ -n "${TOCPILE:-}" ] || cargo build --release -p tocpile-cli >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "| dataset | model | pages | exact s/epoch | page s/epoch | exact / page | wait share exact / page | CPU s per run exact / page |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
for set in "${sets[@]}"; do
    name=${set%%:*}
    model=${set##*:}
    file="$work/$name.toc"
    "$bin" encode "../shared/data/$name.libsvm.gz" -o "$file" >/dev/null
    for round in $(seq "$rounds"); do
        for memory in resident streamed; do
            for mode in exact page; do
                extra=()
                [ "$memory" = streamed ] && extra=(--memory 0)
                out="$work/$name-$memory-$mode-$round"
                /usr/bin/time -f "cpu %U %S" -o "$out.time" "$bin" train "$file" --model "$model" \
                    --mode "$mode" --epochs "$epochs" "${extra[@]}" >"$out.txt" 2>"$out.err"
            done
        done
    done
    for memory in resident streamed; do
        declare -A secs waits cpus
        for mode in exact page; do
            secs[$mode]=$(cat "$work/$name-$memory-$mode-"*.txt |
                awk -F'|' '/^\| [0-9]+ \|/ && $2+0 >= 1 {print $5+0}' | median)
            waits[$mode]=$(cat "$work/$name-$memory-$mode-"*.txt |
                awk -F'|' '/^\| [0-9]+ \|/ && $2+0 >= 1 {gsub(/[ %]/, "", $6); print $6}' | median)
            cpus[$mode]=$(cat "$work/$name-$memory-$mode-"*.time | awk '/^cpu/ {print $2 + $3}' | median)
        done
        ratio=$(awk -v a="${secs[exact]}" -v b="${secs[page]}" 'BEGIN {printf "%.2fx", a / b}')
        echo "| $name | $model | $memory | ${secs[exact]} | ${secs[page]} | $ratio | ${waits[exact]}% / ${waits[page]}% | ${cpus[exact]} / ${cpus[page]} |"
        unset secs waits cpus
    done
done
