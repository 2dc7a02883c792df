//! [`Schema`]: the feature columns of a CSV file and how they map to
//! output columns; inference and the text form.

use std::path::Path;

use hashbrown::HashSet;
use rayon::prelude::*;

use super::table::Table;
use super::{open_path, shorten};
use crate::error::{Error, Result};
use crate::sparse::MAX_COLS;

/// The most levels a categorical column may have.
pub const MAX_LEVELS: usize = 65_536;

/// First line of the schema text form.
const TEXT_HEADER: &str = "tocpile-schema 1";

/// Records per chunk of the inference pass.
const INFER_ROWS: usize = 8_192;

/// One source column of a CSV file (the label excepted).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Column {
    /// A number: one output column holding the value (an empty field
    /// reads as 0).
    Numeric {
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
            Column::Numeric { name } | Column::Categorical { name, .. } => name,
        }
    }

    /// Output columns: 1, or the number of levels.
    pub fn width(&self) -> usize {
        match self {
            Column::Numeric { .. } => 1,
            Column::Categorical { levels, .. } => levels.len(),
        }
    }
}

/// The feature columns of a CSV file in output order: numeric columns
/// give one output column, categorical columns one per level (in level
/// order). Source columns are matched by header name, so a file whose
/// columns come in another order reads the same.
///
/// # Text form
///
/// [`Schema::to_text`] writes, and [`Schema::from_text`] reads, a small
/// line-based format (UTF-8, `\n` line ends) that a dataset file can store
/// so that a test file is read with its training set's columns:
///
/// ```text
/// tocpile-schema 1
/// numeric dep_delay
/// categorical 3 origin
/// level EWR
/// level JFK
/// level LGA
/// ```
///
/// The first line names the format and its version. A name or level is
/// the rest of its line after one space, with `\` written `\\`, a line
/// feed `\n` and a carriage return `\r`. A `categorical N` line is followed
/// by exactly `N` `level` lines, levels strictly ascending by bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    columns: Vec<Column>,
    n_cols: usize,
}

impl Schema {
    /// A schema of `columns`, in output order. Levels are sorted.
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
        Ok(Schema { columns, n_cols })
    }

    /// The inference of [`Schema::infer`] (see there), given the label
    /// column's name and the field delimiter.
    pub(super) fn infer_columns(path: &Path, label: &str, delimiter: u8) -> Result<Schema> {
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
            stats.par_iter_mut().for_each(|s| s.update(records));
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
                (Some(b), o) if o.map_or(true, |o| b < o) => {
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
                let full = redo
                    .par_iter_mut()
                    .map(|s| !s.collect(records))
                    .collect::<Vec<bool>>();
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
        Schema::new(columns)
    }

    /// The columns, in output order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Output columns: numeric columns plus the levels of categorical ones.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// A name per output column: the header name of a numeric column,
    /// `name=level` for each level of a categorical one (`origin=JFK`).
    pub fn column_names(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.n_cols);
        for column in &self.columns {
            match column {
                Column::Numeric { name } => out.push(name.clone()),
                Column::Categorical { name, levels } => {
                    out.extend(levels.iter().map(|l| format!("{name}={l}")))
                }
            }
        }
        out
    }

    /// The text form (see the [type docs](Schema)).
    pub fn to_text(&self) -> String {
        let mut out = format!("{TEXT_HEADER}\n");
        for column in &self.columns {
            match column {
                Column::Numeric { name } => out.push_str(&format!("numeric {}\n", escape(name))),
                Column::Categorical { name, levels } => {
                    out.push_str(&format!("categorical {} {}\n", levels.len(), escape(name)));
                    for level in levels {
                        out.push_str(&format!("level {}\n", escape(level)));
                    }
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

    /// Reads the text form (see the [type docs](Schema)).
    ///
    /// # Errors
    /// [`Error::Parse`] (path `<schema>`) naming the line and column of the
    /// first problem, including a repeated name and unsorted or repeated
    /// levels; [`Error::InvalidSchema`] for too many output columns.
    pub fn from_text(text: &str) -> Result<Schema> {
        let bad = |line: usize, column: usize, expected: &'static str, found: &str| Error::Parse {
            path: "<schema>".to_string(),
            line: line as u64 + 1,
            column,
            expected,
            found: shorten(found.as_bytes()),
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, TEXT_HEADER)) => {}
            Some((i, other)) => return Err(bad(i, 1, "\"tocpile-schema 1\"", other)),
            None => return Err(bad(0, 1, "\"tocpile-schema 1\"", "")),
        }
        let mut columns = Vec::new();
        let mut names = HashSet::new();
        while let Some((i, line)) = lines.next() {
            let (name, column) = if let Some(rest) = line.strip_prefix("numeric ") {
                let name = unescape(rest)
                    .map_err(|c| bad(i, 9 + c, "an escape \\\\, \\n or \\r", rest))?;
                (name.clone(), Column::Numeric { name })
            } else if let Some(rest) = line.strip_prefix("categorical ") {
                let (count, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                let n: usize = match count.parse() {
                    Ok(n) if n <= MAX_LEVELS => n,
                    _ => return Err(bad(i, 13, "a level count (at most 65536)", count)),
                };
                let at = 14 + count.len();
                let name = unescape(rest)
                    .map_err(|c| bad(i, at + c, "an escape \\\\, \\n or \\r", rest))?;
                let mut levels: Vec<String> = Vec::with_capacity(n);
                for _ in 0..n {
                    let (j, line) = lines.next().unwrap_or((i + levels.len() + 1, ""));
                    let Some(rest) = line.strip_prefix("level ") else {
                        return Err(bad(j, 1, "a \"level \" line", line));
                    };
                    let level = unescape(rest)
                        .map_err(|c| bad(j, 7 + c, "an escape \\\\, \\n or \\r", rest))?;
                    if levels.last().is_some_and(|last| *last >= level) {
                        return Err(bad(
                            j,
                            7,
                            "a level above the previous one (sorted, unique)",
                            rest,
                        ));
                    }
                    levels.push(level);
                }
                (name.clone(), Column::Categorical { name, levels })
            } else if line.is_empty() {
                continue;
            } else {
                return Err(bad(
                    i,
                    1,
                    "\"numeric NAME\" or \"categorical N NAME\"",
                    line,
                ));
            };
            if !names.insert(name) {
                return Err(bad(i, 1, "a column name not used before", line));
            }
            columns.push(column);
        }
        Schema::new(columns)
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidSchema { message }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// Undoes [`escape`]; `Err` holds the 0-based byte offset of a bad escape.
fn unescape(text: &str) -> std::result::Result<String, usize> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, '\\')) => out.push('\\'),
            Some((_, 'n')) => out.push('\n'),
            Some((_, 'r')) => out.push('\r'),
            _ => return Err(i),
        }
    }
    Ok(out)
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
    fn update(&mut self, records: &[::csv::ByteRecord]) {
        for (row, record) in records.iter().enumerate() {
            let value = &record[self.field];
            if !self.is_text() && !looks_numeric(value) {
                self.first_text_row = Some(row);
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

/// Empty (after trimming spaces) or a number, NaN and infinities included.
fn looks_numeric(value: &[u8]) -> bool {
    let trimmed = value.trim_ascii();
    trimmed.is_empty() || std::str::from_utf8(trimmed).is_ok_and(|t| t.parse::<f64>().is_ok())
}
