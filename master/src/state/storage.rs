//! The master's storage: the block catalog (rebuilt from block reports),
//! each declared file's replication factor, the replicas of deleted files
//! still to go, and the copies and trims in flight. `Storage` owns these
//! fields and nothing else writes them; it reads what it needs of the
//! workers as [`Holder`]s and returns the orders for them
//! ([`StorageOrders`]), which the master's step puts in the workers'
//! heartbeat replies. Re-replication's planning is `replication.rs`.

use super::journal::{Journal, JournalEntry};
use super::MasterError;
use crate::catalog::Catalog;
use common::wire::{BlockInfo, CopyOrder, FileDeleted, FileInfo, StaleReplica};
use common::{BlockId, WorkerId};
use sched::Millis;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What storage knows of a worker, read from the workers' part at each
/// step (storage never writes a worker's state).
#[derive(Clone, Debug)]
pub(super) struct Holder<'a> {
    pub alive: bool,
    /// Registered and its role holds data: a copy may go there.
    pub takes_data: bool,
    /// Its disk ran out of room and has not reported more since.
    pub full: bool,
    /// Blocks in its last report.
    pub blocks: usize,
    pub addr: &'a str,
    pub name: &'a str,
}

/// Orders for the workers, by worker: blocks to copy to another worker,
/// replicas to delete, and replicas to delete if still at a stale
/// generation.
#[derive(Debug, Default)]
pub(super) struct StorageOrders {
    pub copies: Vec<(WorkerId, CopyOrder)>,
    pub drops: Vec<(WorkerId, BlockId)>,
    pub stale: Vec<(WorkerId, StaleReplica)>,
}

/// Since when a declared file is kept at its factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kept {
    /// A job is writing it (a failed job's partial output stays so).
    Writing,
    /// Its job succeeded; the grace starts at the next check.
    Written,
    /// From this time on.
    From(Millis),
}

/// An ordered copy, until the target reports the block.
#[derive(Clone, Debug)]
pub(super) struct CopyInFlight {
    pub block: BlockId,
    pub from: WorkerId,
    pub to: WorkerId,
    pub started: Millis,
}

#[derive(Debug, Default)]
pub(super) struct Storage {
    pub(super) catalog: Catalog,
    /// The replication factor each file is kept at, once declared (by the
    /// loader when its placement is complete; by the master for job
    /// output), and since when it is kept there.
    pub(super) file_replication: HashMap<String, (u32, Kept)>,
    /// Replicas of deleted files not yet gone from their workers, by worker:
    /// a block report listing one is not taken into the catalog, and the
    /// worker is told again to drop it.
    deleting: HashMap<WorkerId, BTreeMap<BlockId, Pending>>,
    /// Heartbeats and registrations taken from each worker since the
    /// master started ([`Storage::beat`]).
    beats: HashMap<WorkerId, u64>,
    /// Block copies ordered and not yet seen in the target's block report.
    pub(super) copies: Vec<CopyInFlight>,
    /// Replicas ordered deleted and not yet gone from the holder's report.
    pub(super) trims: Vec<(BlockId, WorkerId)>,
    /// Re-replication copies ordered since the master started.
    pub(super) blocks_copied: u64,
    /// What the last plan of replication read and the blocks it left off
    /// their factor: the next looks only at those and at the blocks that
    /// changed since, rather than at every block of the catalog.
    pub(super) last_plan: Option<LastPlan>,
    /// Blocks the plans of replication looked at since the master started.
    pub(super) blocks_checked: u64,
}

/// What the last plan read and the blocks it left off their factor.
#[derive(Debug)]
pub(super) struct LastPlan {
    pub inputs: PlanInputs,
    pub again: HashSet<(String, u32)>,
}

/// Everything a plan of replication reads but the catalog's changes and
/// the copies and trims in flight: each declared file's factor and whether
/// it is kept at it yet, and each worker's liveness, role and full disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PlanInputs {
    pub files: HashMap<String, (u32, u8)>,
    pub holders: u64,
}

