//! Threads inside a backend. PostgreSQL's signal handlers (query cancel,
//! latches) expect to run on the backend's thread, the only one that may
//! call PostgreSQL; every thread the extension starts, its own and the
//! library's thread pool, is started with every signal blocked, so the
//! kernel delivers signals to the backend's thread alone. No thread but
//! the backend's ever calls PostgreSQL.

use std::sync::Once;

/// Runs `f` with every signal blocked on this thread (threads it starts
/// inherit the mask), then restores the mask, also on unwinding.
pub fn with_signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(libc::sigset_t);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: restores the mask saved below.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
            }
        }
    }
    // SAFETY: plain signal-mask calls on this thread.
    let _restore = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        Restore(old)
    };
    f()
}

/// Starts the library's thread pool (`tocpile::parallel`) with signals
/// blocked, once per backend, before any library call that may use it.
pub fn start_pool() {
    static POOL: Once = Once::new();
    POOL.call_once(|| {
        with_signals_blocked(|| {
            // An error (no threads to be had) surfaces again, as that
            // call's error or rayon's, at the first parallel step.
            let _ = tocpile_lib::parallel::start();
        });
    });
}
