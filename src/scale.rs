//! Column scaling as scikit-learn users know it, applied to a model's
//! parameters instead of the data.
//!
//! - [`ScaleKind::MaxAbs`]: scikit-learn's `MaxAbsScaler`: column `j` is
//!   divided by `max_i |x_ij|`, so every value lands in `[-1, 1]` and a zero
//!   stays a zero (sparsity kept).
//! - [`ScaleKind::Standard`]: `StandardScaler(with_mean=False)`: column `j`
//!   is divided by its standard deviation (population variance, around the
//!   mean, as scikit-learn computes it), without subtracting the mean, so
//!   zeros stay zeros.
//!
//! A column whose divisor would be zero (all zeros, or constant for the
//! standard scaler) keeps the factor 1, as scikit-learn does.
//!
//! Scaling column `j` by `s_j` before a linear map is the same as scaling
//! row `j` of the first layer's weights by `s_j`. Training on scaled data
//! `x' = s * x` with parameters `w'` is therefore training on the raw data
//! with `w = s * w'`: the data, its compressed pages and their ratio stay
//! as they are, and the model learns in the scaled coordinates (see
//! [`Model::set_scaling`](crate::model::Model::set_scaling)). The factors
//! are fitted in one streaming pass ([`ColumnStats`]), stored in the
//! dataset file's footer and in model files (`docs/FORMAT.md`).

use crate::error::{Error, Result};
use crate::sparse::SparseBatch;
use crate::wire::{f64_at, write_f64s, write_varint, Reader};

/// Which scaler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ScaleKind {
    /// Divide each column by its largest absolute value (`MaxAbsScaler`).
    MaxAbs,
    /// Divide each column by its standard deviation, no centering
    /// (`StandardScaler(with_mean=False)`).
    Standard,
}

impl ScaleKind {
    /// The names [`from_name`](Self::from_name) accepts.
    pub const NAMES: [&'static str; 2] = ["maxabs", "standard"];

    /// The short name (`maxabs`, `standard`).
    pub fn name(self) -> &'static str {
        match self {
            ScaleKind::MaxAbs => "maxabs",
            ScaleKind::Standard => "standard",
        }
    }

    /// Looks a scaler up by short name, ignoring case.
    pub fn from_name(name: &str) -> Option<ScaleKind> {
        match name.to_ascii_lowercase().as_str() {
            "maxabs" => Some(ScaleKind::MaxAbs),
            "standard" => Some(ScaleKind::Standard),
            _ => None,
        }
    }

    /// The kind's code in files: 1 max-abs, 2 standard. Fixed forever.
    pub const fn code(self) -> u8 {
        match self {
            ScaleKind::MaxAbs => 1,
            ScaleKind::Standard => 2,
        }
    }

    fn from_code(code: u8) -> Option<ScaleKind> {
        match code {
            1 => Some(ScaleKind::MaxAbs),
            2 => Some(ScaleKind::Standard),
            _ => None,
        }
    }
}

impl std::fmt::Display for ScaleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Per-column statistics gathered in one pass over the rows: what either
/// scaler needs.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnStats {
    rows: u64,
    max_abs: Vec<f64>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl ColumnStats {
    /// Empty statistics over `n_cols` columns (three `f64`s a column).
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] above the column limit of
    /// [`crate::limits`] (an input's column count is the input's word),
    /// [`Error::OutOfMemory`] if the system refuses the memory.
    pub fn new(n_cols: usize) -> Result<ColumnStats> {
        crate::limits::check_cols(n_cols, "columns of a scaling")?;
        let what = "column statistics of a scaling";
        Ok(ColumnStats {
            rows: 0,
            max_abs: crate::limits::try_filled(n_cols, 0.0, what)?,
            sum: crate::limits::try_filled(n_cols, 0.0, what)?,
            sum_sq: crate::limits::try_filled(n_cols, 0.0, what)?,
        })
    }

    /// Rows seen.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds the rows of `batch` (a batch of another width than the
    /// statistics' is a [`Error::LengthMismatch`]).
    pub fn add(&mut self, batch: &SparseBatch) -> Result<()> {
        if batch.n_cols() != self.max_abs.len() {
            return Err(Error::LengthMismatch {
                what: "columns of the rows scaled (the statistics' column count)",
                expected: self.max_abs.len() as u64,
                found: batch.n_cols() as u64,
            });
        }
        for (cols, vals) in batch.rows() {
            for (&c, &v) in cols.iter().zip(vals) {
                let c = c as usize;
                self.max_abs[c] = self.max_abs[c].max(v.abs());
                self.sum[c] += v;
                self.sum_sq[c] += v * v;
            }
        }
        self.rows += batch.n_rows() as u64;
        Ok(())
    }

    /// The scaling of `kind` these statistics give.
    pub fn scaling(&self, kind: ScaleKind) -> Scaling {
        let n = self.rows.max(1) as f64;
        let factors = (0..self.max_abs.len())
            .map(|j| {
                let divisor = match kind {
                    ScaleKind::MaxAbs => self.max_abs[j],
                    ScaleKind::Standard => {
                        let mean = self.sum[j] / n;
                        (self.sum_sq[j] / n - mean * mean).max(0.0).sqrt()
                    }
                };
                // A zero (or vanishing) divisor keeps the column as it is.
                if divisor > 0.0 && divisor.is_finite() && (1.0 / divisor).is_finite() {
                    1.0 / divisor
                } else {
                    1.0
                }
            })
            .collect();
        Scaling { kind, factors }
    }
}

