//! The shuffle transport over the in-process communicator: a server and
//! four workers (threads) move the real blocks of a small dataset file
//! through each scheme; every worker ends each epoch holding exactly the
//! blocks its loader slice names, byte for byte, within its capacity.
//! Damaged packets and hostile plan or session bytes are errors on every
//! rank, never panics or hangs.

use std::time::Duration;

use proptest::prelude::*;
use tocpile::dataset::{DatasetWriter, WriterOptions};
use tocpile::dist::{
    loopback, plan_from_bytes, plan_to_bytes, read_blocks, Communicator, InProcess, Packet, Part,
    Scheme, Session, ShuffleOptions, ShuffleReport, ShuffleServer, ShuffleWorker, Tag, Traffic,
};
use tocpile::loader::{Loader, LoaderOptions, Strategy};
use tocpile::Error;

use crate::support::{load, temp_path};

const WORKERS: usize = 4;
const EPOCHS: u64 = 3;

/// Mushrooms as a TOC file of small blocks (about 57 blocks of 0.5 to
/// 1.3 KB): its path and raw blocks.
fn mushrooms_blocks() -> (std::path::PathBuf, Vec<Vec<u8>>) {
    let (rows, labels) = load("mushrooms", usize::MAX);
    let path = temp_path("shuffle");
    let options = WriterOptions::default()
        .with_page_rows(50)
        .with_block_bytes(1024)
        // Self-contained pages: shared dictionaries would leave too few
        // blocks for the shuffle's cache.
        .with_segment_rows(0);
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(&rows, &labels).unwrap();
    w.finish().unwrap();
    let blocks = read_blocks(&path).unwrap();
    (path, blocks)
}

/// What a worker saw after each shuffle: its blocks (visiting order),
/// whether it held each of them with the server's bytes, its cache size.
type Seen = Vec<(Vec<usize>, bool, usize)>;

fn run_session(
    blocks: &[Vec<u8>],
    options: &ShuffleOptions,
) -> (Vec<ShuffleReport>, Vec<Seen>, Vec<Traffic>) {
    let ranks = InProcess::group_with_timeout(WORKERS + 1, Duration::from_secs(30)).unwrap();
    let mut ranks = ranks.into_iter();
    let server_comm = ranks.next().unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .map(|comm| {
                s.spawn(move || {
                    let mut worker = ShuffleWorker::join(&comm).unwrap();
                    let mut seen = Seen::new();
                    for _ in 0..EPOCHS {
                        worker.shuffle().unwrap();
                        let exact = worker
                            .blocks()
                            .iter()
                            .all(|&b| worker.block(b) == Some(blocks[b].as_slice()));
                        seen.push((worker.blocks().to_vec(), exact, worker.cached().len()));
                    }
                    (seen, comm.traffic())
                })
            })
            .collect();
        let mut server = ShuffleServer::start(&server_comm, blocks.to_vec(), options).unwrap();
        let reports: Vec<ShuffleReport> = (0..EPOCHS).map(|_| server.shuffle().unwrap()).collect();
        let (seen, traffic) = handles.into_iter().map(|h| h.join().unwrap()).unzip();
        (reports, seen, traffic)
    })
}

