//! The loader's memory figures against the allocator: a global allocator
//! counts the bytes live in the whole process (every thread) and their
//! peak. The resident cache must hold what `Loader::resident_bytes`
//! says, and an epoch's `buffer_peak_bytes` must account for most of what
//! the epoch really had allocated at its peak (it counted encoded bytes
//! only, a tenth of a TOC page's memory, before). Its own test binary, so
//! the counting allocator serves no other test; the tests take a lock so
//! that they do not count each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::SparseBatch;

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

fn count(delta: isize) {
    let now = LIVE.fetch_add(delta, Ordering::SeqCst) + delta;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call forwards to `System` with the caller's arguments; the
// counting touches only atomics, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::alloc`; the caller's contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

/// 4,000 rows of 30 columns with repeated values (real prefix trees), in
/// 50-row pages and blocks of about 2 KiB, written to memory.
fn dataset() -> Arc<Dataset<Vec<u8>>> {
    let dense: Vec<Vec<f64>> = (0..4000)
        .map(|r| {
            (0..30)
                .map(|c| match (r * 7 + c * 3 + r / 13) % 6 {
                    0..=2 => 0.0,
                    k => k as f64 * 0.5,
                })
                .collect()
        })
        .collect();
    let rows = SparseBatch::from_dense_rows(30, &dense).unwrap();
    let labels: Vec<f64> = (0..4000).map(|r| (r % 2) as f64).collect();
    let path = std::env::temp_dir().join(format!(
        "tocpile-loader-heap-{}-{:?}.toc",
        std::process::id(),
        std::thread::current().id()
    ));
    let layout = WriterOptions::default()
        .with_page_rows(50)
        .with_block_bytes(2048)
        // Self-contained pages: the block counts below are version 2's.
        .with_segment_rows(0);
    let mut writer = DatasetWriter::create(&path, 30, layout).unwrap();
    writer.push(&rows, &labels).unwrap();
    writer.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Arc::new(Dataset::from_memory(bytes, "heap.toc").unwrap())
}

fn options(memory: usize) -> LoaderOptions {
    LoaderOptions::default()
        .with_strategy(Strategy::CorgiPile)
        .with_mode(Mode::Page)
        .with_double_buffer(false)
        .with_memory(memory)
}

/// Runs one epoch, dropping each batch, and returns its stats.
fn drain<S: tocpile::dataset::Source + 'static>(
    loader: &Loader<S>,
    epoch: u64,
) -> tocpile::loader::EpochStats {
    let mut batches = loader.epoch(epoch).unwrap();
    for batch in batches.by_ref() {
        drop(batch.unwrap());
    }
    batches.stats()
}

#[test]
fn resident_pages_hold_what_the_loader_reports() {
    let _serial = SERIAL.lock().unwrap();
    let ds = dataset();
    // Warm up what a first epoch sets up once (rayon's threads).
    drain(&Loader::new(Arc::clone(&ds), options(0)).unwrap(), 0);
    // Start with no decode trees pooled for reuse (the warm-up left some).
    tocpile::formats::release_pooled();
    let loader = Loader::new(Arc::clone(&ds), options(usize::MAX)).unwrap();
    let before = live();
    let stats = drain(&loader, 0);
    // Decode trees of the epoch's pages wait in the process's pool for the
    // next pages (scratch, reported apart: formats::pooled_bytes).
    tocpile::formats::release_pooled();
    let kept = (live() - before) as f64;
    let reported = loader.resident_bytes() as f64;
    eprintln!("resident: reported {reported} bytes, kept {kept}");
    assert_eq!(loader.resident_blocks(), ds.n_blocks());
    assert_eq!(stats.resident_bytes, loader.resident_bytes());
    // The cache's blocks (their bytes as in the file, and a page index);
    // nothing else outlives an epoch but a few words of bookkeeping.
    assert!(
        (kept - reported).abs() <= 0.02 * reported,
        "live bytes kept {kept}, resident bytes reported {reported}"
    );
    // A second epoch reads nothing new and keeps nothing more (but the
    // pooled trees).
    let before = live();
    drain(&loader, 1);
    tocpile::formats::release_pooled();
    assert!((live() - before).abs() < 4096, "{}", live() - before);
}

#[test]
fn buffer_peak_accounts_for_what_an_epoch_holds() {
    let _serial = SERIAL.lock().unwrap();
    let ds = dataset();
    drain(&Loader::new(Arc::clone(&ds), options(0)).unwrap(), 0);
    tocpile::formats::release_pooled();
    let loader = Loader::new(Arc::clone(&ds), options(0)).unwrap();
    let before = live();
    PEAK.store(before, Ordering::SeqCst);
    let stats = drain(&loader, 1);
    let measured = (PEAK.load(Ordering::SeqCst) - before) as f64;
    let reported = stats.buffer_peak_bytes as f64;
    eprintln!("buffer peak: reported {reported} bytes, measured {measured}");
    assert_eq!(loader.resident_bytes(), 0);
    // The report leaves out the block being read (its raw bytes) and
    // transient vectors; it must still be most of the measured peak and
    // never above it.
    assert!(
        reported <= measured && reported >= 0.8 * measured,
        "reported {reported} bytes, measured peak {measured}"
    );
}

/// Exact mode: the buffer holds each block decoded once (shared by its
/// rows' units) and the mini-batches gathered from them as CSR pages; the
/// rows' shares of their blocks, the rows copied out between buffers and
/// the batches must add up to what the epoch really held at its peak,
/// streamed and resident. The report leaves out the block being read and
/// decoded (its raw bytes, validated pages with their decode trees, which
/// then stay pooled for the next block, and decoded copy, one block's
/// worth): a buffer of eight of the 16 blocks keeps that small beside
/// what is counted.
#[test]
fn exact_mode_buffer_peak_accounts_for_decoded_blocks() {
    let _serial = SERIAL.lock().unwrap();
    let ds = dataset();
    assert_eq!(ds.n_blocks(), 16);
    for memory in [0, usize::MAX] {
        let exact = options(memory)
            .with_mode(Mode::Exact)
            .with_buffer(Buffer::Blocks(8));
        drain(&Loader::new(Arc::clone(&ds), exact.clone()).unwrap(), 0);
        let loader = Loader::new(Arc::clone(&ds), exact).unwrap();
        // Epoch 0 fills the resident cache (memory: usize::MAX); the
        // measured epoch reads from it, so only the buffer is new.
        drain(&loader, 0);
        // Other tests leave decode trees in the process's pool, which the
        // loader counts: start from none.
        tocpile::formats::release_pooled();
        let before = live();
        PEAK.store(before, Ordering::SeqCst);
        let stats = drain(&loader, 1);
        let measured = (PEAK.load(Ordering::SeqCst) - before) as f64;
        let reported = stats.buffer_peak_bytes as f64;
        eprintln!("exact, memory {memory}: reported {reported} bytes, measured {measured}");
        assert!(
            reported <= measured && reported >= 0.8 * measured,
            "memory {memory}: reported {reported} bytes, measured peak {measured}"
        );
    }
}
