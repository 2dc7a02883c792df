//! The library's thread pool, which survives a `fork`.
//!
//! Every parallel step of the library (kernels across the pages of a
//! mini-batch, encoding and parsing, the loader's decode of a buffer,
//! prediction over many rows) runs on a rayon pool this module owns, not
//! on rayon's global pool. A process forked after a pool started (PyTorch
//! `DataLoader` workers, Python's `multiprocessing` with the fork start
//! method, a pre-forking server) inherits the pool's memory but none of
//! its threads: work handed to it there waits forever. So the pool
//! records the process it was started in, and the first parallel step in
//! another process (a forked child) starts a new pool there. The parent's
//! pool is never touched in the child (its threads do not exist there,
//! and any lock they held stays held): it is left as it is, a few
//! kilobytes per fork. No lock is taken to find the pool, so a fork at any
//! moment leaves the child able to start its own.
//!
//! Work called from a thread of a rayon pool runs on that pool: the
//! library's nested steps stay on the pool they run on, and a caller who
//! sizes a pool for the library (`rayon::ThreadPoolBuilder::new()
//! .num_threads(2).build()?.install(|| ...)`) keeps that size. Otherwise
//! the pool has `RAYON_NUM_THREADS` threads, or one per core (rayon's
//! default); `rayon::ThreadPoolBuilder::build_global` does not size it.
//!
//! ```
//! // Sums on the library's pool (started at first use).
//! let (a, b) = tocpile::parallel::join(|| (0..1000u64).sum::<u64>(), || 7);
//! assert_eq!((a, b), (499_500, 7));
//! assert!(tocpile::parallel::current_num_threads() >= 1);
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// A pool and the process it was started in.
struct Pool {
    pid: u32,
    pool: rayon::ThreadPool,
}

/// Pools started so far, one per process that used one (a chain of forks
/// that each start a pool takes one slot per generation). Slots are only
/// ever filled by the thread that claimed them, so setting one never
/// waits; full slots are never emptied, so a pool found here lives for
/// the rest of the process.
const SLOTS: usize = 64;
static POOLS: [OnceLock<Pool>; SLOTS] = [const { OnceLock::new() }; SLOTS];
/// Next slot to claim (claimed slots are never reused).
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// The slot of the newest pool, `NONE` before the first.
static CURRENT: AtomicUsize = AtomicUsize::new(NONE);
const NONE: usize = usize::MAX;

/// This process's pool, started if there is none yet (or only the pool of
/// a parent process); `Err` if it cannot be started.
fn pool() -> Result<&'static rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let pid = std::process::id();
    let current = CURRENT.load(Ordering::Acquire);
    if let Some(found) = POOLS.get(current).and_then(OnceLock::get) {
        if found.pid == pid {
            return Ok(&found.pool);
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("tocpile-worker-{i}"))
        .build()?;
    let slot = NEXT.fetch_add(1, Ordering::AcqRel);
    let Some(cell) = POOLS.get(slot) else {
        return Err(slots_exhausted());
    };
    // Only this thread holds `slot`: the cell is empty and `set` succeeds.
    let _ = cell.set(Pool { pid, pool });
    let ours = cell.get().expect("set above");
    match CURRENT.compare_exchange(current, slot, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(&ours.pool),
        // Another thread of this process published a pool meanwhile: use
        // that one (this one's threads idle; two threads starting the
        // first pool at once is rare).
        Err(newer) => match POOLS.get(newer).and_then(OnceLock::get) {
            Some(theirs) if theirs.pid == pid => Ok(&theirs.pool),
            _ => {
                CURRENT.store(slot, Ordering::Release);
                Ok(&ours.pool)
            }
        },
    }
}

/// The error when every slot is taken: building one more pool is refused
/// the way rayon refuses one it cannot start.
fn slots_exhausted() -> rayon::ThreadPoolBuildError {
    // rayon's error type has no public constructor: a failed build gives
    // one (a pool whose thread spawner always fails).
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .spawn_handler(|_| {
            Err(std::io::Error::other(format!(
                "{SLOTS} thread pools started in a chain of forked processes"
            )))
        })
        .build()
        .expect_err("the spawner always fails")
}

/// Starts this process's pool now (it otherwise starts at the first
/// parallel step) and returns its thread count: a front end that wants a
/// limit on threads to be an error at start rather than later calls it
/// first, and one that wants the threads started in a given state (a
/// signal mask, which threads inherit) calls it in that state.
///
/// # Errors
/// rayon's error when the threads cannot be started (a limit on threads
/// or on address space).
pub fn start() -> Result<usize, rayon::ThreadPoolBuildError> {
    pool().map(rayon::ThreadPool::current_num_threads)
}