/// A fitted scaling: a factor per column, by which the column is
/// multiplied (`1 / max|x_j|` or `1 / std(x_j)`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "ScalingFields"))]
pub struct Scaling {
    kind: ScaleKind,
    factors: Vec<f64>,
}

/// First bytes of the scaling section (dataset footers, model files).
const MAGIC: [u8; 4] = *b"SCAL";
/// Scaling section version 1: every column's factor.
const VERSION_DENSE: u8 = 1;
/// Scaling section version 2: only the factors other than 1. One-hot and
/// count columns, which max-abs scales by 1, are most columns of wide
/// sparse sets: 8 bytes each of the dense form were 8 to 14% of a default
/// dataset file on sets of 4,000 to 10,000 columns (`docs/archive/RESULTS-HISTORY.md`,
/// section 28).
const VERSION_SPARSE: u8 = 2;
/// Smallest entry of the sparse form: a one-byte gap and an `f64`.
const MIN_SPARSE_ENTRY: usize = 9;

/// What a serialized [`Scaling`] holds, checked by [`Scaling::new`] when
/// it is read back.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct ScalingFields {
    kind: ScaleKind,
    factors: Vec<f64>,
}

#[cfg(feature = "serde")]
impl TryFrom<ScalingFields> for Scaling {
    type Error = Error;

    fn try_from(fields: ScalingFields) -> Result<Scaling> {
        Scaling::new(fields.kind, fields.factors)
    }
}

impl Scaling {
    /// A copy, allocated fallibly (its factors are one per column).
    pub(crate) fn try_clone(&self) -> Result<Scaling> {
        let mut factors = Vec::new();
        factors
            .try_reserve_exact(self.factors.len())
            .map_err(|_| Error::OutOfMemory {
                what: "a copy of the scaling factors",
                bytes: 8 * self.factors.len() as u64,
            })?;
        factors.extend_from_slice(&self.factors);
        Ok(Scaling {
            kind: self.kind,
            factors,
        })
    }

    /// A scaling with the given factors.
    ///
    /// # Errors
    /// [`Error::BadArgument`] unless every factor is positive and finite.
    pub fn new(kind: ScaleKind, factors: Vec<f64>) -> Result<Scaling> {
        if factors.iter().any(|&f| !(f > 0.0 && f.is_finite())) {
            return Err(Error::BadArgument {
                what: "scaling factors",
                expected: "positive finite numbers",
            });
        }
        Ok(Scaling { kind, factors })
    }

    /// The scaler.
    pub fn kind(&self) -> ScaleKind {
        self.kind
    }

    /// The factor of each column.
    pub fn factors(&self) -> &[f64] {
        &self.factors
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.factors.len()
    }

    /// `batch` with column `j` multiplied by its factor (for reference
    /// computations: training never scales the data).
    pub fn apply(&self, batch: &SparseBatch) -> Result<SparseBatch> {
        let mut out = SparseBatch::with_cols(batch.n_cols())?;
        let mut scaled = Vec::new();
        for (cols, vals) in batch.rows() {
            scaled.clear();
            scaled.extend(
                cols.iter()
                    .zip(vals)
                    .map(|(&c, &v)| v * self.factors.get(c as usize).copied().unwrap_or(1.0)),
            );
            out.push_row(cols, &scaled)?;
        }
        Ok(out)
    }

