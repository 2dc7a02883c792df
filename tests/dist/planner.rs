//! The planner: the paper's worked examples (Examples 1 to 3: 6, 4 and 3
//! transmissions, with the tables of Figures 2 to 4), every worker
//! decoding exactly its blocks for random caches and assignments under
//! every scheme, packet counts never above uncoded, the cache update's
//! invariants, and the simulation against Theorems 1 and 2 and the
//! paper's quoted reduction at q = 10^5.

use proptest::prelude::*;
use tocpile::dist::sim::{coded_theory, figure5, simulate, FIGURE5_ALPHAS};
use tocpile::dist::{
    capacity_for, next_cache, plan, Assignment, Caches, ChunkLayout, Decoder, Part, Scheme, Tables,
    WorkerSet,
};

const UBER: Scheme = Scheme::UberShuffle { depth: 2 };

/// The running example of the paper's section 2 (n = 3, q = 9), 0-based:
/// caches C1 = {2,3,4,8}, C2 = {6,7,8,9}, C3 = {1,3,4,5} and assignment
/// D1 = {3,5,8}, D2 = {1,4,9}, D3 = {2,6,7}.
fn paper_example() -> (Caches, Assignment) {
    let minus_one = |s: &[usize]| s.iter().map(|b| b - 1).collect::<Vec<_>>();
    let caches = Caches::from_sets(
        9,
        4,
        vec![
            minus_one(&[2, 3, 4, 8]),
            minus_one(&[6, 7, 8, 9]),
            minus_one(&[1, 3, 4, 5]),
        ],
    )
    .unwrap();
    let order = minus_one(&[3, 5, 8, 1, 4, 9, 2, 6, 7]);
    (caches, Assignment::from_order(&order, 3).unwrap())
}

fn set(workers: &[usize]) -> WorkerSet {
    workers.iter().copied().collect()
}

#[test]
fn example_1_uncoded_takes_six_unicasts() {
    let (caches, next) = paper_example();
    let demands = caches.demands(&next);
    let p = plan(Scheme::Uncoded, 3, &demands).unwrap();
    assert_eq!(p.len(), 6);
    // d5 to node 1; d1, d4 to node 2; d2, d6, d7 to node 3 (0-based).
    let mut sent: Vec<(usize, usize)> = p
        .packets
        .iter()
        .map(|pk| (pk.parts[0].worker, pk.parts[0].item))
        .collect();
    sent.sort_unstable();
    assert_eq!(sent, [(0, 4), (1, 0), (1, 3), (2, 1), (2, 5), (2, 6)]);
    p.verify(&demands).unwrap();
}

#[test]
fn example_2_coded_takes_four_broadcasts_with_the_tables_of_figure_3() {
    let (caches, next) = paper_example();
    let demands = caches.demands(&next);
    let tables = Tables::index(3, &demands).unwrap();
    // Table {1,3}: d5 for node 1, d2 for node 3 (the broadcast d2 + d5).
    assert_eq!(tables.column(set(&[0, 2]), 0), [4]);
    assert_eq!(tables.column(set(&[0, 2]), 2), [1]);
    // Table {2,3}: d1 for node 2; d6, d7 for node 3.
    assert_eq!(tables.column(set(&[1, 2]), 1), [0]);
    assert_eq!(tables.column(set(&[1, 2]), 2), [5, 6]);
    // Table {1,2,3}: d4 for node 2.
    assert_eq!(tables.column(set(&[0, 1, 2]), 1), [3]);
    assert_eq!(tables.packet_count(), 4);
    let p = plan(Scheme::Coded, 3, &demands).unwrap();
    assert_eq!(p.len(), 4);
    let d2_plus_d5 = vec![Part { worker: 0, item: 4 }, Part { worker: 2, item: 1 }];
    assert!(p.packets.iter().any(|pk| pk.parts == d2_plus_d5));
    p.verify(&demands).unwrap();
}

