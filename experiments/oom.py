#!/usr/bin/env python3
"""The TOC paper's out-of-memory experiment (its Table 6) with a real limit.

The same rows are written in every page format with `tocpile encode`, then
`tocpile train` runs logistic regression on each file inside a cgroup (v1)
whose memory limit is about twice the TOC file and whose read bandwidth on
the device holding the files is throttled (blkio). The page cache is dropped
before each run, so every page of the file is charged to the run's cgroup
when the run first touches it: a file larger than the limit is re-read from
the throttled device every epoch, one that fits is read once.

Run it through experiments/oom.sh, which creates the parent cgroups, removes
them on every exit path and checks that nothing is left behind. Standard
library only. Needs root (cgroups, /proc/sys/vm/drop_caches).
"""

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

FORMATS = {  # --formats name -> (tocpile --page-format, label in the tables)
    "toc": ("toc", "TOC_FULL"), "csr": ("csr", "CSR"), "cvi": ("cvi", "CVI"),
    "dvi": ("dvi", "DVI"), "den": ("den", "DEN"), "gzip": ("gzip", "gzip"),
    "snappy": ("snappy", "snappy"), "lz4": ("lz4", "lz4"),
}
MIB = float(1 << 20)
BUDGET = re.compile(r"\bmemory (\d+) MiB")
EPOCH_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([-\d.einfa]+)\s*\|\s*([-\d.einfa]+)\s*\|"
                       r"\s*([\d.]+)\s*\|\s*([\d.]+)%\s*\|")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tocpile", required=True, help="the tocpile binary")
    p.add_argument("--data", required=True, help="LIBSVM input (plain or .gz)")
    p.add_argument("--cols", type=int, required=True, help="column count of --data")
    p.add_argument("--rows", type=int, default=0,
                   help="rows taken from the start of --data (default 0: all)")
    p.add_argument("--formats", default="toc,csr,cvi,den,gzip,snappy",
                   help="page formats, comma-separated (TOC_FULL always runs first): "
                        + ", ".join(FORMATS) + " (default toc,csr,cvi,den,gzip,snappy)")
    p.add_argument("--epochs", type=int, default=3, help="epochs per run (default 3)")
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat every format's runs this many times, interleaved")
    p.add_argument("--limit-factor", type=float, default=2.0,
                   help="memory limit as a multiple of the TOC file (default 2)")
    p.add_argument("--allowance", default="0",
                   help="bytes added to the limit for the training process's own memory, or "
                        "'auto': its peak on the TOC file in a run without a limit (default 0)")
    p.add_argument("--limit-bytes", type=int, default=None,
                   help="memory limit in bytes (overrides --limit-factor)")
    p.add_argument("--read-mbps", type=float, default=200.0,
                   help="read throttle in MB/s (10^6 bytes; default 200)")
    p.add_argument("--device", required=True, help="MAJ:MIN of the disk holding --workdir")
    p.add_argument("--mem-parent", required=True, help="memory cgroup directory for the runs")
    p.add_argument("--blkio-parent", required=True, help="blkio cgroup directory for the runs")
    p.add_argument("--workdir", required=True, help="where the files are written")
    p.add_argument("--bin-dir", default=None,
                   help="a tmpfs directory to run the binary from (default: /dev/shm/...)")
    p.add_argument("--seed", type=int, default=42, help="seed of the one-off row shuffle")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the runs without limit and throttle")
    # The paper's setting (TOC paper 5.3, Table 6): plain mini-batch SGD
    # (not train's default Adam) over 250-row mini-batches in file order,
    # on rows scaled once up front (so no scaling at training time). The
    # resident budget is train's default, which reads the cgroup's limit
    # (half of what is left once the loader's own memory is set aside).
    p.add_argument("--train-args", default="--model lr --shuffle none --mode page "
                   "--optimizer sgd --lr 0.1 --decay 0.95 --batch-size 250 --scale none "
                   "--seed 0",
                   help="options given to every `tocpile train` run besides --epochs; "
                        "write it as --train-args='...' (default: %(default)s)")
    # Encode's defaults (page and block size): the layout a user gets.
    p.add_argument("--encode-args", default="",
                   help="extra options for every `tocpile encode`, as "
                        "--encode-args='--page-rows 250' (default: none, encode's defaults)")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--markdown", default=None, help="also write the tables here")
    return p.parse_args(argv)