    /// Appends the section bytes, in whichever form is smaller:
    /// `"SCAL" 1 kind:u8 n_cols:varint factor:f64le{n_cols}`, or
    /// `"SCAL" 2 kind:u8 n_cols:varint n_listed:varint
    /// (gap:varint factor:f64le){n_listed}`, where the listed columns
    /// ascend (the first is `gap`, each next one `gap + 1` after the
    /// previous) and every other column's factor is 1.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        let listed: Vec<(usize, f64)> = self
            .factors
            .iter()
            .enumerate()
            .filter(|&(_, &f)| f != 1.0)
            .map(|(j, &f)| (j, f))
            .collect();
        let mut sparse = Vec::new();
        write_varint(&mut sparse, listed.len() as u64);
        let mut next = 0;
        for &(j, f) in &listed {
            write_varint(&mut sparse, (j - next) as u64);
            sparse.extend_from_slice(&f.to_le_bytes());
            next = j + 1;
        }
        let dense = 8 * self.factors.len();
        out.push(if sparse.len() < dense {
            VERSION_SPARSE
        } else {
            VERSION_DENSE
        });
        out.push(self.kind.code());
        write_varint(out, self.factors.len() as u64);
        if sparse.len() < dense {
            out.extend_from_slice(&sparse);
        } else {
            write_f64s(out, &self.factors);
        }
    }

    /// The first bytes of the footer section [`write`](Self::write) writes.
    pub(crate) const SECTION_MAGIC: &'static [u8] = &MAGIC;

    /// Reads a section written by [`write`](Self::write) for `n_cols`
    /// columns from untrusted bytes. The dense form allocates what its
    /// bytes hold; the sparse form allocates a factor per column, checked
    /// against [`Limits::max_cols`](crate::limits::Limits::max_cols)
    /// first, as a model over those columns would be.
    pub(crate) fn read(r: &mut Reader<'_>, n_cols: usize) -> Result<Scaling> {
        r.magic(&MAGIC)?;
        let version_at = r.offset();
        let version = r.u8("scaling section version")?;
        if version != VERSION_DENSE && version != VERSION_SPARSE {
            return Err(Error::FieldOutOfRange {
                what: "scaling section version (1 every factor, 2 the factors other than 1)",
                offset: version_at,
                value: version.into(),
                max: VERSION_SPARSE.into(),
            });
        }
        let kind_at = r.offset();
        let code = r.u8("scaling kind")?;
        let kind = ScaleKind::from_code(code).ok_or(Error::FieldOutOfRange {
            what: "scaling kind (1 maxabs, 2 standard)",
            offset: kind_at,
            value: code.into(),
            max: 2,
        })?;
        let n_at = r.offset();
        let n = r.varint("scaling columns")?;
        if n != n_cols as u64 {
            return Err(Error::LengthMismatch {
                what: "columns of the scaling section (the column count)",
                expected: n_cols as u64,
                found: n,
            });
        }
        if version == VERSION_SPARSE {
            return read_sparse(r, kind, n_cols);
        }
        let factors = r.f64s(n, "scaling factors")?;
        if let Some(j) = factors.iter().position(|&f| !(f > 0.0 && f.is_finite())) {
            let at = n_at + crate::wire::varint_len(n) + 8 * j;
            return Err(Error::InvalidNumber {
                what: format!("scaling factor {j} (column {j}, at byte {at})"),
                value: factors[j],
                expected: "a positive finite number",
            });
        }
        Ok(Scaling { kind, factors })
    }
}

