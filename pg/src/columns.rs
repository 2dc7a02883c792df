//! Which columns of a table are the label and the features, and how a
//! tuple becomes a row: the CorgiPile paper's `SGDTuple` (section 6.2).
//!
//! A feature column is a scalar (`float8`, `float4`, `int2`, `int4`,
//! `int8`, `numeric` or `boolean`: one feature) or a one-dimensional
//! array of those (one feature per element, every row the same length, as
//! the paper's dense `features_v[]`). Features are numbered in the order
//! the columns are given, an array's elements in order. A NULL feature or
//! label, a NaN or an infinity is an error naming the row and column:
//! training on a silently zeroed value would be a wrong model.

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::failure::{Failure, Result};
use crate::heap::{attribute, deform, Tid};
use crate::rows::RowBuffer;

/// A scalar type a feature or label may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Float8,
    Float4,
    Int2,
    Int4,
    Int8,
    Numeric,
    Bool,
}

impl Scalar {
    fn of(oid: pg_sys::Oid) -> Option<Scalar> {
        Some(match oid {
            pg_sys::FLOAT8OID => Scalar::Float8,
            pg_sys::FLOAT4OID => Scalar::Float4,
            pg_sys::INT2OID => Scalar::Int2,
            pg_sys::INT4OID => Scalar::Int4,
            pg_sys::INT8OID => Scalar::Int8,
            pg_sys::NUMERICOID => Scalar::Numeric,
            pg_sys::BOOLOID => Scalar::Bool,
            _ => return None,
        })
    }

    /// The datum's value.
    ///
    /// # Safety
    /// `datum` is a non-NULL value of this type.
    unsafe fn value(self, datum: pg_sys::Datum) -> f64 {
        match self {
            Scalar::Float8 => f64::from_datum(datum, false).unwrap_or(f64::NAN),
            Scalar::Float4 => f32::from_datum(datum, false).map_or(f64::NAN, f64::from),
            Scalar::Int2 => datum.value() as i16 as f64,
            Scalar::Int4 => datum.value() as i32 as f64,
            Scalar::Int8 => i64::from_datum(datum, false).map_or(f64::NAN, |v| v as f64),
            Scalar::Bool => f64::from(u8::from(datum.value() != 0)),
            Scalar::Numeric => {
                pgrx::direct_function_call::<f64>(pg_sys::numeric_float8, &[Some(datum)])
                    .unwrap_or(f64::NAN)
            }
        }
    }
}

/// One column read from each tuple.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    /// 0-based attribute index.
    index: usize,
    scalar: Scalar,
    /// `Some` for an array column: its element type's storage.
    array: Option<ArrayElem>,
    /// Features the column gives (1 for a scalar; an array's length).
    width: usize,
}

#[derive(Debug, Clone, Copy)]
struct ArrayElem {
    oid: pg_sys::Oid,
    len: i16,
    byval: bool,
    align: std::ffi::c_char,
}

/// The label and feature columns of a table, resolved against its tuple
/// descriptor.
#[derive(Debug, Clone)]
pub struct Columns {
    label: Column,
    features: Vec<Column>,
    /// Attributes to deform: one past the highest index used.
    deform: usize,
    /// Features per row (set with the array widths).
    n_cols: usize,
}

