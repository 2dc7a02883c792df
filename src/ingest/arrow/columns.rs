//! The Arrow types tocpile reads and how one column of a record batch
//! becomes numbers or strings: the per-type code behind the encoder and
//! schema inference.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float16Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, LargeStringArray, StringArray, StringViewArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

/// What an Arrow type holds, for tocpile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Integers, floats, decimals: numeric columns and labels.
    Number,
    /// Booleans: 0 or 1.
    Boolean,
    /// Strings, plain or dictionary-encoded: categorical columns.
    Text,
    /// The null type (every value null): missing numbers, or `""`.
    Null,
}

impl Kind {
    /// The kind of `data_type`; `None` if tocpile does not read it.
    pub(crate) fn of(data_type: &DataType) -> Option<Kind> {
        use DataType::*;
        match data_type {
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32
            | Float64 | Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => {
                Some(Kind::Number)
            }
            Boolean => Some(Kind::Boolean),
            Null => Some(Kind::Null),
            Utf8 | LargeUtf8 | Utf8View => Some(Kind::Text),
            Dictionary(key, value) if key.is_dictionary_key_type() => {
                matches!(**value, Utf8 | LargeUtf8 | Utf8View).then_some(Kind::Text)
            }
            _ => None,
        }
    }

    /// Whether a numeric schema column (or the label) can be read from it.
    pub(crate) fn is_numeric(self) -> bool {
        matches!(self, Kind::Number | Kind::Boolean | Kind::Null)
    }

    /// Whether a categorical schema column can be read from it.
    pub(crate) fn is_text(self) -> bool {
        matches!(self, Kind::Text | Kind::Null)
    }
}

/// What [`Kind::of`] accepts, for error messages.
pub(crate) const SUPPORTED: &str = "an integer, float, decimal, boolean, string or \
     dictionary-of-strings column";

/// A column as numbers: `values[i]` for row `i` unless `is_null(i)`.
pub(crate) struct Numbers<'a> {
    pub(crate) values: Cow<'a, [f64]>,
    nulls: Option<NullBuffer>,
}

impl Numbers<'_> {
    /// Whether row `i` is null (missing).
    #[inline]
    pub(crate) fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(i))
    }

    /// Whether any row is null.
    pub(crate) fn has_nulls(&self) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.null_count() > 0)
    }

    /// The first row, not null, whose value is not finite.
    pub(crate) fn first_not_finite(&self) -> Option<usize> {
        self.values
            .iter()
            .enumerate()
            .find(|&(i, v)| !v.is_finite() && !self.is_null(i))
            .map(|(i, _)| i)
    }
}

/// `array` as `f64` numbers (booleans as 0 and 1, decimals scaled, the
/// null type as all null); `None` for a type that is not numeric. Float64
/// columns are borrowed, others converted. Integers above 2^53 and
/// decimals round to the nearest `f64`.
pub(crate) fn numbers(array: &dyn Array) -> Option<Numbers<'_>> {
    fn widen<T: Copy>(values: &[T], f: impl Fn(T) -> f64) -> Cow<'static, [f64]> {
        Cow::Owned(values.iter().map(|&v| f(v)).collect())
    }
    let values = match array.data_type() {
        DataType::Float64 => Cow::Borrowed(&array.as_primitive::<Float64Type>().values()[..]),
        DataType::Float32 => widen(array.as_primitive::<Float32Type>().values(), f64::from),
        DataType::Float16 => widen(array.as_primitive::<Float16Type>().values(), f64::from),
        DataType::Int8 => widen(array.as_primitive::<Int8Type>().values(), f64::from),
        DataType::Int16 => widen(array.as_primitive::<Int16Type>().values(), f64::from),
        DataType::Int32 => widen(array.as_primitive::<Int32Type>().values(), f64::from),
        DataType::Int64 => widen(array.as_primitive::<Int64Type>().values(), |v| v as f64),
        DataType::UInt8 => widen(array.as_primitive::<UInt8Type>().values(), f64::from),
        DataType::UInt16 => widen(array.as_primitive::<UInt16Type>().values(), f64::from),
        DataType::UInt32 => widen(array.as_primitive::<UInt32Type>().values(), f64::from),
        DataType::UInt64 => widen(array.as_primitive::<UInt64Type>().values(), |v| v as f64),
        DataType::Decimal32(_, scale) => {
            let unit = decimal_unit(*scale);
            widen(array.as_primitive::<Decimal32Type>().values(), |v| {
                f64::from(v) * unit
            })
        }
        DataType::Decimal64(_, scale) => {
            let unit = decimal_unit(*scale);
            widen(array.as_primitive::<Decimal64Type>().values(), |v| {
                v as f64 * unit
            })
        }
        DataType::Decimal128(_, scale) => {
            let unit = decimal_unit(*scale);
            widen(array.as_primitive::<Decimal128Type>().values(), |v| {
                v as f64 * unit
            })
        }
        DataType::Decimal256(_, scale) => {
            let unit = decimal_unit(*scale);
            widen(array.as_primitive::<Decimal256Type>().values(), |v| {
                // Beyond f64's range: infinite, then reported as not finite.
                v.to_string().parse::<f64>().unwrap_or(f64::INFINITY) * unit
            })
        }
        DataType::Boolean => {
            let bits = array.as_boolean().values();
            Cow::Owned(bits.iter().map(|b| f64::from(u8::from(b))).collect())
        }
        DataType::Null => Cow::Owned(vec![0.0; array.len()]),
        _ => return None,
    };
    Some(Numbers {
        values,
        nulls: array.logical_nulls(),
    })
}

