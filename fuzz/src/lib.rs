//! Shared helpers of the tocpile fuzz targets: a hand-written generator of
//! arbitrary [`SparseBatch`]es (edge-case values, rows that share prefixes
//! so the prefix tree grows) and the checks every target applies to a
//! validated [`TocBatch`].

#[path = "../../tests/support/forge.rs"]
pub mod forge;
pub mod forged;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use tocpile::{
    Adaptive, DecodeTree, EncodeOptions, Encoder, Level, Packing, SparseBatch, TocBatch, MAX_COLS,
};

/// Every level.
pub const LEVELS: [Level; 3] = [Level::Sparse, Level::Logical, Level::Full];

/// Every combination of level, packing, integer dictionary and the
/// per-batch choices of format version 2 (all or none): 24.
pub fn all_options() -> impl Iterator<Item = EncodeOptions> {
    LEVELS.into_iter().flat_map(|level| {
        [Packing::Bits, Packing::Bytes]
            .into_iter()
            .flat_map(move |packing| {
                [false, true].into_iter().flat_map(move |int_dictionary| {
                    [Adaptive::ALL, Adaptive::NONE]
                        .into_iter()
                        .map(move |adaptive| {
                            EncodeOptions::default()
                                .with_level(level)
                                .with_packing(packing)
                                .with_int_dictionary(int_dictionary)
                                .with_adaptive(adaptive)
                        })
                })
            })
    })
}

/// One of the 24 option combinations, chosen by the input.
pub fn arbitrary_options(u: &mut Unstructured<'_>) -> Result<EncodeOptions> {
    let i = u.choose_index(24)?;
    Ok(all_options().nth(i).expect("24 combinations"))
}

/// The largest `decoded_nnz` we decode for an input of `len` bytes: keeps
/// memory linear in the input (a prefix tree can make the decoded batch
/// quadratically larger than its encoding).
pub fn decode_budget(len: usize) -> u64 {
    64 * len as u64 + 1024
}

/// Sign bit of an `f64`.
const SIGN: u64 = 1 << 63;
/// Mantissa bits of an `f64`.
const MANTISSA: u64 = (1 << 52) - 1;

/// One value, weighted towards the edge cases of the value encodings:
/// zeros (dropped by the batch), NaNs with payloads and infinities
/// (rejected by the batch: [`arbitrary_batch`] checks that, then folds
/// them onto finite values), subnormals, integers at the limits of the
/// integer dictionary, and raw bits.
pub fn arbitrary_value(u: &mut Unstructured<'_>) -> Result<f64> {
    let sign = if u.arbitrary::<bool>()? { SIGN } else { 0 };
    Ok(match u.int_in_range(0u8..=16)? {
        0 => 0.0,
        1 => -0.0,
        2 => 1.0,
        3 => -1.0,
        // Quiet NaN with a payload and either sign.
        4 => f64::from_bits(sign | 0x7ff8_0000_0000_0000 | (u.arbitrary::<u64>()? & MANTISSA)),
        // Signalling NaN (payload non-zero, quiet bit clear).
        5 => f64::from_bits(
            sign | 0x7ff0_0000_0000_0000 | ((u.arbitrary::<u64>()? & (MANTISSA >> 1)).max(1)),
        ),
        6 => f64::from_bits(sign | f64::INFINITY.to_bits()),
        // Subnormal (or a zero when the mantissa is 0).
        7 => f64::from_bits(sign | (u.arbitrary::<u64>()? & MANTISSA)),
        8 => u.int_in_range(-300i32..=300)? as f64,
        // Integers at the limits of the integer dictionary.
        9 => {
            let exact = (1u64 << 53) as f64;
            *u.choose(&[
                exact,
                -exact,
                exact - 1.0,
                -exact + 1.0,
                exact + 2.0, // an integer, but beyond the exact range
                u32::MAX as f64,
                -(u32::MAX as f64),
                u32::MAX as f64 + 1.0,
                i64::MAX as f64,
                i64::MIN as f64,
                2.0,
                -2.0,
            ])?
        }
        // An integer offset from a shared base, so a dictionary's range can
        // straddle the u32 limit.
        10 => {
            let base = *u.choose(&[0i64, -1, 1 << 40, -(1 << 40), -(1 << 31)])?;
            (base + u.arbitrary::<u32>()? as i64) as f64
        }
        11 => *u.choose(&[
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            f64::from_bits(1),
            f64::from_bits(MANTISSA),
        ])?,
        12 => *u.choose(&[0.5, 1.5, -2.5, 0.1, 1.0 / 3.0, 0.1 + 0.2, 1e-22, 9.99e15])?,
        // A decimal with a few places (the scaled dictionary).
        13 => u.int_in_range(-100_000i64..=100_000)? as f64 / 10f64.powi(u.int_in_range(0..=4)?),
        _ => f64::from_bits(u.arbitrary::<u64>()?),
    })
}