def log(msg):
    print(f"[oom] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ data

def open_text(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path, "r")


def prepare(args, out_path):
    """The first --rows rows, max-abs scaled (fitted on those rows) and
    shuffled once with --seed, as LIBSVM text. Reused when the parameters
    match a previous run's."""
    meta_path = out_path + ".json"
    src = os.path.realpath(args.data)
    meta = {"data": src, "size": os.path.getsize(src), "mtime": os.path.getmtime(src),
            "rows": args.rows, "seed": args.seed, "cols": args.cols}
    if os.path.exists(out_path) and os.path.exists(meta_path):
        with open(meta_path) as f:
            if json.load(f) == meta:
                log(f"reusing {out_path}")
                return
    t0 = time.perf_counter()
    limit = args.rows if args.rows > 0 else None
    maxabs = [0.0] * (args.cols + 1)
    n = 0
    with open_text(args.data) as f:
        for line in f:
            if limit is not None and n >= limit:
                break
            for item in line.split()[1:]:
                j, v = item.split(":")
                a = abs(float(v))
                j = int(j)
                if a > maxabs[j]:
                    maxabs[j] = a
            n += 1
    lines = []
    with open_text(args.data) as f:
        for line in f:
            if len(lines) >= n:
                break
            parts = line.split()
            out = [parts[0]]
            for item in parts[1:]:
                j, v = item.split(":")
                x = float(v) / maxabs[int(j)]
                s = repr(x)
                out.append(j + ":" + (s[:-2] if s.endswith(".0") else s))
            lines.append(" ".join(out))
    random.Random(args.seed).shuffle(lines)
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
        f.write("\n")
    os.replace(tmp, out_path)
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    log(f"prepared {n} rows (max-abs scaled, shuffled with seed {args.seed}) in "
        f"{time.perf_counter() - t0:.1f}s")


def encode(args, libsvm, fmt, out):
    cmd = [args.tocpile, "encode", libsvm, "--cols", str(args.cols), "--page-format",
           FORMATS[fmt][0], "-o", out, "--json"] + args.encode_args.split()
    # A file encoded by an earlier run (of oom_sweep.sh) from the same rows
    # with the same options is reused: only the limit differs.
    meta = out + ".json"
    if (os.path.exists(out) and os.path.exists(meta)
            and os.path.getmtime(meta) > os.path.getmtime(libsvm)):
        with open(meta) as f:
            info = json.load(f)
        if info.get("command_args") == cmd[2:]:
            log(f"reusing {out}")
            return info
    t0 = time.perf_counter()
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    info = json.loads(res.stdout)
    info["encode_seconds"] = time.perf_counter() - t0
    info["command"] = " ".join(cmd)
    info["command_args"] = cmd[2:]
    with open(meta, "w") as f:
        json.dump(info, f)
    return info


# --------------------------------------------------------------- cgroups

def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read(path):
    with open(path) as f:
        return f.read()


def drop_caches():
    os.sync()
    write("/proc/sys/vm/drop_caches", 3)


class RunCgroups:
    """A fresh memory and blkio cgroup for one run (fresh counters)."""

    def __init__(self, args, name, limit, throttle_bps):
        self.mem = os.path.join(args.mem_parent, name)
        self.blk = os.path.join(args.blkio_parent, name)
        self.device = args.device
        os.mkdir(self.mem)
        os.mkdir(self.blk)
        if limit is not None:
            write(os.path.join(self.mem, "memory.limit_in_bytes"), limit)
        if throttle_bps is not None:
            write(os.path.join(self.blk, "blkio.throttle.read_bps_device"),
                  f"{self.device} {int(throttle_bps)}")

    def enter(self):
        """For preexec_fn: moves the calling (child) process in."""
        pid = str(os.getpid())
        write(os.path.join(self.mem, "cgroup.procs"), pid)
        write(os.path.join(self.blk, "cgroup.procs"), pid)

    def read_bytes(self):
        for line in read(os.path.join(self.blk, "blkio.throttle.io_service_bytes")).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == self.device and parts[1] == "Read":
                return int(parts[2])
        return 0

    def mem_value(self, name):
        return int(read(os.path.join(self.mem, name)))

    def mem_stat(self):
        out = {}
        for line in read(os.path.join(self.mem, "memory.stat")).splitlines():
            k, v = line.split()
            out[k] = int(v)
        return out

    def oom_kills(self):
        for line in read(os.path.join(self.mem, "memory.oom_control")).splitlines():
            k, v = line.split()
            if k == "oom_kill":
                return int(v)
        return 0

    def sample(self):
        stat = self.mem_stat()
        return {"read_bytes": self.read_bytes(),
                "usage_bytes": self.mem_value("memory.usage_in_bytes"),
                "cache_bytes": stat.get("cache", 0), "rss_bytes": stat.get("rss", 0)}

    def remove(self):
        for d in (self.mem, self.blk):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)  # the last task is still exiting
            else:
                log(f"could not remove {d}")


