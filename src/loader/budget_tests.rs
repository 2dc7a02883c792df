//! Tests of the default resident budget (`budget.rs`): the files' texts
//! parsed as strings, a fake `/` tree, the working-set estimate.

use super::*;
use crate::dataset::Dataset;
use crate::loader::working_set::working_set_bytes;
use crate::loader::{LoaderOptions, Strategy};

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
    let root = std::env::temp_dir().join(format!("tocpile-budget-{name}-{}", std::process::id()));
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
    let path = write_rows("ws", 200_000);
    let ds = Dataset::open(&path).unwrap();
    assert!(ds.n_blocks() > 20, "{} blocks", ds.n_blocks());
    // Exact mode holds blocks compressed and decodes a buffer into its row
    // arena (12 bytes a non-zero and a row, half of it twice at the join).
    let all: f64 = (0..ds.n_blocks())
        .map(|b| {
            let block = ds.read_block(b).unwrap().pack().unwrap();
            crate::loader::resident::packed_bytes(&block) as f64
                + 1.5 * 12.0 * (block.nnz() + block.n_rows() as u64) as f64
        })
        .sum();
    let with = |strategy, double_buffer| {
        let o = LoaderOptions {
            strategy,
            double_buffer,
            mode: crate::loader::Mode::Exact,
            ..LoaderOptions::default()
        };
        working_set_bytes(&ds, &o)
    };
    // Every block, once: held and decoded, within sampling.
    let epoch = with(Strategy::EpochShuffle, false) as f64;
    assert!((epoch / all - 1.0).abs() < 0.25, "{epoch} against {all}");
    let (none, corgi, corgi2) = (
        with(Strategy::NoShuffle, true),
        with(Strategy::CorgiPile, false),
        with(Strategy::CorgiPile, true),
    );
    // No Shuffle holds a few read-ahead groups and decodes a block at a
    // time; CorgiPile one buffer on a single thread, two and a buffer
    // read ahead with double buffering.
    assert!(
        none > 0 && none < corgi2 && corgi < corgi2,
        "{none} {corgi} {corgi2}"
    );
    let budget =
        MemoryBudget::after_working_set(Some((100 * MIB, MemorySource::MemAvailable)), 60 * MIB);
    assert_eq!(budget.bytes, 20 << 20);
    assert!(budget
        .reason()
        .unwrap()
        .ends_with(", less 60 MiB for the loader's buffers and the rest of the process"));
    // A 54 MiB file of 11x pages in 107 MiB, 18 MiB set aside: room for
    // about 40 MiB of trees beside the rest of the file in the cache, a
    // fifteenth of the file's trees: not worth the risk to the cache,
    // none are kept and the whole file has the room.
    let fit = fit_file(
        MemoryBudget::after_working_set(Some((107 * MIB, MemorySource::MemAvailable)), 18 * MIB),
        54 * MIB,
        11.0,
    );
    assert_eq!(fit.bytes, 0);
    assert_eq!(fit.file_cache, 89 * MIB);
    assert!(fit.reason().unwrap().ends_with("for the file's page cache"));
    // A file over what is left, or pages no larger than their bytes:
    // half.
    for (file, e) in [(200 * MIB, 11.0), (54 * MIB, 1.0)] {
        let b = MemoryBudget::after_working_set(
            Some((107 * MIB, MemorySource::MemAvailable)),
            18 * MIB,
        );
        assert_eq!(fit_file(b.clone(), file, e), b);
    }
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

/// `LoaderOptions::default()` reads nothing of the system: the automatic
/// budget is probed when a loader opens (issue 25).
#[test]
fn loader_options_default_leaves_the_budget_automatic() {
    assert_eq!(super::super::LoaderOptions::default().memory, None);
}

/// With `Buffer::Auto`, the budget is raised to the whole file's buffer
/// when it fits three quarters of what the process has left, though half
/// of it would not hold it (the out-of-memory sweep's 0.5x and 1x
/// cgroups); a loader given that budget keeps the whole file. Never for a
/// fixed buffer, several workers, or too little memory.
#[test]
fn auto_budget_takes_the_whole_file_within_three_quarters() {
    use crate::loader::{Buffer, Loader};
    use std::sync::Arc;
    let path = write_rows("whole", 500_000);
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let o = LoaderOptions::default();
    assert_eq!(o.buffer, Buffer::Auto);
    // The whole file's buffer as the loader measures it.
    let roomy = LoaderOptions {
        memory: Some(1 << 30),
        ..o.clone()
    };
    let whole = Loader::new(Arc::clone(&ds), roomy)
        .unwrap()
        .buffer_choice()
        .whole_bytes;
    assert!(whole > MIB, "{whole}");
    let within = |available: u64, o: &LoaderOptions| {
        crate::loader::working_set::budget_within(
            &ds,
            o,
            Some((available, MemorySource::MemAvailable)),
        )
    };
    // Room for the whole file in three quarters, not in a half.
    let available = PROCESS_BYTES + 4 * MIB + whole * 5 / 4;
    let b = within(available, &o);
    assert_eq!(b.whole_file, whole);
    assert_eq!(b.bytes as u64, whole);
    assert!(
        MemoryBudget::after_working_set(
            Some((available, MemorySource::MemAvailable)),
            PROCESS_BYTES
        )
        .bytes
            < whole as usize
    );
    assert!(
        b.reason().unwrap().starts_with("the whole file's"),
        "{:?}",
        b.reason()
    );
    let given = LoaderOptions {
        memory: Some(b.bytes),
        ..o.clone()
    };
    assert!(
        Loader::new(Arc::clone(&ds), given)
            .unwrap()
            .buffer_choice()
            .whole_file
    );
    // Too little memory, a fixed buffer, several workers: no raise.
    assert_eq!(within(PROCESS_BYTES + whole, &o).whole_file, 0);
    let fixed = LoaderOptions {
        buffer: Buffer::Fraction(0.1),
        ..o.clone()
    };
    assert_eq!(within(available, &fixed).whole_file, 0);
    let workers = LoaderOptions {
        workers: 2,
        ..o.clone()
    };
    assert_eq!(within(available, &workers).whole_file, 0);
    drop(ds);
    std::fs::remove_file(&path).unwrap();
}

/// A dataset file of `n` 4-column rows (two of them varied, 1,009 and 97
/// values) in 50-row pages and 512-byte blocks, in the temporary
/// directory; its path (also the loader's other tests' file).
pub(in crate::loader) fn write_rows(name: &str, n: u64) -> std::path::PathBuf {
    use crate::dataset::{DatasetWriter, WriterOptions};
    use crate::SparseBatch;
    let path =
        std::env::temp_dir().join(format!("tocpile-budget-{name}-{}.toc", std::process::id()));
    let rows: Vec<[f64; 4]> = (0..n)
        .map(|i| {
            [
                1.0,
                (i * 7919 % 1009) as f64,
                0.0,
                (i * 104_729 % 97) as f64,
            ]
        })
        .collect();
    let labels: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
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
    path
}
