//! Data-parallel training over the in-process communicator: `k` ranks
//! (threads) train to the model of the single process that takes the same
//! global mini-batches (`train_lockstep`: every slice's `t`-th mini-batch
//! together), to 1e-9, with equal step counts on every rank whatever the
//! block sizes; the same bits on every rank and every run; a failing rank
//! fails every rank instead of hanging one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::dist::{
    sgd_epoch, train_distributed, train_lockstep, Averaging, Communicator, DistributedReport,
    InProcess,
};
use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::scale::{ScaleKind, Scaling};
use tocpile::train::{train, Average, TrainOptions};
use tocpile::{Error, SparseBatch};

use crate::support::{load, temp_path};

/// The options every test here starts from.
fn base_options() -> TrainOptions {
    TrainOptions::default()
        .with_optimizer(Optimizer::Sgd)
        .with_epochs(3)
        .with_learning_rate(0.5)
        .with_decay(0.95)
        .with_l2(1e-4)
        // The ranks' sums are compared with one process's to the last bit.
        .with_split_gradient(false)
        .with_average(tocpile::train::Average::None)
        .with_scale(tocpile::train::Scale::Model)
}

/// Linear regression on 22 one-hot columns a row needs a smaller rate.
fn options(kind: &ModelKind) -> TrainOptions {
    match kind {
        ModelKind::LinearRegression => base_options().with_learning_rate(0.02),
        _ => base_options(),
    }
}

fn mushrooms_file() -> PathBuf {
    let (rows, labels) = load("mushrooms", usize::MAX);
    write(&rows, &labels, 1024)
}

fn write(rows: &SparseBatch, labels: &[f64], block_bytes: usize) -> PathBuf {
    let path = temp_path("data-parallel");
    let options = WriterOptions::default()
        .with_page_rows(25)
        .with_block_bytes(block_bytes);
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(rows, labels).unwrap();
    w.finish().unwrap();
    path
}

fn loader(path: &Path, worker: usize, workers: usize, mode: Mode) -> Loader {
    let options = LoaderOptions::default()
        .with_strategy(Strategy::CorgiPile)
        .with_mode(mode)
        .with_batch_rows(100)
        .with_seed(11)
        .with_worker(worker)
        .with_workers(workers);
    Loader::open(path, options).unwrap()
}

type RankOutcome = tocpile::Result<(Vec<f64>, Vec<DistributedReport>)>;

/// Every rank's final parameters and reports (or error).
fn distributed(
    path: &Path,
    kind: &ModelKind,
    k: usize,
    sync: Averaging,
    mode: Mode,
) -> Vec<RankOutcome> {
    distributed_with(path, kind, k, sync, mode, &options(kind))
}