def check_throttle(args, path, limit_bps):
    """dd-reads the first 400 MiB of `path` after dropping caches, inside a
    throttled blkio cgroup and outside it: the throttle must show."""
    count = max(1, min(400, os.path.getsize(path) >> 20))
    out = {"file": path, "mib": count}
    for label, bps in (("throttled", limit_bps), ("unthrottled", None)):
        cg = RunCgroups(args, f"dd-{label}", None, bps)
        try:
            drop_caches()
            t0 = time.perf_counter()
            subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", f"count={count}"],
                           check=True, capture_output=True, preexec_fn=cg.enter)
            secs = time.perf_counter() - t0
            out[label + "_mb_per_s"] = count * MIB / secs / 1e6
            out[label + "_read_bytes"] = cg.read_bytes()
        finally:
            cg.remove()
    log(f"dd of {count} MiB after dropping caches: {out['throttled_mb_per_s']:.0f} MB/s "
        f"throttled, {out['unthrottled_mb_per_s']:.0f} MB/s not")
    return out


# ----------------------------------------------------------------- runs

class Sampler(threading.Thread):
    """Polls the run's memory cgroup while it runs: the peak of its own
    memory (usage minus page cache: anonymous memory plus kernel memory),
    which memory.max_usage_in_bytes does not separate from the cache."""

    def __init__(self, cg):
        super().__init__(daemon=True)
        self.cg, self.stop, self.peak_own, self.peak_rss = cg, threading.Event(), 0, 0

    def run(self):
        while not self.stop.is_set():
            try:
                s = self.cg.sample()
            except OSError:
                break
            self.peak_own = max(self.peak_own, s["usage_bytes"] - s["cache_bytes"])
            self.peak_rss = max(self.peak_rss, s["rss_bytes"])
            self.stop.wait(0.02)


def train_once(args, binary, path, name, limit, throttle_bps):
    """One `tocpile train` run in fresh cgroups, after dropping caches.
    Samples the cgroup's counters as each epoch's table row is printed."""
    cmd = [binary, "train", path, "--epochs", str(args.epochs)] + args.train_args.split()
    cg = RunCgroups(args, name, limit, throttle_bps)
    try:
        drop_caches()
        # Re-cache the shared libraries outside the cgroup (the binary runs
        # from tmpfs), so that the run's reads and charges are the file's.
        subprocess.run([binary, "--version"], check=True, capture_output=True)
        samples = [cg.sample()]
        epochs = []
        sampler = Sampler(cg)
        with tempfile.TemporaryFile(mode="w+") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                    preexec_fn=cg.enter)
            sampler.start()
            budget_mib = None
            try:
                for line in proc.stdout:
                    if budget_mib is None and line.startswith("training "):
                        # The header's resident budget (train's default
                        # reads the cgroup's limit).
                        b = BUDGET.search(line)
                        budget_mib = int(b.group(1)) if b else None
                    m = EPOCH_ROW.match(line)
                    if m:
                        samples.append(cg.sample())
                        epochs.append({"epoch": int(m.group(1)), "loss": float(m.group(2)),
                                       "accuracy": float(m.group(3)),
                                       "seconds": float(m.group(4)),
                                       "wait_share": float(m.group(5)) / 100.0})
            except BaseException:
                proc.kill()  # interrupted: end the run, so its cgroup can go
                proc.wait()
                sampler.stop.set()
                raise
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            sampler.stop.set()
            sampler.join()
            err.seek(0)
            stderr = err.read()
        for k, e in enumerate(epochs):
            e["read_bytes"] = samples[k + 1]["read_bytes"] - samples[k]["read_bytes"]
            e["cache_bytes_at_end"] = samples[k + 1]["cache_bytes"]
            e["rss_bytes_at_end"] = samples[k + 1]["rss_bytes"]
        return {
            "command": " ".join(cmd), "exit_code": proc.returncode,
            "stderr": stderr.strip()[-2000:],
            "limit_bytes": limit, "read_bps": throttle_bps,
            "wall_seconds": wall, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "epochs": epochs, "read_bytes": cg.read_bytes(), "memory_budget_mib": budget_mib,
            "max_usage_bytes": cg.mem_value("memory.max_usage_in_bytes"),
            "peak_own_bytes": sampler.peak_own, "peak_anon_bytes": sampler.peak_rss,
            "failcnt": cg.mem_value("memory.failcnt"), "oom_kills": cg.oom_kills(),
        }
    finally:
        cg.remove()


