//! [`Schema`]: the feature columns of a CSV file and how they map to
//! output columns; inference (the text form is in `schema/text.rs`).

use std::path::Path;

use hashbrown::HashSet;
use rayon::prelude::*;

use super::missing::{check_markers, default_markers, is_missing};
use super::table::Table;
use super::{open_path, shorten};
use crate::error::{Error, Result};
use crate::sparse::MAX_COLS;

mod text;

/// The most levels a categorical column may have.
pub const MAX_LEVELS: usize = 65_536;

/// Suffix of a missing indicator's output column name.
const INDICATOR_SUFFIX: &str = ":missing";

/// Records per chunk of the inference pass.
const INFER_ROWS: usize = 8_192;

/// One source column of a CSV file (the label excepted).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Column {
    /// A number: one output column holding the value (a missing field
    /// reads as 0; see [`missing`](super::missing)).
    Numeric {
        /// Header name.
        name: String,
    },
    /// A number with a missing indicator: two output columns, the value
    /// (0 when missing) and, right after it, `NAME:missing`, 1 when the
    /// value is missing and 0 otherwise.
    NumericWithIndicator {
        /// Header name.
        name: String,
    },
    /// A category, one-hot encoded: one output column per level, holding
    /// 1 for the row's level and 0 elsewhere.
    Categorical {
        /// Header name.
        name: String,
        /// The levels, sorted by bytes, no duplicates.
        levels: Vec<String>,
    },
}

impl Column {
    /// The header name.
    pub fn name(&self) -> &str {
        match self {
            Column::Numeric { name }
            | Column::NumericWithIndicator { name }
            | Column::Categorical { name, .. } => name,
        }
    }

    /// Output columns: 1, 2 with a missing indicator, or the number of
    /// levels.
    pub fn width(&self) -> usize {
        match self {
            Column::Numeric { .. } => 1,
            Column::NumericWithIndicator { .. } => 2,
            Column::Categorical { levels, .. } => levels.len(),
        }
    }
}

/// The feature columns of a CSV file in output order: numeric columns
/// give one output column (two with a missing indicator), categorical
/// columns one per level (in level order). Source columns are matched by
/// header name, so a file whose columns come in another order reads the
/// same. A schema also holds the missing markers of its numeric columns
/// (see [`missing`](super::missing)).
///
/// # Text form
///
/// [`Schema::to_text`] writes, and [`Schema::from_text`] reads, a small
/// line-based format (UTF-8, `\n` line ends) that a dataset file can store
/// so that a test file is read with its training set's columns:
///
/// ```text
/// tocpile-schema 2
/// missing NA
/// missing ?
/// numeric dep_delay
/// numeric-with-indicator arr_delay
/// categorical 3 origin
/// level EWR
/// level JFK
/// level LGA
/// ```
///
/// The first line names the format and its version. A name, level or
/// marker is the rest of its line after one space, with `\` written `\\`,
/// a line feed `\n` and a carriage return `\r`. A `categorical N` line is
/// followed by exactly `N` `level` lines, levels strictly ascending by
/// bytes. Each `missing` line names one missing marker (the empty field is
/// always missing and is not listed). Version 1, written by earlier
/// releases and still written for a schema with neither markers nor
/// indicator columns, has no `missing` and no `numeric-with-indicator`
/// lines; it reads as a schema with no markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    columns: Vec<Column>,
    n_cols: usize,
    missing: Vec<String>,
}

impl Schema {
    /// A schema of `columns`, in output order, with the
    /// [`DEFAULT_MISSING_MARKERS`](super::missing::DEFAULT_MISSING_MARKERS).
    /// Levels are sorted.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] for two columns with one name, a repeated
    /// level, more than [`MAX_LEVELS`] levels, or more than
    /// [`MAX_COLS`] output columns.
    pub fn new(mut columns: Vec<Column>) -> Result<Schema> {
        let mut names = HashSet::new();
        let mut n_cols = 0usize;
        for column in &mut columns {
            if !names.insert(column.name().to_string()) {
                return Err(invalid(format!("two columns named {:?}", column.name())));
            }
            if let Column::Categorical { name, levels } = column {
                levels.sort_unstable();
                if let Some(w) = levels.windows(2).find(|w| w[0] == w[1]) {
                    return Err(invalid(format!("column {name:?} repeats level {:?}", w[0])));
                }
                if levels.len() > MAX_LEVELS {
                    return Err(invalid(format!(
                        "column {name:?} has {} levels, at most {MAX_LEVELS} allowed",
                        levels.len()
                    )));
                }
            }
            n_cols += column.width();
        }
        if n_cols > MAX_COLS {
            return Err(invalid(format!(
                "{n_cols} output columns, at most {MAX_COLS} allowed"
            )));
        }
        Ok(Schema {
            columns,
            n_cols,
            missing: default_markers(),
        })
    }