#[test]
fn one_server_four_workers_move_real_blocks_under_every_scheme() {
    let (path, blocks) = mushrooms_blocks();
    assert!(blocks.len() > 40, "{} blocks", blocks.len());
    let seed = 7;
    let loaders: Vec<Loader> = (0..WORKERS)
        .map(|worker| {
            let options = LoaderOptions::default()
                .with_strategy(Strategy::CorgiPile)
                .with_seed(seed)
                .with_worker(worker)
                .with_workers(WORKERS);
            Loader::open(&path, options).unwrap()
        })
        .collect();
    let mut payload = Vec::new();
    for scheme in Scheme::ALL {
        let options = ShuffleOptions {
            scheme,
            alpha: 0.5,
            chunk_bytes: 256,
            seed,
        };
        let (reports, seen, _) = run_session(&blocks, &options);
        let capacity = blocks.len() / 2;
        for (w, epochs) in seen.iter().enumerate() {
            for (e, (assigned, exact, cached)) in epochs.iter().enumerate() {
                // The blocks the worker's CorgiPile loader reads that epoch.
                assert_eq!(
                    assigned,
                    &loaders[w].block_order(e as u64 + 1),
                    "{scheme} w{w} e{e}"
                );
                assert!(
                    exact,
                    "{scheme}: worker {w} lacks a block in epoch {}",
                    e + 1
                );
                assert_eq!(*cached, capacity);
            }
        }
        for r in &reports {
            assert_eq!(r.scheme, scheme);
            assert!(r.blocks > 0 && r.block_bytes > 0);
            assert!(
                r.payload_bytes + r.padding_bytes >= r.block_bytes || scheme != Scheme::Uncoded
            );
            // The server sends the plan to each worker and every packet once.
            let expected = r.payload_bytes + r.plan_bytes * WORKERS as u64;
            assert_eq!(r.server.bytes_sent, expected);
        }
        payload.push(reports.iter().map(|r| r.payload_bytes).sum::<u64>());
        let uncoded = &reports[0];
        if scheme == Scheme::Uncoded {
            assert_eq!(uncoded.padding_bytes, 0);
            assert_eq!(uncoded.payload_bytes, uncoded.block_bytes);
            assert_eq!(uncoded.workers.bytes_sent, 0);
        }
    }
    // Coding sends fewer bytes; UberShuffle fewest.
    assert!(
        payload[2] < payload[1] && payload[1] < payload[0],
        "{payload:?}"
    );
    std::fs::remove_file(path).ok();
}

#[test]
fn loopback_reports_every_shuffle() {
    let (path, blocks) = mushrooms_blocks();
    std::fs::remove_file(path).ok();
    let options = ShuffleOptions {
        alpha: 0.75,
        chunk_bytes: 300,
        ..ShuffleOptions::default()
    };
    let reports = loopback(blocks.clone(), 3, &options, 2).unwrap();
    assert_eq!(reports.iter().map(|r| r.epoch).collect::<Vec<_>>(), [1, 2]);
    // A cache below a worker's share is refused, on every rank, at once.
    let small = ShuffleOptions {
        alpha: 0.1,
        ..options
    };
    assert!(matches!(
        loopback(blocks, 3, &small, 1),
        Err(Error::BadArgument { .. })
    ));
}

/// Flips one bit of the first multicast payload this rank receives.
struct Corrupting {
    inner: InProcess,
    armed: std::cell::Cell<bool>,
}

impl Communicator for Corrupting {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn allreduce_sum(&self, values: &mut [f64]) -> tocpile::Result<()> {
        self.inner.allreduce_sum(values)
    }
    fn broadcast(&self, root: usize, bytes: &mut Vec<u8>) -> tocpile::Result<()> {
        self.inner.broadcast(root, bytes)
    }
    fn barrier(&self) -> tocpile::Result<()> {
        self.inner.barrier()
    }
    fn send(&self, to: usize, tag: Tag, bytes: &[u8]) -> tocpile::Result<()> {
        self.inner.send(to, tag, bytes)
    }
    fn receive(&self, from: usize, tag: Tag) -> tocpile::Result<Vec<u8>> {
        self.inner.receive(from, tag)
    }
    fn multicast(&self, root: usize, group: &[usize], bytes: &mut Vec<u8>) -> tocpile::Result<()> {
        self.inner.multicast(root, group, bytes)?;
        if self.rank() != root && self.armed.replace(false) && !bytes.is_empty() {
            bytes[0] ^= 1;
        }
        Ok(())
    }
    fn traffic(&self) -> Traffic {
        self.inner.traffic()
    }
}

