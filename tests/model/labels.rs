//! Label conventions and argument errors.

use tocpile::formats::{Batch, FormatKind};
use tocpile::model::{Gradient, Model, ModelKind};
use tocpile::{Error, Page};

use super::random_batch;

/// Four rows of three columns.
fn batch() -> Batch {
    FormatKind::TocFull.encode(&random_batch(5, 4, 3)).unwrap()
}

/// The rows of [`batch`] with `labels`.
fn page(labels: &[f64]) -> Page {
    Page::new(batch(), labels).unwrap()
}

#[test]
fn class_labels_must_be_indices() {
    for kind in [
        ModelKind::Softmax { classes: 3 },
        ModelKind::Mlp {
            hidden: vec![2],
            outputs: 3,
        },
    ] {
        let model = Model::new(kind.clone(), 3, 0).unwrap();
        for bad in [3.0, -1.0, 1.5, f64::NAN, f64::INFINITY] {
            let labels = [0.0, 2.0, bad, 1.0];
            let good = [0.0, 2.0, 1.0, 1.0];
            let pages = [page(&good), page(&labels)];
            let err = model.evaluate(&pages).unwrap_err();
            match &err {
                Error::BadLabel { page, row, .. } => assert_eq!((*page, *row), (1, 2), "{kind}"),
                other => panic!("{kind}: {other:?}"),
            }
            let mut grad = Gradient::new(&model);
            assert_eq!(
                model
                    .gradient(&pages, 0.0, &mut grad)
                    .unwrap_err()
                    .to_string(),
                err.to_string()
            );
            assert!(err.to_string().contains("page 1, row 2"), "{err}");
        }
    }
}

#[test]
fn binary_labels_take_positive_as_the_class() {
    let mut model = Model::new(ModelKind::Logistic, 3, 0).unwrap();
    model.set_params(&[0.3, -0.2, 0.1, 0.05]).unwrap();
    let zero_one = [0.0, 1.0, 1.0, 0.0];
    let signed = [-1.0, 1.0, 1.0, -1.0];
    let eval = |labels: &[f64]| model.evaluate(&[page(labels)]).unwrap();
    let (a, b) = (eval(&zero_one), eval(&signed));
    assert_eq!((a.loss_sum, a.correct), (b.loss_sum, b.correct));
    // Regression rejects only non-finite labels.
    let reg = Model::new(ModelKind::LinearRegression, 3, 0).unwrap();
    assert!(reg.evaluate(&[page(&[-7.5, 1e6, 0.25, 3.0])]).is_ok());
    assert!(matches!(
        reg.evaluate(&[page(&[0.0, f64::NAN, 0.0, 0.0])]),
        Err(Error::BadLabel {
            page: 0,
            row: 1,
            ..
        })
    ));
}

#[test]
fn shape_mismatches_are_errors() {
    let model = Model::new(ModelKind::Svm, 4, 0).unwrap();
    let labels = [1.0; 4];
    assert!(matches!(
        model.evaluate(&[page(&labels)]),
        Err(Error::LengthMismatch {
            expected: 4,
            found: 3,
            ..
        })
    ));
    // A page holds one label per row by construction.
    assert!(matches!(
        Page::new(batch(), &labels[..3]),
        Err(Error::LengthMismatch {
            expected: 4,
            found: 3,
            ..
        })
    ));
}

#[test]
fn names_and_bad_dimensions() {
    assert_eq!(ModelKind::from_name("LR", 2).unwrap(), ModelKind::Logistic);
    assert_eq!(ModelKind::from_name("svm", 2).unwrap(), ModelKind::Svm);
    assert_eq!(
        ModelKind::from_name("linreg", 0).unwrap(),
        ModelKind::LinearRegression
    );
    assert_eq!(
        ModelKind::from_name("softmax", 10).unwrap(),
        ModelKind::Softmax { classes: 10 }
    );
    assert_eq!(
        ModelKind::from_name("mlp", 2).unwrap(),
        ModelKind::Mlp {
            hidden: vec![200, 50],
            outputs: 1
        }
    );
    assert_eq!(ModelKind::from_name("mlp", 10).unwrap(), ModelKind::mlp(10));
    for name in ModelKind::NAMES {
        assert_eq!(ModelKind::from_name(name, 3).unwrap().name(), name);
    }
    assert!(ModelKind::from_name("softmax", 1).is_err());
    assert!(ModelKind::from_name("tree", 2).is_err());
    assert!(Model::new(ModelKind::Logistic, 0, 0).is_err());
    assert!(Model::new(ModelKind::Softmax { classes: 1 }, 3, 0).is_err());
    let zero_width = ModelKind::Mlp {
        hidden: vec![3, 0],
        outputs: 2,
    };
    assert!(Model::new(zero_width, 3, 0).is_err());
    let huge = ModelKind::Mlp {
        hidden: vec![1 << 31, 1 << 31],
        outputs: 2,
    };
    assert!(matches!(
        Model::new(huge, 3, 0),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn mlp_initialisation_is_seeded() {
    let kind = ModelKind::mlp(10);
    let a = Model::new(kind.clone(), 20, 1).unwrap();
    assert_eq!(a, Model::new(kind.clone(), 20, 1).unwrap());
    assert_ne!(a.params(), Model::new(kind, 20, 2).unwrap().params());
    let r = (6.0f64 / (20 + 200) as f64).sqrt();
    let w = a.layers()[0].weights();
    assert!(w.iter().all(|x| x.abs() <= r) && w.iter().any(|x| x.abs() > 0.9 * r));
    assert!(a
        .layers()
        .iter()
        .all(|l| l.bias().iter().all(|&b| b == 0.0)));
}