    /// The same schema with other missing markers (fields of numeric
    /// columns that read as missing besides the empty field; none at all
    /// is allowed).
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] for a marker that is empty, has spaces
    /// around it or a line break, is longer than 64 bytes, parses as a
    /// number (`NaN` included) or is repeated, or for more than
    /// [`MAX_MISSING_MARKERS`](super::missing::MAX_MISSING_MARKERS)
    /// markers.
    pub fn with_missing_markers(mut self, markers: Vec<String>) -> Result<Schema> {
        check_markers(&markers)?;
        self.missing = markers;
        Ok(self)
    }

    /// The missing markers of numeric columns (the empty field aside).
    pub fn missing_markers(&self) -> &[String] {
        &self.missing
    }

    /// The inference of [`Schema::infer`] (see there), given the label
    /// column's name, the field delimiter, the missing markers (checked
    /// here, before reading) and whether numeric columns with missing
    /// fields get an indicator column.
    pub(super) fn infer_columns(
        path: &Path,
        label: &str,
        delimiter: u8,
        markers: &[String],
        missing_indicators: bool,
    ) -> Result<Schema> {
        check_markers(markers)?;
        let (name, input) = open_path(path)?;
        let mut table = Table::new(input, name, delimiter)?;
        let label = table.column(label)?;
        let mut stats: Vec<Stats> = (0..table.header.len())
            .filter(|&i| i != label)
            .map(Stats::new)
            .collect();
        loop {
            let pending = table.fill(INFER_ROWS).err();
            let records = table.records();
            crate::parallel::install(|| {
                stats
                    .par_iter_mut()
                    .for_each(|s| s.update(records, markers))
            });
            for s in &mut stats {
                if let Some(row) = s.first_text_row.take() {
                    s.first_text = Some((table.line_of(row), shorten(&records[row][s.field])));
                }
            }
            // The first problem in file order.
            let bad_utf8 = stats.iter().filter_map(|s| s.bad_utf8).min();
            let overflow = stats
                .iter()
                .filter_map(|s| s.overflow_row.map(|r| (r, s.field)))
                .min();
            match (bad_utf8, overflow) {
                (Some(b), o) if o.is_none_or(|o| b < o) => {
                    return Err(table.field_error(b.0, b.1, "a categorical value in UTF-8"))
                }
                (_, Some((_, field))) => {
                    let s = stats.iter().find(|s| s.field == field).expect("a column");
                    return Err(s.too_many(&table));
                }
                _ => {}
            }
            if let Some(e) = pending {
                return Err(e);
            }
            if records.is_empty() {
                break;
            }
        }
        // Categorical columns that looked numeric for a while: their
        // levels are read again.
        let mut redo: Vec<&mut Stats> = stats
            .iter_mut()
            .filter(|s| s.first_text.is_some() && s.incomplete)
            .collect();
        for s in &mut redo {
            s.levels.clear();
        }
        if !redo.is_empty() {
            let (name, input) = open_path(path)?;
            let mut table = Table::new(input, name, delimiter)?;
            loop {
                table.fill(INFER_ROWS)?;
                let records = table.records();
                if records.is_empty() {
                    break;
                }
                let full = crate::parallel::install(|| {
                    redo.par_iter_mut()
                        .map(|s| !s.collect(records))
                        .collect::<Vec<bool>>()
                });
                if let Some(k) = full.iter().position(|&f| f) {
                    return Err(redo[k].too_many(&table));
                }
            }
        }
        let columns = stats
            .into_iter()
            .map(|s| {
                let name = table.header[s.field].clone();
                if s.first_text.is_none() {
                    if missing_indicators && s.has_missing {
                        return Column::NumericWithIndicator { name };
                    }
                    return Column::Numeric { name };
                }
                let levels = s
                    .levels
                    .into_iter()
                    .map(|l| String::from_utf8(l).expect("levels checked as UTF-8"))
                    .collect();
                Column::Categorical { name, levels }
            })
            .collect();
        Schema::new(columns)?.with_missing_markers(markers.to_vec())
    }

    /// The columns, in output order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Output columns: numeric columns plus the levels of categorical ones.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// A name per output column: the header name of a numeric column (and
    /// `name:missing` for its indicator), `name=level` for each level of a
    /// categorical one (`origin=JFK`).
    pub fn column_names(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.n_cols);
        for column in &self.columns {
            match column {
                Column::Numeric { name } => out.push(name.clone()),
                Column::NumericWithIndicator { name } => {
                    out.push(name.clone());
                    out.push(format!("{name}{INDICATOR_SUFFIX}"));
                }
                Column::Categorical { name, levels } => {
                    out.extend(levels.iter().map(|l| format!("{name}={l}")))
                }
            }
        }
        out
    }

    /// Writes the text form to `path` atomically (a temporary file beside
    /// it, fsynced, renamed), for `tocpile encode --schema` or
    /// [`Schema::from_text`] to read back.
    ///
    /// # Errors
    /// [`Error::Io`]; `path` is then untouched.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::atomic::write(path.as_ref(), self.to_text().as_bytes())
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidSchema { message }
}