/// [`distributed`] with these options.
fn distributed_with(
    path: &Path,
    kind: &ModelKind,
    k: usize,
    sync: Averaging,
    mode: Mode,
    options: &TrainOptions,
) -> Vec<RankOutcome> {
    let ranks = InProcess::group_with_timeout(k, Duration::from_secs(60)).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                s.spawn(move || {
                    let l = loader(path, comm.rank(), k, mode);
                    // Each rank's own start: rank 0's is broadcast.
                    let mut model = Model::new(kind.clone(), 98, comm.rank() as u64).unwrap();
                    let eval = Arc::clone(l.dataset());
                    let reports = train_distributed(
                        &comm,
                        &mut model,
                        &l,
                        options,
                        sync,
                        Some(&eval),
                        |_| {},
                    )?;
                    Ok((model.params(), reports))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn lockstep(path: &Path, kind: &ModelKind, k: usize, mode: Mode) -> (Vec<f64>, Vec<usize>) {
    let loaders: Vec<Loader> = (0..k).map(|w| loader(path, w, k, mode)).collect();
    let mut model = Model::new(kind.clone(), 98, 0).unwrap();
    let steps = train_lockstep(&mut model, &loaders, &options(kind)).unwrap();
    (model.params(), steps)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// `k` ranks against the lockstep run; returns rank 0's outcome.
fn check_against_lockstep(
    path: &Path,
    kind: &ModelKind,
    k: usize,
    mode: Mode,
) -> (Vec<f64>, Vec<DistributedReport>) {
    let outcomes: Vec<_> = distributed(path, kind, k, Averaging::Gradients, mode)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let (reference, steps) = lockstep(path, kind, k, mode);
    let (params, reports) = &outcomes[0];
    let diff = max_diff(params, &reference);
    assert!(diff < 1e-9, "{k} ranks, {kind:?}, {mode:?}: {diff}");
    for (r, (other, other_reports)) in outcomes.iter().enumerate() {
        // One model on every rank, bit for bit, and the same step counts.
        assert_eq!(other, params, "rank {r}");
        let taken: Vec<usize> = other_reports.iter().map(|e| e.epoch.steps).collect();
        assert_eq!(taken, steps, "rank {r}");
    }
    for e in reports {
        // Every row once per epoch, over all ranks.
        assert_eq!(e.epoch.train.rows, 5644);
        assert_eq!(e.epoch.steps, *e.batches_per_rank.iter().max().unwrap());
        assert!(e.epoch.eval.is_some());
    }
    if let Some((_, other)) = outcomes.get(1) {
        assert!(other.iter().all(|e| e.epoch.eval.is_none()));
    }
    (params.clone(), reports.clone())
}

#[test]
fn two_and_four_ranks_equal_the_lockstep_run() {
    let path = mushrooms_file();
    for k in [2, 4] {
        for mode in [Mode::Page, Mode::Exact] {
            let (_, reports) = check_against_lockstep(&path, &ModelKind::Logistic, k, mode);
            let last = reports.last().unwrap();
            assert!(last.epoch.eval.unwrap().accuracy > 0.97, "{k}: {last:?}");
            assert!(reports[0].epoch.train.loss > last.epoch.train.loss);
        }
    }
    // Linear regression too: R^2 is merged over the ranks.
    let (_, reports) = check_against_lockstep(&path, &ModelKind::LinearRegression, 4, Mode::Page);
    assert!(reports.last().unwrap().epoch.train.accuracy > 0.5);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn one_rank_is_the_ordinary_trainer() {
    let path = mushrooms_file();
    let (params, _) = check_against_lockstep(&path, &ModelKind::Logistic, 1, Mode::Page);
    let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
    train(
        &mut model,
        &loader(&path, 0, 1, Mode::Page),
        &base_options(),
        None,
        |_| {},
    )
    .unwrap();
    assert!(max_diff(&params, &model.params()) < 1e-9);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_same_bits_on_every_run() {
    let path = mushrooms_file();
    let run = || {
        distributed(
            &path,
            &ModelKind::Logistic,
            4,
            Averaging::Gradients,
            Mode::Page,
        )
        .remove(0)
        .unwrap()
        .0
    };
    let first = run();
    for _ in 0..2 {
        assert_eq!(run(), first);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn unequal_blocks_pad_with_empty_steps() {
    // Dense rows first, then one-column rows: blocks of 2 KiB hold a few
    // dense rows or hundreds of sparse ones, so the ranks' slices differ
    // by far in rows and mini-batches.
    let (rows, labels) = load("mushrooms", 3000);
    let mut lopsided = SparseBatch::with_cols(98).unwrap();
    for i in 0..rows.n_rows() {
        let (cols, vals) = rows.row(i);
        if i < 600 {
            lopsided.push_row(cols, vals).unwrap();
        } else {
            lopsided.push_row(&cols[..1], &vals[..1]).unwrap();
        }
    }
    let path = write(&lopsided, &labels, 2048);
    let k = 3;
    let outcomes = distributed(
        &path,
        &ModelKind::Logistic,
        k,
        Averaging::Gradients,
        Mode::Page,
    );
    let (reference, steps) = lockstep(&path, &ModelKind::Logistic, k, Mode::Page);
    let (params, reports) = outcomes[0].as_ref().unwrap();
    assert!(max_diff(params, &reference) < 1e-9);
    for e in reports {
        let counts = &e.batches_per_rank;
        assert!(counts.iter().min() < counts.iter().max(), "{counts:?}");
        assert_eq!(e.epoch.steps, steps[e.epoch.epoch]);
        assert_eq!(e.epoch.train.rows, 3000);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn model_averaging_ends_with_one_model() {
    let path = mushrooms_file();
    let outcomes = distributed(
        &path,
        &ModelKind::Logistic,
        4,
        Averaging::Models { every: 4 },
        Mode::Page,
    );
    let (params, reports) = outcomes[0].as_ref().unwrap();
    for o in &outcomes {
        assert_eq!(&o.as_ref().unwrap().0, params);
    }
    let last = reports.last().unwrap();
    assert!(last.epoch.eval.unwrap().accuracy > 0.95, "{last:?}");
    // Between averages only flags travel: less traffic than gradients.
    let gradients = distributed(
        &path,
        &ModelKind::Logistic,
        4,
        Averaging::Gradients,
        Mode::Page,
    );
    let bytes = |o: &RankOutcome| o.as_ref().unwrap().1[0].bytes_sent;
    assert!(bytes(&outcomes[1]) < bytes(&gradients[1]));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_failing_rank_fails_every_rank() {
    let path = mushrooms_file();
    // Damage one byte in the middle of the file (inside a block): the rank
    // that reads that block fails its checksum; the others learn it at the
    // next step.
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let outcomes = distributed(
        &path,
        &ModelKind::Logistic,
        4,
        Averaging::Gradients,
        Mode::Page,
    );
    let mut communication = 0;
    for o in &outcomes {
        match o {
            Err(Error::Communication { .. }) => communication += 1,
            Err(_) => {}
            Ok(_) => panic!("a rank finished on a damaged file"),
        }
    }
    assert!(communication < 4, "the failing rank returns its own error");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_loader_that_is_not_the_ranks_slice_is_refused() {
    let path = mushrooms_file();
    let comm = InProcess::group(1).unwrap().pop().unwrap();
    let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
    let l = loader(&path, 0, 2, Mode::Page);
    let e = train_distributed(
        &comm,
        &mut model,
        &l,
        &base_options(),
        Averaging::Gradients,
        None,
        |_| {},
    );
    assert!(matches!(e, Err(Error::BadArgument { .. })), "{e:?}");
    let l = loader(&path, 0, 1, Mode::Page);
    let sync = Averaging::Models { every: 0 };
    let e = train_distributed(&comm, &mut model, &l, &base_options(), sync, None, |_| {});
    assert!(matches!(e, Err(Error::BadArgument { .. })), "{e:?}");
    let _ = Dataset::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn sgd_epoch_on_own_batches_steps_along_the_union() {
    // Rank r trains on blocks r, r + k, ...: each step's pages together
    // are one global mini-batch; rank 0 (a server) may hold none.
    let path = mushrooms_file();
    let dataset = Dataset::open(&path).unwrap();
    let k = 3;
    let own = |rank: usize| -> Vec<Vec<tocpile::Page>> {
        (1..dataset.n_blocks())
            .filter(|b| b % k == rank && rank != 0)
            .map(|b| dataset.read_block(b).unwrap().pages().unwrap())
            .collect()
    };
    let ranks = InProcess::group_with_timeout(k, Duration::from_secs(60)).unwrap();
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                let own = &own;
                s.spawn(move || {
                    let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
                    let (score, steps) = sgd_epoch(&comm, &mut model, own(comm.rank()), 0.5, 1e-4)?;
                    Ok::<_, Error>((model.params(), score, steps))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect()
    });
    let mut reference = Model::new(ModelKind::Logistic, 98, 0).unwrap();
    let mut grad = tocpile::model::Gradient::new(&reference);
    let lists: Vec<_> = (0..k).map(own).collect();
    let steps = lists.iter().map(Vec::len).max().unwrap();
    for t in 0..steps {
        let pages: Vec<_> = lists
            .iter()
            .filter_map(|l| l.get(t))
            .flatten()
            .cloned()
            .collect();
        reference.gradient(&pages, 1e-4, &mut grad).unwrap();
        reference.step(&grad, 0.5);
    }
    let (params, score, taken) = &outcomes[0];
    assert_eq!(*taken, steps);
    assert!(max_diff(params, &reference.params()) < 1e-9);
    let rows: u64 = (1..dataset.n_blocks())
        .filter(|b| b % k != 0)
        .map(|b| dataset.block_rows(b))
        .sum();
    assert_eq!(score.rows, rows);
    assert!(outcomes.iter().all(|o| &o.0 == params));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn received_blocks_are_checked_against_the_index() {
    let path = mushrooms_file();
    let dataset = Dataset::open(&path).unwrap();
    let bytes = dataset.read_block(3).unwrap().into_bytes();
    let block = dataset.block_from_bytes(3, bytes.clone()).unwrap();
    assert_eq!(block.n_rows() as u64, dataset.block_rows(3));
    assert!(matches!(
        dataset.block_from_bytes(4, bytes.clone()),
        Err(Error::ChecksumMismatch { .. })
    ));
    let mut damaged = bytes.clone();
    damaged[10] ^= 1;
    assert!(matches!(
        dataset.block_from_bytes(3, damaged),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        dataset.block_from_bytes(dataset.n_blocks(), bytes),
        Err(Error::BadArgument { .. })
    ));
    std::fs::remove_file(&path).unwrap();
}

/// Regression (found when the step rules and the scaling met the ranks):
/// the ranks stepped plain SGD on the raw parameters, ignoring the step
/// rule and the model's scaling. With Adam and a non-trivial scaling, two
/// ranks still equal the lockstep run, and the rule matters.
#[test]
fn ranks_apply_the_step_rule_and_the_scaling() {
    let path = mushrooms_file();
    let kind = ModelKind::Logistic;
    let k = 2;
    let adam = base_options()
        .with_optimizer(Optimizer::Adam)
        .with_learning_rate(0.03);
    let factors: Vec<f64> = (0..98).map(|j| 0.5 + (j % 7) as f64 * 0.25).collect();
    let scaled = |seed: u64| {
        let mut m = Model::new(kind.clone(), 98, seed).unwrap();
        let scaling = Scaling::new(ScaleKind::MaxAbs, factors.clone()).unwrap();
        m.set_scaling(Some(scaling)).unwrap();
        m
    };
    let ranks = InProcess::group_with_timeout(k, Duration::from_secs(60)).unwrap();
    let outcomes: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                let (path, adam, scaled) = (&path, &adam, &scaled);
                s.spawn(move || {
                    let l = loader(path, comm.rank(), k, Mode::Page);
                    let mut model = scaled(comm.rank() as u64);
                    let no_eval: Option<&Arc<Dataset>> = None;
                    train_distributed(
                        &comm,
                        &mut model,
                        &l,
                        adam,
                        Averaging::Gradients,
                        no_eval,
                        |_| {},
                    )
                    .unwrap();
                    model.params()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let lockstep_with = |options: &TrainOptions| {
        let loaders: Vec<Loader> = (0..k).map(|w| loader(&path, w, k, Mode::Page)).collect();
        let mut model = scaled(0);
        train_lockstep(&mut model, &loaders, options).unwrap();
        model.params()
    };
    let reference = lockstep_with(&adam);
    let diff = max_diff(&outcomes[0], &reference);
    assert!(diff < 1e-9, "{diff}");
    assert_eq!(outcomes[0], outcomes[1]);
    let sgd = lockstep_with(&adam.with_optimizer(Optimizer::Sgd).with_learning_rate(0.03));
    assert!(max_diff(&sgd, &reference) > 1e-3);
}

/// The trainers share one step loop and its tail mean (the default,
/// `Average::LastEpoch`, which the distributed and lockstep trainers once
/// ignored): one loader in lockstep is `train`, bit for bit; two ranks
/// are the lockstep run of two loaders (to rounding); model averaging
/// ends with one model, the mean of the ranks' tail means.
#[test]
fn every_trainer_returns_the_tail_mean() {
    let path = mushrooms_file();
    let kind = ModelKind::Logistic;
    let averaged = base_options().with_average(Average::LastEpoch);
    let fresh = || Model::new(kind.clone(), 98, 0).unwrap();
    let mut single = fresh();
    let one = loader(&path, 0, 1, Mode::Page);
    train(&mut single, &one, &averaged, None, |_| {}).unwrap();
    let lockstep_of = |k: usize, options: &TrainOptions| {
        let loaders: Vec<Loader> = (0..k).map(|w| loader(&path, w, k, Mode::Page)).collect();
        let mut model = fresh();
        train_lockstep(&mut model, &loaders, options).unwrap();
        model.params()
    };
    assert_eq!(lockstep_of(1, &averaged), single.params());
    // The mean is taken: the last iterate is another model.
    assert_ne!(lockstep_of(1, &base_options()), single.params());
    let reference = lockstep_of(2, &averaged);
    let ranks = distributed_with(&path, &kind, 2, Averaging::Gradients, Mode::Page, &averaged);
    let (params, _) = ranks[0].as_ref().unwrap();
    assert!(max_diff(params, &reference) < 1e-9);
    assert!(max_diff(params, &lockstep_of(2, &base_options())) > 1e-6);
    for o in &ranks {
        assert_eq!(&o.as_ref().unwrap().0, params);
    }
    let sync = Averaging::Models { every: 4 };
    let local = distributed_with(&path, &kind, 2, sync, Mode::Page, &averaged);
    let (params, reports) = local[0].as_ref().unwrap();
    assert_eq!(&local[1].as_ref().unwrap().0, params);
    assert!(reports.last().unwrap().epoch.eval.unwrap().accuracy > 0.95);
    std::fs::remove_file(&path).unwrap();
}

/// Each rank's mini-batches of every epoch, from its loader's slice, as a
/// caller of `train_on_batches` makes them.
fn slice_batches(l: &Loader, epoch: usize) -> tocpile::Result<Vec<Vec<tocpile::Page>>> {
    l.epoch(epoch as u64)?.map(|b| b.map(|b| b.pages)).collect()
}

#[test]
fn train_on_batches_is_train_distributed_on_the_same_batches() {
    // The same trainer core: given each rank's loader batches, the same
    // model as train_distributed, bit for bit, with rank 0 alone setting
    // the model up (other ranks pass no dataset) and scoring it.
    let path = mushrooms_file();
    let k = 3;
    for kind in [ModelKind::Logistic, ModelKind::LinearRegression] {
        let adam = options(&kind)
            .with_optimizer(Optimizer::Adam)
            .with_learning_rate(0.03)
            .with_average(Average::LastEpoch);
        for opts in [options(&kind), adam] {
            let want = distributed_with(&path, &kind, k, Averaging::Gradients, Mode::Exact, &opts);
            let ranks = InProcess::group_with_timeout(k, Duration::from_secs(60)).unwrap();
            let got: Vec<RankOutcome> = std::thread::scope(|s| {
                let handles: Vec<_> = ranks
                    .into_iter()
                    .map(|comm| {
                        let (path, kind, opts) = (&path, &kind, &opts);
                        s.spawn(move || {
                            let l = loader(path, comm.rank(), k, Mode::Exact);
                            let root = (comm.rank() == 0).then(|| Arc::clone(l.dataset()));
                            let mut model = Model::new(kind.clone(), 98, 99).unwrap();
                            let reports = tocpile::dist::train_on_batches(
                                &comm,
                                &mut model,
                                opts,
                                root.as_ref(),
                                |e| slice_batches(&l, e),
                                root.as_ref(),
                                |_| {},
                            )?;
                            Ok((model.params(), reports))
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (rank, (w, g)) in want.iter().zip(&got).enumerate() {
                let (w, g) = (w.as_ref().unwrap(), g.as_ref().unwrap());
                assert_eq!(w.0, g.0, "{kind} rank {rank}: parameters");
                let figures = |r: &[DistributedReport]| -> Vec<_> {
                    r.iter()
                        .map(|r| (r.epoch.train, r.epoch.eval, r.epoch.steps))
                        .collect()
                };
                assert_eq!(figures(&w.1), figures(&g.1), "{kind} rank {rank}: reports");
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn train_on_batches_fails_every_rank_when_one_fails() {
    let path = mushrooms_file();
    let k = 3;
    let ranks = InProcess::group_with_timeout(k, Duration::from_secs(60)).unwrap();
    let outcomes: Vec<tocpile::Result<_>> = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                let path = &path;
                s.spawn(move || {
                    let l = loader(path, comm.rank(), k, Mode::Exact);
                    let root = (comm.rank() == 0).then(|| Arc::clone(l.dataset()));
                    let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
                    let rank = comm.rank();
                    tocpile::dist::train_on_batches(
                        &comm,
                        &mut model,
                        &base_options(),
                        root.as_ref(),
                        |e| match (rank, e) {
                            (2, 1) => Err(Error::BadArgument {
                                what: "test",
                                expected: "a failure in epoch 1 on rank 2",
                            }),
                            _ => slice_batches(&l, e),
                        },
                        None,
                        |_| {},
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        matches!(outcomes[2], Err(Error::BadArgument { .. })),
        "{:?}",
        outcomes[2]
    );
    for rank in [0, 1] {
        assert!(
            matches!(outcomes[rank], Err(Error::Communication { .. })),
            "{:?}",
            outcomes[rank]
        );
    }
    // Rank 0 alone holds the data: without it, every rank fails.
    let ranks = InProcess::group_with_timeout(2, Duration::from_secs(60)).unwrap();
    let outcomes: Vec<tocpile::Result<_>> = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                s.spawn(move || {
                    let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
                    tocpile::dist::train_on_batches::<_, std::fs::File, Vec<Vec<tocpile::Page>>>(
                        &comm,
                        &mut model,
                        &base_options(),
                        None,
                        |_| Ok(Vec::new()),
                        None,
                        |_| {},
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        matches!(outcomes[0], Err(Error::BadArgument { .. })),
        "{:?}",
        outcomes[0]
    );
    assert!(
        matches!(outcomes[1], Err(Error::Communication { .. })),
        "{:?}",
        outcomes[1]
    );
    std::fs::remove_file(&path).unwrap();
}
