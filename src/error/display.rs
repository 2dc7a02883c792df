//! The message of each [`Error`] variant: what went wrong, where (file,
//! byte offset, row) and, for limits, how to raise them.

use std::fmt;

use super::Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated {
                what,
                offset,
                needed,
                available,
            } => write!(
                f,
                "truncated input: {what} at byte {offset} needs {needed} bytes, {available} left"
            ),
            Error::BadMagic { expected, found } => bad_magic(f, expected, found),
            // A format's name ("CSR") is a word; a description ("a
            // compact page or ...") is a phrase with its own article.
            Error::WrongFormat { expected, found } if expected.contains(' ') => {
                write!(f, "expected {expected}, found {found}")
            }
            Error::WrongFormat { expected, found } => {
                write!(f, "expected a {expected} page, found a {found} page")
            }
            Error::UnsupportedVersion {
                what,
                found,
                supported,
            } => write!(
                f,
                "unsupported {what} version {found} (this build reads up to {supported})"
            ),
            Error::UnknownFlags { offset, flags } => {
                write!(f, "unknown flags {flags:#010b} at byte {offset}")
            }
            Error::BadVarint { what, offset } => {
                write!(f, "malformed varint for {what} at byte {offset}")
            }
            Error::FieldOutOfRange {
                what,
                offset,
                value,
                max,
            } => write!(f, "{what} at byte {offset} is {value}, at most {max} allowed"),
            Error::FieldBelowMinimum {
                what,
                offset,
                value,
                min,
            } => write!(f, "{what} at byte {offset} is {value}, at least {min} required"),
            Error::BadWidth {
                what,
                offset,
                width,
            } => write!(
                f,
                "{what}: bit width {width} at byte {offset} not allowed (1..=32, or 0 where documented)"
            ),
            Error::UnterminatedEscape { what, offset } => write!(
                f,
                "{what}: the array starting at byte {offset} ends inside an element (escape symbols without a final symbol)"
            ),
            Error::NonZeroPadding { what, offset } => {
                write!(f, "{what}: padding bits in byte {offset} are not zero")
            }
            Error::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what}: expected {expected}, found {found}"),
            Error::TrailingBytes { what, offset, len } => {
                write!(f, "{len} unexpected bytes after {what} at byte {offset}")
            }
            Error::CodeOutOfRange {
                row,
                position,
                code,
                limit,
            } => write!(
                f,
                "row {row}, code {position}: node {code} out of range (must be 1..{limit})"
            ),
            Error::ColumnOutOfRange {
                row,
                position,
                col,
                n_cols,
            } => write!(
                f,
                "row {row}, entry {position}: column {col} out of range (the batch has {n_cols} \
                 columns, 0 to {})",
                n_cols.saturating_sub(1)
            ),
            Error::PairColumnOutOfRange { index, col, n_cols } => write!(
                f,
                "pair {index}: column {col} out of range (the batch has {n_cols} columns, 0 to {})",
                n_cols.saturating_sub(1)
            ),
            Error::ValueIdOutOfRange {
                position,
                id,
                dict_len,
            } => write!(
                f,
                "first-layer entry {position}: value id {id} out of range (dictionary has {dict_len})"
            ),
            Error::ZeroValue { what, index } => {
                write!(f, "{what} {index} is zero; zeros are never stored")
            }
            Error::ColumnsNotAscending {
                row,
                position,
                prev,
                col,
            } => write!(
                f,
                "row {row}, entry {position}: column {col} follows column {prev}; columns must be strictly ascending"
            ),
            Error::BadOffsets {
                index,
                offset,
                expected,
            } => write!(f, "row offset {index} is {offset}, expected {expected}"),
            Error::DuplicateEntry { row, col } => {
                write!(f, "duplicate entry at row {row}, column {col}")
            }
            // u64::MAX stands for a count that overflowed.
            Error::TooLarge {
                what,
                value: u64::MAX,
                max,
            } => write!(f, "{what} is more than 64 bits can count, at most {max} supported"),
            Error::TooLarge { what, value, max } => {
                write!(f, "{what} is {value}, at most {max} supported")
            }
            // No path: an `io::Error` converted by `?` with nothing to name.
            Error::Io { path, message, .. } if path.is_empty() => f.write_str(message),
            Error::Io { path, message, .. } => write!(f, "{path}: {message}"),
            Error::Parse {
                path,
                line,
                column,
                expected,
                found,
            } => write!(
                f,
                "{path}:{line}:{column}: expected {expected}, found {found:?}"
            ),
            Error::MissingColumn { path, name, header } => write!(
                f,
                "{path}: the header has no column named {name:?} (columns: {header})"
            ),
            Error::TooManyLevels {
                path,
                column,
                max,
                line,
                found,
            } => write!(
                f,
                "{path}: column {column:?} is categorical (line {line} holds {found:?}, not a number) \
                 and has more than {max} distinct values"
            ),
            Error::InvalidSchema { message } => write!(f, "invalid schema: {message}"),
            Error::BadArgument { what, expected } => {
                write!(f, "bad argument {what}: must be {expected}")
            }
            Error::ChecksumMismatch {
                path,
                section,
                offset,
                expected,
                found,
            } => write!(
                f,
                "{path}: {section} at byte {offset} is damaged: checksum {found:08x}, expected {expected:08x}"
            ),
            Error::BadLabel {
                page,
                row,
                label,
                expected,
            } => write!(
                f,
                "page {page}, row {row}: label {} is not {expected}",
                Number(*label)
            ),
            Error::Diverged {
                epoch,
                learning_rate,
            } => write!(
                f,
                "training diverged in epoch {epoch} (the loss is not finite) with learning \
                 rate {}: lower the learning rate",
                Number(*learning_rate)
            ),
            Error::EmptySplit {
                fraction,
                train_rows,
                test_rows,
            } => write!(
                f,
                "held-out share {} leaves {train_rows} training and {test_rows} held-out rows: \
                 both need rows",
                Number(*fraction)
            ),
            Error::BadValue {
                path,
                row,
                column,
                expected,
                found,
            } => write!(
                f,
                "{path}: row {row} (0-based), column {column:?}: expected {expected}, found {found}"
            ),
            Error::BadColumn {
                path,
                column,
                found,
                expected,
            } => write!(f, "{path}: column {column:?} ({found}): expected {expected}"),
            Error::InFile {
                path,
                section,
                offset,
                error,
            } if section.is_empty() => write!(f, "{path}: {error}"),
            // A section at the start of the file (a model file read whole,
            // a header): its offsets are the file's, "at byte 0" says
            // nothing.
            Error::InFile {
                path,
                section,
                offset: 0,
                error,
            } => write!(f, "{path}: {section}: {error}"),
            Error::InFile {
                path,
                section,
                offset,
                error,
            } => write!(f, "{path}: {section} (at byte {offset}): {error}"),
            Error::Communication {
                rank,
                peer,
                message,
            } => write!(f, "rank {rank}, talking to rank {peer}: {message}"),
            Error::Shuffle {
                worker,
                epoch,
                message,
            } => write!(f, "worker {worker}, shuffle into epoch {epoch}: {message}"),
            Error::Interrupted => write!(f, "interrupted; temporary files removed"),
            Error::LimitExceeded {
                what,
                value,
                max,
                raise,
            } => write!(
                f,
                "{what} is {value}, above the limit of {max}; if the input is trusted, raise the limit with {raise}"
            ),
            Error::InvalidNumber {
                what,
                value,
                expected,
            } => write!(f, "{what} is {}, expected {expected}", Number(*value)),
            Error::NotUtf8 {
                what,
                offset,
                len,
                invalid_at,
            } => write!(
                f,
                "{what} ({len} bytes at byte {offset}) is not UTF-8 text: the byte at {invalid_at} \
                 is not valid UTF-8"
            ),
            Error::OutOfMemory { what, bytes } => write!(
                f,
                "could not allocate {bytes} bytes ({}) for {what}: not enough memory",
                Bytes(*bytes)
            ),
            Error::TruncatedFile { path, len, needed } => write!(
                f,
                "{path}: truncated at byte {len} of at least {needed}: the file ends before its trailer \
                 (a copy or write that did not complete)"
            ),
            Error::BytesAfterEnd { path, end, len } => write!(
                f,
                "{path}: {} bytes follow the file's end at byte {end}: something was written after \
                 the file (as text sent to the same output); the first {end} bytes may be the file",
                len.saturating_sub(*end)
            ),
        }
    }
}

