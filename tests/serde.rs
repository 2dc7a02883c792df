//! The `serde` feature: options, reports and a file's info survive a JSON
//! round trip, and a scaling read back is checked. Its own test binary so
//! that CI runs it with `--features serde` without building the others.

#![cfg(feature = "serde")]

use tocpile::codec::{Adaptive, EncodeOptions, Level};
use tocpile::dataset::{DatasetWriter, WriterOptions};
use tocpile::ingest::libsvm::LibsvmOptions;
use tocpile::loader::{Buffer, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::scale::{ScaleKind, Scaling};
use tocpile::train::{train, Average, TrainOptions};
use tocpile::SparseBatch;

fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = serde_json::to_string(value).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn options_survive_a_json_round_trip() {
    let loader = LoaderOptions::default()
        .with_strategy(Strategy::SlidingWindow)
        .with_mode(Mode::Exact)
        .with_buffer(Buffer::Blocks(3))
        .with_seed(9)
        .with_scratch_dir(Some("/tmp/x".into()))
        .with_memory(1 << 20);
    assert_eq!(round_trip(&loader), loader);
    let train = TrainOptions::default()
        .with_optimizer(Optimizer::Sgd)
        .with_epochs(4)
        .with_average(Average::None);
    assert_eq!(round_trip(&train), train);
    let encode = EncodeOptions::default()
        .with_level(Level::Logical)
        .with_adaptive(Adaptive::NONE);
    assert_eq!(round_trip(&encode), encode);
    let writer = WriterOptions::default().with_page_rows(7);
    assert_eq!(round_trip(&writer), writer);
    let libsvm = LibsvmOptions::default().with_n_cols(Some(5));
    assert_eq!(round_trip(&libsvm), libsvm);
}

#[test]
fn a_scaling_read_back_is_checked() {
    let scaling = Scaling::new(ScaleKind::MaxAbs, vec![1.0, 0.5]).unwrap();
    assert_eq!(round_trip(&scaling), scaling);
    let text = serde_json::to_string(&scaling).unwrap();
    let bad = text.replace("0.5", "-1.0");
    assert_ne!(bad, text);
    assert!(serde_json::from_str::<Scaling>(&bad).is_err(), "{bad}");
}

#[test]
fn dataset_info_and_epoch_reports_survive_a_json_round_trip() {
    let rows: Vec<[f64; 3]> = (0..60)
        .map(|i| [i as f64 % 5.0, 1.0, (i % 3) as f64])
        .collect();
    let labels: Vec<f64> = (0..60).map(|i| (i % 2) as f64).collect();
    let batch = SparseBatch::from_dense_rows(3, &rows).unwrap();
    let path = std::env::temp_dir().join(format!("tocpile-serde-{}.toc", std::process::id()));
    let mut writer = DatasetWriter::create(&path, 3, WriterOptions::default()).unwrap();
    writer.push(&batch, &labels).unwrap();
    let info = writer.finish().unwrap();
    assert_eq!(round_trip(&info), info);

    let loader = tocpile::loader::Loader::open(&path, LoaderOptions::default()).unwrap();
    let mut model = Model::new(ModelKind::Logistic, 3, 1).unwrap();
    let options = TrainOptions::default().with_epochs(2);
    let reports = train(&mut model, &loader, &options, None, |_| {}).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(reports.len(), 2);
    // serde_json's default float parsing may be off by an ulp: the counts
    // are compared exactly, the figures closely.
    let report = round_trip(&reports[1]);
    assert_eq!(report.epoch, reports[1].epoch);
    assert_eq!(report.steps, reports[1].steps);
    assert_eq!(report.train.rows, reports[1].train.rows);
    assert!((report.train.loss - reports[1].train.loss).abs() <= 1e-12);
}
