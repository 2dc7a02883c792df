//! Telling a dataset file that was cut short from one that is damaged.
//!
//! A complete file ends with its trailer ("TOCD"); a copy or write that
//! stopped early ends anywhere. When the trailer is missing but the header
//! is sound, the pages are walked from the header on (their lengths are
//! written inline) until one runs past the end of the file: the file is
//! truncated, and that page's end plus the trailer is a lower bound of
//! the size it had. Only called on the error path of an open.

use super::footer::{parse_footer, HEADER_LEN, TRAILER_LEN};
use super::source::Source;
use crate::error::{Error, Result};
use crate::wire::Reader;

use super::labels::LabelsForm;

/// The footer's first bytes (see `footer.rs`).
const FOOTER_MAGIC: &[u8; 4] = b"TOCF";
/// Pages walked at most (the walk is a diagnosis, not a scan of a huge
/// file).
const MAX_PAGES: u64 = 1 << 20;
/// Bytes read at a time: enough for a page's varints.
const WINDOW: u64 = 32;

/// The size a file of `len` bytes whose trailer magic is wrong had at
/// least, if its pages show that it was cut short; `None` if they do not
/// parse, or if the last 16 bytes hold a trailer pointing at the footer
/// the walk found (the file is damaged, not truncated).
pub(super) fn lower_bound<S: Source>(
    source: &S,
    len: u64,
    (version, trailer): (u8, &[u8]),
) -> Option<u64> {
    let form = LabelsForm::of_version(version);
    let copies = version >= super::COPIES_VERSION;
    let runs = version >= super::RUNS_VERSION;
    let mut at = HEADER_LEN;
    for _ in 0..MAX_PAGES {
        let head = window(source, at, len)?;
        // The footer's magic, or as much of it as the cut left.
        let footer = head.starts_with(FOOTER_MAGIC)
            || (head.len() < FOOTER_MAGIC.len() && FOOTER_MAGIC.starts_with(&head));
        if footer {
            let claimed = trailer
                .get(..8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
            if claimed == Some(at) {
                return None;
            }
            // Every page is there; the footer or trailer is cut.
            return footer_end(source, at, len, version).checked_add(TRAILER_LEN);
        }
        // A page copy (version 5) is one zero byte; a run of them
        // (version 6) the zero byte and a varint.
        let step = if copies && head.first() == Some(&0) {
            if runs {
                run_end(&head, at)
            } else {
                Step::Next(at + 1)
            }
        } else {
            page_end(source, at, len, form)
        };
        match step {
            Step::Next(end) if end <= len => at = end,
            // A length past any file is garbage, not a cut (and must not
            // overflow).
            Step::Next(end) => return end.checked_add(TRAILER_LEN),
            Step::CutInHeader => return Some(len + TRAILER_LEN),
            Step::Garbage => return None,
        }
    }
    None
}

enum Step {
    /// The page ends at this byte.
    Next(u64),
    /// The file ends inside the page's varints.
    CutInHeader,
    /// The bytes are not a page.
    Garbage,
}

/// The end of a run of page copies at `at` whose bytes from `at` on
/// are `head`: the zero byte, then a varint.
fn run_end(head: &[u8], at: u64) -> Step {
    match head[1..].iter().position(|&b| b < 0x80) {
        Some(i) if i < 10 => Step::Next(at + 2 + i as u64),
        None if (head.len() as u64) < WINDOW => Step::CutInHeader,
        _ => Step::Garbage,
    }
}

/// Up to [`WINDOW`] bytes from `at`, fewer at the end of the file.
fn window<S: Source>(source: &S, at: u64, len: u64) -> Option<Vec<u8>> {
    let n = WINDOW.min(len.saturating_sub(at));
    let mut buf = vec![0u8; n as usize];
    source.read_exact_at(&mut buf, at).ok()?;
    Some(buf)
}

/// Where the page starting at `at` ends: `rows labels payload_len payload`
/// (`labels = dict_len f64{dict_len} count width ids`, after a kind byte
/// 0 in version 2; or, version 2, `0x01 n int{n} ids` with `rows` ids).
fn page_end<S: Source>(source: &S, at: u64, len: u64, form: LabelsForm) -> Step {
    let tagged = form.tagged();
    let step = |pos: u64, parse: &dyn Fn(&mut Reader<'_>) -> Result<u64>| -> Step {
        let Some(bytes) = window(source, pos, len) else {
            return Step::Garbage;
        };
        let mut r = Reader::new(&bytes);
        match parse(&mut r) {
            Ok(skip) => match (pos + r.offset() as u64).checked_add(skip) {
                Some(end) => Step::Next(end),
                None => Step::Garbage,
            },
            // A varint the file's end cuts: truncated; else not a page.
            Err(_) if pos + (bytes.len() as u64) >= len && bytes.len() < WINDOW as usize => {
                Step::CutInHeader
            }
            Err(_) => Step::Garbage,
        }
    };
    // The integer labels form (version 2): rows, kind, n, the n integers,
    // then the ids (rows of them, width from n), then the payload length.
    // The window holds the varints of small dictionaries only; a larger
    // one reads as garbage (the walk is a diagnosis, not a parser).
    // The scaled form (version 8): rows, kind, exponent, base, width,
    // then the offsets (rows of them).
    let int_end = step(at, &|r| {
        let rows = r.varint("page rows")?;
        let kind = if tagged { r.u8("labels kind")? } else { 0 };
        let width = match kind {
            1 => {
                let n = r.varint("integer label dictionary length")?;
                for _ in 0..n {
                    r.varint("integer label")?;
                }
                (64 - n.saturating_sub(1).leading_zeros()).max(1) as u64
            }
            2 if form == LabelsForm::Scaled => {
                r.u8("label exponent")?;
                r.varint("label base")?;
                r.u8("label offset width")? as u64
            }
            _ => {
                return Err(Error::BadArgument {
                    what: "labels kind",
                    expected: "the integer or scaled form",
                })
            }
        };
        Ok(rows.saturating_mul(width).div_ceil(8))
    });
    if let Step::Next(ids_end) = int_end {
        if ids_end >= len {
            return Step::Next(ids_end);
        }
        return step(ids_end, &|r| r.varint("page payload length"));
    }
    // rows, (kind 0,) dict_len: skip the dictionary.
    let dict_end = match step(at, &|r| {
        r.varint("page rows")?;
        if tagged && r.u8("labels kind")? != 0 {
            return Err(Error::BadArgument {
                what: "labels kind",
                expected: "0 or 1",
            });
        }
        Ok(r.varint("label dictionary length")?.saturating_mul(8))
    }) {
        Step::Next(end) if end < len => end,
        other => return other,
    };
    // The label ids: count, width, payload.
    let ids_end = match step(dict_end, &|r| {
        let count = r.varint("label ids")?;
        let width = r.u8("label id width")?;
        if width > 32 {
            return Err(Error::BadWidth {
                what: "label ids",
                offset: 0,
                width,
            });
        }
        Ok((count.saturating_mul(width as u64)).div_ceil(8))
    }) {
        Step::Next(end) if end < len => end,
        other => return other,
    };
    step(ids_end, &|r| r.varint("page payload length"))
}

/// Where the footer starting at `at` ends, at least: parsed from the
/// bytes up to `len`, it either stops at a field the cut left short, or
/// is followed by part of the trailer.
fn footer_end<S: Source>(source: &S, at: u64, len: u64, version: u8) -> u64 {
    if at >= len {
        return at;
    }
    let mut bytes = vec![0u8; (len - at) as usize];
    if source.read_exact_at(&mut bytes, at).is_err() {
        return len;
    }
    match parse_footer(&bytes, at, version) {
        Err(Error::TrailingBytes { offset, .. }) => at + offset as u64,
        Err(Error::Truncated { offset, needed, .. }) => {
            (at + offset as u64).saturating_add(needed).max(len)
        }
        _ => len,
    }
}
