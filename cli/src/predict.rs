//! `tocpile predict MODEL FILE`: a saved model's predictions for every row
//! of a dataset file, in file order (the computing is the library's
//! `Model::predict`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use tocpile::model::{Model, Predictions};

use crate::output::emit;
use crate::{Failure, Outcome};

/// Predict with a saved model, one line per row of a dataset file.
///
/// Text output: the predicted label (classifiers: the class, in the
/// training file's labels, e.g. 1 or 2 for a model trained on labels 1
/// and 2) or value (linreg) per line; with --scores the model's raw scores instead (the margin of lr,
/// svm and linreg, the logits of softmax and mlp), space-separated. JSON
/// Lines output (--json): {"row", "class"?, "label"?, "value"?,
/// "probabilities"?, "scores"} per row ("label" when the model's two
/// labels are not 0 and 1). Labels in the file are ignored. The file must have
/// the columns the model was trained on (encode it with --schema
/// TRAIN.toc).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile predict lr.model new.toc\n  \
    tocpile predict lr.model new.toc --scores -o scores.txt\n  \
    tocpile predict digits.model new.toc --json | head")]
pub struct PredictArgs {
    /// The model file (`train --save`).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The dataset file (see `tocpile encode`).
    #[arg(value_name = "FILE.toc")]
    pub file: PathBuf,
    /// Write to this file (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the raw scores instead of classes.
    #[arg(long)]
    pub scores: bool,
    /// One JSON object per line (JSON Lines), with probabilities.
    #[arg(long)]
    pub json: bool,
}

/// The lines of rows `first..` for `p`.
fn lines(p: &Predictions, first: u64, args: &PredictArgs, labelled: bool, out: &mut Vec<u8>) {
    for i in 0..p.n_rows() {
        let scores = p.scores(i);
        if args.json {
            let mut doc = serde_json::Map::new();
            doc.insert("row".into(), (first + i as u64).into());
            match p.class(i) {
                Some(c) => doc.insert("class".into(), c.into()),
                None => doc.insert("value".into(), scores[0].into()),
            };
            if labelled {
                doc.insert("label".into(), p.label(i).into());
            }
            if let Some(probs) = p.probabilities(i) {
                doc.insert("probabilities".into(), probs.into());
            }
            doc.insert("scores".into(), scores.to_vec().into());
            serde_json::to_writer(&mut *out, &doc).expect("writing to memory");
            out.push(b'\n');
        } else if args.scores || p.class(i).is_none() {
            // Written in place: a String per score and per line was a
            // third of the command's time on 400,000 rows.
            for (k, s) in scores.iter().enumerate() {
                let sep = if k == 0 { "" } else { " " };
                write!(out, "{sep}{s}").expect("writing to memory");
            }
            out.push(b'\n');
        } else {
            writeln!(out, "{}", p.label(i)).expect("writing to memory");
        }
    }
}

pub fn run(args: &PredictArgs) -> Outcome {
    // Written at the end: checked first (crate::output's rule).
    let outputs: Vec<(&str, &std::path::Path)> =
        args.output.iter().map(|p| ("-o", p.as_path())).collect();
    crate::output::check(&[&args.model, &args.file], &outputs)?;
    let model = Model::load(&args.model)?;
    let dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    let context = |e: tocpile::Error| {
        Failure::about(
            &args.file,
            format!("predicting with {}: {e}", args.model.display()),
        )
    };
    let labelled = model.binary_labels().is_some();
    let mut out = Vec::new();
    let mut row = 0u64;
    for predictions in model.predict_dataset(&dataset).map_err(context)? {
        let predictions = predictions.map_err(context)?;
        lines(&predictions, row, args, labelled, &mut out);
        row += predictions.n_rows() as u64;
        if args.output.is_none() && out.len() > 1 << 20 {
            emit(&String::from_utf8(std::mem::take(&mut out)).expect("UTF-8"))?;
        }
    }
    match &args.output {
        Some(path) => Ok(crate::output::write_file(path, &out)?),
        None => emit(&String::from_utf8(out).expect("UTF-8")),
    }
}
