//! The default resident budget ([`LoaderOptions::memory`](super::LoaderOptions::memory)):
//! half the memory actually available to the process, capped at
//! [`DEFAULT_MEMORY`].
//!
//! Resident pages are held for the whole run and cost 10 to 13 times the
//! file's bytes for TOC (decode trees), so a fixed 1 GiB budget gets a
//! process in a small container or cgroup killed by the kernel (flights3m
//! in a 108 MiB cgroup, the TOC paper's out-of-memory setting: Table 6,
//! section 5.3). The memory available is the smaller of
//!
//! - `MemAvailable` in `/proc/meminfo` (free memory plus the reclaimable
//!   page cache, the kernel's own estimate), and
//! - for the process's memory cgroup and each of its ancestors with a
//!   limit, the limit minus what the cgroup holds that cannot be
//!   reclaimed: usage minus its inactive file cache (cgroup v1:
//!   `memory.limit_in_bytes`, `memory.usage_in_bytes`,
//!   `total_inactive_file` of `memory.stat`; v2: `memory.max`,
//!   `memory.current`, `inactive_file`). The cache is left out because a
//!   long-running container's usage is mostly cache, which the kernel
//!   drops before it kills anything (container runtimes count the
//!   "working set" the same way).
//!
//! **Why half.** Resident pages are a speed-up, never a need: a block over
//! the budget is streamed from the file. The other half is left for what
//! the run needs besides (the streamed blocks and read-ahead groups, the
//! exact-mode buffer, the model, allocator slack) and for the page cache of
//! the file itself, which is what makes streaming fast once the trees no
//! longer fit; taking all of it would trade a validation saved for a read
//! of the throttled disk, and leave nothing to the other processes of a
//! container. When nothing can be read (not Linux, no `/proc`), the budget
//! is [`DEFAULT_MEMORY`].

use std::path::{Path, PathBuf};

use super::options::{Buffer, LoaderOptions, Strategy, DEFAULT_MEMORY};
use crate::dataset::{Dataset, Source};

/// The default budget is the memory available divided by this (a half:
/// see the module docs).
pub const AVAILABLE_SHARE_DIVISOR: u64 = 2;

/// Limits at or above this are "no limit" (cgroup v1 writes
/// 9223372036854771712, the largest page-aligned `i64`, for none).
const UNLIMITED: u64 = 1 << 62;

/// Heap bytes per encoded byte assumed when no block can be sampled
/// (above the 10 to 13 of TOC decode trees, the largest measured).
const FALLBACK_EXPANSION: f64 = 16.0;

/// What bounded the memory available to the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemorySource {
    /// `MemAvailable` in `/proc/meminfo`.
    MemAvailable,
    /// The limit of a memory cgroup (the directory holding its files).
    Cgroup(PathBuf),
}

/// The default resident budget and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The budget in bytes: half of (`available` - `working_set`), at
    /// most [`DEFAULT_MEMORY`].
    pub bytes: usize,
    /// The memory available to the process in bytes, if it could be read.
    pub available: Option<u64>,
    /// What gave `available` (the smaller bound when several were read).
    pub source: Option<MemorySource>,
    /// Bytes set aside for the loader's own working set before halving
    /// ([`memory_budget_for`]; 0 for [`memory_budget`]).
    pub working_set: u64,
}

impl MemoryBudget {
    /// The budget for `available` bytes from `source` (`None`: unknown,
    /// the budget is [`DEFAULT_MEMORY`]).
    pub fn from_available(available: Option<(u64, MemorySource)>) -> MemoryBudget {
        Self::after_working_set(available, 0)
    }

    /// The budget for `available` bytes from `source` once `working_set`
    /// bytes are set aside: half of what is left, at most
    /// [`DEFAULT_MEMORY`]; [`DEFAULT_MEMORY`] when `available` is unknown.
    pub fn after_working_set(
        available: Option<(u64, MemorySource)>,
        working_set: u64,
    ) -> MemoryBudget {
        match available {
            None => MemoryBudget {
                bytes: DEFAULT_MEMORY,
                available: None,
                source: None,
                working_set,
            },
            Some((bytes, source)) => {
                let share = bytes.saturating_sub(working_set) / AVAILABLE_SHARE_DIVISOR;
                MemoryBudget {
                    bytes: usize::try_from(share)
                        .unwrap_or(usize::MAX)
                        .min(DEFAULT_MEMORY),
                    available: Some(bytes),
                    source: Some(source),
                    working_set,
                }
            }
        }
    }

