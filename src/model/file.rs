//! Model files, versions 1 and 2 (specified in `docs/FORMAT.md`, "Model
//! files"):
//!
//! ```text
//! model  := "TOCM" version:u8(1|2) kind:u8 0x00 0x00
//!           n_cols:u64le n_layers:u32le width:u64le{n_layers}
//!           n_params:u64le param:f64le{n_params} [extra] crc32:u32le
//! extra  := schema_crc:u32le flags:u8 [scaling] [labels]   (version 2 only;
//!           flags bit 0: a scaling section follows, crate::scale;
//!           bit 1: labels := class0:f64le class1:f64le, a binary
//!           model's labels, `Model::binary_labels`)
//! ```
//!
//! A model without a scaling or schema is written as version 1, byte for
//! byte what earlier builds wrote; version 2 adds the input scaling and
//! the schema fingerprint. Both versions read.
//!
//! Neither paper defines a model format; this one is ours. Writing is
//! atomic (a temporary file beside the target, fsynced, renamed). Reading
//! treats the bytes as hostile: every count is checked against the bytes
//! that remain before anything is allocated, the CRC-32 covers every byte
//! before it, and every violation is an [`Error`] with its offset, never a
//! panic.

use std::fs;
use std::path::Path;

use super::{check_dims, param_count, Layer, Model, ModelKind};
use crate::error::{Error, Result};
use crate::scale::Scaling;
use crate::wire::{write_u32, write_u64, Reader};

const MAGIC: [u8; 4] = *b"TOCM";
const VERSION: u8 = 2;
/// Magic, version, kind, two reserved bytes, `n_cols`, `n_layers`.
const FIXED: usize = 8 + 8 + 4;
/// Parameters handed over at a time when a model file is written.
const PARAMS_PER_PIECE: usize = 8192;

impl Model {
    /// The model file bytes (see the module docs and `docs/FORMAT.md`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let widths = self.kind.widths();
        let mut out = Vec::with_capacity(FIXED + 8 * widths.len() + 8 * self.n_params() + 12);
        self.write_file(|bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })
        .expect("writing to memory");
        out
    }

    /// Hands the model file's bytes to `sink` in pieces (the parameters
    /// a few thousand at a time, never a copy of them all), the checksum
    /// computed on the way.
    fn write_file(&self, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut crc = crc32fast::Hasher::new();
        let mut put = |bytes: &[u8]| {
            crc.update(bytes);
            sink(bytes)
        };
        let widths = self.kind.widths();
        let version = if self.scaling.is_none() && self.schema == 0 && self.binary_labels.is_none()
        {
            1
        } else {
            VERSION
        };
        let mut head = MAGIC.to_vec();
        head.extend_from_slice(&[version, self.kind.code(), 0, 0]);
        write_u64(&mut head, self.n_cols as u64);
        write_u32(&mut head, widths.len() as u32);
        for w in widths {
            write_u64(&mut head, w as u64);
        }
        write_u64(&mut head, self.n_params() as u64);
        put(&head)?;
        let mut chunk = Vec::with_capacity(PARAMS_PER_PIECE * 8);
        for p in self.layers.iter().flat_map(Layer::values) {
            chunk.extend_from_slice(&p.to_le_bytes());
            if chunk.len() == chunk.capacity() {
                put(&chunk)?;
                chunk.clear();
            }
        }
        put(&chunk)?;
        if version == 2 {
            let mut tail = Vec::new();
            write_u32(&mut tail, self.schema);
            tail.push(
                u8::from(self.scaling.is_some()) | u8::from(self.binary_labels.is_some()) << 1,
            );
            if let Some(s) = &self.scaling {
                s.write(&mut tail);
            }
            if let Some(labels) = self.binary_labels {
                labels
                    .iter()
                    .for_each(|y| tail.extend_from_slice(&y.to_le_bytes()));
            }
            put(&tail)?;
        }
        let crc = crc.finalize();
        sink(&crc.to_le_bytes())
    }

    /// Reads a model from untrusted bytes. Never panics; allocates at most
    /// about the input's length.
    ///
    /// # Errors
    /// The first rule the bytes break (`docs/FORMAT.md`, "Model files"):
    /// [`Error::Truncated`], [`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`], [`Error::FieldOutOfRange`] (kind,
    /// reserved bytes, dimensions), [`Error::LengthMismatch`] (parameter
    /// count), [`Error::InvalidNumber`] (a parameter that is NaN or
    /// infinite), [`Error::TrailingBytes`], then
    /// [`Error::ChecksumMismatch`] (with the path `"(memory)"`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        parse(bytes, "(memory)")
    }

    /// Writes the model to `path` atomically: the bytes go to a temporary
    /// file beside it, which is fsynced and then renamed over `path`.
    ///
    /// # Errors
    /// [`Error::InvalidNumber`] for a parameter that is NaN or infinite (a
    /// file [`load`](Self::load) would reject: nothing is written);
    /// [`Error::Io`]; `path` is then untouched.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let params = self.layers.iter().flat_map(Layer::values);
        if let Some((i, &p)) = params.enumerate().find(|(_, p)| !p.is_finite()) {
            return Err(Error::InvalidNumber {
                what: format!("parameter {i} of the model to save"),
                value: p,
                expected: "a finite number",
            });
        }
        let mut file = crate::atomic::AtomicFile::create(path.as_ref())?;
        self.write_file(|bytes| file.write_all(bytes))?;
        file.commit()
    }

    /// Reads a model file written by [`save`](Self::save).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read;
    /// [`Error::ChecksumMismatch`] naming the file; any other rule of
    /// [`from_bytes`](Self::from_bytes) as an [`Error::InFile`] naming the
    /// file (offsets are from its start).
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        let name = path.display().to_string();
        parse(&bytes, &name).map_err(|error| match error {
            e @ Error::ChecksumMismatch { .. } => e,
            // Not a model file at all (a dataset file, an empty file): the
            // file and what it is, without a section.
            error @ Error::BadMagic { .. } => Error::InFile {
                path: name.clone(),
                section: String::new(),
                offset: 0,
                error: Box::new(error),
            },
            error => Error::InFile {
                path: name.clone(),
                section: "model file".into(),
                offset: 0,
                error: Box::new(error),
            },
        })
    }
}