/// A column count: mostly small (so rows repeat and the tree grows),
/// sometimes crossing the packed widths, sometimes at the `u32` limit.
pub fn arbitrary_n_cols(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(match u.int_in_range(0u8..=7)? {
        0 => 0,
        1..=4 => u.int_in_range(1usize..=16)?,
        5 => u.int_in_range(1usize..=300)?,
        6 => u.int_in_range(1usize..=70_000)?,
        _ => *u.choose(&[
            MAX_COLS,
            MAX_COLS - 1,
            1 << 31,
            (1 << 31) + 1,
            1 << 16,
            (1 << 16) + 1,
            257,
            256,
        ])?,
    })
}

/// A batch's rows as pushed (zeros included), and the batch they make.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Column count.
    pub n_cols: usize,
    /// Each row as `(columns, values)`, before zeros were dropped.
    pub rows: Vec<(Vec<u32>, Vec<f64>)>,
    /// The batch built with [`SparseBatch::push_row`].
    pub batch: SparseBatch,
}

/// Builds an arbitrary valid batch of at most `max_rows` rows of at most
/// `max_len` entries. Values come from a small per-batch pool most of the
/// time (so pairs repeat and the dictionary is small), and rows often copy
/// a prefix of an earlier row (so the prefix tree grows deep).
pub fn arbitrary_batch(
    u: &mut Unstructured<'_>,
    max_rows: usize,
    max_len: usize,
) -> Result<Generated> {
    let n_cols = arbitrary_n_cols(u)?;
    let mut batch = SparseBatch::with_cols(n_cols).expect("n_cols <= MAX_COLS");
    let pool_len = u.int_in_range(1usize..=8)?;
    let mut pool = Vec::with_capacity(pool_len);
    for _ in 0..pool_len {
        pool.push(arbitrary_value(u)?);
    }
    let n_rows = u.int_in_range(0..=max_rows)?;
    let mut rows: Vec<(Vec<u32>, Vec<f64>)> = Vec::with_capacity(n_rows);
    for _ in 0..n_rows {
        let mut cols: Vec<u32> = Vec::new();
        let mut vals: Vec<f64> = Vec::new();
        if !rows.is_empty() && u.ratio(1u8, 2u8)? {
            // A prefix of an earlier row (possibly all of it).
            let (pc, pv) = &rows[u.choose_index(rows.len())?];
            let keep = u.int_in_range(0..=pc.len())?;
            cols.extend_from_slice(&pc[..keep]);
            vals.extend_from_slice(&pv[..keep]);
            // Sometimes change one value of the copy.
            if keep > 0 && u.ratio(1u8, 4u8)? {
                let i = u.choose_index(keep)?;
                vals[i] = pick_value(u, &pool)?;
            }
        }
        // Extend with new ascending columns.
        let mut next: u64 = cols.last().map_or(0, |&c| c as u64 + 1);
        while cols.len() < max_len && !u.is_empty() && u.ratio(7u8, 8u8)? {
            let gap: u64 = match u.int_in_range(0u8..=7)? {
                0..=4 => 0,
                5 => u.int_in_range(1u64..=3)?,
                6 => u.int_in_range(4u64..=300)?,
                _ => u.arbitrary::<u32>()? as u64,
            };
            let c = next + gap;
            if c >= n_cols as u64 {
                break;
            }
            cols.push(c as u32);
            vals.push(pick_value(u, &pool)?);
            next = c + 1;
        }
        if vals.iter().any(|v| !v.is_finite()) {
            // Batches hold finite values only: the row is rejected, the
            // batch left as it was; its values folded onto finite ones.
            let before = batch.clone();
            match batch.push_row(&cols, &vals) {
                Err(tocpile::Error::InvalidNumber { .. }) => {}
                other => panic!("a non-finite value was not rejected: {other:?}"),
            }
            assert!(batch == before, "a rejected row changed the batch");
            vals.iter_mut().for_each(|v| *v = finite(*v));
        }
        batch
            .push_row(&cols, &vals)
            .expect("generated rows are valid");
        rows.push((cols, vals));
    }
    Ok(Generated {
        n_cols,
        rows,
        batch,
    })
}

