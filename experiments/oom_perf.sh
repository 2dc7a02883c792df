#!/usr/bin/env bash
# A profile of TOC's epoch in the out-of-memory setting of oom.sh: flights3m
# rows (oom.sh's prepared copy, or prepared here the same way by oom.py's
# function) encoded with encode's defaults, `tocpile train` with oom.py's
# default options inside a memory cgroup of 2 x the TOC file (under this
# process's own) and a blkio read throttle (200 MB/s), caches dropped
# first; `perf record -g` runs outside the cgroups, so its buffers and
# output are not charged to the run.
#
#   bash experiments/oom_perf.sh [--epochs N] [--tocpile BIN] [--device MAJ:MIN]
#
# Root and perf needed. Writes $TMPDIR/tocpile-oom-perf/perf.data and prints
# the top symbols by thread. The cgroups are removed on every exit path.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
TOCPILE="$REPO/target/release/tocpile"
EPOCHS=5
DEVICE=""
DATA="$REPO/../shared/data/flights3m.libsvm.gz"
WORK="${TMPDIR:-/tmp}/tocpile-oom-perf"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --epochs) EPOCHS="$2"; shift 2 ;;
        --tocpile) TOCPILE="$2"; shift 2 ;;
        --device) DEVICE="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "oom_perf.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
die() { echo "oom_perf.sh: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || die "needs root (cgroups, drop_caches)"
command -v perf >/dev/null || die "needs perf"
[[ -x "$TOCPILE" ]] || die "no tocpile binary at $TOCPILE (cargo build --release -p tocpile-cli)"
mkdir -p "$WORK"
if [[ -z "$DEVICE" ]]; then
    src="$(findmnt -no SOURCE --target "$WORK")"
    [[ -b "$src" ]] || die "$WORK is on $src, not a block device: give --device MAJ:MIN"
    disk="$(lsblk -no PKNAME "$src" | head -n1 | tr -d ' ')"
    [[ -n "$disk" ]] || disk="$(basename "$src")"
    DEVICE="$(cat "/sys/class/block/$disk/dev")"
fi

ROWS="$WORK/rows.libsvm"
if [[ ! -s "$ROWS" ]]; then
    python3 - "$HERE" "$DATA" "$ROWS" <<'EOF'
import sys, types
sys.path.insert(0, sys.argv[1])
import oom
oom.prepare(types.SimpleNamespace(data=sys.argv[2], rows=0, seed=42, cols=496), sys.argv[3])
EOF
fi
"$TOCPILE" encode "$ROWS" --cols 496 -o "$WORK/toc.toc" >/dev/null
LIMIT=$((2 * $(stat -c %s "$WORK/toc.toc")))

own="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
MEM="/sys/fs/cgroup/memory${own%/}/tocpile-oom-perf-$$"
BLK="/sys/fs/cgroup/blkio/tocpile-oom-perf-$$"
BIN="/dev/shm/tocpile-oom-perf-$$"
cleanup() {
    local d p
    for d in "$MEM" "$BLK"; do
        [[ -d "$d" ]] || continue
        # Anything still inside was started here: end it by its id.
        while read -r p; do kill -KILL "$p" 2>/dev/null || true; done < "$d/cgroup.procs"
        for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$d" 2>/dev/null && break; sleep 0.2; done
        [[ -d "$d" ]] && echo "oom_perf.sh: could not remove $d" >&2
    done
    rm -f "$BIN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$MEM" "$BLK"
echo "$LIMIT" > "$MEM/memory.limit_in_bytes"
echo "$DEVICE 200000000" > "$BLK/blkio.throttle.read_bps_device"
cp "$TOCPILE" "$BIN"  # run from tmpfs: never read from the throttled disk
sync; echo 3 > /proc/sys/vm/drop_caches
"$BIN" --version >/dev/null
perf record -g -o "$WORK/perf.data" -- bash -c "echo \$\$ > $MEM/cgroup.procs; echo \$\$ > $BLK/cgroup.procs; \
    exec $BIN train $WORK/toc.toc --epochs $EPOCHS --model lr --shuffle none --mode page \
    --optimizer sgd --lr 0.1 --decay 0.95 --batch-size 250 --scale none --seed 0"
echo "limit $((LIMIT >> 20)) MiB, peak $(( $(cat "$MEM/memory.max_usage_in_bytes") >> 20 )) MiB, $(grep oom_kill "$MEM/memory.oom_control" | tail -n1)"
perf report -i "$WORK/perf.data" --no-children --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]'
perf report -i "$WORK/perf.data" --no-children --sort comm,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -n 25
