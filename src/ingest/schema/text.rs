//! The text form of a [`Schema`] (see its docs): written by
//! [`Schema::to_text`], read back by [`Schema::from_text`].

use hashbrown::HashSet;

use super::{Column, Schema, MAX_LEVELS};
use crate::error::{Error, Result};
use crate::ingest::missing::check_markers;
use crate::ingest::shorten;

/// First line of the schema text form, version 1 (no missing markers, no
/// indicator columns) and version 2.
const TEXT_HEADER_V1: &str = "tocpile-schema 1";
const TEXT_HEADER_V2: &str = "tocpile-schema 2";

impl Schema {
    /// The text form (see the [type docs](Schema)): version 1 if the
    /// schema has neither missing markers nor indicator columns, else 2.
    pub fn to_text(&self) -> String {
        let v2 = !self.missing.is_empty()
            || self
                .columns
                .iter()
                .any(|c| matches!(c, Column::NumericWithIndicator { .. }));
        let mut out = format!("{}\n", if v2 { TEXT_HEADER_V2 } else { TEXT_HEADER_V1 });
        for marker in &self.missing {
            out.push_str(&format!("missing {}\n", escape(marker)));
        }
        for column in &self.columns {
            match column {
                Column::Numeric { name } => out.push_str(&format!("numeric {}\n", escape(name))),
                Column::NumericWithIndicator { name } => {
                    out.push_str(&format!("numeric-with-indicator {}\n", escape(name)))
                }
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
        const HEADERS: &str = "\"tocpile-schema 1\" or \"tocpile-schema 2\"";
        let v2 = match lines.next() {
            Some((_, TEXT_HEADER_V1)) => false,
            Some((_, TEXT_HEADER_V2)) => true,
            Some((i, other)) => return Err(bad(i, 1, HEADERS, other)),
            None => return Err(bad(0, 1, HEADERS, "")),
        };
        let mut columns = Vec::new();
        let mut names = HashSet::new();
        let mut missing: Vec<String> = Vec::new();
        while let Some((i, line)) = lines.next() {
            let (name, column) = if let Some(rest) = line.strip_prefix("numeric ") {
                let name = unescape(rest)
                    .map_err(|c| bad(i, 9 + c, "an escape \\\\, \\n or \\r", rest))?;
                (name.clone(), Column::Numeric { name })
            } else if let Some(rest) = line.strip_prefix("numeric-with-indicator ").filter(|_| v2) {
                let name = unescape(rest)
                    .map_err(|c| bad(i, 24 + c, "an escape \\\\, \\n or \\r", rest))?;
                (name.clone(), Column::NumericWithIndicator { name })
            } else if let Some(rest) = line.strip_prefix("missing ").filter(|_| v2) {
                let marker = unescape(rest)
                    .map_err(|c| bad(i, 9 + c, "an escape \\\\, \\n or \\r", rest))?;
                if check_markers(std::slice::from_ref(&marker)).is_err() {
                    return Err(bad(
                        i,
                        9,
                        "a missing marker (not empty, not a number, no spaces around it)",
                        rest,
                    ));
                }
                if missing.contains(&marker) {
                    return Err(bad(i, 9, "a missing marker not listed before", rest));
                }
                missing.push(marker);
                continue;
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
                let expected = if v2 {
                    "\"numeric NAME\", \"numeric-with-indicator NAME\", \"categorical N NAME\" \
                     or \"missing MARKER\""
                } else {
                    "\"numeric NAME\" or \"categorical N NAME\" (version 1)"
                };
                return Err(bad(i, 1, expected, line));
            };
            if !names.insert(name) {
                return Err(bad(i, 1, "a column name not used before", line));
            }
            columns.push(column);
        }
        Schema::new(columns)?.with_missing_markers(missing)
    }
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