#[test]
fn example_3_ubershuffle_moves_d4_and_takes_three() {
    let (caches, next) = paper_example();
    let demands = caches.demands(&next);
    let mut tables = Tables::index(3, &demands).unwrap();
    tables.carpool(2);
    // d4 moved from column 2 of {1,2,3} to column 2 of {2,3} (Figure 4).
    assert_eq!(tables.column(set(&[1, 2]), 1), [0, 3]);
    assert!(tables.column(set(&[0, 1, 2]), 1).is_empty());
    let p = plan(UBER, 3, &demands).unwrap();
    assert_eq!(p.len(), 3);
    p.verify(&demands).unwrap();
    // Depth 0 searches no superset: coded shuffling.
    assert_eq!(
        plan(Scheme::UberShuffle { depth: 0 }, 3, &demands)
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn planner_rejects_bad_workers() {
    let d = |worker, holders| tocpile::dist::Demand {
        item: 0,
        worker,
        holders,
    };
    assert!(plan(Scheme::Coded, 0, &[]).is_err());
    assert!(plan(Scheme::Coded, 65, &[]).is_err());
    assert!(plan(Scheme::Coded, 2, &[d(2, WorkerSet::EMPTY)]).is_err());
    assert!(plan(UBER, 2, &[d(0, set(&[1, 2]))]).is_err());
    assert!(plan(Scheme::Uncoded, 2, &[d(1, set(&[0]))]).is_ok());
}

/// Random bytes for a block (deterministic from its number and a salt).
fn block_bytes(block: usize, len: usize, salt: u64) -> Vec<u8> {
    let mut x = (block as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Random caches (any sets at all, including blocks cached nowhere), a
/// random next assignment, random block lengths and chunk size.
fn scenario() -> impl Strategy<Value = (usize, Vec<u64>, Vec<u64>, Vec<usize>, usize, u64)> {
    (1usize..=7, 1usize..=40).prop_flat_map(|(n, q)| {
        (
            Just(n),
            proptest::collection::vec(0u64..(1 << n), q),
            proptest::collection::vec(0u64..40, q),
            Just((0..q).collect::<Vec<_>>()).prop_shuffle(),
            1usize..=16,
            any::<u64>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_worker_decodes_exactly_its_blocks(
        (n, holder_bits, lens, order, chunk, salt) in scenario()
    ) {
        let q = lens.len();
        let sets: Vec<Vec<usize>> = (0..n)
            .map(|w| (0..q).filter(|&b| holder_bits[b] >> w & 1 == 1).collect())
            .collect();
        let caches = Caches::from_sets(q, q, sets.clone()).unwrap();
        let next = Assignment::from_order(&order, n).unwrap();
        let layout = ChunkLayout::new(&lens, chunk).unwrap();
        let data: Vec<Vec<u8>> = (0..q).map(|b| block_bytes(b, lens[b] as usize, salt)).collect();
        let crcs: Vec<u32> = data.iter().map(|d| crc32fast::hash(d)).collect();
        let demands = layout.demands(&caches, &next);
        let uncoded = plan(Scheme::Uncoded, n, &demands).unwrap();
        prop_assert_eq!(uncoded.len(), demands.len());
        let mut counts = Vec::new();
        for scheme in [Scheme::Uncoded, Scheme::Coded, UBER, Scheme::UberShuffle { depth: 5 }] {
            let p = plan(scheme, n, &demands).unwrap();
            p.verify(&demands).unwrap();
            prop_assert!(p.len() <= uncoded.len(), "{} above uncoded", scheme);
            counts.push(p.len());
            let payloads: Vec<Vec<u8>> =
                p.packets.iter().map(|pk| layout.encode(pk, |b| &data[b])).collect();
            for (w, cached) in sets.iter().enumerate() {
                let needed: Vec<usize> =
                    next.blocks(w).iter().copied().filter(|b| !cached.contains(b)).collect();
                let mut decoder = Decoder::new(w, 1, &layout, &needed);
                for (pk, payload) in p.packets.iter().zip(&payloads) {
                    decoder
                        .receive(pk, payload, |b| cached.contains(&b).then(|| data[b].as_slice()))
                        .unwrap();
                }
                let recovered = decoder.finish(&crcs).unwrap();
                let mut expected = needed.clone();
                expected.sort_unstable();
                prop_assert_eq!(recovered.iter().map(|(b, _)| *b).collect::<Vec<_>>(), expected);
                for (b, bytes) in &recovered {
                    prop_assert_eq!(bytes, &data[*b]);
                }
            }
        }
        // UberShuffle only fills empty slots: never more than coded.
        prop_assert!(counts[2] <= counts[1] && counts[3] <= counts[1]);
    }

    #[test]
    fn cache_updates_keep_the_storage_constraint(
        n in 1usize..=6, q in 1usize..=60, alpha in 0.0f64..1.0, seed in any::<u64>()
    ) {
        let current = Assignment::epoch(seed, 0, q, n).unwrap();
        let capacity = capacity_for(alpha, q).max(current.largest_share());
        let mut caches = Caches::place(&current, capacity, seed).unwrap();
        for epoch in 1..4 {
            let next = Assignment::epoch(seed, epoch, q, n).unwrap();
            let before = caches.clone();
            caches.update(&next, seed, epoch).unwrap();
            for w in 0..n {
                let cache = caches.blocks(w);
                prop_assert_eq!(cache.len(), capacity);
                prop_assert!(next.blocks(w).iter().all(|b| cache.contains(b)));
                // What the worker computes for itself is what the server
                // mirrors, and only blocks it held or received.
                let own = next_cache(before.blocks(w), next.blocks(w), capacity, seed, epoch, w);
                prop_assert_eq!(&own[..], cache);
                prop_assert!(cache
                    .iter()
                    .all(|b| before.blocks(w).contains(b) || next.owner(*b) == w));
            }
            // Every block is cached somewhere: at its worker.
            prop_assert!((0..q).all(|b| caches.holders(b).contains(next.owner(b))));
        }
    }
}

#[test]
fn cache_smaller_than_a_share_is_an_error() {
    let current = Assignment::epoch(0, 0, 100, 4).unwrap();
    assert!(Caches::place(&current, 24, 0).is_err());
    assert!(Caches::place(&current, 25, 0).is_ok());
    assert!(Caches::place(&current, 101, 0).is_err());
    assert!(Assignment::from_order(&[0, 1, 1], 2).is_err());
    assert!(simulate(20, 1000, 0.04, 2, 0).is_err());
}

#[test]
fn theorem_2_matches_its_closed_form() {
    let cases: [(usize, f64, f64); 4] = [
        (20, 1e6, 0.55),
        (20, 1e5, 0.325),
        (4, 1e4, 0.5),
        (10, 1e3, 0.9),
    ];
    for (n, q, alpha) in cases {
        let s = (alpha * q).floor();
        let p = (s - q / n as f64) / (q - q / n as f64);
        let nf = n as f64;
        let closed = q / (nf * p).powi(2)
            * ((1.0 - p).powi(n as i32 + 1) + (nf - 1.0) * p * (1.0 - p) - (1.0 - p).powi(2));
        let sum = coded_theory(n, q as usize, s);
        assert!((sum - closed).abs() < 1e-6 * closed, "{sum} vs {closed}");
    }
}

#[test]
fn simulation_of_figure_5_at_q_10k_orders_the_schemes() {
    for p in figure5(20, &[10_000], &FIGURE5_ALPHAS, 1, 2).unwrap() {
        let m = p.mean;
        // Theorem 1 holds in expectation: within 3% on one draw.
        assert!((m.uncoded / p.uncoded_theory - 1.0).abs() < 0.03, "{p:?}");
        assert!(m.ubershuffle < m.coded && m.coded <= m.uncoded, "{p:?}");
        // Finite q: coded shuffling stays above its asymptotic rate.
        assert!(m.coded > p.coded_theory, "{p:?}");
    }
}

#[test]
fn paper_reduction_at_q_100k_alpha_0_325_is_reproduced() {
    // The paper: UberShuffle needs 2.58 times fewer packets than coded
    // shuffling at q = 10^5, alpha = 0.325 (n = 20, depth 2).
    let c = simulate(20, 100_000, 0.325, 2, 0).unwrap();
    let factor = c.coded / c.ubershuffle;
    assert!((factor / 2.58 - 1.0).abs() < 0.05, "factor {factor}");
}

#[test]
fn paper_reduction_at_q_1m_alpha_0_55_is_reproduced() {
    // The paper: UberShuffle needs 5.4 times fewer packets than coded
    // shuffling at q = 10^6, alpha = 0.55 (n = 20, depth 2). About 4 s in
    // a release build.
    let c = simulate(20, 1_000_000, 0.55, 2, 0).unwrap();
    let factor = c.coded / c.ubershuffle;
    assert!((factor / 5.4 - 1.0).abs() < 0.05, "factor {factor}");
    assert!(c.ubershuffle < c.coded && c.coded <= c.uncoded);
}
