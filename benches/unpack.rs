//! Bit unpacking on the packed arrays of real pages (50-row pages of the
//! shared datasets in file order, as `tocpile encode` writes them by
//! default): the codec's unpacker (`src/wire.rs`) against `bitvec`'s bit
//! slices and the entropy stage's rANS decode (`codec::entropy`, a model
//! learned per array kind over the 40 pages, each array's stream coded
//! alone: what a page would decode with a model shared by its segment).
//! Names are `unpack/DATASET/METHOD`; one iteration unpacks every
//! array of 40 pages. `examples/unpack.rs` prints the full table (with
//! the `bitpacking` crate's block layouts) and the widths and lengths.
//! `cargo bench --bench unpack -- --test` runs each once.

use tocpile_bench_data as support;

use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

use bitvec::prelude::*;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tocpile::codec::entropy::{AnsModel, LearnOptions};
use tocpile::internals::{packed_arrays, unpack};

const PAGES: usize = 40;

fn bitvec_unpack(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
    out.clear();
    if width == 0 {
        out.resize(count, 0);
        return;
    }
    let bits = payload.view_bits::<Lsb0>();
    out.extend(
        bits[..count * width as usize]
            .chunks_exact(width as usize)
            .map(|c| c.load_le::<u32>()),
    );
}

fn unpacking(c: &mut Criterion) {
    for name in support::available_datasets() {
        let (rows, _) = support::load(name, 50 * PAGES);
        let blobs: Vec<Vec<u8>> = support::batches(&rows, 50)
            .iter()
            .map(|b| tocpile::encode(b).expect("encode").into_bytes())
            .collect();
        let named: Vec<_> = blobs
            .iter()
            .flat_map(|b| packed_arrays(b).expect("a valid page"))
            .collect();
        let arrays: Vec<(u8, usize, &[u8])> = named
            .iter()
            .map(|a| (a.width, a.count, a.payload))
            .collect();
        let rans = rans_streams(&named);
        let values: usize = arrays.iter().map(|a| a.1).sum();
        let mut g = c.benchmark_group(format!("unpack/{name}"));
        g.throughput(Throughput::Elements(values as u64));
        g.measurement_time(Duration::from_secs(1)).sample_size(10);
        let mut out = Vec::new();
        g.bench_function("hand-written", |b| {
            b.iter(|| {
                for &(w, n, p) in &arrays {
                    unpack(p, w, n, &mut out);
                    black_box(&out);
                }
            })
        });
        g.bench_function("bitvec", |b| {
            b.iter(|| {
                for &(w, n, p) in &arrays {
                    bitvec_unpack(p, w, n, &mut out);
                    black_box(&out);
                }
            })
        });
        g.bench_function("rans", |b| {
            b.iter(|| {
                for (model, stream, n) in &rans {
                    model.decode(stream, *n, &mut out).expect("valid");
                    black_box(&out);
                }
            })
        });
        g.finish();
    }
}

/// Every array's values coded against a model of its kind, learned over
/// all arrays of that kind.
fn rans_streams(
    arrays: &[tocpile::internals::PackedArray<'_>],
) -> Vec<(Rc<AnsModel>, Vec<u8>, usize)> {
    let values: Vec<Vec<u32>> = arrays
        .iter()
        .map(|a| {
            let mut v = Vec::new();
            unpack(a.payload, a.width, a.count, &mut v);
            v
        })
        .collect();
    let mut models = std::collections::HashMap::new();
    for (a, v) in arrays.iter().zip(&values) {
        models.entry(a.name).or_insert_with(Vec::new).extend(v);
    }
    let models: std::collections::HashMap<_, _> = models
        .into_iter()
        .filter_map(|(k, v)| Some((k, Rc::new(AnsModel::learn(&v, LearnOptions::default())?))))
        .collect();
    arrays
        .iter()
        .zip(values)
        .filter(|(a, _)| a.count > 0)
        .map(|(a, v)| {
            let model = models[a.name].clone();
            let mut stream = Vec::new();
            model.encode(&v, &mut stream).expect("codable");
            let mut back = Vec::new();
            model.decode(&stream, v.len(), &mut back).expect("valid");
            assert_eq!(back, v, "the rANS stream decodes to the array");
            (model, stream, v.len())
        })
        .collect()
}

criterion_group!(benches, unpacking);
criterion_main!(benches);
