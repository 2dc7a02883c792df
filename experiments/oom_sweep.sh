#!/usr/bin/env bash
# The TOC paper's out-of-memory experiment drawn as a curve (issue: "a
# sweep, not one point"): `oom.sh` once per memory limit, every page
# format trained with train's defaults (LR, CorgiPile, auto mode), then
# `oom_plot.py` gathers the runs into one table and one SVG plot.
#
# The limit of each point is FACTOR x the TOC file plus an allowance for
# the training process itself (--allowance BYTES, default 64 MiB: with the
# defaults `tocpile train` peaks at 46-49 MiB RSS on the TOC file whether
# its blocks stay resident or stream, and allocator slack varies by a few
# MiB from run to run), so the factor is the share of page cache left for
# the data. (`--allowance auto`, the peak of one run without a limit, left
# too little: the TOC run was killed at 0.5x.)
#
#   cargo build --release -p tocpile-cli && sudo bash experiments/oom_sweep.sh
#   sudo bash experiments/oom_sweep.sh [--factors 0.5,1,2,4,8] [--rows N]
#        [--epochs N] [--formats toc,csr,...] [--allowance BYTES] [--name NAME]
#        [oom.sh options]
#
# Writes experiments/results/NAME-FACTOR.{json,md} per point and NAME.md and
# NAME.svg (default NAME oom-sweep). About 15 minutes on a 2-core machine
# with the defaults (1,000,000 rows of flights3m, 3 epochs); the files are
# encoded once and reused across the points (the default --workdir).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FACTORS=0.5,1,2,4,8
ROWS=1000000
EPOCHS=3
FORMATS=toc,csr,cvi,gzip,snappy,den
NAME=oom-sweep
ALLOWANCE=$((64 << 20))
PASS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --factors) FACTORS="$2"; shift 2 ;;
        --rows) ROWS="$2"; shift 2 ;;
        --epochs) EPOCHS="$2"; shift 2 ;;
        --formats) FORMATS="$2"; shift 2 ;;
        --name) NAME="$2"; shift 2 ;;
        --allowance) ALLOWANCE="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) PASS+=("$1"); shift ;;
    esac
done

points=()
IFS=, read -ra list <<< "$FACTORS"
for f in "${list[@]}"; do
    bash "$HERE/oom.sh" --name "$NAME-$f" --rows "$ROWS" --epochs "$EPOCHS" \
        --formats "$FORMATS" --limit-factor "$f" --allowance "$ALLOWANCE" --no-reference \
        --train-args="--model lr --seed 0" --keep-files "${PASS[@]}"
    points+=("$HERE/results/$NAME-$f.json")
done
rm -f "${TMPDIR:-/tmp}"/tocpile-oom/*.toc "${TMPDIR:-/tmp}"/tocpile-oom/*.toc.json
python3 "$HERE/oom_plot.py" --markdown "$HERE/results/$NAME.md" --svg "$HERE/results/$NAME.svg" "${points[@]}"
