//! The block catalog: files, their blocks and which workers hold a replica,
//! rebuilt from workers' block reports (the workers' disks are the truth,
//! as in HDFS), and the generation stamp each job output block was settled
//! at (the master's record, as HDFS's namenode keeps genstamps).
//!
//! Generations close the fencing window between an output commit the
//! master granted and the replica targets' commit: an attempt cut off
//! right after its grant may still land its replicas after the master gave
//! its reduce to another attempt. Each replica carries its writing
//! attempt's generation; once the master takes a reduce's result, the
//! block's generation is settled, and a replica of any other generation is
//! neither counted nor served, and its holder is told to delete it.

use common::wire::{BlockInfo, FileInfo, StaleReplica, MAX_FILE_BLOCKS};
use common::{BlockId, WorkerId};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub id: BlockId,
    pub len: u64,
    /// The holders of a replica of `generation`: counted and served.
    pub replicas: BTreeSet<WorkerId>,
    /// The generation stamp of `replicas` (0: loaded data).
    pub generation: u64,
    /// Holders of another generation while the block's is not settled (a
    /// reduce written by two attempts whose result is not in yet), with
    /// that generation and its length: neither counted nor served; the
    /// newest generation is taken meanwhile.
    pub others: BTreeMap<WorkerId, (u64, u64)>,
}

#[derive(Clone, Debug, Default)]
pub struct FileEntry {
    /// Indexed by block position; `None` until some worker reports it.
    pub blocks: Vec<Option<BlockEntry>>,
}

impl FileEntry {
    /// Every block is known and has a replica on a live worker.
    pub fn complete(&self) -> bool {
        self.blocks
            .iter()
            .all(|b| b.as_ref().is_some_and(|b| !b.replicas.is_empty()))
    }
}

#[derive(Default, Debug)]
pub struct Catalog {
    files: BTreeMap<String, FileEntry>,
    /// The generation each job output block was settled at, by file and
    /// index ([`Catalog::settle`]).
    settled: HashMap<String, BTreeMap<u32, u64>>,
    /// The blocks (file, index) each worker was last reported holding, so
    /// a worker's report or loss touches its own blocks only, not every
    /// block of the catalog (at 100,000 blocks that walk was most of a
    /// registration's time). It may still name blocks the worker has left
    /// since (a stale replica left out at settling, a removed file): those
    /// are skipped where it is read.
    held: HashMap<WorkerId, HashSet<(String, u32)>>,
    /// The blocks (file, index) whose replicas or generation may have
    /// changed since [`Catalog::take_changed`] (a report, a loss, a
    /// settling): what was planned for the others need not be again.
    changed: HashSet<(String, u32)>,
}

impl Catalog {
    /// Replaces everything `worker` holds with `blocks`. The replicas it
    /// holds at a generation other than their block's settled one are left
    /// out and returned: it is to delete them.
    pub fn apply_report(&mut self, worker: WorkerId, blocks: &[BlockInfo]) -> Vec<StaleReplica> {
        self.drop_worker(worker);
        let mut stale = Vec::new();
        for b in blocks {
            if b.file_blocks == 0 || b.file_blocks > MAX_FILE_BLOCKS || b.index >= b.file_blocks {
                tracing::warn!(file = %b.file, index = b.index, file_blocks = b.file_blocks, %worker,
                    "ignoring a reported block whose place in its file is impossible");
                continue;
            }
            let settled = self.settled_at(&b.file, b.index);
            // A replica at generation 0 of an output block was written by a
            // worker from before generation stamps: it is taken for the
            // settled one (never deleted for its stamp).
            let generation = match (b.generation, settled) {
                (0, Some(g)) => g,
                (g, _) => g,
            };
            if settled.is_some_and(|g| g != generation) {
                tracing::info!(block = %b.id, generation, settled = ?settled, %worker,
                    "a replica of an attempt whose result was not taken: left out, and deleted");
                stale.push(StaleReplica {
                    block: b.id.clone(),
                    generation,
                });
                continue;
            }
            self.held
                .entry(worker)
                .or_default()
                .insert((b.file.clone(), b.index));
            self.changed.insert((b.file.clone(), b.index));
            let f = self.files.entry(b.file.clone()).or_default();
            let n = b.file_blocks.max(b.index + 1) as usize;
            if f.blocks.len() < n {
                f.blocks.resize(n, None);
            }
            let slot = &mut f.blocks[b.index as usize];
            match slot {
                Some(e) if e.id != b.id || (e.generation == generation && e.len != b.len) => {
                    tracing::warn!(file = %b.file, index = b.index, have = %e.id, reported = %b.id, %worker,
                        "conflicting block reports; keeping the first");
                }
                Some(e) if e.generation == generation => {
                    e.replicas.insert(worker);
                }
                Some(e) if generation > e.generation => {
                    e.take_generation(generation, b.len);
                    e.replicas.insert(worker);
                }
                Some(e) => {
                    e.others.insert(worker, (generation, b.len));
                }
                None => {
                    *slot = Some(BlockEntry {
                        id: b.id.clone(),
                        len: b.len,
                        replicas: BTreeSet::from([worker]),
                        generation,
                        others: BTreeMap::new(),
                    });
                }
            }
        }
        stale
    }

