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

/// The cap of the default resident budget ([`LoaderOptions::memory`](super::LoaderOptions::memory),
/// [`default_memory`]), and the budget when the
/// memory available cannot be read: 1 GiB, about 30 MiB of TOC file on
/// flights3m-like data (decode trees take 10 to 12 times the encoded
/// bytes) and a fraction of any machine that trains.
pub const DEFAULT_MEMORY: usize = 1 << 30;

/// The default budget is the memory available divided by this (a half:
/// see the module docs).
pub const AVAILABLE_SHARE_DIVISOR: u64 = 2;

/// Limits at or above this are "no limit" (cgroup v1 writes
/// 9223372036854771712, the largest page-aligned `i64`, for none).
const UNLIMITED: u64 = 1 << 62;

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
#[non_exhaustive]
pub struct MemoryBudget {
    /// The budget in bytes: half of (`available` - `working_set`), at
    /// most [`DEFAULT_MEMORY`].
    pub bytes: usize,
    /// The memory available to the process in bytes, if it could be read.
    pub available: Option<u64>,
    /// What gave `available` (the smaller bound when several were read).
    pub source: Option<MemorySource>,
    /// Bytes set aside for the loader's own working set and the rest of
    /// the process before halving (0 for [`MemoryBudget::detect`]).
    pub working_set: u64,
    /// Bytes kept for the page cache of the file's streamed part: when
    /// the file fits what is left, the budget leaves room for it; 0
    /// otherwise.
    pub file_cache: u64,
    /// The whole file's buffer in bytes when the budget was raised to hold
    /// it ([`Buffer::Auto`](super::Buffer::Auto): at most
    /// [`WHOLE_FILE_SHARE`] of what the process has left); 0 otherwise.
    pub whole_file: u64,
}

impl MemoryBudget {
    /// The default resident budget of this process, read from `/proc` and
    /// `/sys/fs/cgroup` now (see the module docs); 1 GiB when nothing can
    /// be read. A loader whose [`LoaderOptions::memory`](super::LoaderOptions::memory)
    /// is `None` calls this when it opens.
    pub fn detect() -> MemoryBudget {
        MemoryBudget::from_available(available_under(Path::new("/")))
    }

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
                file_cache: 0,
                whole_file: 0,
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
                    file_cache: 0,
                    whole_file: 0,
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
    /// /sys/fs/cgroup/memory/x, less 115 MiB for the loader's buffers and
    /// the rest of the process"); `None`
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
        if self.whole_file > 0 {
            return Some(format!(
                "the whole file's {:.1} MiB of rows, within three quarters of the {available} \
                 MiB available to the process, per {whence}",
                self.whole_file as f64 / (1 << 20) as f64
            ));
        }
        let less = match self.working_set >> 20 {
            0 => String::new(),
            w => format!(", less {w} MiB for the loader's buffers and the rest of the process"),
        };
        let cache = match self.file_cache >> 20 {
            0 => String::new(),
            c => format!(", leaving {c} MiB for the file's page cache"),
        };
        let share = if cache.is_empty() {
            "half"
        } else {
            "at most half"
        };
        Some(format!(
            "{share} of the {available} MiB available to the process, per {whence}{less}{cache}"
        ))
    }
}

/// The share of the memory available (less [`PROCESS_BYTES`] and the
/// whole-file build's read-ahead) that a [`Buffer::Auto`](super::Buffer::Auto)
/// buffer of the whole file may take: three quarters.
///
/// More than the half of a resident budget, because a whole-file buffer
/// replaces what the other half is kept for: once it is built nothing
/// streams (no second buffer, no read-ahead, no page cache of the file
/// needed), and the buffer is the rows in their compact form (code rows
/// or pair codes, a few bytes a row), measured on sampled mini-batches.
/// The quarter left absorbs the estimate's error and allocator slack. In
/// the out-of-memory sweep's cgroups of 0.5x and 1x the TOC file plus 64
/// MiB, half was 19-20 MiB, under flights3m's 21 MiB of pair codes: the
/// loader buffered 10% and decoded every epoch.
pub const WHOLE_FILE_SHARE: f64 = 0.75;

/// Memory the process will take besides the loader's buffers (the
/// model, thread stacks, allocator slack) that [`memory_budget_for`](super::memory_budget_for) sets
/// aside; what it holds already (the binary, the open file's index) is
/// in the usage read. A streaming No Shuffle run on flights3m peaks at 9
/// MiB all told.
pub const PROCESS_BYTES: u64 = 8 << 20;

/// Step 3 of [`memory_budget_for`](super::memory_budget_for): 0 when a
/// file of `file_bytes` whose pages take `expansion` heap bytes per byte
/// fits the page cache but not beside the budget's resident pages, so
/// the whole file stays cached.
pub(crate) fn fit_file(mut budget: MemoryBudget, file_bytes: u64, expansion: f64) -> MemoryBudget {
    let Some(available) = budget.available else {
        return budget;
    };
    let left = available.saturating_sub(budget.working_set);
    // Pages no larger than their bytes cost the cache nothing to keep.
    if file_bytes > left || expansion <= 1.0 {
        return budget;
    }
    let most = (left - file_bytes) as f64 / (1.0 - 1.0 / expansion);
    let most = usize::try_from(most as u64).unwrap_or(usize::MAX);
    if most < budget.bytes {
        // Such a budget holds the trees of under half the file (with the
        // budget at most half of `left`, `most >= file * e / 2` would need
        // `(e - 1)^2 <= 0`): it saves under half the validation, while a
        // small misestimate of the process's memory pushes part of the
        // file out of the cache and every epoch re-reads it from the disk.
        // In a cgroup of twice the TOC file, 39 MiB of trees (7% of the
        // pages) left 87% of the file re-read each epoch (0.52 s an
        // epoch). So none are kept and the whole file has the room.
        budget.bytes = 0;
        budget.file_cache = left;
    }
    budget
}

/// [`MemoryBudget::detect`]'s bytes: the budget of an automatic
/// [`LoaderOptions::memory`](super::LoaderOptions::memory).
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn default_memory() -> usize {
    MemoryBudget::detect().bytes
}

/// As [`MemoryBudget::detect`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn memory_budget() -> MemoryBudget {
    MemoryBudget::detect()
}

/// The memory available to the process, with `root` standing for `/`
/// (tests give a directory tree of their own).
pub(crate) fn available_under(root: &Path) -> Option<(u64, MemorySource)> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let mut best: Option<(u64, MemorySource)> = read(&root.join("proc/meminfo"))
        .and_then(|t| meminfo_available(&t))
        .map(|b| (b, MemorySource::MemAvailable));
    let mut consider = |bytes: u64, source: MemorySource| {
        if best.as_ref().is_none_or(|(b, _)| bytes < *b) {
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
#[path = "budget_tests.rs"]
pub(super) mod tests;