/// Runs `op` on the library's pool (or on the rayon pool the calling
/// thread belongs to), so that the parallel iterators and `rayon::join`s
/// inside it use that pool; returns its result. If no pool can be started,
/// `op` runs on the calling thread and its parallel steps on rayon's
/// global pool, as before the library had one.
pub fn install<R, F>(op: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if rayon::current_thread_index().is_some() {
        return op();
    }
    match pool() {
        Ok(pool) => pool.install(op),
        Err(_) => op(),
    }
}

/// `rayon::join` on the library's pool: runs `a` and `b`, possibly at
/// once, and returns both results.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    install(|| rayon::join(a, b))
}

/// Threads of the pool the library's parallel steps run on from this
/// thread: the calling rayon pool's, else the library's (started if need
/// be; 1 if it cannot be).
pub fn current_num_threads() -> usize {
    if rayon::current_thread_index().is_some() {
        return rayon::current_num_threads();
    }
    pool().map_or(1, rayon::ThreadPool::current_num_threads)
}

/// Calls `f(i, chunk)` for each `chunk`, the `i`-th run of `chunk_len`
/// elements of `data` (the last may be shorter), the calling thread and
/// the pool's other threads taking chunks in order as each finishes one.
/// After an error no further chunk is started; the error of the first
/// failing chunk (in order) is returned, the same whatever the threads'
/// timing.
///
/// The calling thread works from the first moment rather than waiting
/// for a pool thread to wake up and then waiting to be woken itself (what
/// [`install`] of a parallel iterator costs). Pool threads help only on
/// cores that are idle (Linux: the machine's cores less the other threads
/// running or waiting to run now, and less the last minute's load beyond
/// what the pool's own threads could add, from `/proc/loadavg`; elsewhere
/// every core), as OpenMP's dynamic thread count does with the load
/// average: on a machine whose cores are all busy a helper may get no
/// time for milliseconds while holding a chunk the call must wait for,
/// which made a 5 ms prediction 1.4 to 1.9 times slower with a helper
/// than without (2 cores, load 8). The instant count alone let helpers
/// start at a moment of calm in a busy minute: 9 ms on one thread, 15 ms
/// with a helper (2 cores, load 5.3).
///
/// # Errors
/// The first failing chunk's error.
///
/// # Panics
/// If `chunk_len` is 0, or `f` panics (the panic is passed on once the
/// threads have stopped).
///
/// ```
/// let mut squares = vec![0u64; 10_000];
/// tocpile::parallel::try_for_each_chunk(&mut squares, 1000, |i, chunk| {
///     for (k, v) in chunk.iter_mut().enumerate() {
///         let n = (i * 1000 + k) as u64;
///         *v = n * n;
///     }
///     Ok::<(), String>(())
/// })?;
/// assert_eq!(squares[9_999], 99_980_001);
/// # Ok::<(), String>(())
/// ```
pub fn try_for_each_chunk<T, E, F>(data: &mut [T], chunk_len: usize, f: F) -> Result<(), E>
where
    T: Send,
    E: Send,
    F: Fn(usize, &mut [T]) -> Result<(), E> + Sync,
{
    assert!(chunk_len > 0, "chunk_len must be at least 1");
    let n_chunks = data.len().div_ceil(chunk_len);
    let chunks = Mutex::new(data.chunks_mut(chunk_len).enumerate());
    let failed: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let work = || {
        while !stop.load(Ordering::Relaxed) {
            let next = chunks.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((i, chunk)) = next else { break };
            if let Err(e) = f(i, chunk) {
                stop.store(true, Ordering::Relaxed);
                let mut first = failed.lock().unwrap_or_else(PoisonError::into_inner);
                if first.as_ref().is_none_or(|(j, _)| i < *j) {
                    *first = Some((i, e));
                }
            }
        }
    };
    let helpers = |threads: usize| helpers_for(threads, n_chunks, idle_cores);
    if rayon::current_thread_index().is_some() {
        let helpers = helpers(rayon::current_num_threads());
        rayon::in_place_scope(|scope| spread(scope, helpers, &work));
    } else {
        let pool = pool().ok();
        match pool.map(|pool| (helpers(pool.current_num_threads()), pool)) {
            Some((helpers, pool)) if helpers > 0 => {
                pool.in_place_scope(|scope| spread(scope, helpers, &work));
            }
            _ => work(),
        }
    }
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Helper threads for a call of `n_chunks` chunks on a pool of
/// `threads`, given the idle cores `idle(threads)` reports. The load is
/// read only where there could be a helper (a pool of one thread, or one
/// chunk, never has any): on one thread, reading `/proc/loadavg` was
/// about 0.5% of a prediction's time for nothing.
fn helpers_for(threads: usize, n_chunks: usize, idle: impl FnOnce(usize) -> usize) -> usize {
    match threads.min(n_chunks) {
        0 | 1 => 0,
        most => most.min(idle(threads)).saturating_sub(1),
    }
}

/// Cores free for this call's threads on a pool of `threads`: the cores
/// this process may use less the busy ones ([`busy_of`] of Linux's
/// `/proc/loadavg`), at least 1; every core where that file is missing.
fn idle_cores(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| busy_of(&text, threads));
    match busy {
        Some(b) => cores.saturating_sub(b).max(1),
        None => cores,
    }
}