    /// The generation block `index` of `file` was settled at, if it was.
    pub fn settled_at(&self, file: &str, index: u32) -> Option<u64> {
        self.settled.get(file)?.get(&index).copied()
    }

    /// Block `index` of `file` is at `generation` from now on (the master
    /// took the result of the reduce attempt that wrote it): the holders
    /// of any other generation are left out, and returned, to delete it.
    pub fn settle(
        &mut self,
        file: &str,
        index: u32,
        generation: u64,
    ) -> Vec<(WorkerId, StaleReplica)> {
        self.changed.insert((file.to_owned(), index));
        self.settled
            .entry(file.to_owned())
            .or_default()
            .insert(index, generation);
        let Some(e) = self
            .files
            .get_mut(file)
            .and_then(|f| f.blocks.get_mut(index as usize))
            .and_then(Option::as_mut)
        else {
            return Vec::new();
        };
        if e.generation != generation {
            let len = e
                .others
                .values()
                .find(|(g, _)| *g == generation)
                .map_or(e.len, |&(_, len)| len);
            e.take_generation(generation, len);
        }
        // Unstamped replicas (a worker from before generations) of the
        // settled length are taken for it; every other is stale.
        let (unstamped, others): (BTreeMap<_, _>, BTreeMap<_, _>) = std::mem::take(&mut e.others)
            .into_iter()
            .partition(|(_, (g, len))| *g == 0 && *len == e.len);
        e.replicas.extend(unstamped.into_keys());
        others
            .into_iter()
            .map(|(w, (g, _))| {
                let stale = StaleReplica {
                    block: e.id.clone(),
                    generation: g,
                };
                (w, stale)
            })
            .collect()
    }

    /// Forgets every replica on `worker` (lost, or about to re-report).
    pub fn drop_worker(&mut self, worker: WorkerId) {
        let held = self.held.remove(&worker).unwrap_or_default();
        self.changed.extend(held.iter().cloned());
        for (file, index) in held {
            let entry = self
                .files
                .get_mut(&file)
                .and_then(|f| f.blocks.get_mut(index as usize))
                .and_then(Option::as_mut);
            if let Some(b) = entry {
                b.replicas.remove(&worker);
                b.others.remove(&worker);
            }
        }
    }

    /// The blocks that changed since the last call (see `changed`).
    pub fn take_changed(&mut self) -> HashSet<(String, u32)> {
        std::mem::take(&mut self.changed)
    }

    /// The blocks (file, index) `worker` was last reported holding (and
    /// perhaps some it has left since, see `held`).
    pub fn held_by(&self, worker: WorkerId) -> impl Iterator<Item = &(String, u32)> {
        self.held.get(&worker).into_iter().flatten()
    }

    /// Forgets file `name` (deleted), with its settled generations.
    pub fn remove(&mut self, name: &str) -> Option<FileEntry> {
        self.settled.remove(name);
        self.files.remove(name)
    }

    pub fn file(&self, name: &str) -> Option<&FileEntry> {
        self.files.get(name)
    }

    pub fn files(&self) -> impl Iterator<Item = (&String, &FileEntry)> {
        self.files.iter()
    }

