//! What `tocpile train` sets up before the first epoch: the held-out
//! split (`--holdout`), the input scaling (`--scale`) and the step rule
//! with its default learning rate (`--optimizer`, `--lr`).

use std::path::Path;
use std::sync::Arc;

use clap::ValueEnum;
use tocpile::dataset::Dataset;
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::scale::{ScaleKind, Scaling};
use tocpile::train::{Holdout, Scale, TrainOptions};

use super::TrainArgs;
use crate::Failure;

/// `--scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScaleArg {
    /// The scaling stored in the file (none if it has none).
    Auto,
    /// No scaling.
    None,
    /// Max-abs scaling (fitted by a pass over the file if it stores
    /// another or none).
    Maxabs,
    /// Standard scaling without centering (likewise).
    Standard,
}

impl ScaleArg {
    fn kind(self) -> Option<ScaleKind> {
        match self {
            ScaleArg::Maxabs => Some(ScaleKind::MaxAbs),
            ScaleArg::Standard => Some(ScaleKind::Standard),
            ScaleArg::Auto | ScaleArg::None => None,
        }
    }

    /// The library's choice for this argument (a fresh model has no
    /// scaling of its own, so `auto` is the file's).
    fn choice(self) -> Scale {
        match (self, self.kind()) {
            (_, Some(kind)) => Scale::Fit(kind),
            (ScaleArg::None, None) => Scale::None,
            _ => Scale::Stored,
        }
    }
}

/// `--optimizer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizerArg {
    /// Adam (the default).
    Adam,
    /// AdaGrad.
    Adagrad,
    /// Plain SGD.
    Sgd,
}

impl OptimizerArg {
    pub fn rule(self) -> Optimizer {
        match self {
            OptimizerArg::Adam => Optimizer::Adam,
            OptimizerArg::Adagrad => Optimizer::AdaGrad,
            OptimizerArg::Sgd => Optimizer::Sgd,
        }
    }

    /// The learning rate when `--lr` is not given (the library's,
    /// [`Optimizer::default_learning_rate`]).
    pub fn default_lr(self) -> f64 {
        self.rule().default_learning_rate()
    }
}

/// Splits `path` into temporary training and held-out files (rows held out
/// by a hash of their number under `seed`, [`Holdout::split`]); each part
/// gets a scaling of the kind `scale` asks for (the file's kind under
/// `auto`) fitted on its own rows.
pub fn holdout(
    path: &Path,
    dataset: &Arc<Dataset>,
    fraction: f64,
    seed: u64,
    scale: ScaleArg,
) -> Result<Holdout, Failure> {
    let kind = match scale {
        ScaleArg::Auto => dataset.info().scaling.as_ref().map(Scaling::kind),
        other => other.kind(),
    };
    let split = Holdout::split(dataset, fraction, seed, kind).map_err(|e| {
        Failure::about(
            path,
            format!("--holdout: splitting off the held-out rows: {e}"),
        )
    })?;
    if !split.both_have_rows() {
        let (train, test) = split.infos();
        return Err(Failure::about(
            path,
            format!(
                "--holdout {fraction} leaves {} training and {} held-out rows: both need rows",
                train.n_rows, test.n_rows
            ),
        ));
    }
    Ok(split)
}

/// The starting model (its scaling, by `--scale`, and the file's schema),
/// the training options and the scaling's name, from the arguments: one
/// place for a single process and for each rank of a distributed run.
pub fn start(
    args: &TrainArgs,
    kind: &ModelKind,
    dataset: &Arc<Dataset>,
) -> Result<(Model, TrainOptions, &'static str), Failure> {
    let mut model = Model::new(kind.clone(), dataset.info().n_cols, args.seed)
        .map_err(|e| Failure::about(&args.file, e))?;
    args.scale.choice().apply(&mut model, dataset)?;
    let name = model.scaling().map_or("none", |s| s.kind().name());
    model.set_schema(&dataset.info().schema);
    // The scaling is set: training keeps it rather than fitting it again.
    let options = TrainOptions::default()
        .with_optimizer(args.optimizer.rule())
        .with_epochs(usize::try_from(args.epochs).unwrap_or(usize::MAX))
        .with_learning_rate(args.learning_rate())
        .with_decay(args.decay)
        .with_l2(args.l2)
        .with_split_gradient(args.gradient_threads > 1)
        .with_scale(Scale::Model);
    Ok((model, options, name))
}
