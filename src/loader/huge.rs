//! Large arrays the loader reads at random (the buffer's code rows, the
//! epoch's row order), backed by 2 MiB pages where the system allows it.
//!
//! A shuffled epoch reads each row from a random place in tens of MiB. On
//! 4 KiB pages nearly every such read also misses the TLB, and on the
//! virtual machines this project measures on a page walk costs as much as
//! the read itself: a chain of dependent random reads over 32 MiB took 274
//! ns a read on 4 KiB pages and 176 ns on 2 MiB pages, independent reads
//! 19 ns and 8 ns, and over 4 MiB 174 ns against 15 ns (the working set
//! then fits the cache once the TLB covers it). The shuffled gather of a
//! flights3m epoch went from 115 to 66 ns a row (`docs/archive/RESULTS-HISTORY.md`,
//! section 33).
//!
//! Linux backs a region with huge pages on its first touch when it is
//! advised so (`madvise(MADV_HUGEPAGE)`, honoured in the kernel's default
//! "madvise" mode of transparent huge pages). So a vector is reserved
//! first and advised before anything is written into the reservation.
//! The advice is a hint: it never changes what memory holds, and where it
//! is not honoured (other systems, huge pages off) nothing else changes.

use crate::error::Result;
use crate::limits::try_reserve;

/// Bytes of a huge page: only whole, aligned huge pages of a region are
/// advised.
const HUGE_PAGE: usize = 2 << 20;

/// Smallest reservation worth advising: below a few huge pages the TLB
/// covers the array anyway.
const ADVISE_FROM: usize = 4 * HUGE_PAGE;

/// [`try_reserve`], then the untouched part of the reservation advised
/// for huge pages when it spans a few of them.
pub(crate) fn reserve_huge<T>(v: &mut Vec<T>, additional: usize, what: &'static str) -> Result<()> {
    let before = v.capacity();
    try_reserve(v, additional, what)?;
    if v.capacity() != before {
        advise(v);
    }
    Ok(())
}

/// Advises the spare capacity of `v` (memory not yet written, hence not
/// yet backed by pages) for huge pages.
#[cfg(target_os = "linux")]
fn advise<T>(v: &mut Vec<T>) {
    let spare = v.spare_capacity_mut();
    let (start, len) = (spare.as_mut_ptr() as usize, std::mem::size_of_val(spare));
    if len < ADVISE_FROM {
        return;
    }
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + len) / HUGE_PAGE * HUGE_PAGE;
    if end <= first {
        return;
    }
    // SAFETY: `first..end` lies within the vector's allocation (its
    // spare capacity, rounded inwards to huge pages), which stays mapped
    // while `v` is borrowed here. MADV_HUGEPAGE only asks the kernel to
    // back the range with huge pages: it changes no content, no
    // protection and no mapping, so no reference to the memory is
    // invalidated. Its result is ignored: refusing the hint is harmless.
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise<T>(_: &mut Vec<T>) {}

#[cfg(test)]
mod tests {
    use super::reserve_huge;

    #[test]
    fn reserving_keeps_the_contents_and_grows_the_capacity() {
        let mut v: Vec<u32> = (0..1000).collect();
        reserve_huge(&mut v, 20 << 20, "a test array").unwrap();
        assert!(v.capacity() >= 1000 + (20 << 20));
        assert_eq!(v, (0..1000).collect::<Vec<u32>>());
        v.extend(0..(20u32 << 20));
        assert_eq!(v[1000 + 12345], 12345);
        let mut small: Vec<u8> = Vec::new();
        reserve_huge(&mut small, 10, "a small array").unwrap();
        assert!(small.capacity() >= 10);
    }

    #[test]
    fn an_impossible_reservation_is_an_error() {
        let mut v: Vec<u64> = Vec::new();
        assert!(reserve_huge(&mut v, usize::MAX / 4, "a huge array").is_err());
    }
}