/// A replica of a deleted file a worker may hold, or may still receive.
#[derive(Clone, Debug)]
struct Pending {
    file: String,
    /// Its last report listed it (or it held it when the file was deleted,
    /// or it was down then, or the master restarted since): gone only once
    /// a report no longer lists it.
    held: bool,
    /// A copy of it to this worker, ordered before the delete, may still
    /// land until then (0: none): kept out until then even where a report
    /// did not list it, so the copy's landing does not bring the file back.
    until: Millis,
    /// The worker's beats when the file was deleted: a heartbeat taken then
    /// may have been sent before a replica written just before the delete
    /// was stored (a job's output, reported by its holders' next reports),
    /// so only the second one after says the worker has none.
    since: u64,
}

/// A copy not in the target's block report by then is ordered again (and
/// one of a deleted block no longer expected).
pub const COPY_TIMEOUT_MS: Millis = 120_000;

/// How long after a restart a deletion journaled that recently keeps its
/// blocks out wherever they land: the last incarnation's copies are not
/// known, and a copy is given up after as long.
pub const DELETE_GUARD_MS: Millis = COPY_TIMEOUT_MS;

impl Storage {
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn blocks_copied(&self) -> u64 {
        self.blocks_copied
    }

    /// Keeps every block of `file` at `replication` replicas from now on;
    /// `data_workers` is how many workers hold data.
    pub fn set_file_replication(
        &mut self,
        file: &str,
        replication: u32,
        data_workers: u32,
        journal: &mut Journal,
    ) -> Result<(), MasterError> {
        if self.catalog.file(file).is_none() {
            return Err(self.unknown_file(file));
        }
        if replication == 0 || replication > data_workers {
            return Err(MasterError::BadRequest(format!(
                "replication must be 1..={data_workers} (the workers that hold data) (got {replication})"
            )));
        }
        self.file_replication
            .insert(file.to_owned(), (replication, Kept::From(0)));
        journal.push(JournalEntry::Replication {
            file: file.to_owned(),
            replication,
        });
        Ok(())
    }

    /// A job's output, while the job writes it: kept at `replication` once
    /// written.
    pub fn output_writing(&mut self, file: String, replication: u32) {
        self.file_replication
            .insert(file, (replication, Kept::Writing));
    }

    /// A job's output is complete: kept at its factor after the grace.
    pub fn output_written(&mut self, file: &str) {
        if let Some((_, kept)) = self.file_replication.get_mut(file) {
            *kept = Kept::Written;
        }
    }

    /// Replays a journaled factor (a restarted master).
    pub fn restore_replication(&mut self, file: String, replication: u32) {
        for pending in self.deleting.values_mut() {
            pending.retain(|_, p| p.file != file);
        }
        self.file_replication
            .insert(file, (replication, Kept::From(0)));
    }

    /// Replays a journaled deletion: every worker may still hold the
    /// file's `blocks` and is told to drop them when it reports them (its
    /// registration's report says which it holds); a deletion newer than
    /// [`DELETE_GUARD_MS`] keeps them out until `guard_until` on every
    /// worker (a copy the last incarnation ordered may still land).
    pub fn restore_deleted(
        &mut self,
        file: String,
        blocks: u32,
        workers: usize,
        guard_until: Option<Millis>,
    ) {
        self.file_replication.remove(&file);
        // Its settled generations go with it.
        self.catalog.remove(&file);
        for w in 0..workers {
            let pending = self.deleting.entry(WorkerId(w as u32)).or_default();
            for i in 0..blocks.min(common::wire::MAX_FILE_BLOCKS) {
                if let Ok(id) = BlockId::for_file(&file, i) {
                    let p = Pending {
                        file: file.clone(),
                        held: true,
                        until: guard_until.unwrap_or(0),
                        since: 0,
                    };
                    pending.insert(id, p);
                }
            }
        }
    }

