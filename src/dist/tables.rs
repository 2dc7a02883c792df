//! The encoding tables of coded shuffling (UberShuffle section 2.2,
//! Algorithms 1 and 2) and the carpool flow of UberShuffle (section 3,
//! Algorithm 4).
//!
//! Table `I` (a set of workers) has a column per member; column `i` holds
//! items that worker `i` needs and every other member of `I` caches.
//! Row `t` of a table is one packet: the XOR of the `t`-th item of every
//! column long enough, which each member decodes by cancelling the others.
//! A table costs as many packets as its longest column, so columns shorter
//! than that are empty slots. An item of column `i` of table `I'` may move
//! to column `i` of any table `I` with `i` in `I` and `I` a subset of `I'`
//! (its holders still cover `I` minus `i`): the carpool flow moves items
//! along these edges of the DAG of columns into empty slots, smallest
//! tables first.

use hashbrown::HashMap;

use super::packet::{check_demands, Demand, Packet, Part};
use super::set::WorkerSet;
use crate::error::Result;

/// The encoding tables of one shuffle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables {
    n_workers: usize,
    /// Columns of each table, by member position (ascending worker).
    tables: HashMap<WorkerSet, Vec<Vec<usize>>>,
}

impl Tables {
    /// The paper's indexing (Algorithm 1): each demand not already cached
    /// goes to column `worker` of the table `holders + worker`, in the
    /// order of `demands`.
    ///
    /// # Errors
    /// As [`super::plan()`].
    pub fn index(n_workers: usize, demands: &[Demand]) -> Result<Tables> {
        check_demands(n_workers, demands)?;
        let mut tables: HashMap<WorkerSet, Vec<Vec<usize>>> = HashMap::new();
        for d in demands.iter().filter(|d| !d.holders.contains(d.worker)) {
            let set = d.holders.with(d.worker);
            tables
                .entry(set)
                .or_insert_with(|| vec![Vec::new(); set.len()])[set.position(d.worker)]
            .push(d.item);
        }
        Ok(Tables { n_workers, tables })
    }

    /// Workers of the shuffle.
    pub fn n_workers(&self) -> usize {
        self.n_workers
    }

    /// The sets that have a table with at least one item, by size, then
    /// by bits (the order tables are carpooled and encoded in).
    pub fn sets(&self) -> Vec<WorkerSet> {
        let mut sets: Vec<WorkerSet> = self
            .tables
            .iter()
            .filter(|(_, columns)| columns.iter().any(|c| !c.is_empty()))
            .map(|(&set, _)| set)
            .collect();
        sets.sort_unstable_by_key(|s| (s.len(), s.bits()));
        sets
    }

    /// The items of column `worker` of table `set` (empty if there is no
    /// such table or `worker` is not in `set`).
    pub fn column(&self, set: WorkerSet, worker: usize) -> &[usize] {
        match self.tables.get(&set) {
            Some(columns) if set.contains(worker) => &columns[set.position(worker)],
            _ => &[],
        }
    }

    /// Packets the tables cost: the longest column of each table, summed.
    pub fn packet_count(&self) -> usize {
        self.tables.values().map(|c| longest(c)).sum()
    }

    /// UberShuffle's carpool flow (Algorithm 4) with maximum depth
    /// `depth` (the paper's nu): for each table with at least two members,
    /// smallest first, each column shorter than the table's longest takes
    /// items of the same worker's column from supersets of one, then two,
    /// ... up to `depth` more members, each level's supersets in
    /// ascending order of their bits, until it is as long as the longest.
    ///
    /// Cost: for each table, the supersets up to `depth` levels up
    /// (171 for 20 workers, a pair of them and depth 2).
    pub fn carpool(&mut self, depth: usize) {
        let all = WorkerSet::all(self.n_workers);
        let mut deficits: Vec<(usize, usize, Vec<usize>)> = Vec::new();
        for set in self.sets() {
            if set.len() < 2 {
                continue;
            }
            let columns = &self.tables[&set];
            let full = longest(columns);
            deficits.clear();
            deficits.extend(
                set.iter()
                    .zip(columns)
                    .filter(|(_, c)| c.len() < full)
                    .map(|(w, c)| (w, full - c.len(), Vec::new())),
            );
            if deficits.is_empty() {
                continue;
            }
            let outside: Vec<usize> = WorkerSet::from_bits(all.bits() & !set.bits())
                .iter()
                .collect();
            'levels: for k in 1..=depth.min(outside.len()) {
                for extra in combinations(outside.len(), k) {
                    let superset = deposit(extra, &outside, set);
                    let Some(columns) = self.tables.get_mut(&superset) else {
                        continue;
                    };
                    for (worker, missing, moved) in deficits.iter_mut() {
                        let column = &mut columns[superset.position(*worker)];
                        let take = (*missing).min(column.len());
                        moved.extend(column.drain(column.len() - take..));
                        *missing -= take;
                    }
                    if deficits.iter().all(|(_, missing, _)| *missing == 0) {
                        break 'levels;
                    }
                }
            }
            let columns = self.tables.get_mut(&set).expect("table being filled");
            for (worker, _, moved) in deficits.iter_mut() {
                columns[set.position(*worker)].append(moved);
            }
        }
    }

    /// The packets (Algorithm 2): row `t` of each table, tables in the
    /// order of [`Tables::sets`], is the XOR of the `t`-th item of every
    /// column that long.
    pub fn encode(&self) -> Vec<Packet> {
        let mut packets = Vec::with_capacity(self.packet_count());
        for set in self.sets() {
            let columns = &self.tables[&set];
            for t in 0..longest(columns) {
                let parts = set
                    .iter()
                    .zip(columns)
                    .filter_map(|(worker, c)| c.get(t).map(|&item| Part { worker, item }))
                    .collect();
                packets.push(Packet { parts });
            }
        }
        packets
    }
}

fn longest(columns: &[Vec<usize>]) -> usize {
    columns.iter().map(Vec::len).max().unwrap_or(0)
}

/// The `k`-subsets of `0..m` as bit masks in ascending numeric order
/// (Gosper's hack), for `1 <= k <= m <= 64`.
fn combinations(m: usize, k: usize) -> impl Iterator<Item = u64> {
    let first = if k == 64 { u64::MAX } else { (1u64 << k) - 1 };
    let mut next = Some(first);
    std::iter::from_fn(move || {
        let current = next?;
        let c = current & current.wrapping_neg();
        let r = current.wrapping_add(c);
        next = if r == 0 || c == 0 {
            None
        } else {
            let n = (((r ^ current) >> 2) / c) | r;
            (m == 64 || n >> m == 0).then_some(n)
        };
        Some(current)
    })
}

/// `set` plus the workers `outside[j]` for each bit `j` of `extra`. The map
/// keeps order (`outside` ascends), so supersets come in ascending bits.
fn deposit(extra: u64, outside: &[usize], set: WorkerSet) -> WorkerSet {
    WorkerSet::from_bits(extra)
        .iter()
        .fold(set, |s, j| s.with(outside[j]))
}

#[cfg(test)]
mod tests {
    use super::combinations;

    #[test]
    fn combinations_ascend_and_are_complete() {
        for (m, k, count) in [(5, 2, 10), (18, 2, 153), (4, 4, 1), (6, 1, 6), (7, 3, 35)] {
            let all: Vec<u64> = combinations(m, k).collect();
            assert_eq!(all.len(), count, "{m} choose {k}");
            assert!(all.windows(2).all(|w| w[0] < w[1]));
            assert!(all
                .iter()
                .all(|c| c.count_ones() as usize == k && c >> m == 0));
        }
    }
}
