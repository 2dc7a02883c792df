#!/usr/bin/env bash
# Baseline logistic-regression training speed of scikit-learn (and Vowpal
# Wabbit when installable) on tocpile's LIBSVM data sets.
#
#   bash experiments/baselines.sh [--datasets a,b] [--epochs N] [--seed S] [...]
#   bash experiments/baselines.sh --versus-tocpile target/release/tocpile [--rounds N]
#
# The second form times only the scipy mini-batch loop against `tocpile
# train` (default options) on the same rows and writes versus_tocpile.json
# and versus_tocpile.md instead.
#
# Everything is installed into a throw-away virtualenv under $TMPDIR; tocpile
# itself never depends on these tools. Extra arguments go to baselines.py
# (see `--help` there). Writes experiments/results/baselines.json and baselines.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${TMPDIR:-/tmp}/tocpile-baselines-venv"
PY="$VENV/bin/python"

if [[ ! -x "$PY" ]]; then
    echo "creating venv $VENV" >&2
    python3 -m venv "$VENV"
fi
"$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2 || true
"$PY" -m pip install --quiet --disable-pip-version-check numpy scipy scikit-learn >&2

OUT_NAME=baselines
for arg in "$@"; do
    if [[ "$arg" == --versus-tocpile* ]]; then
        OUT_NAME=versus_tocpile
    fi
done
if [[ "$OUT_NAME" == versus_tocpile ]]; then
    exec "$PY" "$HERE/baselines.py" \
        --json "$HERE/results/$OUT_NAME.json" --markdown "$HERE/results/$OUT_NAME.md" "$@"
fi

# Vowpal Wabbit: the wheel carries the whole VW library (same driver as the vw
# CLI, usable as `python -m vowpalwabbit ...`), so a wheel is all we need.
vw_works() { "$PY" -c 'import vowpalwabbit; vowpalwabbit.Workspace("--quiet").finish()' 2>/dev/null; }
VW_NOTE=""
if ! vw_works; then
    log="$(mktemp)"
    if "$PY" -m pip install --disable-pip-version-check vowpalwabbit >"$log" 2>&1 && vw_works; then
        echo "installed vowpalwabbit" >&2
    # No wheel for this Python/platform in the newest release: try older
    # releases' binary wheels (never a source build: it needs cmake + boost
    # and a long compile).
    elif "$PY" -m pip install --disable-pip-version-check --only-binary=:all: \
            "vowpalwabbit<9.11" >>"$log" 2>&1 && vw_works; then
        echo "installed an older vowpalwabbit wheel" >&2
    else
        reason="$(grep -E 'ERROR|error:' "$log" | head -n 2 | tr '\n' ' ' | sed 's/  */ /g')"
        [[ -n "$reason" ]] || reason="installed but the native library does not load"
        VW_NOTE="Vowpal Wabbit: not installable here (${reason% })"
        echo "$VW_NOTE" >&2
    fi
    rm -f "$log"
fi
export TOCPILE_VW_NOTE="$VW_NOTE"

exec "$PY" "$HERE/baselines.py" \
    --json "$HERE/results/baselines.json" --markdown "$HERE/results/baselines.md" "$@"