    /// The copy of `block` that `from` was ordered to send to `to` failed:
    /// it leaves the copies in flight, so the next plan orders it again
    /// (from any live holder) instead of after the copy timeout. Only that
    /// copy: another target's copy of the same block may still land (the
    /// 2026-11-30 campaign on processes: one target's disk full, the other
    /// copy landing after the delete brought the file back when every copy
    /// of the block was given up).
    pub fn copy_failed(&mut self, from: WorkerId, block: &BlockId, to: WorkerId) {
        let this = |c: &CopyInFlight| c.from == from && c.to == to && c.block == *block;
        // A copy of a deleted block that failed will not land there.
        if self.copies.iter().any(this) {
            if let Some(p) = self.deleting.get_mut(&to).and_then(|d| d.get_mut(block)) {
                p.until = 0;
            }
        }
        let before = self.copies.len();
        self.copies.retain(|c| !this(c));
        if self.copies.len() < before {
            tracing::info!(%block, "a re-replication copy failed; ordered again");
        }
    }

    /// A worker was lost: its replicas leave the catalog.
    pub fn worker_lost(&mut self, id: WorkerId) {
        self.catalog.drop_worker(id);
    }

    /// A worker's full block report into the catalog, without the replicas
    /// of deleted files (those it is told, again, to drop: returned; those
    /// it no longer lists are gone once [`Storage::beat`] says so) and
    /// without those of a generation other than their block's settled one
    /// (returned too: it deletes them if still at that generation).
    pub fn apply_block_report(
        &mut self,
        id: WorkerId,
        blocks: &[BlockInfo],
    ) -> (Vec<BlockId>, Vec<StaleReplica>) {
        let Some(pending) = self.deleting.get_mut(&id) else {
            return (Vec::new(), self.catalog.apply_report(id, blocks));
        };
        let listed: std::collections::HashSet<&BlockId> = blocks.iter().map(|b| &b.id).collect();
        for (b, p) in pending.iter_mut() {
            p.held = listed.contains(b);
            if p.held {
                // The copy landed, if one was coming.
                p.until = 0;
            }
        }
        let kept: Vec<BlockInfo> = blocks
            .iter()
            .filter(|b| !pending.contains_key(&b.id))
            .cloned()
            .collect();
        let again: Vec<BlockId> = pending
            .iter()
            .filter(|(_, p)| p.held)
            .map(|(b, _)| b.clone())
            .collect();
        let stale = self.catalog.apply_report(id, &kept);
        (again, stale)
    }

    /// The master took the result of the reduce attempt that wrote block
    /// `index` of `file` at `generation`: that generation is the block's
    /// (journaled), and the holders of any other are told to delete theirs.
    pub fn settle(
        &mut self,
        file: &str,
        index: u32,
        generation: u64,
        journal: &mut Journal,
    ) -> StorageOrders {
        journal.push(JournalEntry::Settled {
            file: file.to_owned(),
            index,
            generation,
        });
        StorageOrders {
            stale: self.catalog.settle(file, index, generation),
            ..StorageOrders::default()
        }
    }

    /// Replays a journaled settled generation (a restarted master).
    pub fn restore_settled(&mut self, file: &str, index: u32, generation: u64) {
        self.catalog.settle(file, index, generation);
    }

    /// A heartbeat or registration of `id` was taken at `now` (after its
    /// block report, if it had one): the replicas of deleted files it does
    /// not hold, whose copies cannot land any more, are gone from its
    /// second beat since the delete on (that beat was sent after the
    /// delete: its report, or its store unchanged since a report without
    /// them, says it has none).
    pub fn beat(&mut self, id: WorkerId, now: Millis) {
        let beats = self.beats.entry(id).or_default();
        *beats += 1;
        let beats = *beats;
        if let Some(pending) = self.deleting.get_mut(&id) {
            pending.retain(|_, p| p.held || now < p.until || beats < p.since + 2);
            if pending.is_empty() {
                self.deleting.remove(&id);
            }
        }
    }

    /// `file`, with each block's holders named by `name`.
    pub fn file_info(&self, file: &str, name: impl Fn(WorkerId) -> String) -> Option<FileInfo> {
        let mut info = self.catalog.info(file, name)?;
        info.replication = self.file_replication.get(file).map(|t| t.0);
        Some(info)
    }

