//! Turns a shared LIBSVM dataset back into a table (one-hot columns into
//! string columns, by the `NAME.cols.txt` names) and writes it as Parquet,
//! CSV and LIBSVM with the same rows: the test data of the Parquet tests
//! and of `examples/parquet_from_libsvm.rs`. Streams, so flights3m (3M
//! rows) converts in bounded memory.

#![allow(dead_code)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use tocpile::ingest::arrow::arrow_array::types::Int32Type;
use tocpile::ingest::arrow::arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use tocpile::ingest::arrow::arrow_schema::{DataType, Field, Schema as ArrowSchema};
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};

/// A source column: a number, or a category one-hot encoded over output
/// columns (`name=level` in cols.txt).
#[derive(Debug, Clone)]
pub enum Group {
    Numeric {
        name: String,
        col: u32,
    },
    Categorical {
        name: String,
        levels: Vec<(u32, String)>,
    },
}

impl Group {
    pub fn name(&self) -> &str {
        match self {
            Group::Numeric { name, .. } | Group::Categorical { name, .. } => name,
        }
    }
}

/// The groups of a `NAME.cols.txt` (one output column name per line;
/// `name=level` lines of one name are consecutive).
pub fn groups(cols_txt: &str) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, line) in cols_txt.lines().enumerate() {
        let col = i as u32;
        match line.split_once('=') {
            Some((name, level)) => {
                if let Some(Group::Categorical { name: last, levels }) = out.last_mut() {
                    if last == name {
                        levels.push((col, level.to_string()));
                        continue;
                    }
                }
                out.push(Group::Categorical {
                    name: name.to_string(),
                    levels: vec![(col, level.to_string())],
                });
            }
            None => out.push(Group::Numeric {
                name: line.to_string(),
                col,
            }),
        }
    }
    out
}

/// How to write the copies.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows to convert at most.
    pub max_rows: usize,
    /// Numeric cell `(row, group)` is null (Parquet), `NA` (CSV) and
    /// absent (LIBSVM) when `(row * 7 + group) % every == 0`.
    pub null_every: Option<u64>,
    /// Numeric columns (and the label) as Int64 instead of Float64 (every
    /// value must be an integer).
    pub integers: bool,
    /// Rows per Parquet row group.
    pub row_group_rows: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_rows: usize::MAX,
            null_every: None,
            integers: false,
            row_group_rows: 1 << 20,
        }
    }
}

/// The Parquet column layout: categorical groups alternate between plain
/// strings and dictionaries (the writer stores both dictionary-encoded;
/// the third categorical column is written without a dictionary).
fn arrow_schema(groups: &[Group], integers: bool) -> ArrowSchema {
    let number = if integers {
        DataType::Int64
    } else {
        DataType::Float64
    };
    let mut fields = vec![Field::new("label", number.clone(), false)];
    for (g, group) in groups.iter().enumerate() {
        let data_type = match group {
            Group::Numeric { .. } => number.clone(),
            Group::Categorical { .. } if g % 2 == 1 => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
            Group::Categorical { .. } => DataType::Utf8,
        };
        fields.push(Field::new(group.name(), data_type, true));
    }
    ArrowSchema::new(fields)
}

