//! Arbitrary bytes as an entropy model and a stream coded against it
//! (`tocpile::codec::entropy`): the first two bytes give the value count
//! asked for (bounded, as a page's row lengths bound it), then a model is
//! read from the rest, and the bytes after it are the stream. Reading and
//! decoding must return an error or exactly the count asked for, never
//! panic; a model read must write back to the bytes it took; a decoded
//! stream must re-encode to a stream that decodes to the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tocpile::codec::entropy::AnsModel;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let n = u16::from_le_bytes([data[0], data[1]]) as usize;
    let Ok((model, used)) = AnsModel::read(&data[2..]) else {
        return;
    };
    let mut written = Vec::new();
    model.write(&mut written);
    assert_eq!(written, &data[2..2 + used], "a model writes back as read");
    let stream = &data[2 + used..];
    let mut out = Vec::new();
    if model.decode(stream, n, &mut out).is_err() {
        return;
    }
    assert_eq!(out.len(), n);
    let mut again = Vec::new();
    model.encode(&out, &mut again).expect("decoded values are codable");
    let mut back = Vec::new();
    model.decode(&again, n, &mut back).expect("a fresh stream decodes");
    assert_eq!(back, out);
});