/// The sparse form after its column count: `n_listed` (at most the
/// columns, and at most what the bytes left can hold), then each listed
/// column's gap and factor; a listed column is inside the columns and its
/// factor positive, finite and not 1 (one encoding per scaling).
fn read_sparse(r: &mut Reader<'_>, kind: ScaleKind, n_cols: usize) -> Result<Scaling> {
    let max_listed = (n_cols as u64).min((r.remaining() / MIN_SPARSE_ENTRY) as u64);
    let n_listed = r.varint_max("scaling columns listed", max_listed)?;
    crate::limits::check_cols(n_cols, "scaling factors")?;
    let mut factors = crate::limits::try_filled(n_cols, 1.0, "scaling factors")?;
    let mut next = 0u64;
    for _ in 0..n_listed {
        let at = r.offset();
        let gap = r.varint("scaling column gap")?;
        let col = next.saturating_add(gap);
        if col >= n_cols as u64 {
            return Err(Error::FieldOutOfRange {
                what: "scaled column (the columns ascend inside the column count)",
                offset: at,
                value: col,
                max: n_cols.saturating_sub(1) as u64,
            });
        }
        let factor_at = r.offset();
        let factor = f64_at(r.bytes(8, "scaling factor")?, 0);
        if !(factor > 0.0 && factor.is_finite() && factor != 1.0) {
            return Err(Error::InvalidNumber {
                what: format!("scaling factor of column {col} (at byte {factor_at})"),
                value: factor,
                expected: "a positive finite number other than 1 (a listed factor)",
            });
        }
        factors[col as usize] = factor;
        next = col + 1;
    }
    Ok(Scaling { kind, factors })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn written(scaling: &Scaling) -> Vec<u8> {
        let mut out = Vec::new();
        scaling.write(&mut out);
        out
    }

    fn read(bytes: &[u8], n_cols: usize) -> Result<Scaling> {
        let mut r = Reader::new(bytes);
        let s = Scaling::read(&mut r, n_cols)?;
        assert_eq!(r.remaining(), 0, "the section is read to its end");
        Ok(s)
    }

    /// The sparse section's head: magic, version 2, max-abs, `n_cols`.
    fn sparse_head(n_cols: u8) -> Vec<u8> {
        let mut b = b"SCAL".to_vec();
        b.extend_from_slice(&[VERSION_SPARSE, ScaleKind::MaxAbs.code(), n_cols]);
        b
    }

    #[test]
    fn mostly_unit_factors_take_the_sparse_form_and_read_back_bit_for_bit() {
        let mut factors = vec![1.0; 1000];
        factors[0] = 0.5;
        factors[7] = 1e-300;
        factors[999] = 3.0;
        let s = Scaling::new(ScaleKind::MaxAbs, factors).unwrap();
        let bytes = written(&s);
        assert_eq!(bytes[4], VERSION_SPARSE);
        // magic, version, kind, n_cols (2 bytes), count, 3 x (gap, f64)
        assert_eq!(bytes.len(), 4 + 1 + 1 + 2 + 1 + 3 + 3 * 8 + 1);
        assert_eq!(read(&bytes, 1000).unwrap(), s);
    }

    #[test]
    fn factors_other_than_one_everywhere_keep_the_dense_form() {
        let factors: Vec<f64> = (1..=40).map(|i| 1.0 / i as f64 + 0.5).collect();
        let s = Scaling::new(ScaleKind::Standard, factors).unwrap();
        let bytes = written(&s);
        assert_eq!(bytes[4], VERSION_DENSE);
        assert_eq!(read(&bytes, 40).unwrap(), s);
        // All ones, and no columns at all: the sparse form (or an empty
        // dense one), read back alike.
        for n in [0, 1, 5] {
            let s = Scaling::new(ScaleKind::MaxAbs, vec![1.0; n]).unwrap();
            assert_eq!(read(&written(&s), n).unwrap(), s);
        }
    }

    #[test]
    fn hostile_sparse_sections_are_errors_naming_the_byte() {
        let entry = |b: &mut Vec<u8>, gap: u8, f: f64| {
            b.push(gap);
            b.extend_from_slice(&f.to_le_bytes());
        };
        // More listed columns than the columns, or than the bytes hold.
        let mut b = sparse_head(2);
        b.push(3);
        for _ in 0..3 {
            entry(&mut b, 0, 2.0);
        }
        assert!(read(&b, 2).is_err());
        let mut b = sparse_head(9);
        b.push(2);
        entry(&mut b, 0, 2.0);
        assert!(read(&b, 9).is_err(), "two listed, one entry of bytes");
        // A column past the last, by a gap that would overflow or not.
        for gap in [9u8, 200] {
            let mut b = sparse_head(9);
            b.push(1);
            entry(&mut b, gap & 0x7f, 2.0);
            match read(&b, 9) {
                Err(Error::FieldOutOfRange { offset, value, .. }) => {
                    assert_eq!(offset, 8);
                    assert_eq!(value, u64::from(gap & 0x7f));
                }
                other => panic!("gap {gap}: {other:?}"),
            }
        }
        // Listed factors must be positive, finite and not 1.
        for f in [1.0, 0.0, -2.0, f64::NAN, f64::INFINITY] {
            let mut b = sparse_head(9);
            b.push(1);
            entry(&mut b, 3, f);
            match read(&b, 9) {
                Err(Error::InvalidNumber { what, .. }) => {
                    assert!(what.contains("column 3 (at byte 9)"), "{what}")
                }
                other => panic!("factor {f}: {other:?}"),
            }
        }
        // An unknown version, and a column count other than the file's.
        let mut b = sparse_head(9);
        b[4] = 3;
        b.push(0);
        assert!(matches!(
            read(&b, 9),
            Err(Error::FieldOutOfRange { offset: 4, .. })
        ));
        let mut b = sparse_head(9);
        b.push(0);
        assert!(read(&b, 8).is_err());
    }

    #[test]
    fn a_sparse_section_over_more_columns_than_the_limit_allocates_nothing() {
        // A dozen bytes that would ask for 2^62 factors: the column limit
        // refuses before any allocation.
        let mut b = b"SCAL".to_vec();
        b.extend_from_slice(&[VERSION_SPARSE, ScaleKind::MaxAbs.code()]);
        let n: u64 = 1 << 62;
        crate::wire::write_varint(&mut b, n);
        b.push(0);
        let mut r = Reader::new(&b);
        assert!(matches!(
            Scaling::read(&mut r, n as usize),
            Err(Error::LimitExceeded { .. })
        ));
    }
}
