//! One trainer: a model trained in the database on a table equals, bit
//! for bit, the model `tocpile train` makes from a dataset file of the
//! same rows in the same order (No Shuffle: both read the rows in order,
//! 64 to a mini-batch; the same seed). The file is a LIBSVM file written
//! from the table's rows in `ctid` order, encoded as `tocpile encode`
//! encodes it.
//!
//! With `TOCPILE_CLI` set when the tests are built (the path of a
//! `tocpile` binary the server's user may run: CI sets it), the command
//! line itself encodes and trains; the library's encode and train path
//! (the command line's, through `Trainer`) is compared always.

#[pgrx::pg_schema]
mod tests {
    use std::path::{Path, PathBuf};

    use pgrx::prelude::*;
    use tocpile_lib::dataset::{DatasetWriter, WriterOptions};
    use tocpile_lib::ingest::libsvm::{LibsvmOptions, LibsvmReader};
    use tocpile_lib::loader::{LoaderOptions, Strategy};
    use tocpile_lib::model::ModelKind;
    use tocpile_lib::scale::ScaleKind;
    use tocpile_lib::train::{TrainOptions, Trainer};

    use crate::tests::{noisy_rows, table};

    const EPOCHS: usize = 3;
    const BATCH: usize = 64;
    const SEED: u64 = 5;

    /// The table's rows in `ctid` order as a LIBSVM file.
    fn libsvm_of(name: &str, path: &Path) {
        let mut text = String::new();
        Spi::connect(|client| {
            let sql = format!("SELECT label, x1, x2, x3 FROM {name} ORDER BY ctid");
            for row in client.select(&sql, None, &[]).unwrap() {
                let y = row.get::<f64>(1).unwrap().unwrap();
                text.push_str(&format!("{y}"));
                for j in 0..3 {
                    let v = row.get::<f64>(j + 2).unwrap().unwrap();
                    if v != 0.0 {
                        // Rust's shortest representation reads back exactly.
                        text.push_str(&format!(" {}:{v}", j + 1));
                    }
                }
                text.push('\n');
            }
        });
        std::fs::write(path, text).unwrap();
    }

    /// What `tocpile encode FILE.libsvm -o FILE.toc` (max-abs scaling
    /// stored) then `tocpile train FILE.toc --shuffle none` do, through
    /// the library.
    fn library_model(libsvm: &Path, toc: &Path, kind: ModelKind) -> Vec<u8> {
        let options = LibsvmOptions::default().with_n_cols(Some(3));
        let mut reader = LibsvmReader::open(libsvm, options).unwrap();
        let mut writer = DatasetWriter::create(toc, 3, WriterOptions::default()).unwrap();
        writer.set_scaling(Some(ScaleKind::MaxAbs)).unwrap();
        while let Some(chunk) = reader.next_chunk(10_000).unwrap() {
            writer.push(&chunk.batch, &chunk.labels).unwrap();
        }
        writer.finish().unwrap();
        let fitted = Trainer::new(kind)
            .options(TrainOptions::default().with_epochs(EPOCHS))
            .loader(LoaderOptions::default().with_strategy(Strategy::NoShuffle))
            .batch_rows(BATCH)
            .seed(SEED)
            .fit_file(toc)
            .unwrap();
        fitted.model.to_bytes()
    }

    /// The same through the `tocpile` binary at `cli`.
    fn cli_model(cli: &str, libsvm: &Path, toc: &Path, model: &str) -> Vec<u8> {
        let saved = toc.with_extension("model");
        let run = |args: &[&str]| {
            let out = std::process::Command::new(cli).args(args).output().unwrap();
            assert!(
                out.status.success(),
                "{cli} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let (libsvm, toc_path) = (libsvm.display().to_string(), toc.display().to_string());
        run(&["encode", &libsvm, "--cols", "3", "-o", &toc_path]);
        let (epochs, batch, seed) = (EPOCHS.to_string(), BATCH.to_string(), SEED.to_string());
        run(&[
            "train",
            &toc_path,
            "--model",
            model,
            "--shuffle",
            "none",
            "--epochs",
            &epochs,
            "--batch-size",
            &batch,
            "--seed",
            &seed,
            "--save",
            &saved.display().to_string(),
        ]);
        let bytes = std::fs::read(&saved).unwrap();
        std::fs::remove_file(&saved).ok();
        bytes
    }

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("tocpile-pg-cli-{}-{name}", std::process::id()))
    }

    #[pg_test]
    fn a_model_trained_in_the_database_is_the_command_lines_bit_for_bit() {
        // Label-sorted, overlapping classes (as census); labels 0 and 1,
        // then -1 and +1 (the trainer's binary labels), then a value.
        let data = noisy_rows(6_000, 11, true, 1.0, 0.3);
        table("cli_rows", &data);
        let cli = option_env!("TOCPILE_CLI");
        for (model, kind, label) in [
            ("lr", ModelKind::Logistic, "label"),
            ("svm", ModelKind::Svm, "2 * label - 1"),
            (
                "linreg",
                ModelKind::LinearRegression,
                "100 * x1 - 3 * x3 + label",
            ),
        ] {
            Spi::run(&format!("UPDATE cli_rows SET label = {label}")).unwrap();
            // A fresh heap in the updated order (UPDATE moves the rows).
            Spi::run("CREATE TABLE cli_in_order AS SELECT * FROM cli_rows ORDER BY ctid").unwrap();
            let in_db = Spi::get_one::<Vec<u8>>(&format!(
                "SELECT tocpile.model_bytes(tocpile.train('cli_in_order', 'label', model => '{model}', \
                 shuffle => 'none', epochs => {EPOCHS}, batch_size => {BATCH}, seed => {SEED}))"
            ))
            .unwrap()
            .unwrap();
            let (libsvm, toc) = (scratch("rows.libsvm"), scratch("rows.toc"));
            libsvm_of("cli_in_order", &libsvm);
            let by_library = library_model(&libsvm, &toc, kind);
            assert!(
                in_db == by_library,
                "{model}: the database's model is not the library's"
            );
            if let Some(cli) = cli {
                let by_cli = cli_model(cli, &libsvm, &toc, model);
                assert!(
                    in_db == by_cli,
                    "{model}: the database's model is not {cli}'s"
                );
            }
            for p in [&libsvm, &toc] {
                std::fs::remove_file(p).ok();
            }
            Spi::run("DROP TABLE cli_in_order").unwrap();
        }
        if cli.is_none() {
            notice!("TOCPILE_CLI was not set at build time: compared with the library's path only");
        }
    }
}
