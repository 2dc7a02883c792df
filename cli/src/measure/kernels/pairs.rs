//! The kernel table's `PAIRS` row: each batch as the loader hands pair
//! codes to the trainer (`Batch::Coded`, the loader issue's default form
//! on files whose batches go to their rows): every entry one code into a
//! table of the distinct `(column, value)` pairs of all the batches,
//! shared by every batch as the loader shares its file-wide table.
//!
//! The loader's table holds the pairs of every dictionary's first layer;
//! the batches' own distinct pairs are the same set where the batches are
//! the file (and a subset otherwise), so the kernels read the same table
//! they would in training.

use std::collections::HashMap;
use tocpile::formats::{Batch, CodedRows, Pair, PairTable};
use tocpile::{Result, SparseBatch};

/// The batches as pair codes into one shared table, and the bytes they
/// hold in memory: 4 a code, 4 a row end, the table's 16 a pair once.
///
/// # Errors
/// What [`CodedRows::new`] returns (never, for batches of valid rows).
pub fn encode_pairs(batches: &[SparseBatch]) -> Result<(Vec<Batch>, usize)> {
    let mut ids: HashMap<(u32, u64), u32> = HashMap::new();
    let mut table: Vec<Pair> = Vec::new();
    let mut coded: Vec<(Vec<u32>, Vec<u32>)> = Vec::with_capacity(batches.len());
    for batch in batches {
        let (mut ends, mut codes) = (Vec::with_capacity(batch.n_rows()), Vec::new());
        for r in 0..batch.n_rows() {
            let (cols, values) = batch.row(r);
            for (&col, &val) in cols.iter().zip(values) {
                let id = *ids.entry((col, val.to_bits())).or_insert_with(|| {
                    table.push(Pair { val, col });
                    (table.len() - 1) as u32
                });
                codes.push(id);
            }
            ends.push(codes.len() as u32);
        }
        coded.push((ends, codes));
    }
    let table = PairTable::new(table);
    let mut bytes = 16 * table.len();
    let mut out = Vec::with_capacity(coded.len());
    for ((ends, codes), batch) in coded.into_iter().zip(batches) {
        bytes += 4 * (ends.len() + codes.len());
        let rows = CodedRows::new(batch.n_cols(), table.clone(), ends, codes)?;
        out.push(Batch::Coded(rows));
    }
    Ok((out, bytes))
}

#[cfg(test)]
mod tests {
    use super::encode_pairs;
    use tocpile::SparseBatch;

    #[test]
    fn pair_codes_decode_to_the_batches_and_share_one_table() {
        let rows: Vec<[f64; 3]> = (0..40)
            .map(|i| [1.0, (i % 3) as f64, if i % 4 == 0 { 0.0 } else { 2.5 }])
            .collect();
        let batch = SparseBatch::from_dense_rows(3, &rows).unwrap();
        let batches = [batch.slice_rows(0..15), batch.slice_rows(15..40)];
        let (coded, bytes) = encode_pairs(&batches).unwrap();
        assert_eq!(coded.len(), 2);
        for (c, b) in coded.iter().zip(&batches) {
            assert!(c.decode() == *b);
        }
        // Pairs (0, 1.0), (1, 1.0), (1, 2.0), (2, 2.5): 4 in the table.
        let entries: usize = batches.iter().map(|b| b.nnz()).sum();
        assert_eq!(bytes, 16 * 4 + 4 * (40 + entries));
    }
}