/// What inference has seen of one source column.
struct Stats {
    field: usize,
    /// Distinct values: all of them once the column is known to be
    /// categorical (up to [`MAX_LEVELS`]), at most [`NUMERIC_KEEP`] while it
    /// looks numeric.
    levels: HashSet<Vec<u8>>,
    /// `levels` lacks values seen while the column looked numeric.
    incomplete: bool,
    /// A field was missing (empty or a marker) while the column looked
    /// numeric.
    has_missing: bool,
    /// First non-numeric value: its line and text, once known.
    first_text: Option<(u64, String)>,
    /// Row of the first non-numeric value in the current chunk.
    first_text_row: Option<usize>,
    /// First non-UTF-8 value in the current chunk: row and field.
    bad_utf8: Option<(usize, usize)>,
    /// More than [`MAX_LEVELS`] levels, at this row of the current chunk.
    overflow_row: Option<usize>,
}

/// Distinct values kept per column while it looks numeric.
const NUMERIC_KEEP: usize = 256;

impl Stats {
    fn new(field: usize) -> Stats {
        Stats {
            field,
            levels: HashSet::new(),
            incomplete: false,
            has_missing: false,
            first_text: None,
            first_text_row: None,
            bad_utf8: None,
            overflow_row: None,
        }
    }

    fn is_text(&self) -> bool {
        self.first_text.is_some() || self.first_text_row.is_some()
    }

    /// Takes in a chunk; stops at a non-UTF-8 value or too many levels.
    fn update(&mut self, records: &[::csv::ByteRecord], markers: &[String]) {
        for (row, record) in records.iter().enumerate() {
            let value = &record[self.field];
            if !self.is_text() {
                match classify(value, markers) {
                    Field::Number => {}
                    Field::Missing => self.has_missing = true,
                    Field::Text => self.first_text_row = Some(row),
                }
            }
            if self.is_text() {
                if std::str::from_utf8(value).is_err() {
                    self.bad_utf8 = Some((row, self.field));
                    return;
                }
                if !self.levels.contains(value) {
                    if self.levels.len() == MAX_LEVELS {
                        self.overflow_row = Some(row);
                        return;
                    }
                    self.levels.insert(value.to_vec());
                }
            } else if !self.incomplete && !self.levels.contains(value) {
                if self.levels.len() == NUMERIC_KEEP {
                    self.incomplete = true;
                    self.levels = HashSet::new();
                } else {
                    self.levels.insert(value.to_vec());
                }
            }
        }
    }

    /// Takes in a chunk of the second pass (UTF-8 already checked).
    fn collect(&mut self, records: &[::csv::ByteRecord]) -> bool {
        for record in records {
            let value = &record[self.field];
            if !self.levels.contains(value) {
                if self.levels.len() == MAX_LEVELS {
                    return false;
                }
                self.levels.insert(value.to_vec());
            }
        }
        true
    }

    fn too_many(&self, table: &Table) -> Error {
        let (line, found) = self.first_text.clone().expect("a categorical column");
        Error::TooManyLevels {
            path: table.name.clone(),
            column: table.header[self.field].clone(),
            max: MAX_LEVELS,
            line,
            found,
        }
    }
}

/// What a field says about its column during inference.
enum Field {
    /// A number, NaN and infinities included.
    Number,
    /// Empty (after trimming spaces) or a missing marker.
    Missing,
    /// Anything else: the column is categorical.
    Text,
}

fn classify(value: &[u8], markers: &[String]) -> Field {
    let trimmed = value.trim_ascii();
    if is_missing(trimmed, markers) {
        Field::Missing
    } else if std::str::from_utf8(trimmed).is_ok_and(|t| t.parse::<f64>().is_ok()) {
        Field::Number
    } else {
        Field::Text
    }
}
