//! Missing values in numeric columns: which CSV cells count as missing,
//! and how a missing cell is encoded.
//!
//! # The rule
//!
//! - **Missing cells.** In a numeric CSV column, a field is missing when,
//!   after trimming ASCII spaces, it is empty or equals one of the schema's
//!   *missing markers*, byte for byte (case matters). Schemas inferred or
//!   built by this version use [`DEFAULT_MISSING_MARKERS`] (`NA`, `N/A`,
//!   `n/a`, `#N/A`, `NULL`, `null`, `None`, `?`) unless
//!   [`CsvOptions::missing_markers`] names others. In Arrow and Parquet
//!   input a null in a numeric or boolean column is missing.
//! - **Numeric or categorical.** Schema inference makes a CSV column
//!   categorical as soon as one field is neither a number nor missing: a
//!   single `unknown` among numbers is enough, missing cells never are. A
//!   column whose every field is missing is numeric. In a categorical
//!   column markers are ordinary values: `NA` is a level like any other
//!   (its one-hot column is the column's missing indicator).
//! - **Encoding.** A missing value reads as 0 (no entry in the sparse
//!   row). A [`Column::NumericWithIndicator`] has a second output column,
//!   right after the value's, holding 1 where the value is missing; schema
//!   inference gives a numeric column one when the options ask for
//!   indicators ([`CsvOptions::missing_indicators`]) and the column has at
//!   least one missing cell.
//! - **Not missing.** `NaN` and infinities are not markers: in a numeric
//!   column they are an error at their line (one of them poisons every
//!   weight it touches). A field that is neither a number nor missing in a
//!   numeric column (a test file read with its training set's schema) is
//!   an error too.
//!
//! Schemas store their markers in their text form (version 2); a version 1
//! schema, written before markers existed, reads with no markers, so only
//! empty fields are missing, as they were then.
//!
//! [`CsvOptions::missing_markers`]: super::csv::CsvOptions::missing_markers
//! [`CsvOptions::missing_indicators`]: super::csv::CsvOptions::missing_indicators
//! [`Column::NumericWithIndicator`]: super::csv::Column::NumericWithIndicator

use super::parse_finite;
use crate::error::{Error, Result};

/// The missing markers of schemas inferred or built by this version: what
/// R (`NA`), spreadsheets (`#N/A`), SQL exports (`NULL`), pandas
/// (`N/A`, `n/a`, `null`, `None`) and the UCI repository (`?`) write for a
/// missing number.
pub const DEFAULT_MISSING_MARKERS: &[&str] =
    &["NA", "N/A", "n/a", "#N/A", "NULL", "null", "None", "?"];

/// The most missing markers a schema may have (not part of the API,
/// hidden: may change in any release).
#[doc(hidden)]
pub const MAX_MISSING_MARKERS: usize = 64;

/// The longest missing marker, in bytes.
const MAX_MARKER_BYTES: usize = 64;

/// [`DEFAULT_MISSING_MARKERS`] as owned strings.
pub(crate) fn default_markers() -> Vec<String> {
    DEFAULT_MISSING_MARKERS
        .iter()
        .map(|m| m.to_string())
        .collect()
}

/// Whether a numeric field, spaces already trimmed, is missing: empty or
/// one of `markers`.
#[inline]
pub(crate) fn is_missing(trimmed: &[u8], markers: &[String]) -> bool {
    trimmed.is_empty() || markers.iter().any(|m| m.as_bytes() == trimmed)
}

/// Checks a list of markers: each non-empty, without leading or trailing
/// spaces (fields are trimmed before the comparison), without line breaks,
/// not a number, at most 64 bytes; no repeats; at most
/// [`MAX_MISSING_MARKERS`] of them.
pub(crate) fn check_markers(markers: &[String]) -> Result<()> {
    let invalid = |message: String| Err(Error::InvalidSchema { message });
    if markers.len() > MAX_MISSING_MARKERS {
        return invalid(format!(
            "{} missing markers, at most {MAX_MISSING_MARKERS} allowed",
            markers.len()
        ));
    }
    for (i, marker) in markers.iter().enumerate() {
        let bytes = marker.as_bytes();
        if bytes.is_empty() || bytes.trim_ascii() != bytes {
            return invalid(format!(
                "missing marker {marker:?} is empty or has spaces around it"
            ));
        }
        if marker.contains(['\n', '\r']) || bytes.len() > MAX_MARKER_BYTES {
            return invalid(format!(
                "missing marker {marker:?} has a line break or more than {MAX_MARKER_BYTES} bytes"
            ));
        }
        if parse_finite(bytes).is_some() || marker.parse::<f64>().is_ok() {
            return invalid(format!("missing marker {marker:?} is a number"));
        }
        if markers[..i].contains(marker) {
            return invalid(format!("missing marker {marker:?} is repeated"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_markers() {
        check_markers(&default_markers()).unwrap();
    }

    #[test]
    fn empty_and_markers_are_missing() {
        let markers = default_markers();
        for field in ["", "NA", "?", "NULL", "#N/A"] {
            assert!(is_missing(field.as_bytes(), &markers), "{field:?}");
        }
        for field in ["na", "NaN", "0", "nan", "unknown", "N A"] {
            assert!(!is_missing(field.as_bytes(), &markers), "{field:?}");
        }
        assert!(is_missing(b"", &[]));
        assert!(!is_missing(b"NA", &[]));
    }

    #[test]
    fn bad_markers_are_rejected() {
        for bad in [
            vec![String::new()],
            vec![" NA".to_string()],
            vec!["1".to_string()],
            vec!["NaN".to_string()],
            vec!["inf".to_string()],
            vec!["a\nb".to_string()],
            vec!["x".repeat(65)],
            vec!["NA".to_string(), "NA".to_string()],
            (0..65).map(|i| format!("m{i}")).collect(),
        ] {
            assert!(
                matches!(check_markers(&bad), Err(Error::InvalidSchema { .. })),
                "{bad:?}"
            );
        }
    }
}
