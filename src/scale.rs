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
use crate::wire::{write_f64s, write_varint, Reader};

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
/// Version of the scaling section.
const VERSION: u8 = 1;

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

    /// Appends the section bytes: `"SCAL" version:u8(=1) kind:u8
    /// n_cols:varint factor:f64le{n_cols}`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.kind.code());
        write_varint(out, self.factors.len() as u64);
        write_f64s(out, &self.factors);
    }

    /// The first bytes of the footer section [`write`](Self::write) writes.
    pub(crate) const SECTION_MAGIC: &'static [u8] = &MAGIC;

    /// Reads a section written by [`write`](Self::write) for `n_cols`
    /// columns from untrusted bytes.
    pub(crate) fn read(r: &mut Reader<'_>, n_cols: usize) -> Result<Scaling> {
        r.magic(&MAGIC)?;
        let version = r.u8("scaling section version")?;
        if version != VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: VERSION,
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
