//! SIGINT and SIGTERM: stop cleanly, leaving no temporary file.
//!
//! A thread takes the signals (through `signal-hook`, so nothing but a
//! pipe write runs in the handler). On the first one it sets the library's
//! interruption flag ([`tocpile::cleanup::interrupt`]): writers fail with
//! `Error::Interrupted` at their next write, their temporary files are
//! removed as the error unwinds, and `main` exits with 128 + the signal
//! number (130 for SIGINT, 143 for SIGTERM), as a shell reports a process
//! killed by it. Work that does not write (a training epoch, a read that
//! blocks on a pipe) cannot notice the flag soon; so if the process has
//! not ended after [`GRACE`], or at a second signal, the thread removes
//! every registered temporary and scratch file itself
//! ([`tocpile::cleanup::remove_registered`]) and exits with the same code.

use std::sync::atomic::{AtomicI32, Ordering};

#[cfg(unix)]
use signal_hook::consts::{SIGINT, SIGTERM};
#[cfg(unix)]
use signal_hook::iterator::Signals;
#[cfg(unix)]
use std::time::{Duration, Instant};

// Elsewhere the numbers only name exit codes (no handler is installed).
#[cfg(not(unix))]
const SIGINT: i32 = 2;
#[cfg(not(unix))]
const SIGTERM: i32 = 15;

#[cfg(unix)]
/// How long the main thread gets to unwind after the first signal.
const GRACE: Duration = Duration::from_millis(1500);

/// The signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The exit code for an interrupted run: 128 + the signal (130 if none
/// was recorded, an interruption being SIGINT's by default).
pub fn exit_code() -> u8 {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => 128 + SIGINT as u8,
        s => 128 + s as u8,
    }
}

/// The name of the signal received, for the error message.
pub fn name() -> &'static str {
    match RECEIVED.load(Ordering::SeqCst) {
        SIGTERM => "SIGTERM",
        _ => "SIGINT",
    }
}

/// Installs the handler thread (Unix). Without it (an error installing,
/// another platform), signals keep their default action: the process
/// dies, and stale temporaries are recognised by name later.
#[cfg(not(unix))]
pub fn install() {}

/// Installs the handler thread (Unix). Without it (an error installing,
/// another platform), signals keep their default action: the process
/// dies, and stale temporaries are recognised by name later.
#[cfg(unix)]
pub fn install() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    // No thread (a limit on threads or on address space): signals keep
    // their default action, as where no handler can be installed.
    let spawned = std::thread::Builder::new()
        .name("tocpile-signals".into())
        .spawn(move || {
            let Some(first) = signals.forever().next() else {
                return;
            };
            RECEIVED.store(first, Ordering::SeqCst);
            tocpile::cleanup::interrupt();
            let deadline = Instant::now() + GRACE;
            while Instant::now() < deadline {
                if signals.pending().next().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            tocpile::cleanup::remove_registered();
            eprintln!(
                "tocpile: interrupted by {}; temporary files removed",
                name()
            );
            std::process::exit(i32::from(exit_code()));
        });
    drop(spawned);
}