    /// `file`'s information, or why there is none.
    pub fn file(
        &self,
        file: &str,
        alive: &dyn Fn(WorkerId) -> bool,
        name: impl Fn(WorkerId) -> String,
    ) -> Result<FileInfo, MasterError> {
        if let Some(info) = self.file_info(file, name) {
            return Ok(info);
        }
        Err(self
            .being_deleted(file, alive)
            .unwrap_or_else(|| self.unknown_file(file)))
    }

    /// Why a new file named `name` must wait, if it must: replicas of a
    /// deleted file of that name that live workers still hold, or copies of
    /// them that may still land (its blocks, of the same ids, would be
    /// dropped with them).
    pub fn being_deleted(
        &self,
        name: &str,
        alive: &dyn Fn(WorkerId) -> bool,
    ) -> Option<MasterError> {
        let pending: usize = self
            .deleting
            .iter()
            .filter(|(w, _)| alive(**w))
            .map(|(_, blocks)| blocks.values().filter(|p| p.file == name).count())
            .sum();
        (pending > 0).then(|| MasterError::FileBeingDeleted {
            name: name.to_owned(),
            pending,
        })
    }

    /// Deletes `name` (the caller checked no job uses it) at `now`: the
    /// file leaves the catalog at once and every holder is told to delete
    /// its replicas (also a holder that is down now, when it comes back);
    /// until a holder's block report no longer lists them they are kept out
    /// of the catalog, and so are those a copy ordered before the delete
    /// lands (until the copy is given up), so a deleted file never comes
    /// back, even as blocks of a new file of the same name.
    pub fn delete_file(
        &mut self,
        name: &str,
        workers: usize,
        alive: &dyn Fn(WorkerId) -> bool,
        now: Millis,
        journal: &mut Journal,
    ) -> Result<(FileDeleted, StorageOrders), MasterError> {
        let Some(entry) = self.catalog.file(name) else {
            return Err(self
                .being_deleted(name, alive)
                .unwrap_or_else(|| self.unknown_file(name)));
        };
        let mut drops: Vec<(WorkerId, BlockId)> = Vec::new();
        for b in entry.blocks.iter().flatten() {
            // Every generation goes with the file.
            for w in b.replicas.iter().chain(b.others.keys()) {
                drops.push((*w, b.id.clone()));
            }
        }
        let blocks = entry.blocks.len() as u32;
        let ids: Vec<BlockId> = entry
            .blocks
            .iter()
            .flatten()
            .map(|b| b.id.clone())
            .collect();
        // Every worker: a holder; a worker down now (it may hold replicas
        // the catalog forgot); one whose report of a replica written just
        // before the delete has not come yet (until its second beat); the
        // target of a copy in flight, which may land after that (the fault
        // campaigns of 2026-11-29 and -30 saw deleted outputs come back
        // each of these ways).
        for w in (0..workers as u32).map(WorkerId) {
            let since = self.beats.get(&w).copied().unwrap_or(0);
            for id in &ids {
                let held = !alive(w) || drops.iter().any(|(h, b)| *h == w && b == id);
                let until = self
                    .copies
                    .iter()
                    .filter(|c| c.to == w && c.block == *id)
                    .map(|c| c.started + COPY_TIMEOUT_MS)
                    .max()
                    .filter(|&u| u > now)
                    .unwrap_or(0);
                let p = Pending {
                    file: name.to_owned(),
                    held,
                    until,
                    since,
                };
                self.deleting.entry(w).or_default().insert(id.clone(), p);
            }
        }
        self.catalog.remove(name);
        self.file_replication.remove(name);
        journal.push(JournalEntry::Deleted {
            file: name.to_owned(),
            blocks,
            unix_ms: common::unix_ms(),
        });
        let replicas = drops.len() as u32;
        let deleted = FileDeleted {
            name: name.to_owned(),
            blocks,
            replicas,
        };
        Ok((
            deleted,
            StorageOrders {
                drops,
                ..StorageOrders::default()
            },
        ))
    }