fn parse(bytes: &[u8], name: &str) -> Result<Model> {
    let mut r = Reader::new(bytes);
    r.magic(&MAGIC)?;
    let version = r.u8("version")?;
    if version != 1 && version != VERSION {
        return Err(Error::UnsupportedVersion {
            what: "model file format",
            found: version,
            supported: VERSION,
        });
    }
    let code = r.u8("model kind")?;
    if code > 4 {
        return Err(Error::FieldOutOfRange {
            what: "model kind",
            offset: 5,
            value: code.into(),
            max: 4,
        });
    }
    for offset in [6, 7] {
        let b = r.u8("reserved byte")?;
        if b != 0 {
            return Err(Error::FieldOutOfRange {
                what: "reserved byte",
                offset,
                value: b.into(),
                max: 0,
            });
        }
    }
    let n_cols = r.u64_max("n_cols", crate::MAX_COLS as u64)? as usize;
    let n_layers = r.u32("n_layers")? as usize;
    // The widths must fit in what remains before they are allocated.
    if n_layers == 0 {
        return Err(Error::FieldBelowMinimum {
            what: "n_layers",
            offset: r.offset() - 4,
            value: 0,
            min: 1,
        });
    }
    if n_layers > r.remaining() / 8 {
        return Err(Error::Truncated {
            what: "layer widths",
            offset: r.offset(),
            needed: n_layers as u64 * 8,
            available: r.remaining(),
        });
    }
    let mut widths = Vec::with_capacity(n_layers);
    for _ in 0..n_layers {
        widths.push(r.u64_max("layer width", u32::MAX as u64)? as usize);
    }
    // The kind's shape rules, each reported at its field.
    if code <= 3 && n_layers != 1 {
        return Err(Error::FieldOutOfRange {
            what: if code == 3 {
                "layers of a softmax model"
            } else {
                "layers of a linear model"
            },
            offset: FIXED - 4,
            value: n_layers as u64,
            max: 1,
        });
    }
    if code <= 2 && widths[0] != 1 {
        let (value, what) = (
            widths[0] as u64,
            "output width of a linear model (exactly 1)",
        );
        return Err(if value == 0 {
            Error::FieldBelowMinimum {
                what,
                offset: FIXED,
                value,
                min: 1,
            }
        } else {
            Error::FieldOutOfRange {
                what,
                offset: FIXED,
                value,
                max: 1,
            }
        });
    }
    let kind = ModelKind::from_code(code, &widths).ok_or(Error::FieldOutOfRange {
        what: "model kind",
        offset: 5,
        value: code.into(),
        max: 4,
    })?;
    // Widths of 0 (and a softmax of one class) are rejected where they are.
    let min_width = if code == 3 { 2 } else { 1 };
    if let Some(i) = (0..n_layers).find(|&i| widths[i] < min_width) {
        return Err(Error::FieldBelowMinimum {
            what: if code == 3 {
                "classes of a softmax model (its layer width)"
            } else {
                "layer width"
            },
            offset: FIXED + 8 * i,
            value: widths[i] as u64,
            min: min_width as u64,
        });
    }
    if n_cols == 0 {
        return Err(Error::FieldBelowMinimum {
            what: "n_cols",
            offset: 8,
            value: 0,
            min: 1,
        });
    }
    check_dims(&kind, n_cols, &widths)?;
    let expected = param_count(n_cols, &widths).expect("checked by check_dims");
    let stored = r.u64("n_params")?;
    if stored != expected as u64 {
        return Err(Error::LengthMismatch {
            what: "n_params (implied by the dimensions)",
            expected: expected as u64,
            found: stored,
        });
    }
    // Parameters and checksum must be exactly what remains.
    let params_at = r.offset();
    let needed = expected as u128 * 8 + 4;
    if needed > r.remaining() as u128 {
        return Err(Error::Truncated {
            what: "parameters and checksum",
            offset: params_at,
            needed: u64::try_from(needed).unwrap_or(u64::MAX),
            available: r.remaining(),
        });
    }
    let params = r.f64s(expected as u64, "parameters")?;
    // A NaN or infinite parameter makes every score NaN (or infinite): a
    // model that answers nothing, rejected here rather than at its first
    // prediction.
    if let Some(i) = params.iter().position(|p| !p.is_finite()) {
        return Err(Error::InvalidNumber {
            what: format!("parameter {i} (at byte {})", params_at + 8 * i),
            value: params[i],
            expected: "a finite number",
        });
    }
    let (mut schema, mut scaling, mut labels) = (0, None, None);
    if version == 2 {
        schema = r.u32("schema fingerprint")?;
        let flags_at = r.offset();
        let flags = r.u8("model flags")?;
        if flags > 3 {
            return Err(Error::UnknownFlags {
                offset: flags_at,
                flags,
            });
        }
        if flags & 1 == 1 {
            scaling = Some(Scaling::read(&mut r, n_cols)?);
        }
        if flags & 2 == 2 {
            let at = r.offset();
            let read = r.f64s(2, "binary labels")?;
            let pair = [read[0], read[1]];
            let binary = kind.widths().last() == Some(&1) && code != 2;
            if !(binary && pair[0].is_finite() && pair[1].is_finite() && pair[0] < pair[1]) {
                return Err(Error::InvalidNumber {
                    what: format!("binary labels (at byte {at})"),
                    value: if pair[0].is_finite() {
                        pair[1]
                    } else {
                        pair[0]
                    },
                    expected: "two finite labels in increasing order, of a binary model",
                });
            }
            labels = Some(pair);
        }
        if flags == 0 && schema == 0 {
            // Such a model is written as version 1: one encoding per model.
            return Err(Error::FieldBelowMinimum {
                what: "model flags of a version-2 file without a schema (such a model is \
                       written as version 1; bit 0 means a scaling follows)",
                offset: flags_at,
                value: 0,
                min: 1,
            });
        }
    }
    let body_end = r.offset();
    if body_end + 4 < bytes.len() {
        return Err(Error::TrailingBytes {
            what: "the model file's checksum",
            offset: body_end + 4,
            len: bytes.len() - body_end - 4,
        });
    }
    let crc = r.u32("checksum")?;
    let found = crc32fast::hash(&bytes[..body_end]);
    // Fuzzing builds skip the checksum so mutated files reach the code
    // behind it (as the dataset reader does).
    if crc != found && !cfg!(fuzzing) {
        return Err(Error::ChecksumMismatch {
            path: name.to_string(),
            section: "model".into(),
            offset: 0,
            expected: crc,
            found,
        });
    }
    // Not Model::new: the file's bytes hold every parameter, so no limit
    // applies (and there is no random start to draw).
    let mut model = Model::zeros(kind, n_cols)?;
    model
        .layers
        .iter_mut()
        .flat_map(Layer::values_mut)
        .zip(params)
        .for_each(|(d, s)| *d = s);
    model.schema = schema;
    model.scaling = scaling;
    model.binary_labels = labels;
    Ok(model)
}