    /// Whether the budget is below [`DEFAULT_MEMORY`] because of the
    /// memory available.
    pub fn lowered(&self) -> bool {
        self.bytes < DEFAULT_MEMORY
    }

    /// A short account of a lowered budget for a user ("half of the 107
    /// MiB available to the process, per memory cgroup
    /// /sys/fs/cgroup/memory/x, less the loader's own 99 MiB"); `None`
    /// when the budget is [`DEFAULT_MEMORY`].
    pub fn reason(&self) -> Option<String> {
        if !self.lowered() {
            return None;
        }
        let available = self.available? >> 20;
        let whence = match self.source.as_ref()? {
            MemorySource::MemAvailable => "MemAvailable in /proc/meminfo".to_string(),
            MemorySource::Cgroup(dir) => format!("memory cgroup {}", dir.display()),
        };
        let less = match self.working_set >> 20 {
            0 => String::new(),
            w => format!(", less the loader's own {w} MiB"),
        };
        Some(format!(
            "half of the {available} MiB available to the process, per {whence}{less}"
        ))
    }
}

/// The default budget for a loader over `dataset` with `options` (whose
/// `memory` is not read): half of what the memory available leaves once
/// the loader's own working set is set aside, at most [`DEFAULT_MEMORY`].
/// What `tocpile train` and `tocpile bench train` use when `--memory` is
/// not given.
///
/// The working set is what the loader holds while streaming, resident
/// pages or not: the CorgiPile (Block-Only, Sliding-Window, MRS) buffer,
/// twice with double buffering (the producer fills the next buffer while
/// the current one drains), the worker's whole share for Epoch Shuffle,
/// plus the read-ahead groups; in loaded pages, from the heap bytes per
/// encoded byte of a few sampled blocks (exact mode's decoded rows take
/// less than TOC's decode trees, so it errs on the safe side). On
/// flights3m with the defaults (2 KiB blocks, a 10% buffer) that is
/// about 100 MiB, all of a 110 MiB cgroup: the budget is then 0 and every
/// block is streamed, where a fixed budget had the process killed.
pub fn memory_budget_for<S: Source>(dataset: &Dataset<S>, options: &LoaderOptions) -> MemoryBudget {
    MemoryBudget::after_working_set(
        available_under(Path::new("/")),
        working_set_bytes(dataset, options),
    )
}

/// The loader's own working set in heap bytes (see [`memory_budget_for`]).
pub(crate) fn working_set_bytes<S: Source>(dataset: &Dataset<S>, o: &LoaderOptions) -> u64 {
    let n_blocks = dataset.n_blocks();
    if n_blocks == 0 {
        return 0;
    }
    let file_bytes: u64 = (0..n_blocks).map(|b| dataset.block_bytes(b)).sum();
    let mean_block = file_bytes as f64 / n_blocks as f64;
    let worker_blocks = n_blocks.div_ceil(o.workers.max(1));
    let buffer = match (o.strategy, o.buffer) {
        (Strategy::NoShuffle | Strategy::ShuffleOnce, _) => 0,
        (Strategy::EpochShuffle, _) => worker_blocks,
        (_, Buffer::Blocks(b)) => b,
        (_, Buffer::Fraction(f)) => ((f * n_blocks as f64).ceil() as usize).max(1),
    }
    .min(worker_blocks);
    let buffers = if o.double_buffer { 2 } else { 1 };
    // Read-ahead groups hold at least 64 KiB of the file each, and one
    // more is being made.
    let group = (65536.0 / mean_block).ceil().max(1.0);
    let blocks = (buffers * buffer) as f64 + (o.read_ahead as f64 + 1.0) * group;
    (blocks.min(n_blocks as f64) * mean_block * expansion(dataset)) as u64
}

/// Heap bytes of loaded pages per encoded byte, from blocks spread over
/// the file (up to 8, or 1 MiB of the file).
fn expansion<S: Source>(dataset: &Dataset<S>) -> f64 {
    let n = dataset.n_blocks();
    let samples = n.min(8);
    let (mut heap, mut bytes) = (0usize, 0u64);
    for k in 0..samples {
        let b = k * n / samples;
        let Ok(pages) = dataset.read_block(b).and_then(|block| block.pages()) else {
            return FALLBACK_EXPANSION;
        };
        heap += pages.iter().map(|p| p.heap_bytes()).sum::<usize>();
        bytes += dataset.block_bytes(b);
        if bytes >= 1 << 20 {
            break;
        }
    }
    if bytes == 0 {
        return FALLBACK_EXPANSION;
    }
    heap as f64 / bytes as f64
}

