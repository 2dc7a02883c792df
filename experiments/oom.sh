#!/usr/bin/env bash
# The TOC paper's out-of-memory experiment (Table 6) with a real limit: the
# same rows in every page format, logistic regression trained on each file by
# `tocpile train` inside a cgroup (v1) whose memory limit is about twice the
# TOC file (the page cache counts against it) and whose reads from the disk
# holding the files are throttled (blkio, 200 MB/s by default).
#
# The table of docs/archive/RESULTS-HISTORY.md "Out of memory, every format"
# (experiments/results/oom-final.md and .json), every format with encode's and
# train's defaults, as root (about 15 minutes on a 2-core machine):
#
#   cargo build --release -p tocpile-cli && bash experiments/oom.sh --name oom-final
#
#   sudo bash experiments/oom.sh [--tocpile BIN] [--data FILE.libsvm.gz] [--cols N]
#        [--rows N] [--epochs N] [--formats toc,csr,...] [--read-mbps X]
#        [--limit-factor X] [--allowance auto|BYTES] [--rounds N]
#        [--workdir DIR] [--out DIR] [--name NAME] [--keep-files] [...]
#
# Needs root, cgroup v1 memory and blkio controllers, python3 (standard
# library only). Other options go to oom.py (see --help). Writes
# OUT/NAME.json and OUT/NAME.md (default experiments/results/oom.json, oom.md).
# The cgroups live under this process's own memory cgroup and under the
# blkio root; they are removed on every exit path, and the script checks at
# the end that none is left.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
TOCPILE="$REPO/target/release/tocpile"
DATA="$REPO/../shared/data/flights3m.libsvm.gz"
COLS=""
WORKDIR="${TMPDIR:-/tmp}/tocpile-oom"
OUT="$HERE/results"
NAME=oom
DEVICE=""
KEEP=0
PASS=()

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --tocpile) TOCPILE="$2"; shift 2 ;;
        --data) DATA="$2"; shift 2 ;;
        --cols) COLS="$2"; shift 2 ;;
        --workdir) WORKDIR="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --name) NAME="$2"; shift 2 ;;
        --device) DEVICE="$2"; shift 2 ;;
        --keep-files) KEEP=1; shift ;;
        -h|--help) usage; echo; exec python3 "$HERE/oom.py" --help ;;
        *) PASS+=("$1"); shift ;;
    esac
done

die() { echo "oom.sh: $*" >&2; exit 1; }

[[ $EUID -eq 0 ]] || die "needs root (cgroups, /proc/sys/vm/drop_caches)"
[[ -x "$TOCPILE" ]] || die "no tocpile binary at $TOCPILE (cargo build --release -p tocpile-cli, or --tocpile BIN)"
[[ -r "$DATA" ]] || die "cannot read --data $DATA"
if [[ -z "$COLS" ]]; then
    cols_file="${DATA%.libsvm.gz}"; cols_file="${cols_file%.libsvm}.cols.txt"
    [[ -r "$cols_file" ]] || die "give --cols N (no $cols_file beside --data)"
    COLS="$(wc -l < "$cols_file")"
fi
MEM_ROOT=/sys/fs/cgroup/memory
BLK_ROOT=/sys/fs/cgroup/blkio
[[ -f "$MEM_ROOT/memory.limit_in_bytes" ]] || die "no cgroup v1 memory controller at $MEM_ROOT"
[[ -f "$BLK_ROOT/blkio.throttle.read_bps_device" ]] || die "no cgroup v1 blkio throttle at $BLK_ROOT"

mkdir -p "$WORKDIR" "$OUT"
WORKDIR="$(cd "$WORKDIR" && pwd)"
if [[ -z "$DEVICE" ]]; then
    # The whole disk under the work directory's file system: the throttle
    # takes a disk, not a partition.
    src="$(findmnt -no SOURCE --target "$WORKDIR")"
    [[ -b "$src" ]] || die "$WORKDIR is on $src, not a block device: give --device MAJ:MIN"
    disk="$(lsblk -no PKNAME "$src" | head -n1 | tr -d ' ')"
    [[ -n "$disk" ]] || disk="$(basename "$src")"
    DEVICE="$(cat "/sys/class/block/$disk/dev")"
fi

# Our memory cgroup, as this process sees it (v1 line "N:memory:/path").
own="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
MEM_PARENT="$MEM_ROOT${own%/}/tocpile-oom-$$"
BLK_PARENT="$BLK_ROOT/tocpile-oom-$$"
SHM="/dev/shm/tocpile-oom-$$"
PYPID=""

remove_tree() {  # the cgroup directory $1 and everything below it
    local root="$1" procs pid d _
    [[ -d "$root" ]] || return 0
    # Any task still inside was started by this script: end it by its id.
    while IFS= read -r procs; do
        while IFS= read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$procs"
    done < <(find "$root" -name cgroup.procs)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done \
            < <(find "$root" -depth -type d)
        [[ -d "$root" ]] || return 0
        sleep 0.2
    done
    echo "oom.sh: could not remove $root" >&2
    return 1
}

cleanup() {
    local rc=$? left=0
    trap - EXIT INT TERM HUP
    if [[ -n "$PYPID" ]] && kill -0 "$PYPID" 2>/dev/null; then
        kill -TERM "$PYPID" 2>/dev/null || true
        wait "$PYPID" 2>/dev/null || true
    fi
    remove_tree "$MEM_PARENT" || left=1
    remove_tree "$BLK_PARENT" || left=1
    rm -rf "$SHM"
    [[ $KEEP -eq 1 ]] || rm -f "$WORKDIR"/*.toc
    # Verify: no cgroup of ours, no throttle rule left on the device.
    if ls -d "$MEM_ROOT${own%/}"/tocpile-oom-$$ "$BLK_ROOT"/tocpile-oom-$$ 2>/dev/null; then left=1; fi
    if grep -q "^$DEVICE " "$BLK_ROOT/blkio.throttle.read_bps_device"; then
        echo "oom.sh: a read throttle is set on $DEVICE at the blkio root (not by this script)" >&2
    fi
    if [[ $left -eq 0 ]]; then
        echo "oom.sh: cleaned up: no cgroup left under $MEM_ROOT${own%/} or $BLK_ROOT from this run, no throttle rule left" >&2
    else
        rc=1
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir "$MEM_PARENT" "$BLK_PARENT"
echo "oom.sh: $TOCPILE on $DATA ($COLS columns), files in $WORKDIR (device $DEVICE)," \
     "cgroups $MEM_PARENT and $BLK_PARENT" >&2

python3 "$HERE/oom.py" --tocpile "$TOCPILE" --data "$DATA" --cols "$COLS" \
    --workdir "$WORKDIR" --device "$DEVICE" --bin-dir "$SHM" \
    --mem-parent "$MEM_PARENT" --blkio-parent "$BLK_PARENT" \
    --json "$OUT/$NAME.json" --markdown "$OUT/$NAME.md" "${PASS[@]}" &
PYPID=$!
wait "$PYPID"