/// The value of one unit of a decimal with this scale: `10^-scale`.
fn decimal_unit(scale: i8) -> f64 {
    10f64.powi(-i32::from(scale))
}

/// A plain string array of one of Arrow's three layouts.
pub(crate) enum Strings<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Strings<'a> {
    /// `array` as strings; `None` if it is not a plain string array.
    pub(crate) fn of(array: &'a dyn Array) -> Option<Strings<'a>> {
        match array.data_type() {
            DataType::Utf8 => Some(Strings::Utf8(array.as_string::<i32>())),
            DataType::LargeUtf8 => Some(Strings::Large(array.as_string::<i64>())),
            DataType::Utf8View => Some(Strings::View(array.as_string_view())),
            _ => None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Strings::Utf8(a) => a.len(),
            Strings::Large(a) => a.len(),
            Strings::View(a) => a.len(),
        }
    }

    /// Row `i`'s string; `None` if null.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// A text column: plain strings, or a dictionary's keys and its strings.
pub(crate) enum Text<'a> {
    Plain(Strings<'a>),
    Dictionary {
        /// Per row: the key, or `None` if the row is null.
        keys: Vec<Option<usize>>,
        values: Strings<'a>,
    },
    /// The null type: every row null.
    Null(usize),
}

impl<'a> Text<'a> {
    /// `array` as text; `None` if its kind is not [`Kind::Text`] or
    /// [`Kind::Null`].
    pub(crate) fn of(array: &'a dyn Array) -> Option<Text<'a>> {
        if let Some(strings) = Strings::of(array) {
            return Some(Text::Plain(strings));
        }
        match array.data_type() {
            DataType::Null => Some(Text::Null(array.len())),
            DataType::Dictionary(..) => {
                let dictionary = array.as_any_dictionary_opt()?;
                let values = Strings::of(dictionary.values().as_ref())?;
                let keys = if values.len() == 0 {
                    // No values: every key is null (Arrow's validity rule).
                    vec![None; array.len()]
                } else {
                    let nulls = dictionary.keys().logical_nulls();
                    dictionary
                        .normalized_keys()
                        .into_iter()
                        .enumerate()
                        .map(|(i, k)| nulls.as_ref().is_none_or(|n| n.is_valid(i)).then_some(k))
                        .collect()
                };
                Some(Text::Dictionary { keys, values })
            }
            _ => None,
        }
    }

    /// A code per row: `code(s)` of its string, `code("")` for a null (a
    /// null string reads as the empty string, as an empty CSV field
    /// does). A dictionary's strings are coded once each, not once per
    /// row.
    pub(crate) fn codes<E>(
        &self,
        mut code: impl FnMut(usize, &str) -> Result<u32, E>,
    ) -> Result<Vec<u32>, E> {
        match self {
            Text::Plain(strings) => (0..strings.len())
                .map(|i| code(i, strings.get(i).unwrap_or("")))
                .collect(),
            Text::Null(n) => {
                let empty = if *n > 0 { code(0, "")? } else { 0 };
                Ok(vec![empty; *n])
            }
            Text::Dictionary { keys, values } => {
                // Code each dictionary value used, at its first row.
                let mut value_codes: Vec<Option<u32>> = vec![None; values.len()];
                let mut null_code = None;
                let mut out = Vec::with_capacity(keys.len());
                for (row, key) in keys.iter().enumerate() {
                    let string = key.and_then(|k| values.get(k));
                    let slot = match key {
                        Some(k) if string.is_some() => &mut value_codes[*k],
                        _ => &mut null_code,
                    };
                    let c = match *slot {
                        Some(c) => c,
                        None => *slot.insert(code(row, string.unwrap_or(""))?),
                    };
                    out.push(c);
                }
                Ok(out)
            }
        }
    }
}