/// The default [`LoaderOptions::memory`](super::LoaderOptions::memory):
/// [`memory_budget`]'s bytes.
pub fn default_memory() -> usize {
    memory_budget().bytes
}

/// The default resident budget of this process, read from `/proc` and
/// `/sys/fs/cgroup` now (see the module docs); [`DEFAULT_MEMORY`] when
/// nothing can be read.
pub fn memory_budget() -> MemoryBudget {
    MemoryBudget::from_available(available_under(Path::new("/")))
}

/// The memory available to the process, with `root` standing for `/`
/// (tests give a directory tree of their own).
pub(crate) fn available_under(root: &Path) -> Option<(u64, MemorySource)> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let mut best: Option<(u64, MemorySource)> = read(&root.join("proc/meminfo"))
        .and_then(|t| meminfo_available(&t))
        .map(|b| (b, MemorySource::MemAvailable));
    let mut consider = |bytes: u64, source: MemorySource| {
        if best.as_ref().map_or(true, |(b, _)| bytes < *b) {
            best = Some((bytes, source));
        }
    };
    let cgroups = read(&root.join("proc/self/cgroup")).unwrap_or_default();
    let (v1, v2) = memory_cgroup_paths(&cgroups);
    let mut dirs = Vec::new();
    if let Some(path) = v1 {
        dirs.extend(ancestors(&root.join("sys/fs/cgroup/memory"), &path));
    }
    if let Some(path) = v2 {
        dirs.extend(ancestors(&root.join("sys/fs/cgroup"), &path));
    }
    for dir in dirs {
        let stat = read(&dir.join("memory.stat"));
        let headroom = match (
            read(&dir.join("memory.limit_in_bytes")),
            read(&dir.join("memory.max")),
        ) {
            (Some(limit), _) => read(&dir.join("memory.usage_in_bytes")).and_then(|usage| {
                cgroup_headroom(&limit, &usage, stat.as_deref(), "total_inactive_file")
            }),
            (None, Some(max)) => read(&dir.join("memory.current"))
                .and_then(|usage| cgroup_headroom(&max, &usage, stat.as_deref(), "inactive_file")),
            (None, None) => None,
        };
        if let Some(bytes) = headroom {
            let shown = dir
                .strip_prefix(root)
                .map(|p| Path::new("/").join(p))
                .unwrap_or_else(|_| dir.clone());
            consider(bytes, MemorySource::Cgroup(shown));
        }
    }
    best
}

/// The cgroup directory of `path` under `mount` and each of its ancestors
/// up to the mount itself, those that exist. Inside a container the
/// mount is often the container's own cgroup while `/proc/self/cgroup`
/// names the host's path: then only the mount exists, and it is the one.
fn ancestors(mount: &Path, path: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut rel = PathBuf::from(path.trim_start_matches('/'));
    loop {
        let dir = mount.join(&rel);
        if dir.is_dir() && !out.contains(&dir) {
            out.push(dir);
        }
        if !rel.pop() {
            break;
        }
    }
    out
}

/// `MemAvailable` of `/proc/meminfo`'s text, in bytes.
pub(crate) fn meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line["MemAvailable:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// The memory cgroup paths in `/proc/self/cgroup`'s text: the v1 `memory`
/// controller's ("4:memory:/a/b") and the v2 unified hierarchy's
/// ("0::/a/b").
pub(crate) fn memory_cgroup_paths(text: &str) -> (Option<String>, Option<String>) {
    let (mut v1, mut v2) = (None, None);
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_string());
        }
    }
    (v1, v2)
}