/// Converts `libsvm` (gzip'd LIBSVM with the columns of `cols_txt`) into
/// `parquet`, and into `csv` and `libsvm_out` if given; returns the rows
/// written.
pub fn convert(
    libsvm: &Path,
    cols_txt: &Path,
    parquet: &Path,
    csv: Option<&Path>,
    libsvm_out: Option<&Path>,
    options: &Options,
) -> u64 {
    let groups = groups(&std::fs::read_to_string(cols_txt).unwrap());
    let n_cols = groups
        .iter()
        .map(|g| match g {
            Group::Numeric { .. } => 1,
            Group::Categorical { levels, .. } => levels.len(),
        })
        .sum();
    let schema = Arc::new(arrow_schema(&groups, options.integers));
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(options.row_group_rows));
    if let Some(third) = groups
        .iter()
        .filter(|g| matches!(g, Group::Categorical { .. }))
        .nth(2)
    {
        properties =
            properties.set_column_dictionary_enabled(ColumnPath::from(third.name()), false);
    }
    let file = File::create(parquet).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(properties.build())).unwrap();
    let mut csv = csv.map(|p| BufWriter::new(File::create(p).unwrap()));
    let mut svm = libsvm_out.map(|p| BufWriter::new(File::create(p).unwrap()));
    if let Some(csv) = &mut csv {
        let names: Vec<&str> = std::iter::once("label")
            .chain(groups.iter().map(Group::name))
            .collect();
        writeln!(csv, "{}", names.join(",")).unwrap();
    }
    let libsvm_options = LibsvmOptions::default()
        .with_n_cols(Some(n_cols))
        .with_zero_based(false);
    let mut reader = LibsvmReader::open(libsvm, libsvm_options).unwrap();
    let mut rows = 0u64;
    while (rows as usize) < options.max_rows {
        let want = (options.max_rows - rows as usize).min(65_536);
        let Some(chunk) = reader.next_chunk(want).unwrap() else {
            break;
        };
        // Dense view of each row: the value of each output column.
        let mut dense = vec![0.0; n_cols];
        let mut columns: Vec<Vec<Option<f64>>> = vec![Vec::new(); groups.len()];
        let mut strings: Vec<Vec<&str>> = vec![Vec::new(); groups.len()];
        for (r, (cols, vals)) in chunk.batch.rows().enumerate() {
            let row = rows + r as u64;
            dense.fill(0.0);
            for (&c, &v) in cols.iter().zip(vals) {
                dense[c as usize] = v;
            }
            for (g, group) in groups.iter().enumerate() {
                match group {
                    Group::Numeric { col, .. } => {
                        let null = options
                            .null_every
                            .is_some_and(|every| (row * 7 + g as u64).is_multiple_of(every));
                        columns[g].push((!null).then_some(dense[*col as usize]));
                    }
                    Group::Categorical { levels, .. } => {
                        let hot: Vec<&(u32, String)> = levels
                            .iter()
                            .filter(|(c, _)| dense[*c as usize] != 0.0)
                            .collect();
                        assert_eq!(hot.len(), 1, "row {row}: not one-hot in {}", group.name());
                        strings[g].push(&hot[0].1);
                    }
                }
            }
        }
        let arrays: Vec<ArrayRef> = std::iter::once(numbers(
            chunk.labels.iter().map(|&l| Some(l)).collect(),
            options.integers,
        ))
        .chain(groups.iter().enumerate().map(|(g, group)| {
            match group {
                Group::Numeric { .. } => numbers(std::mem::take(&mut columns[g]), options.integers),
                Group::Categorical { .. } if g % 2 == 1 => Arc::new(
                    strings[g]
                        .iter()
                        .copied()
                        .collect::<DictionaryArray<Int32Type>>(),
                ),
                Group::Categorical { .. } => Arc::new(StringArray::from(strings[g].clone())),
            }
        }))
        .collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays).unwrap();
        writer.write(&batch).unwrap();
        if let Some(csv) = &mut csv {
            write_csv(csv, &batch, &groups, &chunk.labels);
        }
        if let Some(svm) = &mut svm {
            write_libsvm(svm, &batch, &groups, &chunk.labels);
        }
        rows += chunk.labels.len() as u64;
    }
    writer.close().unwrap();
    if let Some(mut csv) = csv {
        csv.flush().unwrap();
    }
    if let Some(mut svm) = svm {
        svm.flush().unwrap();
    }
    rows
}

fn numbers(values: Vec<Option<f64>>, integers: bool) -> ArrayRef {
    if !integers {
        return Arc::new(Float64Array::from(values));
    }
    let ints: Vec<Option<i64>> = values
        .iter()
        .map(|v| {
            v.map(|x| {
                assert_eq!(x.fract(), 0.0, "{x} is not an integer");
                x as i64
            })
        })
        .collect();
    Arc::new(Int64Array::from(ints))
}

/// Cell `(row, column)` of a batch as text: `NA` for a null number.
fn cell(batch: &RecordBatch, row: usize, column: usize) -> String {
    use tocpile::ingest::arrow::arrow_array::cast::AsArray;
    use tocpile::ingest::arrow::arrow_array::types::{Float64Type, Int64Type};
    use tocpile::ingest::arrow::arrow_array::Array;
    let array = batch.column(column);
    if array.is_null(row) {
        return "NA".to_string();
    }
    match array.data_type() {
        DataType::Float64 => format!("{:?}", array.as_primitive::<Float64Type>().value(row)),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::Dictionary(..) => {
            let dict = array.as_dictionary::<Int32Type>();
            let key = dict.keys().value(row) as usize;
            dict.values().as_string::<i32>().value(key).to_string()
        }
        other => panic!("no text for {other}"),
    }
}

fn write_csv(out: &mut impl Write, batch: &RecordBatch, groups: &[Group], labels: &[f64]) {
    for (row, label) in labels.iter().enumerate() {
        let mut line = format!("{label:?}");
        for g in 0..groups.len() {
            let text = cell(batch, row, g + 1);
            if text.contains([',', '"', '\n', '\r']) {
                line.push_str(&format!(",\"{}\"", text.replace('"', "\"\"")));
            } else {
                line.push(',');
                line.push_str(&text);
            }
        }
        writeln!(out, "{line}").unwrap();
    }
}

/// The rows as LIBSVM (1-based), nulls left out.
fn write_libsvm(out: &mut impl Write, batch: &RecordBatch, groups: &[Group], labels: &[f64]) {
    for (row, label) in labels.iter().enumerate() {
        let mut line = format!("{label:?}");
        for (g, group) in groups.iter().enumerate() {
            let text = cell(batch, row, g + 1);
            match group {
                Group::Numeric { col, .. } => {
                    if text != "NA" && text.parse::<f64>().unwrap() != 0.0 {
                        line.push_str(&format!(" {}:{text}", col + 1));
                    }
                }
                Group::Categorical { levels, .. } => {
                    let (col, _) = levels.iter().find(|(_, l)| *l == text).unwrap();
                    line.push_str(&format!(" {}:1", col + 1));
                }
            }
        }
        writeln!(out, "{line}").unwrap();
    }
}