/// `v` if finite, else the finite value of the same bits with the top
/// exponent bit cleared.
pub fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        f64::from_bits(v.to_bits() & !(1 << 62))
    }
}

fn pick_value(u: &mut Unstructured<'_>, pool: &[f64]) -> Result<f64> {
    if u.ratio(3u8, 4u8)? {
        Ok(*u.choose(pool)?)
    } else {
        arbitrary_value(u)
    }
}

/// Asserts that `decoded` satisfies every invariant of [`SparseBatch`]
/// (checked by rebuilding it through the validating constructor).
pub fn assert_valid_batch(decoded: &SparseBatch) {
    let (n_cols, offsets, cols, values) = decoded.clone().into_parts();
    let nnz = cols.len();
    let rebuilt = SparseBatch::from_csr(n_cols, offsets, cols, values)
        .unwrap_or_else(|e| panic!("decoded batch breaks an invariant: {e}"));
    assert_eq!(rebuilt.nnz(), nnz, "decoded batch holds a zero value");
    assert!(rebuilt == *decoded, "decoded batch is not canonical");
}

/// Encodes `batch` with `options` and checks the bytes validate and decode
/// back to `batch`. Returns the encoding.
pub fn assert_round_trip(batch: &SparseBatch, options: EncodeOptions) -> TocBatch {
    let encoded = Encoder::new(options)
        .encode(batch)
        .unwrap_or_else(|e| panic!("encode failed ({options:?}): {e}"));
    let loaded = TocBatch::from_bytes(encoded.as_bytes())
        .unwrap_or_else(|e| panic!("encoder output rejected ({options:?}): {e}"));
    assert_eq!(loaded.n_rows(), batch.n_rows(), "{options:?}");
    assert_eq!(loaded.n_cols(), batch.n_cols(), "{options:?}");
    assert_eq!(loaded.decoded_nnz(), batch.nnz() as u64, "{options:?}");
    assert_eq!(loaded.decoded_nnz(), encoded.decoded_nnz(), "{options:?}");
    assert_eq!(
        loaded.n_first_layer(),
        encoded.n_first_layer(),
        "{options:?}"
    );
    assert_eq!(loaded.n_codes(), encoded.n_codes(), "{options:?}");
    assert_eq!(loaded.level(), options.level, "{options:?}");
    let decoded = loaded.decode();
    assert!(
        decoded == *batch,
        "round trip changed the batch ({options:?})\n in: {batch:?}\nout: {decoded:?}"
    );
    encoded
}

