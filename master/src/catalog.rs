//! The block catalog: files, their blocks and which workers hold a replica,
//! rebuilt from workers' block reports (the workers' disks are the truth,
//! as in HDFS).

use common::wire::{BlockInfo, FileInfo, MAX_FILE_BLOCKS};
use common::{BlockId, WorkerId};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub id: BlockId,
    pub len: u64,
    pub replicas: BTreeSet<WorkerId>,
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
}

impl Catalog {
    /// Replaces everything `worker` holds with `blocks`.
    pub fn apply_report(&mut self, worker: WorkerId, blocks: &[BlockInfo]) {
        self.drop_worker(worker);
        for b in blocks {
            if b.file_blocks == 0 || b.file_blocks > MAX_FILE_BLOCKS || b.index >= b.file_blocks {
                tracing::warn!(file = %b.file, index = b.index, file_blocks = b.file_blocks, %worker,
                    "ignoring a reported block whose place in its file is impossible");
                continue;
            }
            let f = self.files.entry(b.file.clone()).or_default();
            let n = b.file_blocks.max(b.index + 1) as usize;
            if f.blocks.len() < n {
                f.blocks.resize(n, None);
            }
            let slot = &mut f.blocks[b.index as usize];
            match slot {
                Some(e) if e.id == b.id && e.len == b.len => {
                    e.replicas.insert(worker);
                }
                Some(e) => {
                    tracing::warn!(file = %b.file, index = b.index, have = %e.id, reported = %b.id, %worker,
                        "conflicting block reports; keeping the first");
                }
                None => {
                    *slot = Some(BlockEntry {
                        id: b.id.clone(),
                        len: b.len,
                        replicas: BTreeSet::from([worker]),
                    });
                }
            }
        }
    }

    /// Forgets every replica on `worker` (lost, or about to re-report).
    pub fn drop_worker(&mut self, worker: WorkerId) {
        for f in self.files.values_mut() {
            for b in f.blocks.iter_mut().flatten() {
                b.replicas.remove(&worker);
            }
        }
    }

    /// Forgets file `name` (deleted).
    pub fn remove(&mut self, name: &str) -> Option<FileEntry> {
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

/// Block `index` of `n` of `file`, `len` bytes, as a block report lists it.
#[cfg(test)]
pub(crate) fn reported_block(file: &str, index: u32, n: u32, len: u64) -> BlockInfo {
    BlockInfo {
        id: BlockId::for_file(file, index).unwrap(),
        file: file.into(),
        index,
        file_blocks: n,
        len,
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
}