def summarize(runs, file_bytes, epochs):
    """Medians over the rounds of one format's runs of one kind."""
    def med(f):
        return median_of([f(r) for r in runs])

    def later(r):
        return r["epochs"][1:]

    def complete(r):
        return len(r["epochs"]) == epochs and r["exit_code"] == 0

    return {
        "complete": all(complete(r) for r in runs),
        "completed_epochs": min(len(r["epochs"]) for r in runs),
        "oom_killed": any(r["oom_kills"] > 0 for r in runs),
        "exit_code": max((r["exit_code"] for r in runs), key=abs),
        "epoch0_seconds": med(lambda r: r["epochs"][0]["seconds"] if r["epochs"] else None),
        "later_median_seconds": med(lambda r: median_of([e["seconds"] for e in later(r)])),
        "total_seconds": med(lambda r: sum(e["seconds"] for e in r["epochs"])
                             if complete(r) else None),
        "epoch0_read_bytes": med(lambda r: r["epochs"][0]["read_bytes"] if r["epochs"] else None),
        "later_mean_read_bytes": med(lambda r: mean_of([e["read_bytes"] for e in later(r)])),
        "wait_share_median": med(lambda r: median_of([e["wait_share"] for e in r["epochs"]])),
        "cpu_share": med(lambda r: r["cpu_seconds"] / r["wall_seconds"]),
        "wall_seconds": med(lambda r: r["wall_seconds"]),
        "max_usage_bytes": med(lambda r: r["max_usage_bytes"]),
        "peak_own_bytes": med(lambda r: r["peak_own_bytes"]),
        "failcnt": med(lambda r: r["failcnt"]),
        "memory_budget_mib": med(lambda r: r.get("memory_budget_mib")),
        "final_loss": med(lambda r: r["epochs"][-1]["loss"] if r["epochs"] else None),
        "final_accuracy": med(lambda r: r["epochs"][-1]["accuracy"] if r["epochs"] else None),
        "file_bytes": file_bytes,
    }


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def mean_of(values):
    return statistics.mean(values) if values else None


# -------------------------------------------------------------- tables

def fmt(x, spec, none="-"):
    return none if x is None else format(x, spec)


def mib(x):
    return None if x is None else x / MIB


def pct(x):
    return None if x is None else 100.0 * x


def ratio(a, b):
    return a / b if a is not None and b else None


