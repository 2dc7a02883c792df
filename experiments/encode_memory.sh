#!/usr/bin/env bash
# Peak memory of `tocpile encode` on wide rows: 60,000 rows x 784 columns
# (fashion-MNIST's shape), built from ../shared/data/mnist5k by
# repetition (12 copies), encoded from the file, with --cols, and from a
# pipe. Usage: bash experiments/encode_memory.sh [TOCPILE_BINARY ...]
# (default: the release build). Needs GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
    cargo build --release -p tocpile-cli >/dev/null
    bins=(target/release/tocpile)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for _ in $(seq 12); do zcat ../shared/data/mnist5k.libsvm.gz; done >"$work/wide.libsvm"
echo "input: $(wc -l <"$work/wide.libsvm") rows, $(du -m "$work/wide.libsvm" | cut -f1) MB of text"
echo "| binary | input | seconds | peak RSS (MB) |"
echo "|---|---|---:|---:|"
for bin in "${bins[@]}"; do
    for how in file cols pipe; do
        case $how in
            file) cmd=("$bin" encode "$work/wide.libsvm" -o "$work/out.toc") ;;
            cols) cmd=("$bin" encode "$work/wide.libsvm" --cols 784 -o "$work/out.toc") ;;
            pipe) cmd=("$bin" encode - --cols 784 -o "$work/out.toc") ;;
        esac
        # A binary without stream input fails on `-`: reported, not fatal.
        if out=$(/usr/bin/time -f "%e %M" "${cmd[@]}" <"$work/wide.libsvm" 2>&1 >/dev/null); then
            read -r secs kb <<<"$(tail -1 <<<"$out")"
            echo "| $bin | $how | $secs | $((kb / 1024)) |"
        else
            echo "| $bin | $how | failed: $(head -1 <<<"$out") | |"
        fi
    done
done