    pub fn info(&self, name: &str, worker_name: impl Fn(WorkerId) -> String) -> Option<FileInfo> {
        let f = self.files.get(name)?;
        Some(FileInfo {
            name: name.to_owned(),
            blocks: f.blocks.len() as u32,
            bytes: f.blocks.iter().flatten().map(|b| b.len).sum(),
            complete: f.complete(),
            replicas: f
                .blocks
                .iter()
                .map(|b| {
                    b.as_ref()
                        .map(|b| b.replicas.iter().map(|w| worker_name(*w)).collect())
                        .unwrap_or_default()
                })
                .collect(),
            replication: None,
        })
    }
}

impl BlockEntry {
    /// The replicas of `generation` (`len` bytes) are the block's from now
    /// on: those counted so far step aside, and those of `generation` set
    /// aside before come back.
    fn take_generation(&mut self, generation: u64, len: u64) {
        for w in std::mem::take(&mut self.replicas) {
            self.others.insert(w, (self.generation, self.len));
        }
        self.generation = generation;
        self.len = len;
        let back: Vec<WorkerId> = self
            .others
            .iter()
            .filter(|(_, (g, _))| *g == generation)
            .map(|(w, _)| *w)
            .collect();
        for w in back {
            self.others.remove(&w);
            self.replicas.insert(w);
        }
    }
}