/// The checks for a batch that passed `from_bytes`: cheap accessors always;
/// if the decoded size is within `budget`, decode it, check the result is a
/// valid batch of the announced size, and that it survives a re-encoding at
/// [`Level::Full`]. Returns the decoded batch, or `None` if over budget.
pub fn check_validated<B: AsRef<[u8]>>(batch: &TocBatch<B>, budget: u64) -> Option<SparseBatch> {
    let _ = (
        batch.n_rows(),
        batch.n_cols(),
        batch.n_codes(),
        batch.n_first_layer(),
        batch.level(),
        batch.encoded_len(),
    );
    if batch.decoded_nnz() > budget {
        return None;
    }
    let decoded = batch.decode();
    assert_eq!(decoded.nnz() as u64, batch.decoded_nnz(), "decoded_nnz");
    assert_eq!(decoded.n_rows(), batch.n_rows(), "n_rows");
    assert_eq!(decoded.n_cols(), batch.n_cols(), "n_cols");
    assert_valid_batch(&decoded);

    // The tree rebuilt into a used tree, decoded into a used batch, agrees;
    // so do the full (uncompacted) tree and the one-step decode_bytes.
    let mut tree = batch.full_tree();
    batch.build_tree(&mut tree);
    assert_tree_matches(&tree, batch);
    let mut again = decoded.clone();
    again.push_row(&[], &[]).expect("empty row");
    tree.decode_into(&mut again);
    assert!(again == decoded, "decode_into a used batch differs");
    let full = batch.full_tree();
    assert_tree_matches(&full, batch);
    assert!(full.n_nodes() >= tree.n_nodes(), "compact tree is larger");
    full.decode_into(&mut again);
    assert!(again == decoded, "full tree decodes differently");
    // The form the kernels run on (the rows, where the tree costs more
    // work than they do) holds the same rows.
    let mut settled = tree.clone();
    settled.settle_for_kernels();
    assert_eq!(settled.decoded_nnz(), batch.decoded_nnz(), "settled nnz");
    settled.decode_into(&mut again);
    assert!(again == decoded, "settled form decodes differently");
    // A version-3 page decodes only with its segment's dictionary.
    if batch.shared_dict().is_none() {
        let one_step = tocpile::decode_bytes(batch.as_bytes()).expect("decode_bytes");
        assert!(one_step == decoded, "decode_bytes differs from decode");
    }

    assert_round_trip(&decoded, EncodeOptions::level(Level::Full));
    Some(decoded)
}

/// Asserts that `tree` has the shape `batch` announces.
pub fn assert_tree_matches<B: AsRef<[u8]>>(tree: &DecodeTree, batch: &TocBatch<B>) {
    assert_eq!(tree.n_rows(), batch.n_rows(), "tree n_rows");
    assert_eq!(tree.n_cols(), batch.n_cols(), "tree n_cols");
    assert_eq!(tree.n_codes(), batch.n_codes(), "tree n_codes");
    assert_eq!(tree.decoded_nnz(), batch.decoded_nnz(), "tree decoded_nnz");
    assert_eq!(tree.parents().len(), tree.n_nodes(), "tree parents");
    assert_eq!(tree.keys().len(), tree.n_nodes(), "tree keys");
}

/// Applies up to 16 mutations read from `u` to `bytes`: bit flips, byte
/// overwrites (with values near the format's edges among them), small
/// additions, truncation, insertion, removal and swaps.
pub fn mutate(bytes: &mut Vec<u8>, u: &mut Unstructured<'_>) -> Result<()> {
    for _ in 0..16 {
        if u.is_empty() {
            break;
        }
        let op = u.int_in_range(0u8..=7)?;
        let at = u.arbitrary::<u32>()? as usize;
        let len = bytes.len();
        match op {
            0 if len > 0 => bytes[at % len] ^= 1 << u.int_in_range(0u8..=7)?,
            1 if len > 0 => bytes[at % len] = u.arbitrary()?,
            2 if len > 0 => {
                bytes[at % len] =
                    *u.choose(&[0, 1, 2, 7, 8, 9, 16, 31, 32, 33, 0x7f, 0x80, 0xff])?
            }
            3 if len > 0 => {
                let delta = u.int_in_range(-4i8..=4)?;
                bytes[at % len] = bytes[at % len].wrapping_add_signed(delta);
            }
            4 => bytes.truncate(at % (len + 1)),
            5 => bytes.insert(at % (len + 1), u.arbitrary()?),
            6 if len > 0 => {
                bytes.remove(at % len);
            }
            7 if len > 1 => {
                let other = u.arbitrary::<u32>()? as usize % len;
                bytes.swap(at % len, other);
            }
            _ => {}
        }
    }
    Ok(())
}
