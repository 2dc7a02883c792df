//! The SQL pipeline against an independent reference of the epoch loop:
//! the rows (or pages) of each heap page fetched by `ctid`, put in
//! CorgiPile's order by the library's generator under the documented
//! stream labels, cut into mini-batches and stepped with the library's
//! trainer. The model bytes must be identical: the block reader, the
//! buffers, the tuple shuffle, the batches across buffers and the double
//! buffering change nothing.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use tocpile_lib::formats::FormatKind;
    use tocpile_lib::model::{Model, ModelKind, Optimizer};
    use tocpile_lib::rng::Rng;
    use tocpile_lib::scale::{ColumnStats, ScaleKind, Scaling};
    use tocpile_lib::train::{LabelSummary, Scale, Sgd, TrainOptions};
    use tocpile_lib::{Page, SparseBatch};

    use crate::tests::{rows, table};

    /// One unit of the reference: a row (features, label) or a page.
    #[derive(Clone)]
    enum Unit {
        Row([f64; 3], f64),
        Page(Page),
    }

    struct Run<'a> {
        shuffle: &'a str,
        block_pages: usize,
        optimizer: Optimizer,
        lr: f64,
        epochs: usize,
        batch: usize,
        buffer: f64,
        seed: u64,
    }

    /// Heap pages of a table.
    fn heap_pages(name: &str) -> usize {
        Spi::get_one::<i64>(&format!(
            "SELECT pg_relation_size('{name}') / current_setting('block_size')::int8"
        ))
        .unwrap()
        .unwrap() as usize
    }

    /// The units of each block, in TID order: a block is `block_pages`
    /// heap pages of an ordinary table, `block_pages` consecutive stored
    /// pages of a page table.
    fn units_by_block(name: &str, pages: bool, block_pages: usize) -> Vec<Vec<Unit>> {
        let mut by_page: Vec<Vec<Unit>> = vec![Vec::new(); heap_pages(name)];
        Spi::connect(|client| {
            let sql = if pages {
                format!(
                    "SELECT (ctid::text::point)[0]::int4, labels, page FROM {name} \
                     WHERE page_no <> -1 ORDER BY ctid"
                )
            } else {
                format!(
                    "SELECT (ctid::text::point)[0]::int4, x1, x2, x3, label FROM {name} ORDER BY ctid"
                )
            };
            for row in client.select(&sql, None, &[]).unwrap() {
                let p = row.get::<i32>(1).unwrap().unwrap() as usize;
                let unit = if pages {
                    let labels = row.get::<Vec<u8>>(2).unwrap().unwrap();
                    let bytes = row.get::<Vec<u8>>(3).unwrap().unwrap();
                    let batch = FormatKind::TocFull.load(&bytes).unwrap();
                    let ys = FormatKind::TocFull
                        .load(&labels)
                        .unwrap()
                        .decode()
                        .to_dense();
                    Unit::Page(Page::new(batch, ys.column(0).to_vec()).unwrap())
                } else {
                    let x: Vec<f64> = (2..=4)
                        .map(|i| row.get::<f64>(i).unwrap().unwrap())
                        .collect();
                    Unit::Row([x[0], x[1], x[2]], row.get::<f64>(5).unwrap().unwrap())
                };
                by_page[p].push(unit);
            }
        });
        if pages {
            let all: Vec<Unit> = by_page.into_iter().flatten().collect();
            all.chunks(block_pages).map(<[Unit]>::to_vec).collect()
        } else {
            by_page.chunks(block_pages).map(|c| c.concat()).collect()
        }
    }

    /// The units of epoch `epoch` in the order SGD takes them.
    fn epoch_order(by_block: &[Vec<Unit>], run: &Run, epoch: u64) -> Vec<Unit> {
        let n = by_block.len();
        let corgipile = run.shuffle == "corgipile";
        let blocks: Vec<usize> = if corgipile {
            Rng::stream(run.seed, &[1, epoch]).permutation(n)
        } else {
            (0..n).collect()
        };
        let per_buffer = ((run.buffer * n as f64).ceil() as usize).clamp(1, n.max(1));
        let mut out = Vec::new();
        for (k, group) in blocks.chunks(per_buffer).enumerate() {
            let units: Vec<Unit> = group
                .iter()
                .flat_map(|&b| by_block[b].iter().cloned())
                .collect();
            let mut order: Vec<u32> = (0..units.len() as u32).collect();
            if corgipile {
                Rng::stream(run.seed, &[0x5047_5455_504c_4553, epoch, k as u64])
                    .shuffle(&mut order);
            }
            out.extend(order.iter().map(|&i| units[i as usize].clone()));
        }
        out
    }

    /// Trains the reference model: the units in the reference's order,
    /// cut into mini-batches, stepped by the library's trainer (which the
    /// library's own tests hold to `tocpile train`'s models), set up from
    /// the labels in table order.
    fn reference(by_block: &[Vec<Unit>], run: &Run, scaling: Option<Scaling>) -> Model {
        let mut model = Model::new(ModelKind::Logistic, 3, run.seed).unwrap();
        model.set_scaling(scaling).unwrap();
        let mut labels = LabelSummary::new();
        for u in by_block.iter().flatten() {
            match u {
                Unit::Row(_, y) => labels.add(&[*y]),
                Unit::Page(p) => labels.add(p.labels()),
            }
        }
        let options = TrainOptions::default()
            .with_optimizer(run.optimizer)
            .with_learning_rate(run.lr)
            .with_epochs(run.epochs)
            .with_scale(Scale::Model);
        let mut sgd = Sgd::new(model, &options, &labels).unwrap();
        for epoch in 0..run.epochs {
            let units = epoch_order(by_block, run, epoch as u64);
            let mut batches: Vec<Vec<Page>> = Vec::new();
            let (mut rows_batch, mut labels, mut pages, mut pending) =
                (Vec::new(), Vec::new(), Vec::new(), 0);
            for u in units {
                match u {
                    Unit::Row(x, y) => {
                        rows_batch.push(x);
                        labels.push(y);
                        if rows_batch.len() == run.batch {
                            let b = SparseBatch::from_dense_rows(3, &rows_batch).unwrap();
                            batches.push(vec![Page::encode(FormatKind::Csr, &b, &labels).unwrap()]);
                            rows_batch.clear();
                            labels.clear();
                        }
                    }
                    Unit::Page(p) => {
                        pending += p.n_rows();
                        pages.push(p);
                        if pending >= run.batch {
                            batches.push(std::mem::take(&mut pages));
                            pending = 0;
                        }
                    }
                }
            }
            if !rows_batch.is_empty() {
                let b = SparseBatch::from_dense_rows(3, &rows_batch).unwrap();
                batches.push(vec![Page::encode(FormatKind::Csr, &b, &labels).unwrap()]);
            }
            if !pages.is_empty() {
                batches.push(pages);
            }
            for b in &batches {
                sgd.step(b).unwrap();
            }
            sgd.end_epoch().unwrap();
        }
        sgd.into_model()
    }

    fn sql_model(relation: &str, run: &Run, scale: &str, double_buffer: bool) -> Vec<u8> {
        let label = if relation.ends_with("_toc") {
            "NULL"
        } else {
            "'label'"
        };
        Spi::get_one::<Vec<u8>>(&format!(
            "SELECT tocpile.model_bytes(tocpile.train('{relation}', {label}, shuffle => '{}', \
             epochs => {}, batch_size => {}, buffer => {}, seed => {}, optimizer => '{}', \
             lr => {}, scale => '{scale}', double_buffer => {double_buffer}, \
             block_pages => {}))",
            run.shuffle,
            run.epochs,
            run.batch,
            run.buffer,
            run.seed,
            run.optimizer.name(),
            run.lr,
            run.block_pages,
        ))
        .unwrap()
        .unwrap()
    }

    #[pg_test]
    fn rows_train_exactly_as_the_reference_loop() {
        let data = rows(4000, 11, true);
        table("ref_rows", &data);
        let by_block = |block_pages| units_by_block("ref_rows", false, block_pages);
        assert!(by_block(1).len() >= 20, "{} heap pages", by_block(1).len());
        let runs = [
            Run {
                shuffle: "corgipile",
                block_pages: 1,
                optimizer: Optimizer::Adam,
                lr: 0.03,
                epochs: 3,
                batch: 64,
                buffer: 0.2,
                seed: 7,
            },
            Run {
                shuffle: "corgipile",
                block_pages: 2,
                optimizer: Optimizer::Sgd,
                lr: 0.5,
                epochs: 2,
                batch: 100,
                buffer: 0.1,
                seed: 3,
            },
            Run {
                shuffle: "none",
                block_pages: 1,
                optimizer: Optimizer::Adam,
                lr: 0.03,
                epochs: 2,
                batch: 250,
                buffer: 0.1,
                seed: 0,
            },
        ];
        for run in &runs {
            let expected = reference(&by_block(run.block_pages), run, None).to_bytes();
            for double_buffer in [true, false] {
                let got = sql_model("ref_rows", run, "none", double_buffer);
                assert!(
                    got == expected,
                    "{} {:?} double_buffer {double_buffer}",
                    run.shuffle,
                    run.optimizer
                );
            }
        }
        // The default scaling of a plain table: max-abs fitted on its rows.
        let mut stats = ColumnStats::new(3).unwrap();
        let dense: Vec<[f64; 3]> = data.iter().map(|r| r.0).collect();
        stats
            .add(&SparseBatch::from_dense_rows(3, &dense).unwrap())
            .unwrap();
        let run = &runs[0];
        let expected = reference(&by_block(1), run, Some(stats.scaling(ScaleKind::MaxAbs)));
        assert!(sql_model("ref_rows", run, "auto", true) == expected.to_bytes());
    }

    #[pg_test]
    fn pages_train_exactly_as_the_reference_loop() {
        table("ref_src", &rows(3000, 5, true));
        Spi::run(
            "SELECT tocpile.encode_table('ref_src', 'label', NULL, 'ref_toc', page_rows => 20)",
        )
        .unwrap();
        let factors = Spi::get_one::<Vec<f64>>(
            "SELECT array(SELECT jsonb_array_elements(tocpile.page_table_info('ref_toc')->'factors')::float8)",
        )
        .unwrap()
        .unwrap();
        let scaling = Scaling::new(ScaleKind::MaxAbs, factors).unwrap();
        for block_pages in [1, 3] {
            let run = Run {
                shuffle: "corgipile",
                block_pages,
                optimizer: Optimizer::Adam,
                lr: 0.03,
                epochs: 3,
                batch: 100,
                buffer: 0.25,
                seed: 9,
            };
            let by_block = units_by_block("ref_toc", true, block_pages);
            let expected = reference(&by_block, &run, Some(scaling.clone())).to_bytes();
            assert!(
                sql_model("ref_toc", &run, "auto", true) == expected,
                "block_pages {block_pages}"
            );
            assert!(sql_model("ref_toc", &run, "auto", false) == expected);
        }
    }
}