/// Block `index` of `n` of `file`, `len` bytes, as a block report lists it.
#[cfg(test)]
pub(crate) fn reported_block(file: &str, index: u32, n: u32, len: u64) -> BlockInfo {
    BlockInfo {
        id: BlockId::for_file(file, index).unwrap(),
        file: file.into(),
        index,
        file_blocks: n,
        len,
        generation: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(file: &str, index: u32, n: u32) -> BlockInfo {
        reported_block(file, index, n, 10)
    }

    #[test]
    fn impossible_places_in_a_file_are_ignored() {
        let mut c = Catalog::default();
        c.apply_report(
            WorkerId(0),
            &[
                info("huge", 0, u32::MAX),
                info("zero", 0, 0),
                info("past", 5, 2),
                info("ok", 0, 1),
            ],
        );
        let names: Vec<&String> = c.files().map(|(n, _)| n).collect();
        assert_eq!(names, ["ok"]);
    }

    #[test]
    fn reports_build_files_and_replace_per_worker() {
        let mut c = Catalog::default();
        c.apply_report(WorkerId(0), &[info("a", 0, 2)]);
        assert!(!c.file("a").unwrap().complete());
        c.apply_report(WorkerId(1), &[info("a", 0, 2), info("a", 1, 2)]);
        assert!(c.file("a").unwrap().complete());
        let b0 = c.file("a").unwrap().blocks[0].clone().unwrap();
        assert_eq!(b0.replicas, BTreeSet::from([WorkerId(0), WorkerId(1)]));
        // w1 reports again without block 1: the file is incomplete again.
        c.apply_report(WorkerId(1), &[info("a", 0, 2)]);
        assert!(!c.file("a").unwrap().complete());
        c.drop_worker(WorkerId(0));
        let fi = c.info("a", |w| format!("w{}", w.0)).unwrap();
        assert_eq!(fi.replicas, vec![vec!["w1".to_string()], vec![]]);
        assert_eq!(fi.bytes, 20);
    }

    /// A worker's report or loss reaches its own blocks through the
    /// index of what it holds, also where that index names blocks it has
    /// left (a removed file, a file of the same name written again).
    #[test]
    fn a_workers_report_and_loss_reach_its_blocks_and_no_others() {
        let mut c = Catalog::default();
        c.apply_report(WorkerId(0), &[info("a", 0, 2), info("a", 1, 2)]);
        c.apply_report(WorkerId(1), &[info("a", 1, 2), info("b", 0, 1)]);
        c.remove("a");
        // "a" again, on w1 only: w0's index still names a's blocks.
        c.apply_report(WorkerId(1), &[info("a", 0, 1), info("b", 0, 1)]);
        let held: Vec<(String, u32)> = c.held_by(WorkerId(0)).cloned().collect();
        assert_eq!(held.len(), 2);
        c.drop_worker(WorkerId(0));
        let holders = |c: &Catalog, f: &str| -> Vec<u32> {
            let b = c.file(f).unwrap().blocks[0].clone().unwrap();
            b.replicas.iter().map(|w| w.0).collect()
        };
        assert_eq!(holders(&c, "a"), [1]);
        assert_eq!(holders(&c, "b"), [1]);
        assert_eq!(c.held_by(WorkerId(0)).count(), 0);
        // w1's report without "b" takes it off b's block, its loss off a's.
        c.apply_report(WorkerId(1), &[info("a", 0, 1)]);
        assert!(holders(&c, "b").is_empty());
        let mut held: Vec<(String, u32)> = c.held_by(WorkerId(1)).cloned().collect();
        held.sort();
        assert_eq!(held, [("a".to_string(), 0)]);
        c.drop_worker(WorkerId(1));
        assert!(holders(&c, "a").is_empty());
    }

    fn at(file: &str, generation: u64) -> BlockInfo {
        BlockInfo {
            generation,
            ..info(file, 0, 1)
        }
    }

    fn holders(c: &Catalog) -> Vec<u32> {
        let b = c.file("o").unwrap().blocks[0].clone().unwrap();
        b.replicas.iter().map(|w| w.0).collect()
    }

    /// Before its block is settled, the newest generation is counted and
    /// the others are set aside; settling takes the settled generation's
    /// holders back, leaves every other out and names them to delete;
    /// after it, a replica of another generation is refused at once; a
    /// deleted file's settled generations go with it.
    #[test]
    fn a_settled_block_counts_only_its_generations_replicas() {
        let mut c = Catalog::default();
        assert!(c.apply_report(WorkerId(0), &[at("o", 5)]).is_empty());
        assert!(c.apply_report(WorkerId(1), &[at("o", 7)]).is_empty());
        assert!(c.apply_report(WorkerId(2), &[at("o", 5)]).is_empty());
        assert_eq!(holders(&c), [1], "unsettled: the newest generation");
        let stale = c.settle("o", 0, 5);
        assert_eq!(holders(&c), [0, 2]);
        assert_eq!(
            stale,
            [(
                WorkerId(1),
                StaleReplica {
                    block: at("o", 7).id,
                    generation: 7
                }
            )]
        );
        assert!(c.file("o").unwrap().blocks[0]
            .as_ref()
            .unwrap()
            .others
            .is_empty());
        // After: refused at once, whichever is newer.
        for g in [3, 9] {
            let stale = c.apply_report(WorkerId(3), &[at("o", g)]);
            assert_eq!(stale.len(), 1);
            assert_eq!(stale[0].generation, g);
        }
        assert_eq!(holders(&c), [0, 2]);
        assert!(c.apply_report(WorkerId(3), &[at("o", 5)]).is_empty());
        assert_eq!(holders(&c), [0, 2, 3]);
        // Settled before any report: the first report is judged.
        assert_eq!(c.settle("p", 0, 4), []);
        assert_eq!(c.apply_report(WorkerId(0), &[at("p", 2)]).len(), 1);
        assert!(c.file("p").is_none(), "a stale replica makes no file");
        // A worker from before generation stamps reports 0: taken for the
        // settled generation, before the settling or after it.
        c.apply_report(WorkerId(4), &[at("o", 0)]);
        assert_eq!(holders(&c), [2, 3, 4]);
        assert_eq!(c.settle("q", 0, 6), []);
        c.apply_report(WorkerId(5), &[at("q", 0)]);
        let mut q = c.file("q").unwrap().blocks[0].clone().unwrap();
        assert_eq!((q.generation, q.replicas.len()), (6, 1));
        c.apply_report(WorkerId(0), &[at("r", 8)]);
        c.apply_report(WorkerId(1), &[at("r", 0)]);
        assert!(c.settle("r", 0, 8).is_empty(), "unstamped: kept");
        q = c.file("r").unwrap().blocks[0].clone().unwrap();
        assert_eq!(q.replicas.len(), 2);
        c.remove("o");
        assert_eq!(c.settled_at("o", 0), None);
        assert!(c.apply_report(WorkerId(1), &[at("o", 7)]).is_empty());
    }
}
