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
            Error::BadMagic { found } => {
                write!(
                f,
                "unknown magic bytes {found:02x?}: not a TOC batch (\"TOCB\") nor a page of the expected format"
            )
            }
            Error::WrongFormat { expected, found } => {
                write!(f, "expected a {expected} page, found a {found} page")
            }
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported format version {found} (this build reads up to {supported})"
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
            Error::TrailingBytes { offset, len } => {
                write!(f, "{len} unexpected bytes after the batch at byte {offset}")
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
                "row {row}, entry {position}: column {col} out of range (n_cols = {n_cols})"
            ),
            Error::PairColumnOutOfRange { index, col, n_cols } => write!(
                f,
                "pair {index}: column {col} out of range (n_cols = {n_cols})"
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
            Error::TooLarge { what, value, max } => {
                write!(f, "{what} is {value}, at most {max} supported")
            }
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
                "page {page}, row {row}: label {label} is not {expected}"
            ),
            Error::Diverged {
                epoch,
                learning_rate,
            } => write!(
                f,
                "training diverged in epoch {epoch} (the loss is not finite) with learning \
                 rate {learning_rate}: lower the learning rate"
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
            Error::OutOfMemory { what, bytes } => write!(
                f,
                "cannot allocate {bytes} bytes for {what}: not enough memory"
            ),
            Error::TruncatedFile { path, len, needed } => write!(
                f,
                "{path}: truncated at byte {len} of at least {needed}: the file ends before its trailer \
                 (a copy or write that did not complete)"
            ),
        }
    }
}
