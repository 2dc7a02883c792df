//! The communicator's semantics on the in-process group: allreduce sums
//! in rank order, bit for bit, whatever the timing; broadcast from any
//! root; tagged point-to-point messages; the multicast relay for every
//! group size; and errors (not hangs) for mismatched collectives,
//! lengths that differ, and a peer that stopped.

use std::time::Duration;

use tocpile::dist::{Communicator, InProcess};
use tocpile::Error;

const PATIENCE: Duration = Duration::from_secs(20);

/// Runs `f` on every rank of a new group, each on its own thread, and
/// returns the results by rank.
fn on_ranks<T: Send>(size: usize, f: impl Fn(InProcess) -> T + Sync) -> Vec<T> {
    let ranks = InProcess::group_with_timeout(size, PATIENCE).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks.into_iter().map(|c| s.spawn(|| f(c))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Values whose sum depends on the order of addition.
fn values(rank: usize) -> Vec<f64> {
    (0..64)
        .map(|i| ((rank * 64 + i) as f64 * 0.7123).sin() * 10f64.powi((i % 7) as i32 * 3 - 9))
        .collect()
}

#[test]
fn allreduce_sums_in_rank_order_whatever_the_timing() {
    let size = 5;
    let expected: Vec<f64> = (1..size).fold(values(0), |acc, r| {
        acc.iter().zip(values(r)).map(|(a, b)| a + b).collect()
    });
    for round in 0..4u64 {
        let results = on_ranks(size, |comm| {
            // Ranks arrive in a different order each round.
            let delay = (comm.rank() as u64 * 7 + round * 3) % 5;
            std::thread::sleep(Duration::from_millis(delay));
            let mut v = values(comm.rank());
            comm.allreduce_sum(&mut v).unwrap();
            v
        });
        for v in results {
            let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
            let want: Vec<u64> = expected.iter().map(|x| x.to_bits()).collect();
            assert_eq!(bits, want);
        }
    }
}

#[test]
fn broadcast_from_any_root_and_barrier() {
    for root in 0..3 {
        let results = on_ranks(3, |comm| {
            let mut bytes = if comm.rank() == root {
                b"from the root".to_vec()
            } else {
                vec![0xff; 3]
            };
            comm.broadcast(root, &mut bytes).unwrap();
            comm.barrier().unwrap();
            bytes
        });
        assert!(results.iter().all(|b| b == b"from the root"));
    }
    let results = on_ranks(2, |comm| comm.broadcast(2, &mut Vec::new()));
    assert!(results
        .iter()
        .all(|r| matches!(r, Err(Error::BadArgument { .. }))));
}

#[test]
fn a_group_of_one_never_waits() {
    let comm = InProcess::group(1).unwrap().pop().unwrap();
    let mut v = vec![1.5, -2.0];
    comm.allreduce_sum(&mut v).unwrap();
    assert_eq!(v, [1.5, -2.0]);
    let mut b = vec![7];
    comm.broadcast(0, &mut b).unwrap();
    comm.barrier().unwrap();
    assert_eq!(b, [7]);
    assert!(InProcess::group(0).is_err());
}

#[test]
fn messages_are_matched_by_tag() {
    let results = on_ranks(2, |comm| {
        if comm.rank() == 0 {
            comm.send(1, 1, b"first").unwrap();
            comm.send(1, 2, b"second").unwrap();
            comm.send(1, 1, b"third").unwrap();
            (Vec::new(), comm.traffic())
        } else {
            let got = vec![
                comm.receive(0, 2).unwrap(),
                comm.receive(0, 1).unwrap(),
                comm.receive(0, 1).unwrap(),
            ];
            (got, comm.traffic())
        }
    });
    assert_eq!(
        results[1].0,
        [b"second".to_vec(), b"first".to_vec(), b"third".to_vec()]
    );
    assert_eq!(results[0].1.bytes_sent, 16);
    assert_eq!(results[0].1.messages_sent, 3);
    assert_eq!(results[1].1.bytes_sent, 0);
}

#[test]
fn multicast_relay_delivers_to_every_group() {
    let size = 6;
    // Groups of 1 to 5 members, payloads shorter and longer than the group.
    let groups: Vec<Vec<usize>> = vec![
        vec![3],
        vec![5, 1],
        vec![1, 2, 4],
        vec![2, 3, 4, 5],
        vec![1, 2, 3, 4, 5],
    ];
    let payloads: Vec<Vec<u8>> = vec![
        vec![],
        vec![9],
        (0..=255).collect(),
        (0..1000).map(|i| i as u8).collect(),
    ];
    let results = on_ranks(size, |comm| {
        let mut got = Vec::new();
        for group in &groups {
            for payload in &payloads {
                if comm.rank() == 0 {
                    comm.multicast(0, group, &mut payload.clone()).unwrap();
                } else if group.contains(&comm.rank()) {
                    let mut bytes = Vec::new();
                    comm.multicast(0, group, &mut bytes).unwrap();
                    got.push(bytes == *payload);
                }
            }
        }
        (got, comm.traffic().bytes_sent)
    });
    for (rank, (got, _)) in results.iter().enumerate().skip(1) {
        let expected = groups.iter().filter(|g| g.contains(&rank)).count() * payloads.len();
        assert_eq!(got.len(), expected);
        assert!(got.iter().all(|&ok| ok));
    }
    // The root sends each byte once per multicast (Theorem 4's relay).
    let per_group: usize = payloads.iter().map(Vec::len).sum();
    assert_eq!(results[0].0.len(), 0);
    assert_eq!(results[0].1 as usize, per_group * groups.len());
}

#[test]
fn multicast_rejects_bad_groups() {
    let comm = InProcess::group(3).unwrap().remove(0);
    for group in [vec![], vec![0, 1], vec![1, 1], vec![3]] {
        let r = comm.multicast(0, &group, &mut vec![1]);
        assert!(matches!(r, Err(Error::BadArgument { .. })), "{group:?}");
    }
    let comm = InProcess::group(3).unwrap().remove(2);
    assert!(comm.multicast(0, &[1], &mut Vec::new()).is_err());
}

#[test]
fn mismatched_collectives_are_errors() {
    let results = on_ranks(2, |comm| {
        if comm.rank() == 0 {
            comm.broadcast(0, &mut vec![1, 2, 3]).unwrap();
            // Stay until rank 1 has seen the broadcast.
            comm.receive(1, 9).map(|_| ())
        } else {
            let outcome = comm.allreduce_sum(&mut [1.0]);
            comm.send(0, 9, b"done").unwrap();
            outcome
        }
    });
    assert!(
        matches!(&results[1], Err(Error::Communication { message, .. }) if message.contains("disagree"))
    );
}

#[test]
fn allreduce_lengths_that_differ_fail_on_every_rank() {
    let results = on_ranks(3, |comm| {
        let mut v = vec![1.0; if comm.rank() == 2 { 3 } else { 2 }];
        comm.allreduce_sum(&mut v)
    });
    for r in results {
        assert!(
            matches!(r, Err(Error::Communication { message, .. }) if message.contains("lengths differ"))
        );
    }
}

#[test]
fn a_stopped_peer_is_an_error_not_a_hang() {
    let mut ranks = InProcess::group(2).unwrap();
    drop(ranks.pop());
    let comm = &ranks[0];
    assert!(matches!(
        comm.receive(1, 0),
        Err(Error::Communication { peer: 1, .. })
    ));
    assert!(comm.send(1, 0, b"x").is_err());
    assert!(comm.allreduce_sum(&mut [1.0]).is_err());
    let waiting = InProcess::group_with_timeout(2, Duration::from_millis(50)).unwrap();
    let e = waiting[0].receive(1, 0).unwrap_err();
    assert!(e.to_string().contains("no message within"), "{e}");
}
