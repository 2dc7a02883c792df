//! Arbitrary bytes as a model file: `Model::from_bytes` must return an
//! error or a model, never panic, with memory bounded by the input (every
//! size is checked against the bytes left). A loaded model must write back
//! to exactly the input (the format has one encoding per model), checksum
//! aside: fuzzing builds skip it so that mutations reach the parameters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tocpile::model::Model;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = Model::from_bytes(data) {
        let bytes = model.to_bytes();
        let body = data.len() - 4;
        assert_eq!(
            bytes[..body],
            data[..body],
            "a loaded model rewrites to its bytes"
        );
    }
});