/// A cgroup's headroom: its limit (`limit`: a number, or "max" for none)
/// minus its usage less the reclaimable cache (`stat`'s `inactive_key`
/// line); `None` when there is no limit or the texts are not numbers.
pub(crate) fn cgroup_headroom(
    limit: &str,
    usage: &str,
    stat: Option<&str>,
    inactive_key: &str,
) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok()?; // "max" (v2): no limit
    if limit >= UNLIMITED {
        return None;
    }
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = stat
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (key, value) = l.split_once(' ')?;
                (key == inactive_key)
                    .then(|| value.trim().parse::<u64>().ok())
                    .flatten()
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn meminfo_available_is_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:         1000000 kB\n\
                    MemAvailable:   20480000 kB\nBuffers:          1234 kB\n";
        assert_eq!(meminfo_available(text), Some(20_480_000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
        assert_eq!(meminfo_available("MemAvailable: lots kB\n"), None);
        assert_eq!(meminfo_available("MemAvailable: 5 MB\n"), None);
        assert_eq!(meminfo_available(""), None);
    }

    #[test]
    fn cgroup_paths_of_v1_v2_and_hybrid() {
        let hybrid = "9:name=systemd:/\n7:blkio:/\n4:memory:/process_api/dd02\n1:cpu:/\n0::/\n";
        assert_eq!(
            memory_cgroup_paths(hybrid),
            (Some("/process_api/dd02".into()), Some("/".into()))
        );
        assert_eq!(
            memory_cgroup_paths("0::/user.slice/app.scope\n"),
            (None, Some("/user.slice/app.scope".into()))
        );
        assert_eq!(
            memory_cgroup_paths("5:cpuacct,memory:/a:b\n"),
            (Some("/a:b".into()), None)
        );
        assert_eq!(memory_cgroup_paths("garbage\n3:cpu:/x\n"), (None, None));
    }

    #[test]
    fn headroom_is_limit_minus_unreclaimable_usage() {
        let stat = "cache 40000\nrss 30000\ntotal_inactive_file 25000\ninactive_file 1\n";
        assert_eq!(
            cgroup_headroom("100000\n", "70000\n", Some(stat), "total_inactive_file"),
            Some(55_000)
        );
        assert_eq!(
            cgroup_headroom("100000", "70000", Some(stat), "inactive_file"),
            Some(30_001)
        );
        assert_eq!(
            cgroup_headroom("100000", "70000", None, "inactive_file"),
            Some(30_000)
        );
        // Over the limit (usage counts some kernel memory late): none left.
        assert_eq!(
            cgroup_headroom("100000", "120000", None, "inactive_file"),
            Some(0)
        );
        assert_eq!(
            cgroup_headroom("9223372036854771712\n", "5", None, "x"),
            None
        );
        assert_eq!(cgroup_headroom("max\n", "5", None, "x"), None);
        assert_eq!(cgroup_headroom("100", "", None, "x"), None);
    }

    #[test]
    fn budget_is_half_the_available_capped() {
        let b = MemoryBudget::from_available(Some((108 * MIB, MemorySource::MemAvailable)));
        assert_eq!(b.bytes, 54 << 20);
        assert!(b.lowered());
        assert_eq!(
            b.reason().unwrap(),
            "half of the 108 MiB available to the process, per MemAvailable in /proc/meminfo"
        );
        let big = MemoryBudget::from_available(Some((20 << 30, MemorySource::MemAvailable)));
        assert_eq!(big.bytes, DEFAULT_MEMORY);
        assert!(!big.lowered());
        assert_eq!(big.reason(), None);
        let none = MemoryBudget::from_available(None);
        assert_eq!(
            (none.bytes, none.available, none.reason()),
            (DEFAULT_MEMORY, None, None)
        );
    }

    /// A fake `/`: `files` are (path, text) under a fresh directory.
    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("tocpile-budget-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        root
    }

    #[test]
    fn the_smallest_bound_of_the_tree_wins() {
        let g = "sys/fs/cgroup/memory";
        let root = tree(
            "v1",
            &[
                ("proc/meminfo", "MemAvailable: 1048576 kB\n"), // 1 GiB
                ("proc/self/cgroup", "4:memory:/outer/inner\n0::/\n"),
                (
                    &format!("{g}/memory.limit_in_bytes"),
                    "9223372036854771712\n",
                ),
                (&format!("{g}/memory.usage_in_bytes"), "5000000000\n"),
                (&format!("{g}/outer/memory.limit_in_bytes"), "524288000\n"), // 500 MiB
                (&format!("{g}/outer/memory.usage_in_bytes"), "104857600\n"),
                (
                    &format!("{g}/outer/inner/memory.limit_in_bytes"),
                    "115343360\n",
                ), // 110 MiB
                (
                    &format!("{g}/outer/inner/memory.usage_in_bytes"),
                    "10485760\n",
                ),
                (
                    &format!("{g}/outer/inner/memory.stat"),
                    "total_inactive_file 4194304\n",
                ),
            ],
        );
        let (bytes, source) = available_under(&root).unwrap();
        assert_eq!(bytes, 104 * MIB); // 110 - (10 - 4)
        assert_eq!(
            source,
            MemorySource::Cgroup(PathBuf::from("/sys/fs/cgroup/memory/outer/inner"))
        );
        // The parent binds when it has less room than the child.
        std::fs::write(
            root.join(g).join("outer/memory.usage_in_bytes"),
            "471859200\n",
        )
        .unwrap(); // 450 MiB
        assert_eq!(
            available_under(&root).unwrap(),
            (
                50 * MIB,
                MemorySource::Cgroup(PathBuf::from("/sys/fs/cgroup/memory/outer"))
            )
        );
        std::fs::remove_dir_all(&root).unwrap();

        // cgroup v2, and a container whose mount is its own cgroup.
        let root = tree(
            "v2",
            &[
                ("proc/meminfo", "MemAvailable: 1048576 kB\n"),
                ("proc/self/cgroup", "0::/kubepods/pod1/abc\n"),
                ("sys/fs/cgroup/memory.max", "209715200\n"),
                ("sys/fs/cgroup/memory.current", "0\n"),
            ],
        );
        assert_eq!(
            available_under(&root).unwrap(),
            (
                200 * MIB,
                MemorySource::Cgroup(PathBuf::from("/sys/fs/cgroup"))
            )
        );
        std::fs::remove_dir_all(&root).unwrap();

        // Nothing to read: no bound.
        let root = tree("none", &[("proc/version", "x")]);
        assert_eq!(available_under(&root), None);
        assert_eq!(
            MemoryBudget::from_available(available_under(&root)).bytes,
            DEFAULT_MEMORY
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn working_set_follows_the_buffer_and_the_measured_expansion() {
        use crate::dataset::{DatasetWriter, WriterOptions};
        use crate::SparseBatch;
        let path =
            std::env::temp_dir().join(format!("tocpile-budget-ws-{}.toc", std::process::id()));
        let rows: Vec<[f64; 4]> = (0..40_000u64)
            .map(|i| {
                [
                    1.0,
                    (i * 7919 % 1009) as f64,
                    0.0,
                    (i * 104_729 % 97) as f64,
                ]
            })
            .collect();
        let labels: Vec<f64> = (0..40_000).map(|i| (i % 2) as f64).collect();
        let layout = WriterOptions {
            page_rows: 50,
            block_bytes: 512,
            ..WriterOptions::default()
        };
        let mut writer = DatasetWriter::create(&path, 4, layout).unwrap();
        writer
            .push(&SparseBatch::from_dense_rows(4, &rows).unwrap(), &labels)
            .unwrap();
        writer.finish().unwrap();
        let ds = Dataset::open(&path).unwrap();
        assert!(ds.n_blocks() > 20, "{} blocks", ds.n_blocks());
        let all: usize = (0..ds.n_blocks())
            .map(|b| {
                ds.read_block(b)
                    .unwrap()
                    .pages()
                    .unwrap()
                    .iter()
                    .map(|p| p.heap_bytes())
                    .sum::<usize>()
            })
            .sum();
        let with = |strategy, double_buffer| {
            let o = LoaderOptions {
                strategy,
                double_buffer,
                ..LoaderOptions::default()
            };
            working_set_bytes(&ds, &o)
        };
        // Every block, once: the pages' real heap bytes, within sampling.
        let epoch = with(Strategy::EpochShuffle, false) as f64;
        assert!(
            (epoch / all as f64 - 1.0).abs() < 0.25,
            "{epoch} against {all}"
        );
        let (none, corgi, corgi2) = (
            with(Strategy::NoShuffle, true),
            with(Strategy::CorgiPile, false),
            with(Strategy::CorgiPile, true),
        );
        assert!(
            none > 0 && none < corgi && corgi < corgi2,
            "{none} {corgi} {corgi2}"
        );
        let budget = MemoryBudget::after_working_set(
            Some((100 * MIB, MemorySource::MemAvailable)),
            60 * MIB,
        );
        assert_eq!(budget.bytes, 20 << 20);
        assert!(budget
            .reason()
            .unwrap()
            .ends_with(", less the loader's own 60 MiB"));
        let over =
            MemoryBudget::after_working_set(Some((50 * MIB, MemorySource::MemAvailable)), 60 * MIB);
        assert_eq!(over.bytes, 0);
        drop(ds);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn this_process_gets_a_budget_within_the_cap() {
        let b = memory_budget();
        assert!(b.bytes > 0 && b.bytes <= DEFAULT_MEMORY);
        assert!(default_memory() <= DEFAULT_MEMORY);
    }
}
