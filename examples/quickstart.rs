//! From rows in memory to predictions: a dataset file, CorgiPile training,
//! a held-out evaluation, predictions for new rows. The README's library
//! quickstart is this file's `main` (a test checks they agree).
//!
//! ```sh
//! cargo run --release --example quickstart
//! ```
//!
//! No data to fetch: the rows are generated (age, income and a one-hot
//! region of 5,000 invented loan applicants; `late` when income / 1000 +
//! age > 90, with 3% of labels flipped).

fn main() -> Result<(), tocpile::Error> {
    // quickstart: begin
    use std::sync::Arc;
    use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
    use tocpile::model::ModelKind;
    use tocpile::scale::ScaleKind;
    use tocpile::train::{evaluate, Trainer};
    use tocpile::SparseBatch;

    // 1. Rows in memory: [age, income, region one-hot x 3], label 1 (late)
    //    when income / 1000 + age > 90, with 3% of the labels flipped.
    let mut seed = 42u64;
    let mut uniform = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for _ in 0..5000 {
        let (age, income) = (18.0 + 60.0 * uniform(), 90_000.0 * uniform());
        let mut row = [age, income, 0.0, 0.0, 0.0];
        row[2 + (3.0 * uniform()) as usize] = 1.0;
        let late = (income / 1000.0 + age > 90.0) ^ (uniform() < 0.03);
        rows.push(row);
        labels.push(f64::from(u8::from(late)));
    }

    // 2. Two dataset files (compressed pages in checksummed blocks):
    //    4,000 rows to train on, 1,000 held out. Each stores a max-abs
    //    column scaling, as `tocpile encode` does; training applies it.
    let (dir, id) = (std::env::temp_dir(), std::process::id());
    let train_path = dir.join(format!("quickstart-{id}-train.toc"));
    let test_path = dir.join(format!("quickstart-{id}-test.toc"));
    for (path, range) in [(&train_path, 0..4000), (&test_path, 4000..5000)] {
        let mut writer = DatasetWriter::create(path, 5, WriterOptions::default())?;
        writer.set_scaling(Some(ScaleKind::MaxAbs))?;
        let batch = SparseBatch::from_dense_rows(5, &rows[range.clone()])?;
        writer.push(&batch, &labels[range])?;
        writer.finish()?; // the file appears only now, complete
    }

    // 3. Train logistic regression on CorgiPile-shuffled mini-batches, with
    //    the command line's defaults (Adam at 0.03, 250-row mini-batches).
    let fitted = Trainer::new(ModelKind::Logistic).fit_file(&train_path)?;

    // 4. Evaluate on the held-out file.
    let held_out = evaluate(&fitted.model, &Arc::new(Dataset::open(&test_path)?))?;
    println!("held-out accuracy {:.4}", held_out.accuracy);
    assert!(held_out.accuracy > 0.9);

    // 5. Predict new rows (no labels needed).
    let new_rows = SparseBatch::from_dense_rows(
        5,
        &[
            [25.0, 20_000.0, 1.0, 0.0, 0.0],
            [60.0, 80_000.0, 0.0, 0.0, 1.0],
        ],
    )?;
    let predicted = fitted.model.predict_rows(&new_rows)?.labels();
    assert_eq!(predicted, [0.0, 1.0]);
    std::fs::remove_file(&train_path).ok();
    std::fs::remove_file(&test_path).ok();
    // quickstart: end
    Ok(())
}