    pub fn unknown_file(&self, name: &str) -> MasterError {
        let known: Vec<&str> = self.catalog.files().map(|(n, _)| n.as_str()).collect();
        MasterError::UnknownFile {
            name: name.to_owned(),
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        }
    }

    /// The holders of block `index` of `file` that are alive.
    pub fn live_replicas(
        &self,
        file: &str,
        index: u32,
        alive: &dyn Fn(WorkerId) -> bool,
    ) -> Vec<WorkerId> {
        self.catalog
            .file(file)
            .and_then(|f| f.blocks.get(index as usize))
            .and_then(|b| b.as_ref())
            .map(|b| b.replicas.iter().copied().filter(|w| alive(*w)).collect())
            .unwrap_or_default()
    }

    /// Whether `w`'s last block report listed `block`.
    pub(super) fn holds(&self, block: &BlockId, w: WorkerId) -> bool {
        self.catalog
            .files()
            .flat_map(|(_, f)| f.blocks.iter().flatten())
            .any(|b| b.id == *block && b.replicas.contains(&w))
    }
}

#[cfg(test)]
mod tests {
    //! Storage on its own: no master, no jobs; workers are `Holder`s.

    use super::*;

    fn info(file: &str, index: u32, n: u32) -> BlockInfo {
        crate::catalog::reported_block(file, index, n, 10)
    }

    const NAMES: [&str; 4] = ["w0", "w1", "w2", "w3"];

