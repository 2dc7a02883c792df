//! Software prefetch: asking the processor to bring a cache line in
//! before it is read, where the read's address is known early but the
//! read itself comes later. The loader's shuffled gathers and the
//! shuffle of a large row order read from random places in tens of MiB;
//! issued one after the other, each such read waits for the memory in
//! turn (about 150 ns on the project's machines), while prefetches of
//! the next reads overlap those waits with the work on the current ones.

/// Lines fetched ahead by [`Rng::shuffle`](crate::rng::Rng::shuffle) and
/// the gathers: enough reads in flight to cover the memory's latency, few
/// enough not to evict what is being worked on.
pub(crate) const AHEAD: usize = 16;

/// Hints that `slice[i]` will be read soon. A hint only: nothing is read
/// and nothing happens for an index out of range, or on processors
/// without the instruction.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i) {
        let p = (x as *const T).cast::<i8>();
        // SAFETY: PREFETCHT0 only hints the cache: it reads nothing into
        // a register, writes nothing and never faults (even for an
        // invalid address; this one is an element of a live slice). The
        // SSE feature it needs is part of every x86_64 target.
        #[allow(unsafe_code)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}