#[test]
fn a_damaged_packet_fails_the_epoch_on_every_rank() {
    let (path, blocks) = mushrooms_blocks();
    std::fs::remove_file(path).ok();
    let ranks = InProcess::group_with_timeout(3, Duration::from_secs(30)).unwrap();
    let mut ranks = ranks.into_iter();
    let server_comm = ranks.next().unwrap();
    let options = ShuffleOptions {
        scheme: Scheme::Coded,
        chunk_bytes: 200,
        ..ShuffleOptions::default()
    };
    let (server, workers) = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .enumerate()
            .map(|(i, inner)| {
                s.spawn(move || {
                    let comm = Corrupting {
                        inner,
                        armed: std::cell::Cell::new(i == 1),
                    };
                    ShuffleWorker::join(&comm)?.shuffle()
                })
            })
            .collect();
        let server =
            ShuffleServer::start(&server_comm, blocks, &options).and_then(|mut s| s.shuffle());
        let workers: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (server, workers)
    });
    assert!(
        matches!(
            server,
            Err(Error::Shuffle {
                worker: 1,
                epoch: 1,
                ..
            })
        ),
        "{server:?}"
    );
    assert!(
        matches!(&workers[1], Err(Error::Shuffle { worker: 1, message, .. })
        if message.contains("checksum") || message.contains("padding"))
    );
    assert!(
        matches!(&workers[0], Err(Error::Shuffle { worker: 1, .. })),
        "{:?}",
        workers[0]
    );
}

#[test]
fn ranks_are_checked() {
    let ranks = InProcess::group(2).unwrap();
    assert!(ShuffleServer::start(&ranks[1], vec![vec![1]], &ShuffleOptions::default()).is_err());
    assert!(ShuffleWorker::join(&ranks[0]).is_err());
    let alone = InProcess::group(1).unwrap();
    assert!(ShuffleServer::start(&alone[0], vec![vec![1]], &ShuffleOptions::default()).is_err());
}

#[test]
fn plan_and_session_round_trip() {
    let packets = vec![
        Packet {
            parts: vec![Part { worker: 0, item: 5 }, Part { worker: 3, item: 0 }],
        },
        Packet {
            parts: vec![Part { worker: 2, item: 9 }],
        },
    ];
    let bytes = plan_to_bytes(4, &packets);
    assert_eq!(
        plan_from_bytes(&bytes, 4, 10).unwrap(),
        (4, packets.clone())
    );
    // Out of range for fewer workers or chunks.
    assert!(matches!(
        plan_from_bytes(&bytes, 3, 10),
        Err(Error::FieldOutOfRange { .. })
    ));
    assert!(matches!(
        plan_from_bytes(&bytes, 4, 9),
        Err(Error::FieldOutOfRange { .. })
    ));
    let session = Session {
        scheme: Scheme::UberShuffle { depth: 3 },
        seed: u64::MAX,
        capacity: 2,
        chunk_bytes: 4096,
        block_lens: vec![0, 70000, 3],
        crcs: vec![1, 2, 0xffff_ffff],
    };
    assert_eq!(Session::from_bytes(&session.to_bytes()).unwrap(), session);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn hostile_plan_and_session_bytes_are_errors(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..64),
        flip in any::<usize>(),
        cut in any::<usize>(),
    ) {
        let _ = plan_from_bytes(&bytes, 4, 100);
        let _ = Session::from_bytes(&bytes);
        // Mutations of valid messages: a flipped byte or a cut.
        let packets = vec![Packet { parts: vec![Part { worker: 1, item: 42 }, Part { worker: 2, item: 7 }] }];
        let mut plan = plan_to_bytes(1, &packets);
        let i = flip % plan.len();
        plan[i] ^= 0x5a;
        let _ = plan_from_bytes(&plan, 4, 100);
        let valid = plan_to_bytes(1, &packets);
        prop_assert!(plan_from_bytes(&valid[..cut % valid.len()], 4, 100).is_err());
        let session = Session {
            scheme: Scheme::Coded,
            seed: 1,
            capacity: 1,
            chunk_bytes: 8,
            block_lens: vec![5, 6],
            crcs: vec![9, 9],
        }
        .to_bytes();
        prop_assert!(Session::from_bytes(&session[..cut % session.len()]).is_err());
        bytes.extend_from_slice(&session);
        let _ = Session::from_bytes(&bytes);
    }
}