/// Cores busy with other work by a `/proc/loadavg` line
/// (`"5.30 4.10 3.00 3/456 7890"`): the larger of the threads running or
/// runnable now other than the caller (the fourth field's first number,
/// less 1) and the last minute's load average beyond the `threads` a pool
/// of this process adds at most (whole cores, rounded down). The second
/// keeps helpers off a machine busy on average that is calm for an
/// instant; a process whose own pool made the load does not count it.
fn busy_of(loadavg: &str, threads: usize) -> Option<usize> {
    let mut fields = loadavg.split_whitespace();
    let minute: f64 = fields.next()?.parse().ok()?;
    let runnable: usize = fields.nth(2)?.split('/').next()?.parse().ok()?;
    let beyond = (minute - threads as f64).max(0.0).floor() as usize;
    Some(runnable.saturating_sub(1).max(beyond))
}

/// `work` on `helpers` tasks of `scope` and on the calling thread.
fn spread<'s>(scope: &rayon::Scope<'s>, helpers: usize, work: &'s (dyn Fn() + Sync)) {
    for _ in 0..helpers {
        scope.spawn(move |_| work());
    }
    work();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_runs_on_the_library_pool_and_nested_work_stays_there() {
        let name = install(|| std::thread::current().name().map(str::to_owned));
        assert!(name.unwrap().starts_with("tocpile-worker-"));
        let nested = install(|| install(|| rayon::current_thread_index().is_some()));
        assert!(nested);
        let sum: u64 = install(|| (0..10_000u64).into_par_iter().sum());
        assert_eq!(sum, 49_995_000);
        assert_eq!(start().unwrap(), current_num_threads());
    }

    #[test]
    fn a_callers_pool_is_kept() {
        let theirs = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .thread_name(|i| format!("caller-{i}"))
            .build()
            .unwrap();
        let (threads, name) = theirs.install(|| {
            let name = install(|| std::thread::current().name().map(str::to_owned));
            (current_num_threads(), name.unwrap())
        });
        assert_eq!(threads, 3);
        assert!(name.starts_with("caller-"), "{name}");
    }

    #[test]
    fn chunks_are_each_done_once_and_the_first_error_wins() {
        let mut seen = vec![0u32; 100_003];
        let ok: Result<(), ()> = try_for_each_chunk(&mut seen, 1000, |i, chunk| {
            assert!(chunk.len() == 1000 || (i == 100 && chunk.len() == 3));
            chunk.iter_mut().for_each(|v| *v += 1);
            Ok(())
        });
        assert!(ok.is_ok() && seen.iter().all(|&v| v == 1));
        for _ in 0..20 {
            let err = try_for_each_chunk(&mut seen, 10, |i, _| match i {
                3 | 7 | 9000 => Err(i),
                _ => Ok(()),
            });
            assert_eq!(err, Err(3));
        }
        let empty: Result<(), ()> = try_for_each_chunk(&mut [0u8; 0], 4, |_, _| Err(()));
        assert!(empty.is_ok());
    }

    #[test]
    fn one_thread_or_one_chunk_never_reads_the_load() {
        let never = |_: usize| -> usize { panic!("the load was read") };
        assert_eq!(super::helpers_for(1, 100, never), 0);
        assert_eq!(super::helpers_for(8, 1, never), 0);
        assert_eq!(super::helpers_for(8, 0, never), 0);
        assert_eq!(super::helpers_for(4, 100, |t| t), 3);
        assert_eq!(super::helpers_for(4, 100, |_| 2), 1);
        assert_eq!(super::helpers_for(4, 3, |_| 8), 2);
        assert_eq!(super::helpers_for(4, 100, |_| 1), 0);
    }

    #[test]
    fn busy_cores_are_read_from_loadavg() {
        // Now: 2 other threads; the minute: 0.5 beyond a pool of 2.
        assert_eq!(busy_of("2.50 0.60 0.70 3/456 7890\n", 2), Some(2));
        // The minute: 3.3 beyond a pool of 2, now only the caller.
        assert_eq!(busy_of("5.30 4.10 3.00 1/456 7890", 2), Some(3));
        // A quiet machine, the load this process's pool made.
        assert_eq!(busy_of("1.90 1.00 0.50 1/456 7890", 2), Some(0));
        assert_eq!(busy_of("0.00 0.00 0.00 0/1 1", 1), Some(0));
        assert_eq!(busy_of("0.50 0.60", 2), None);
        assert_eq!(busy_of("a b c x/y z", 2), None);
        assert!(idle_cores(2) >= 1);
    }

    #[test]
    fn one_pool_per_process() {
        let a = pool().unwrap() as *const _;
        let b = std::thread::spawn(|| pool().unwrap() as *const _ as usize)
            .join()
            .unwrap();
        assert_eq!(a as usize, b);
    }
}
