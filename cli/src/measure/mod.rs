//! Measuring and rendering the paper's experiments on the user's data: the
//! compression ratios of the TOC paper's Figures 5 to 7 ([`ratios`]) and
//! the kernel table of its Figure 8 ([`kernels`]), and the sizes of TOC's
//! layout variants with the codec's speed ([`codec`]), and the default dataset file against the
//! input text compressed ([`file`]). They live in the
//! command line, not the library: they time, pick medians and print
//! tables, which a library user does not need; `tocpile ratio`,
//! `tocpile bench` and `tocpile demo` share them.

pub mod codec;
pub mod file;
pub mod kernels;
pub mod ratios;

/// What this process may allocate at most, as far as it can tell, and
/// why: the address-space limit (`ulimit -v`, from `/proc/self/limits`)
/// or the memory available (`MemAvailable` in `/proc/meminfo`), the
/// smaller; `None` where neither can be read.
pub fn memory_ceiling() -> Option<(u64, &'static str)> {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| address_space_limit(&text))
        .map(|bytes| (bytes, "the address-space limit (ulimit -v)"));
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text))
        .map(|bytes| (bytes, "the memory available (MemAvailable)"));
    match (limit, available) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The soft "Max address space" of `/proc/self/limits`, in bytes (`None`
/// when unlimited).
fn address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line["MemAvailable:".len()..].split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib * 1024)
}

/// The largest dense batch (bytes of its `f64` matrix) a measurement
/// should build, given `requested` (the option): encoding a dense format,
/// compressing it and decoding it back to verify takes about four times
/// the matrix, and two batches run at once, so at most an eighth of
/// [`memory_ceiling`]. Returns the bound and, when it is lower than
/// `requested`, why.
pub fn dense_budget(requested: u64) -> (u64, Option<String>) {
    match memory_ceiling() {
        Some((ceiling, source)) if ceiling / 8 < requested => (
            ceiling / 8,
            Some(format!(
                "lowered to {} MiB, an eighth of {source}, {} MiB: a dense batch takes about \
                 four times its matrix to encode, compress and verify, two batches at once",
                (ceiling / 8) >> 20,
                ceiling >> 20
            )),
        ),
        _ => (requested, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max address space         1024000000           unlimited            bytes     \n";
        assert_eq!(address_space_limit(limits), Some(1_024_000_000));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(unlimited), None);
        assert_eq!(
            mem_available("MemTotal: 9 kB\nMemAvailable:   2048 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(mem_available("MemAvailable: 5 MB\n"), None);
    }
}