/// What a tocpile magic number stands for.
fn magic_name(magic: &[u8]) -> Option<&'static str> {
    Some(match magic {
        b"TOCB" => "an encoded TOC batch",
        b"TOCD" => "a tocpile dataset file",
        b"TOCF" => "the footer of a dataset file",
        b"TOCM" => "a tocpile model file",
        b"SCAL" => "a scaling section",
        b"TOCS" => "a shuffle session message",
        b"TOCP" => "a shuffle plan message",
        b"TDEN" => "a DEN page",
        b"TCSR" => "a CSR page",
        b"TCVI" => "a CVI page",
        b"TDVI" => "a DVI page",
        b"TSNP" => "a snappy page",
        b"TGZP" => "a gzip page",
        b"TLZ4" => "an LZ4 page",
        _ => return None,
    })
}

/// The message of [`Error::BadMagic`]: what was expected, and what was
/// found when that is another tocpile file (a dataset file given as a
/// model) or nothing.
fn bad_magic(f: &mut fmt::Formatter<'_>, expected: &[u8; 4], found: &[u8]) -> fmt::Result {
    let want = String::from_utf8_lossy(expected);
    let name = magic_name(expected).unwrap_or("the expected format");
    if found.is_empty() {
        return write!(f, "the input is empty; expected {name} (magic \"{want}\")");
    }
    if let Some(other) = magic_name(found) {
        return write!(
            f,
            "this is {other} (magic \"{}\"), not {name} (magic \"{want}\")",
            String::from_utf8_lossy(found)
        );
    }
    let hex: Vec<String> = found.iter().map(|b| format!("{b:02x}")).collect();
    write!(
        f,
        "not {name}: the first bytes are {}, not its magic \"{want}\"",
        hex.join(" ")
    )
}

