#!/usr/bin/env bash
# Test accuracy of tocpile's defaults (encode, train --holdout 0.1,
# evaluate) against scikit-learn on max-abs-scaled features, same 90/10
# split (docs/archive/RESULTS-HISTORY.md, "Real data, real workflows").
#
#   bash experiments/sklearn_accuracy.sh [--only a,b] [--flights-epochs N]
#
# Builds the release binary, and a debug binary with the `parquet` feature
# for the Parquet copy of mushrooms (written by pyarrow in the venv).
# Everything Python is installed into a throw-away virtualenv; tocpile
# itself never depends on it. Writes experiments/results/sklearn_accuracy.json and
# sklearn_accuracy.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
VENV="${TMPDIR:-/tmp}/venv-sk"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check numpy scipy scikit-learn pyarrow >&2

(cd "$ROOT" && cargo build --release -p tocpile-cli >&2)
PQ_TARGET="${TOCPILE_PARQUET_TARGET:-$ROOT/target}"
(cd "$ROOT" && CARGO_TARGET_DIR="$PQ_TARGET" cargo build -p tocpile-cli --features parquet >&2)

"$VENV/bin/python" "$HERE/sklearn_accuracy.py" \
    --tocpile "$ROOT/target/release/tocpile" \
    --tocpile-parquet "$PQ_TARGET/debug/tocpile" \
    --data-dir "$ROOT/../shared/data" "$@"