    fn holders(alive: [bool; 4]) -> Vec<Holder<'static>> {
        (0..4)
            .map(|i| Holder {
                alive: alive[i],
                takes_data: true,
                full: false,
                blocks: 1,
                addr: NAMES[i],
                name: NAMES[i],
            })
            .collect()
    }

    /// `w`'s heartbeat at `now` with a block report of `blocks`: what it is
    /// told to drop again.
    fn report(s: &mut Storage, w: u32, blocks: &[BlockInfo], now: Millis) -> Vec<BlockId> {
        let (again, stale) = s.apply_block_report(WorkerId(w), blocks);
        assert!(stale.is_empty(), "loaded blocks are never stale");
        s.beat(WorkerId(w), now);
        again
    }

    #[test]
    fn a_deleted_file_stays_out_of_the_catalog_until_its_holders_drop_it() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        report(&mut s, 0, &[info("f", 0, 1)], 0);
        report(&mut s, 1, &[info("f", 0, 1)], 0);
        // w2 is down: it may hold a replica nobody knows of.
        let alive = |w: WorkerId| w.0 != 2;
        let (deleted, orders) = s.delete_file("f", 4, &alive, 10, &mut journal).unwrap();
        assert_eq!((deleted.blocks, deleted.replicas), (1, 2));
        let mut drops: Vec<u32> = orders.drops.iter().map(|(w, _)| w.0).collect();
        drops.sort();
        assert_eq!(drops, [0, 1]);
        assert!(matches!(
            journal.take()[..],
            [JournalEntry::Deleted { blocks: 1, .. }]
        ));
        // w0 still lists it: kept out, and told again.
        let again = report(&mut s, 0, &[info("f", 0, 1)], 20);
        assert_eq!(again, [BlockId::for_file("f", 0).unwrap()]);
        assert!(s.catalog().file("f").is_none());
        // w2 comes back listing it: told too.
        assert_eq!(report(&mut s, 2, &[info("f", 0, 1)], 30).len(), 1);
        // Every holder dropped it: gone from each at its second beat after
        // the delete (its first may have been sent before it).
        for w in 0..4 {
            assert!(report(&mut s, w, &[], 40).is_empty());
        }
        assert!(matches!(
            s.file("f", &|_| true, |w| w.to_string()),
            Err(MasterError::FileBeingDeleted { .. })
        ));
        for w in 0..4 {
            s.beat(WorkerId(w), 50);
        }
        assert!(s.deleting.is_empty(), "{:?}", s.deleting);
        assert!(matches!(
            s.file("f", &|_| true, |w| w.to_string()),
            Err(MasterError::UnknownFile { .. })
        ));
        report(&mut s, 1, &[info("f", 0, 1)], 60);
        assert!(s.catalog().file("f").is_some());
    }

    /// A job's output, written just before the delete, reported by its
    /// holder's next report after it: that report must not bring it back
    /// (the fault campaign of 2026-11-30 saw it, a delete 8 ms after the
    /// job ended).
    #[test]
    fn a_replica_reported_after_the_delete_stays_out() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        report(&mut s, 0, &[info("f", 0, 1)], 0);
        s.delete_file("f", 2, &|_| true, 10, &mut journal).unwrap();
        // w1's heartbeat sent before the replica was stored, then its next.
        assert!(report(&mut s, 1, &[], 20).is_empty());
        assert_eq!(report(&mut s, 1, &[info("f", 0, 1)], 30).len(), 1);
        assert!(
            s.catalog().file("f").is_none(),
            "the deleted file came back"
        );
    }

    /// f on w0 and w1 at factor 2, w1 lost and a copy of its block from w0
    /// to w2 or w3 planned at `at` (the orders).
    fn copying(at: Millis) -> (Storage, Journal, StorageOrders) {
        copying_at_factor(at, 2)
    }

    /// The same at `factor` (3: two copies from w0, to w2 and w3).
    fn copying_at_factor(at: Millis, factor: u32) -> (Storage, Journal, StorageOrders) {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        report(&mut s, 0, &[info("f", 0, 1)], 0);
        report(&mut s, 1, &[info("f", 0, 1)], 0);
        s.set_file_replication("f", factor, 4, &mut journal)
            .unwrap();
        s.worker_lost(WorkerId(1));
        let o = s.plan_replication(at, &holders([true, false, true, true]), &mut journal);
        (s, journal, o)
    }

    #[test]
    fn a_copy_ordered_before_the_delete_is_kept_out_when_it_lands() {
        let (mut s, mut journal, o) = copying(1000);
        let to = if o.copies[0].1.to == "w2" { 2 } else { 3 };
        let alive = |w: WorkerId| w.0 != 1;
        s.delete_file("f", 4, &alive, 2000, &mut journal).unwrap();
        // The target beats twice before the copy lands, then reports it.
        report(&mut s, to, &[], 2100);
        report(&mut s, to, &[], 2200);
        assert!(s.being_deleted("f", &alive).is_some());
        let landed = report(&mut s, to, &[info("f", 0, 1)], 3000);
        assert_eq!(landed.len(), 1, "the landed copy is dropped");
        assert!(
            s.catalog().file("f").is_none(),
            "the deleted file came back"
        );
        // Dropped, and w0's replica too: the name is free.
        for w in [0, to] {
            report(&mut s, w, &[], 3100);
        }
        for w in [0, 2, 3] {
            s.beat(WorkerId(w), 3200);
            s.beat(WorkerId(w), 3300);
        }
        assert!(s.being_deleted("f", &alive).is_none(), "{:?}", s.deleting);
    }

    #[test]
    fn one_targets_failed_copy_leaves_the_other_targets_copy_kept_out() {
        // f on w0 and w1 at factor 3, w1 lost: two copies from w0, to w2
        // and w3, the file deleted while both are in flight.
        let (mut s, mut journal, o) = copying_at_factor(1000, 3);
        assert_eq!(o.copies.len(), 2, "{o:?}");
        let alive = |w: WorkerId| w.0 != 1;
        s.delete_file("f", 4, &alive, 2000, &mut journal).unwrap();
        // The copy to w2 fails (its disk full); w3's is still coming.
        s.copy_failed(
            WorkerId(0),
            &BlockId::for_file("f", 0).unwrap(),
            WorkerId(2),
        );
        for at in [2100, 2200, 2300] {
            report(&mut s, 3, &[], at);
        }
        let landed = report(&mut s, 3, &[info("f", 0, 1)], 2400);
        assert_eq!(landed.len(), 1, "the landed copy is dropped");
        assert!(
            s.catalog().file("f").is_none(),
            "the deleted file came back"
        );
    }

    #[test]
    fn a_copy_that_cannot_land_frees_the_name() {
        for how in ["failed", "given up"] {
            let (mut s, mut journal, o) = copying(1000);
            let to = WorkerId(if o.copies[0].1.to == "w2" { 2 } else { 3 });
            let alive = |w: WorkerId| w.0 != 1;
            s.delete_file("f", 4, &alive, 2000, &mut journal).unwrap();
            for w in [0, 2, 3] {
                report(&mut s, w, &[], 2100);
                s.beat(WorkerId(w), 2150);
            }
            assert!(s.being_deleted("f", &alive).is_some(), "{how}");
            let at = if how == "failed" {
                s.copy_failed(WorkerId(0), &BlockId::for_file("f", 0).unwrap(), to);
                2200
            } else {
                1000 + COPY_TIMEOUT_MS
            };
            for w in [0, 2, 3] {
                s.beat(WorkerId(w), at);
            }
            assert!(s.being_deleted("f", &alive).is_none(), "{how}");
            // w1, down, is still told when it comes back.
            assert_eq!(report(&mut s, 1, &[info("f", 0, 1)], at).len(), 1, "{how}");
        }
    }

    #[test]
    fn a_factor_is_checked_journaled_and_replayed() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        assert!(matches!(
            s.set_file_replication("f", 2, 3, &mut journal),
            Err(MasterError::UnknownFile { .. })
        ));
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)]);
        let e = s.set_file_replication("f", 4, 3, &mut journal).unwrap_err();
        assert!(e.to_string().contains("1..=3"), "{e}");
        s.set_file_replication("f", 2, 3, &mut journal).unwrap();
        assert_eq!(journal.take().len(), 1);
        assert_eq!(
            s.file_info("f", |w| w.to_string()).unwrap().replication,
            Some(2)
        );
        // Replayed after a deletion of the same name: the deletion's
        // pending replicas are forgotten, the factor holds.
        let mut r = Storage::default();
        r.restore_deleted("f".into(), 1, 2, None);
        assert_eq!(
            r.apply_block_report(WorkerId(1), &[info("f", 0, 1)])
                .0
                .len(),
            1
        );
        r.restore_replication("f".into(), 2);
        assert!(r
            .apply_block_report(WorkerId(1), &[info("f", 0, 1)])
            .0
            .is_empty());
        assert_eq!(
            r.file_info("f", |w| w.to_string()).unwrap().replication,
            Some(2)
        );
    }

    #[test]
    fn a_copy_its_source_reports_failed_is_ordered_again_at_once() {
        let (mut s, mut journal, o) = copying(20);
        let h = holders([true, false, true, true]);
        assert_eq!(o.copies.len(), 1, "{o:?}");
        assert!(s.plan_replication(30, &h, &mut journal).copies.is_empty());
        // Another source's failure, or this source's to another target, is
        // not this copy's.
        let b = BlockId::for_file("f", 0).unwrap();
        let (to, other) = if o.copies[0].1.to == "w2" {
            (2, 3)
        } else {
            (3, 2)
        };
        s.copy_failed(WorkerId(2), &b, WorkerId(to));
        s.copy_failed(WorkerId(0), &b, WorkerId(other));
        assert!(s.plan_replication(40, &h, &mut journal).copies.is_empty());
        // Its source says it failed: ordered again, long before the timeout.
        s.copy_failed(WorkerId(0), &b, WorkerId(to));
        assert_eq!(s.plan_replication(50, &h, &mut journal).copies.len(), 1);
        assert_eq!(s.blocks_copied(), 2);
    }

    #[test]
    fn lost_replicas_are_copied_back_and_extra_ones_trimmed() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)]);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)]);
        s.set_file_replication("f", 2, 4, &mut journal).unwrap();
        // Both holders alive: nothing to do.
        let o = s.plan_replication(10, &holders([true; 4]), &mut journal);
        assert!(o.copies.is_empty() && o.drops.is_empty());
        // w1 lost: one copy from w0 to a data worker that does not hold it.
        s.worker_lost(WorkerId(1));
        let h = holders([true, false, true, true]);
        let o = s.plan_replication(20, &h, &mut journal);
        assert_eq!(o.copies.len(), 1, "{o:?}");
        let (from, order) = &o.copies[0];
        assert_eq!(from.0, 0);
        assert!(order.to == "w2" || order.to == "w3", "{order:?}");
        assert_eq!(s.blocks_copied(), 1);
        // In flight: not ordered twice.
        assert!(s.plan_replication(30, &h, &mut journal).copies.is_empty());
        // The copy lands and w1 comes back: three replicas, one trimmed.
        let to = if order.to == "w2" { 2 } else { 3 };
        s.apply_block_report(WorkerId(to), &[info("f", 0, 1)]);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)]);
        let o = s.plan_replication(40, &holders([true; 4]), &mut journal);
        assert!(o.copies.is_empty(), "{o:?}");
        assert_eq!(o.drops.len(), 1, "{o:?}");
        // Trimming it already: not twice.
        let o = s.plan_replication(50, &holders([true; 4]), &mut journal);
        assert!(o.drops.is_empty(), "{o:?}");
    }

    /// A check looks at the blocks that changed since the last, those it
    /// left off their factor and every block of a file whose factor
    /// changed; every block once the workers changed. Nothing is missed:
    /// a worker's liveness alone, a factor, a copy that timed out are
    /// planned at once.
    #[test]
    fn a_check_looks_at_the_blocks_a_change_touched_and_misses_none() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        let f: Vec<BlockInfo> = (0..10).map(|i| info("f", i, 10)).collect();
        s.apply_block_report(WorkerId(0), &f);
        s.apply_block_report(WorkerId(1), &f);
        s.set_file_replication("f", 2, 4, &mut journal).unwrap();
        let all = holders([true; 4]);
        let check = |s: &mut Storage, now, h: &[Holder]| {
            let before = s.blocks_checked;
            let o = s.plan_replication(now, h, &mut Journal::default());
            (o, s.blocks_checked - before)
        };
        let (o, n) = check(&mut s, 10, &all);
        assert!(o.copies.is_empty() && o.drops.is_empty());
        assert_eq!(n, 10, "the first plan looks at every block");
        assert_eq!(check(&mut s, 20, &all).1, 0, "nothing changed");
        // w2 reports a replica of block 3: that block alone, now trimmed.
        s.apply_block_report(WorkerId(2), &[info("f", 3, 10)]);
        let (o, n) = check(&mut s, 30, &all);
        assert_eq!((n, o.drops.len()), (1, 1), "{o:?}");
        s.trims.clear();
        s.apply_block_report(WorkerId(2), &[]);
        assert_eq!(check(&mut s, 40, &all).1, 1);
        assert_eq!(check(&mut s, 50, &all).1, 0);
        // w1 silent (the catalog not told yet): every block; w0, the one
        // source left, sends two copies at a time.
        let h = holders([true, false, true, true]);
        let (o, n) = check(&mut s, 60, &h);
        assert_eq!((n, o.copies.len()), (10, 2));
        // The blocks left under their factor are looked at again.
        let (o, n) = check(&mut s, 70, &h);
        assert_eq!((n, o.copies.len()), (10, 0));
        // The copies never land: ordered again once they timed out.
        let later = 60 + COPY_TIMEOUT_MS;
        assert_eq!(check(&mut s, later, &h).0.copies.len(), 2);
        // All back and a factor of 3: every block of the file, copied.
        s.copies.clear();
        assert_eq!(check(&mut s, later + 10, &all).1, 10);
        assert_eq!(check(&mut s, later + 20, &all).1, 0);
        s.set_file_replication("f", 3, 4, &mut journal).unwrap();
        let (o, n) = check(&mut s, later + 30, &all);
        assert_eq!((n, o.copies.len()), (10, 4), "{o:?}");
    }
}