/// A number for a message: plain decimals for everyday magnitudes, the
/// shortest exponent form for the very large and the very small (1e300,
/// not three hundred digits).
pub(crate) struct Number(pub(crate) f64);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let magnitude = v.abs();
        if v.is_finite() && v != 0.0 && !(1e-4..1e15).contains(&magnitude) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}

/// A byte count in the largest binary unit that keeps it at least 1.
pub(crate) struct Bytes(pub(crate) u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
        let mut v = self.0 as f64;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} bytes", self.0)
        } else {
            write!(f, "{v:.1} {}", UNITS[unit])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(Number(1e300).to_string(), "1e300");
        assert_eq!(Number(-2.5e-9).to_string(), "-2.5e-9");
        assert_eq!(Number(0.75).to_string(), "0.75");
        assert_eq!(Number(12345.5).to_string(), "12345.5");
        assert_eq!(Number(0.0).to_string(), "0");
        assert_eq!(Number(f64::NAN).to_string(), "NaN");
        assert_eq!(Number(f64::NEG_INFINITY).to_string(), "-inf");
        assert_eq!(Bytes(512).to_string(), "512 bytes");
        assert_eq!(Bytes(536_870_912).to_string(), "512.0 MiB");
    }

    #[test]
    fn a_wrong_magic_names_what_was_found() {
        let text = |found: &[u8]| {
            Error::BadMagic {
                expected: *b"TOCM",
                found: found.to_vec(),
            }
            .to_string()
        };
        assert_eq!(
            text(b"TOCD"),
            "this is a tocpile dataset file (magic \"TOCD\"), not a tocpile model file (magic \"TOCM\")"
        );
        assert!(text(b"").starts_with("the input is empty"), "{}", text(b""));
        assert!(
            text(b"\x89PNG").contains("89 50 4e 47"),
            "{}",
            text(b"\x89PNG")
        );
    }

    /// `?` on an `io::Result` in a caller's code: the kind and the error
    /// itself stay reachable through `source()`, also inside `InFile`.
    #[test]
    fn an_io_error_converted_by_question_mark_keeps_its_source() {
        use std::error::Error as _;
        fn open() -> crate::Result<std::fs::File> {
            Ok(std::fs::File::open("/nonexistent/tocpile-io-source")?)
        }
        let e = open().unwrap_err();
        assert!(
            matches!(&e, Error::Io { kind: std::io::ErrorKind::NotFound, path, .. } if path.is_empty()),
            "{e:?}"
        );
        assert!(!e.to_string().starts_with(':'), "{e}");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.map(|io| io.kind()), Some(std::io::ErrorKind::NotFound));
        let wrapped = Error::InFile {
            path: "x.toc".into(),
            section: "header".into(),
            offset: 0,
            error: Box::new(e.clone()),
        };
        let inner = wrapped.source().and_then(|s| s.downcast_ref::<Error>());
        assert_eq!(inner, Some(&e));
        assert!(inner.and_then(|i| i.source()).is_some());
    }
}