def tables(doc):
    out = []
    toc = doc["formats"][0]["limited"]
    out.append(f"Limited: memory limit {mib(doc['limit_bytes']):.1f} MiB ({doc['limit_note']}), "
               f"reads throttled to {doc['read_mbps']:.0f} MB/s; {doc['rows']:,} rows, "
               f"{doc['epochs']} epochs, median of {doc['rounds']} round(s). \"x TOC\" is the "
               "format's time over TOC_FULL's. Process wall s is the whole run of train, start-up "
               "(opening the file, checks) included; the epoch columns are train's own.\n")
    out.append("| format | file MiB | epoch 0 s | later epochs s | total s | x TOC (total) "
               "| x TOC (later) | MiB read, start-up and epoch 0 | MiB read per later epoch (of the file) "
               "| peak cgroup MiB | own peak MiB | resident budget MiB | CPU share | wait share | OOM kill "
               "| final loss | process wall s |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for f in doc["formats"]:
        s = f["limited"]
        if s["oom_killed"]:
            status = f"yes, after {s['completed_epochs']} epochs"
        elif s["exit_code"]:
            status = f"no (exit {s['exit_code']})"
        else:
            status = "no"
        later_read = s["later_mean_read_bytes"]
        share = ratio(later_read, f["file_bytes"])
        out.append(
            f"| {f['label']} | {mib(f['file_bytes']):.1f} | {fmt(s['epoch0_seconds'], '.3f')} "
            f"| {fmt(s['later_median_seconds'], '.3f')} | {fmt(s['total_seconds'], '.2f')} "
            f"| {fmt(ratio(s['total_seconds'], toc['total_seconds']), '.2f')} "
            f"| {fmt(ratio(s['later_median_seconds'], toc['later_median_seconds']), '.2f')} "
            f"| {fmt(mib(s['epoch0_read_bytes']), '.1f')} "
            f"| {fmt(mib(later_read), '.1f')} ({fmt(pct(share), '.0f')}%) "
            f"| {mib(s['max_usage_bytes']):.1f} | {mib(s['peak_own_bytes']):.1f} "
            f"| {fmt(s['memory_budget_mib'], '.0f')} "
            f"| {fmt(pct(s['cpu_share']), '.0f')}% | {fmt(pct(s['wait_share_median']), '.0f')}% "
            f"| {status} | {fmt(s['final_loss'], '.4f')} | {fmt(s.get('wall_seconds'), '.1f')} |")
    if any("reference" in f for f in doc["formats"]):
        r0 = doc["formats"][0].get("reference", {}).get("later_median_seconds")
        out.append("")
        out.append("Reference: the same runs without limit or throttle (epoch 0 reads the file "
                   "from the unthrottled disk, later epochs from the page cache).\n")
        out.append("| format | later epochs s | x TOC | limited / reference (later epochs) "
                   "| peak cgroup MiB | own peak MiB | CPU share | wait share |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for f in doc["formats"]:
            r, s = f.get("reference"), f["limited"]
            if r is None:
                out.append(f"| {f['label']} | {f.get('reference_skipped', 'not run')} "
                           "| - | - | - | - | - | - |")
                continue
            rl = r["later_median_seconds"]
            out.append(
                f"| {f['label']} | {fmt(rl, '.3f')} | {fmt(ratio(rl, r0), '.2f')} "
                f"| {fmt(ratio(s['later_median_seconds'], rl), '.2f')} "
                f"| {mib(r['max_usage_bytes']):.1f} | {mib(r['peak_own_bytes']):.1f} "
                f"| {fmt(pct(r['cpu_share']), '.0f')}% | {fmt(pct(r['wait_share_median']), '.0f')}% |")
    t = doc["throttle_check"]
    out.append("")
    out.append(f"Throttle check: dd of {t['mib']} MiB of a data file after dropping caches: "
               f"{t['throttled_mb_per_s']:.0f} MB/s in a throttled cgroup, "
               f"{t['unthrottled_mb_per_s']:.0f} MB/s outside it.")
    return "\n".join(out)


# ---------------------------------------------------------------- main

def main(argv):
    # oom.sh ends this process with SIGTERM on Ctrl-C: unwind, so that the
    # run's cgroups are removed by the finally clauses.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(argv)
    names = [n.strip().lower() for n in args.formats.split(",") if n.strip()]
    for n in names:
        if n not in FORMATS:
            sys.exit(f"oom.py: unknown format {n!r} (one of {', '.join(FORMATS)})")
    names = ["toc"] + [n for n in names if n != "toc"]  # TOC first: the others are ratios to it
    os.makedirs(args.workdir, exist_ok=True)
    # The binary runs from a copy on tmpfs: never read from the throttled
    # disk, never dropped with the page cache, never charged to a run.
    bin_dir = args.bin_dir or f"/dev/shm/tocpile-oom-{os.getpid()}"
    os.makedirs(bin_dir, exist_ok=True)
    binary = os.path.join(bin_dir, "tocpile")
    shutil.copy2(args.tocpile, binary)
    try:
        return run_all(args, names, binary)
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)


def reference_skip(file_bytes):
    """Why a reference run (page cache unlimited) is not made, or None: a
    file over a quarter of the free memory would push others' caches out."""
    with open("/proc/meminfo") as f:
        avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
    if file_bytes > avail // 4:
        return f"skipped: the file is over a quarter of the free memory ({avail / MIB / 1024:.1f} GiB)"
    return None


def run_all(args, names, binary):
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    libsvm = os.path.join(args.workdir, "rows.libsvm")
    prepare(args, libsvm)
    files = {}
    for n in names:
        info = encode(args, libsvm, n, os.path.join(args.workdir, f"{n}.toc"))
        files[n] = info
        log(f"{FORMATS[n][1]}: {mib(info['file_bytes']):.1f} MiB, {info['blocks']} blocks "
            f"({info['encode_seconds']:.1f}s to encode)")
    toc_bytes = files["toc"]["file_bytes"]
    bps = args.read_mbps * 1e6
    biggest = max(files.values(), key=lambda i: i["file_bytes"])["path"]
    throttle = check_throttle(args, biggest, bps)

    runs = {n: {"limited": [], "reference": []} for n in names}
    skipped = {n: reference_skip(files[n]["file_bytes"]) for n in names}
    if args.no_reference:
        skipped = {n: "not run (--no-reference)" for n in names}

    def reference(n, r):
        log(f"round {r + 1}: {FORMATS[n][1]}, no limit")
        runs[n]["reference"].append(
            train_once(args, binary, files[n]["path"], f"{n}-reference-{r}", None, None))

    allowance = 0
    if args.allowance == "auto":
        # The training process's own memory on the TOC file, measured
        # without a limit: the limit then leaves limit-factor x the TOC file
        # for the page cache.
        reference("toc", 0)
        allowance = runs["toc"]["reference"][0]["peak_own_bytes"]
    else:
        allowance = int(args.allowance)
    if args.limit_bytes:
        limit, note = args.limit_bytes, "given"
    else:
        limit = int(args.limit_factor * toc_bytes) + allowance
        note = f"{args.limit_factor:g} x the TOC file"
        if allowance:
            note += (f" + {mib(allowance):.1f} MiB for the training process itself "
                     f"({'its peak on the TOC file without a limit' if args.allowance == 'auto' else 'given'})")
    log(f"memory limit {mib(limit):.1f} MiB ({note})")

    for r in range(args.rounds):
        for n in names:
            log(f"round {r + 1}: {FORMATS[n][1]}, limited")
            res = train_once(args, binary, files[n]["path"], f"{n}-limited-{r}", limit, bps)
            runs[n]["limited"].append(res)
            if res["exit_code"] != 0:
                log(f"  exit {res['exit_code']}, OOM kills {res['oom_kills']}: "
                    f"{res['stderr'][-300:]}")
            if skipped[n] is None and len(runs[n]["reference"]) <= r:
                reference(n, r)

    formats = []
    for n in names:
        fb = files[n]["file_bytes"]
        entry = {"format": n, "label": FORMATS[n][1], "file_bytes": fb, "encode": files[n],
                 "limited": summarize(runs[n]["limited"], fb, args.epochs), "runs": runs[n]}
        if runs[n]["reference"]:
            entry["reference"] = summarize(runs[n]["reference"], fb, args.epochs)
        else:
            entry["reference_skipped"] = skipped[n]
        formats.append(entry)
    doc = {
        "tocpile": version, "data": os.path.abspath(args.data), "rows": files["toc"]["rows"],
        "cols": args.cols, "epochs": args.epochs, "rounds": args.rounds,
        "shuffle_seed": args.seed, "train_args": args.train_args,
        "encode_args": args.encode_args, "limit_bytes": limit, "limit_note": note,
        "allowance_bytes": allowance, "read_mbps": args.read_mbps, "device": args.device,
        "throttle_check": throttle, "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.uname().machine}, {os.cpu_count()} cores, kernel {os.uname().release}",
        "formats": formats,
    }
    doc["seconds"] = time.perf_counter() - t_start
    doc["load_average"] = {"start": load_start, "end": os.getloadavg()}
    text = tables(doc)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# Out-of-memory experiment, {doc['date']}\n\n{version}; "
                    f"{os.path.basename(args.data)}, {doc['rows']:,} rows x {args.cols} columns "
                    f"(max-abs scaled, shuffled once with seed {args.seed}); "
                    f"`tocpile train --epochs {args.epochs} {args.train_args}`; "
                    f"{doc['machine']}; the whole run took {doc['seconds']:.0f} s; load "
                    f"average {doc['load_average']['start'][0]:.1f} at the start, "
                    f"{doc['load_average']['end'][0]:.1f} at the end.\n\n"
                    + text + "\n")
    log(f"done in {doc['seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
