//! `train` for one step on a forged dataset file (see `dataset_forged`):
//! the loader (strategy and mode chosen by the input) and the model (lr,
//! softmax or a small MLP, sized by the footer's column count) must give
//! errors, never a panic or an allocation beyond the memory ceiling
//! (`-malloc_limit_mb`, with the resource limits set low).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile::dataset::Dataset;
use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Gradient, Model, ModelKind};
use tocpile_fuzz::forged::{arbitrary_file, set_fuzz_limits};

fuzz_target!(|data: &[u8]| {
    set_fuzz_limits();
    let mut u = Unstructured::new(data);
    let (Ok(file), Ok(strategy), Ok(mode), Ok(model)) = (
        arbitrary_file(&mut u),
        u.choose(&[Strategy::CorgiPile, Strategy::NoShuffle, Strategy::Mrs]),
        u.choose(&[Mode::Auto, Mode::Exact, Mode::Page]),
        u.int_in_range(0u8..=2),
    ) else {
        return;
    };
    let Ok(ds) = Dataset::from_memory(file, "forged.toc") else {
        return;
    };
    let n_cols = ds.info().n_cols;
    let kind = match model {
        0 => ModelKind::Logistic,
        1 => ModelKind::Softmax { classes: 2 },
        _ => ModelKind::Mlp {
            hidden: vec![4],
            outputs: 1,
        },
    };
    let Ok(mut model) = Model::new(kind, n_cols, 0) else {
        return;
    };
    let options = LoaderOptions::default()
        .with_strategy(*strategy)
        .with_mode(*mode)
        .with_batch_rows(16);
    let Ok(loader) = Loader::new(Arc::new(ds), options) else {
        return;
    };
    let Ok(mut epoch) = loader.epoch(0) else {
        return;
    };
    if let Some(Ok(batch)) = epoch.next() {
        let mut grad = Gradient::new(&model);
        if model.gradient(&batch.pages, 0.0, &mut grad).is_ok() {
            model.step(&grad, 0.1);
        }
    }
});