impl Columns {
    /// Resolves `label` and `features` (`None`: every other column) in
    /// the descriptor of `rel`. Array columns get their width later
    /// ([`set_array_widths`](Self::set_array_widths)).
    ///
    /// # Safety
    /// `rel` is an open relation.
    pub unsafe fn resolve(
        rel: pg_sys::Relation,
        label: &str,
        features: Option<&[String]>,
    ) -> Result<Columns> {
        let desc = (*rel).rd_att;
        let mut all = Vec::new();
        for i in 0..(*desc).natts as usize {
            let att = &*(*desc).attrs.as_ptr().add(i);
            if att.attisdropped {
                continue;
            }
            let name = pgrx::name_data_to_str(&att.attname).to_string();
            all.push((name, i, att.atttypid));
        }
        let find = |name: &str| -> Result<Column> {
            let (_, index, oid) = all.iter().find(|(n, ..)| n == name).ok_or_else(|| {
                Failure::argument(format!(
                    "column \"{name}\" does not exist in the table (columns: {})",
                    all.iter()
                        .map(|(n, ..)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            column(name, *index, *oid)
        };
        let label = find(label)?;
        if label.array.is_some() {
            return Err(Failure::argument(format!(
                "the label column \"{}\" is an array: a label is one number",
                label.name
            )));
        }
        let features = match features {
            Some(names) => names.iter().map(|n| find(n)).collect::<Result<Vec<_>>>()?,
            None => all
                .iter()
                .filter(|(n, ..)| *n != label.name)
                .map(|(n, ..)| find(n))
                .collect::<Result<Vec<_>>>()?,
        };
        if features.is_empty() {
            return Err(Failure::argument("no feature columns"));
        }
        for (k, f) in features.iter().enumerate() {
            if f.name == label.name || features[..k].iter().any(|g| g.name == f.name) {
                return Err(Failure::argument(format!(
                    "column \"{}\" is given twice (label and features must be distinct)",
                    f.name
                )));
            }
        }
        let deform = features
            .iter()
            .chain([&label])
            .map(|c| c.index + 1)
            .max()
            .unwrap_or(0);
        let n_cols = features.iter().map(|c| c.width).sum();
        Ok(Columns {
            label,
            features,
            deform,
            n_cols,
        })
    }

    /// The array columns' names, in feature order (their widths are to be
    /// set).
    pub fn array_columns(&self) -> Vec<String> {
        let arrays = self.features.iter().filter(|c| c.array.is_some());
        arrays.map(|c| c.name.clone()).collect()
    }

    /// Sets the width of each array column (in
    /// [`array_columns`](Self::array_columns) order).
    pub fn set_array_widths(&mut self, widths: &[usize]) {
        let arrays = self.features.iter_mut().filter(|c| c.array.is_some());
        for (c, &w) in arrays.zip(widths) {
            c.width = w;
        }
        self.n_cols = self.features.iter().map(|c| c.width).sum();
    }

    /// The length of each array column (in
    /// [`array_columns`](Self::array_columns) order) in the tuple in
    /// `slot`, `None` for a NULL array.
    ///
    /// # Safety
    /// `slot` holds a tuple of the relation the columns were resolved in.
    pub unsafe fn array_lengths(&self, slot: *mut pg_sys::TupleTableSlot) -> Vec<Option<usize>> {
        deform(slot, self.deform);
        let arrays = self.features.iter().filter(|c| c.array.is_some());
        arrays
            .map(|c| {
                attribute(slot, c.index).map(|d| {
                    let a = pg_sys::pg_detoast_datum(d.cast_mut_ptr()) as *mut pg_sys::ArrayType;
                    match (*a).ndim {
                        1 => *(a.add(1) as *const std::ffi::c_int) as usize,
                        _ => 0,
                    }
                })
            })
            .collect()
    }

    /// Features per row.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// The label column's name.
    pub fn label_name(&self) -> &str {
        &self.label.name
    }

    /// The feature columns' names, in order.
    pub fn feature_names(&self) -> Vec<String> {
        self.features.iter().map(|c| c.name.clone()).collect()
    }

    /// Reads the tuple in `slot` (at `at`) into `out` as one row and its
    /// label. On error the buffer is as before.
    ///
    /// # Safety
    /// `slot` holds a tuple of the relation the columns were resolved in.
    pub unsafe fn read(
        &self,
        slot: *mut pg_sys::TupleTableSlot,
        at: Tid,
        out: &mut RowBuffer,
    ) -> Result<()> {
        deform(slot, self.deform);
        let label = match attribute(slot, self.label.index) {
            Some(d) => self.label.scalar.value(d),
            None => return Err(self.bad(&self.label, at, "is NULL")),
        };
        if !label.is_finite() {
            return Err(self.bad(&self.label, at, &format!("is {label}")));
        }
        // Room for every feature of the row: the scalar path then
        // pushes without allocating.
        out.reserve_entries(self.n_cols)?;
        let mut base = 0u32;
        for c in &self.features {
            let result = match attribute(slot, c.index) {
                None => Err(self.bad(c, at, "is NULL")),
                Some(d) => match &c.array {
                    None => {
                        let v = c.scalar.value(d);
                        if v.is_finite() {
                            out.push_reserved(base, v);
                            Ok(())
                        } else {
                            Err(self.bad(c, at, &format!("is {v} (features must be finite)")))
                        }
                    }
                    Some(elem) => self.read_array(c, elem, d, base, at, out),
                },
            };
            if let Err(e) = result {
                out.abandon_row();
                return Err(e);
            }
            base += c.width as u32;
        }
        out.finish_row(label)
    }

    unsafe fn read_array(
        &self,
        c: &Column,
        elem: &ArrayElem,
        datum: pg_sys::Datum,
        base: u32,
        at: Tid,
        out: &mut RowBuffer,
    ) -> Result<()> {
        let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) as *mut pg_sys::ArrayType;
        let ndim = (*array).ndim;
        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut n: std::ffi::c_int = 0;
        if ndim > 1 {
            return Err(self.bad(c, at, &format!("has {ndim} dimensions (one expected)")));
        }
        if ndim == 1 {
            pg_sys::deconstruct_array(
                array,
                elem.oid,
                elem.len.into(),
                elem.byval,
                elem.align,
                &mut elems,
                &mut nulls,
                &mut n,
            );
        }
        if n as usize != c.width {
            let expected = c.width;
            return Err(self.bad(
                c,
                at,
                &format!("has {n} elements, not {expected} (the width of the column's first row)"),
            ));
        }
        for k in 0..n as usize {
            if *nulls.add(k) {
                return Err(self.bad(c, at, &format!("has a NULL element at index {}", k + 1)));
            }
            let v = c.scalar.value(*elems.add(k));
            if !v.is_finite() {
                return Err(self.bad(
                    c,
                    at,
                    &format!("element {} is {v} (features must be finite)", k + 1),
                ));
            }
            // Within the room `read` made for the row.
            out.push_reserved(base + k as u32, v);
        }
        Ok(())
    }

    fn bad(&self, c: &Column, at: Tid, what: &str) -> Failure {
        Failure::data(format!("row {at}: column \"{}\" {what}", c.name))
    }
}

/// The column `name` (attribute `index`, type `oid`), if its type is one
/// a feature may have.
unsafe fn column(name: &str, index: usize, oid: pg_sys::Oid) -> Result<Column> {
    let elem_oid = pg_sys::get_element_type(oid);
    let base = if elem_oid == pg_sys::InvalidOid {
        oid
    } else {
        elem_oid
    };
    let scalar = Scalar::of(base).ok_or_else(|| {
        let ty = std::ffi::CStr::from_ptr(pg_sys::format_type_be(oid)).to_string_lossy();
        Failure::argument(format!(
            "column \"{name}\" is of type {ty}: features and labels must be float8, float4, \
             int2, int4, int8, numeric or boolean, or (features) arrays of those"
        ))
    })?;
    let array = (elem_oid != pg_sys::InvalidOid).then(|| {
        let (mut len, mut byval, mut align) = (0i16, false, 0 as std::ffi::c_char);
        pg_sys::get_typlenbyvalalign(elem_oid, &mut len, &mut byval, &mut align);
        ArrayElem {
            oid: elem_oid,
            len,
            byval,
            align,
        }
    });
    Ok(Column {
        name: name.to_string(),
        index,
        scalar,
        width: 1,
        array,
    })
}
