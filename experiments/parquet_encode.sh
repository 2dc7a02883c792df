#!/usr/bin/env bash
# Encode speed and peak memory of `tocpile encode` from Parquet, against the
# same rows as CSV and as gzip'd LIBSVM, measured in the same run.
#
#   bash experiments/parquet_encode.sh [ROUNDS]      (default 5)
#
# Builds the command line with the `parquet` feature (release), writes
# flights3m as Parquet (string columns for the one-hot groups) and CSV with
# cli/examples/parquet_from_libsvm.rs, plus a Parquet copy of its first
# 300,000 rows (memory must not grow with the file), then runs each encode
# ROUNDS times, interleaved, under /usr/bin/time -v. Prints the median wall
# time, rows/s and peak RSS of each input as a Markdown table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS="${1:-5}"
DATA=../shared/data
WORK="${TMPDIR:-/tmp}/tocpile-parquet-encode"
mkdir -p "$WORK"

cargo build --release -p tocpile-cli --features parquet --bin tocpile --example parquet_from_libsvm
BIN=target/release/tocpile
GEN=target/release/examples/parquet_from_libsvm

"$GEN" "$DATA/flights3m.libsvm.gz" "$DATA/flights3m.cols.txt" "$WORK/flights3m.parquet" "$WORK/flights3m.csv"
{ zcat "$DATA/flights3m.libsvm.gz" || true; } | head -n 300000 | gzip -1 > "$WORK/flights300k.libsvm.gz"
"$GEN" "$WORK/flights300k.libsvm.gz" "$DATA/flights3m.cols.txt" "$WORK/flights300k.parquet"

# name|rows|arguments
INPUTS=(
    "Parquet|3000000|$WORK/flights3m.parquet"
    "Parquet, first 300k rows|300000|$WORK/flights300k.parquet"
    "CSV|3000000|$WORK/flights3m.csv"
    "LIBSVM (gzip)|3000000|$DATA/flights3m.libsvm.gz --cols 496"
)

results="$WORK/results.txt"
: > "$results"
for round in $(seq "$ROUNDS"); do
    for entry in "${INPUTS[@]}"; do
        IFS='|' read -r name rows args <<< "$entry"
        # shellcheck disable=SC2086
        /usr/bin/time -v "$BIN" encode $args -o "$WORK/out.toc" > /dev/null 2> "$WORK/time.txt"
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$WORK/time.txt" |
            awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.txt")
        echo "$name|$rows|$wall|$rss" >> "$results"
        echo "round $round: $name: ${wall}s, ${rss} KiB" >&2
    done
done

echo
echo "| input | rows | median seconds | rows/s | median peak RSS (MB) |"
echo "|---|---:|---:|---:|---:|"
for entry in "${INPUTS[@]}"; do
    IFS='|' read -r name rows _ <<< "$entry"
    grep -F "$name|$rows|" "$results" | python3 -c '
import statistics, sys
rows = [line.rstrip("\n").split("|") for line in sys.stdin]
name, n = rows[0][0], int(rows[0][1])
wall = statistics.median(float(r[2]) for r in rows)
rss = statistics.median(int(r[3]) for r in rows) * 1024 / 1e6
print(f"| {name} | {n:,} | {wall:.2f} | {n / wall / 1e6:.2f}M | {rss:.0f} |")
'
done
