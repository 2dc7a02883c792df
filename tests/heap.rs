//! `Batch::heap_bytes` and `Page::heap_bytes` against the allocator: a
//! global allocator counts the bytes each thread holds, and the bytes a
//! freshly loaded batch or page keeps allocated must be exactly what it
//! reports. Its own test binary, so the counting allocator serves no other
//! test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::{Page, SparseBatch};

/// The system allocator, counting live bytes per thread.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: the count is gone while the thread shuts down.
    let _ = LIVE.try_with(|c| c.set(c.get() + delta));
}

// SAFETY: every call forwards to `System` with the caller's arguments; the
// counting touches only a const-initialised thread-local `Cell`, which
// never allocates.
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

/// Bytes this thread holds now.
fn live() -> isize {
    LIVE.with(Cell::get)
}

/// The tests share the process's decode-tree pool (a page dropped by one
/// would be reused by the other's load): they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `make` and returns its value with the bytes it left allocated.
fn retained<T>(make: impl FnOnce() -> T) -> (T, usize) {
    let before = live();
    let value = make();
    (value, (live() - before) as usize)
}

/// 60 rows of 40 columns with repeated values (a real prefix tree for TOC).
fn rows() -> SparseBatch {
    let dense: Vec<Vec<f64>> = (0..60)
        .map(|r| {
            (0..40)
                .map(|c| match (r * 7 + c * 3) % 5 {
                    0 | 1 => 0.0,
                    k => k as f64 * 0.5,
                })
                .collect()
        })
        .collect();
    SparseBatch::from_dense_rows(40, &dense).unwrap()
}

#[test]
fn loaded_batches_hold_what_heap_bytes_reports() {
    let _serial = SERIAL.lock().unwrap();
    let rows = rows();
    for kind in FormatKind::ALL {
        let bytes = kind.encode(&rows).unwrap().to_bytes();
        // Warm up whatever a first load sets up once (none is expected).
        drop(kind.load(&bytes).unwrap());
        // A dropped TOC page leaves its decode tree in a pool for the next
        // load; measure a load that builds a tree of its own.
        tocpile::formats::release_pooled();
        let (batch, held) = retained(|| kind.load(&bytes).unwrap());
        assert_eq!(held, batch.heap_bytes(), "{kind}");
        if kind == FormatKind::TocFull {
            // The decode tree dominates the encoded bytes.
            assert!(held > 2 * batch.encoded_len(), "{kind}: {held}");
        }
        let labels = vec![1.0; rows.n_rows()];
        let (page, held) = retained(|| Page::new(batch, &labels[..]).unwrap());
        // The page moved the batch into its allocation: what it adds is
        // that allocation and the labels.
        let batch_bytes = page.batch().heap_bytes();
        assert_eq!(held + batch_bytes, page.heap_bytes(), "{kind}: page");
    }
}

#[test]
fn pages_of_a_block_hold_what_they_report() {
    let _serial = SERIAL.lock().unwrap();
    let path = std::env::temp_dir().join(format!("tocpile-heap-{}.toc", std::process::id()));
    let options = WriterOptions::default().with_page_rows(20);
    let mut writer = DatasetWriter::create(&path, 40, options).unwrap();
    let rows = rows();
    writer.push(&rows, &vec![0.0; rows.n_rows()]).unwrap();
    writer.finish().unwrap();
    let block = Dataset::open(&path).unwrap().read_block(0).unwrap();
    // A first load sets up this thread's build scratch (kept by the
    // thread, not by any page); then no pooled tree is reused.
    drop(block.page(0).unwrap());
    tocpile::formats::release_pooled();
    for j in 0..block.n_pages() {
        tocpile::formats::release_pooled();
        let (page, held) = retained(|| block.page(j).unwrap());
        assert_eq!(held, page.heap_bytes(), "page {j}");
    }
    std::fs::remove_file(&path).unwrap();
}
