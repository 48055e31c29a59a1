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
use common::wire::{BlockInfo, CopyOrder, FileDeleted, FileInfo};
use common::{BlockId, WorkerId};
use sched::Millis;
use std::collections::{BTreeMap, HashMap};

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
/// replicas to delete.
#[derive(Debug, Default)]
pub(super) struct StorageOrders {
    pub copies: Vec<(WorkerId, CopyOrder)>,
    pub drops: Vec<(WorkerId, BlockId)>,
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
    /// Deleted files whose old blocks may still land on a worker that does
    /// not list them now (a copy ordered before the delete, a writer cut off
    /// from the master), until when: their replicas are kept out until then
    /// even where a report did not list them.
    guards: HashMap<String, Millis>,
    /// Block copies ordered and not yet seen in the target's block report.
    pub(super) copies: Vec<CopyInFlight>,
    /// Replicas ordered deleted and not yet gone from the holder's report.
    pub(super) trims: Vec<(BlockId, WorkerId)>,
    /// Re-replication copies ordered since the master started.
    pub(super) blocks_copied: u64,
}

/// A replica of a deleted file a worker may still hold.
#[derive(Clone, Debug)]
struct Pending {
    file: String,
    /// Its last report listed it (or it held it when the file was
    /// deleted, or the master restarted since): gone only once a report
    /// no longer lists it. Else it is kept only while its file is guarded.
    held: bool,
}

/// How long after a delete the deleted file's blocks are kept out of the
/// catalog wherever they land: a copy ordered before it is given up after
/// as long ([`super::replication::COPY_TIMEOUT_MS`]).
pub const DELETE_GUARD_MS: Millis = super::replication::COPY_TIMEOUT_MS;

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
        self.guards.remove(&file);
        self.file_replication
            .insert(file, (replication, Kept::From(0)));
    }

    /// Replays a journaled deletion: every worker may still hold the
    /// file's `blocks` and is told to drop them when it reports them (its
    /// registration's report says which it holds); a deletion newer than
    /// [`DELETE_GUARD_MS`] is guarded until `guard_until`.
    pub fn restore_deleted(
        &mut self,
        file: String,
        blocks: u32,
        workers: usize,
        guard_until: Option<Millis>,
    ) {
        self.file_replication.remove(&file);
        for w in 0..workers {
            let pending = self.deleting.entry(WorkerId(w as u32)).or_default();
            for i in 0..blocks.min(common::wire::MAX_FILE_BLOCKS) {
                if let Ok(id) = BlockId::for_file(&file, i) {
                    let p = Pending {
                        file: file.clone(),
                        held: true,
                    };
                    pending.insert(id, p);
                }
            }
        }
        match guard_until {
            Some(until) => self.guards.insert(file, until),
            None => self.guards.remove(&file),
        };
    }

    /// The copy of `block` that `from` was ordered to send failed: it
    /// leaves the copies in flight, so the next plan orders it again (from
    /// any live holder) instead of after the copy timeout.
    pub fn copy_failed(&mut self, from: WorkerId, block: &BlockId) {
        let before = self.copies.len();
        self.copies
            .retain(|c| !(c.from == from && c.block == *block));
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
    /// it no longer lists are gone, unless their file is still guarded).
    pub fn apply_block_report(
        &mut self,
        id: WorkerId,
        blocks: &[BlockInfo],
        now: Millis,
    ) -> Vec<BlockId> {
        let Some(pending) = self.deleting.get_mut(&id) else {
            self.catalog.apply_report(id, blocks);
            return Vec::new();
        };
        let listed: std::collections::HashSet<&BlockId> = blocks.iter().map(|b| &b.id).collect();
        let guards = &self.guards;
        pending.retain(|b, p| {
            p.held = listed.contains(b);
            p.held || guards.get(&p.file).is_some_and(|until| now < *until)
        });
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
        if pending.is_empty() {
            self.deleting.remove(&id);
        }
        self.catalog.apply_report(id, &kept);
        again
    }

    /// Ends the guards that ran out by `now`: their files' replicas that no
    /// report listed since are forgotten (a worker that never held one
    /// need not report to free the name).
    pub fn end_guards(&mut self, now: Millis) {
        let before = self.guards.len();
        self.guards.retain(|_, until| now < *until);
        if self.guards.len() == before {
            return;
        }
        let guards = &self.guards;
        for pending in self.deleting.values_mut() {
            pending.retain(|_, p| p.held || guards.contains_key(&p.file));
        }
        self.deleting.retain(|_, pending| !pending.is_empty());
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
        now: Millis,
        name: impl Fn(WorkerId) -> String,
    ) -> Result<FileInfo, MasterError> {
        if let Some(info) = self.file_info(file, name) {
            return Ok(info);
        }
        Err(self
            .being_deleted(file, alive, now)
            .unwrap_or_else(|| self.unknown_file(file)))
    }

    /// Why a new file named `name` must wait, if it must: replicas of a
    /// deleted file of that name that live workers still hold, or the
    /// delete's guard (its blocks, of the same ids, would be dropped with
    /// them).
    pub fn being_deleted(
        &self,
        name: &str,
        alive: &dyn Fn(WorkerId) -> bool,
        now: Millis,
    ) -> Option<MasterError> {
        let pending = self
            .deleting
            .iter()
            .filter(|(w, _)| alive(**w))
            .map(|(_, blocks)| blocks.values().filter(|p| p.held && p.file == name).count())
            .sum();
        let guard_s = self
            .guards
            .get(name)
            .map_or(0, |until| until.saturating_sub(now).div_ceil(1000));
        (pending > 0 || guard_s > 0).then(|| MasterError::FileBeingDeleted {
            name: name.to_owned(),
            pending,
            guard_s,
        })
    }

    /// Deletes `name` (the caller checked no job uses it) at `now`: the
    /// file leaves the catalog at once and every holder is told to delete
    /// its replicas (also a holder that is down now, when it comes back);
    /// until a holder's block report no longer lists them they are kept out
    /// of the catalog, and for [`DELETE_GUARD_MS`] they are kept out
    /// wherever they land, so a deleted file never comes back, even as
    /// blocks of a new file of the same name.
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
                .being_deleted(name, alive, now)
                .unwrap_or_else(|| self.unknown_file(name)));
        };
        let mut drops: Vec<(WorkerId, BlockId)> = Vec::new();
        for b in entry.blocks.iter().flatten() {
            for w in &b.replicas {
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
        // Every worker, not only the holders: a worker down now may hold
        // replicas the catalog forgot, and a copy ordered before the delete,
        // or a writer cut off from the master, may land on a worker that
        // held none (the fault campaigns of 2026-11-29 saw deleted outputs
        // come back so), after that worker's next report: the guard.
        for w in (0..workers as u32).map(WorkerId) {
            let pending = self.deleting.entry(w).or_default();
            for id in &ids {
                let held = drops.iter().any(|(h, b)| *h == w && b == id);
                let p = Pending {
                    file: name.to_owned(),
                    held,
                };
                pending.insert(id.clone(), p);
            }
        }
        self.guards.insert(name.to_owned(), now + DELETE_GUARD_MS);
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
                copies: Vec::new(),
                drops,
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

    #[test]
    fn a_deleted_file_stays_out_of_the_catalog_until_its_holders_drop_it() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], 0);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0);
        // w2 is down: it may hold a replica nobody knows of.
        let alive = |w: WorkerId| w.0 != 2;
        let t0 = 1000;
        let (deleted, orders) = s.delete_file("f", 4, &alive, t0, &mut journal).unwrap();
        assert_eq!((deleted.blocks, deleted.replicas), (1, 2));
        let mut drops: Vec<u32> = orders.drops.iter().map(|(w, _)| w.0).collect();
        drops.sort();
        assert_eq!(drops, [0, 1]);
        assert!(matches!(
            journal.take()[..],
            [JournalEntry::Deleted { blocks: 1, .. }]
        ));
        // w0 still lists it: kept out, and told again.
        let again = s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], t0 + 10);
        assert_eq!(again, [BlockId::for_file("f", 0).unwrap()]);
        assert!(s.catalog().file("f").is_none());
        assert!(matches!(
            s.file("f", &alive, t0 + 10, |w| w.to_string()),
            Err(MasterError::FileBeingDeleted {
                pending: 2,
                guard_s: 120,
                ..
            })
        ));
        // w2 comes back listing it: told too.
        assert_eq!(
            s.apply_block_report(WorkerId(2), &[info("f", 0, 1)], t0 + 20)
                .len(),
            1
        );
        // Every holder dropped it; w3 never held it and reported nothing.
        for w in 0..3 {
            assert!(s.apply_block_report(WorkerId(w), &[], t0 + 30).is_empty());
        }
        // Within the guard, a replica landing on a worker that reported
        // without it (a copy ordered before the delete) stays out, and the
        // worker is told to drop it.
        let landed = s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], t0 + 5000);
        assert_eq!(landed.len(), 1, "the landed replica is dropped");
        assert!(s.catalog().file("f").is_none());
        assert!(s.apply_block_report(WorkerId(1), &[], t0 + 6000).is_empty());
        assert!(matches!(
            s.file("f", &|_| true, t0 + 6000, |w| w.to_string()),
            Err(MasterError::FileBeingDeleted {
                pending: 0,
                guard_s: 114,
                ..
            })
        ));
        // Once the guard ends, the name is free, though w3 never reported.
        s.end_guards(t0 + DELETE_GUARD_MS);
        assert!(s.deleting.is_empty(), "{:?}", s.deleting);
        assert!(matches!(
            s.file("f", &|_| true, t0 + DELETE_GUARD_MS, |w| w.to_string()),
            Err(MasterError::UnknownFile { .. })
        ));
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], t0 + DELETE_GUARD_MS);
        assert!(s.catalog().file("f").is_some());
    }

    #[test]
    fn a_worker_still_holding_a_deleted_replica_keeps_its_name_taken_past_the_guard() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], 0);
        s.delete_file("f", 2, &|_| true, 0, &mut journal).unwrap();
        s.end_guards(DELETE_GUARD_MS);
        // w0 has not reported since: its replica is still there.
        assert!(matches!(
            s.being_deleted("f", &|_| true, DELETE_GUARD_MS),
            Some(MasterError::FileBeingDeleted {
                pending: 1,
                guard_s: 0,
                ..
            })
        ));
        assert_eq!(
            s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], DELETE_GUARD_MS)
                .len(),
            1
        );
        assert!(s.catalog().file("f").is_none());
        assert!(s
            .apply_block_report(WorkerId(0), &[], DELETE_GUARD_MS)
            .is_empty());
        assert!(s.being_deleted("f", &|_| true, DELETE_GUARD_MS).is_none());
    }

    #[test]
    fn a_factor_is_checked_journaled_and_replayed() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        assert!(matches!(
            s.set_file_replication("f", 2, 3, &mut journal),
            Err(MasterError::UnknownFile { .. })
        ));
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], 0);
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
            r.apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0)
                .len(),
            1
        );
        r.restore_replication("f".into(), 2);
        assert!(r
            .apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0)
            .is_empty());
        assert_eq!(
            r.file_info("f", |w| w.to_string()).unwrap().replication,
            Some(2)
        );
    }

    #[test]
    fn a_copy_its_source_reports_failed_is_ordered_again_at_once() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], 0);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0);
        s.set_file_replication("f", 2, 4, &mut journal).unwrap();
        s.worker_lost(WorkerId(1));
        let h = holders([true, false, true, true]);
        let o = s.plan_replication(20, &h, &mut journal);
        assert_eq!(o.copies.len(), 1, "{o:?}");
        assert!(s.plan_replication(30, &h, &mut journal).copies.is_empty());
        // Another worker's failure is not this copy's.
        let b = BlockId::for_file("f", 0).unwrap();
        s.copy_failed(WorkerId(2), &b);
        assert!(s.plan_replication(40, &h, &mut journal).copies.is_empty());
        // Its source says it failed: ordered again, long before the timeout.
        s.copy_failed(WorkerId(0), &b);
        assert_eq!(s.plan_replication(50, &h, &mut journal).copies.len(), 1);
        assert_eq!(s.blocks_copied(), 2);
    }

    #[test]
    fn lost_replicas_are_copied_back_and_extra_ones_trimmed() {
        let mut s = Storage::default();
        let mut journal = Journal::default();
        s.apply_block_report(WorkerId(0), &[info("f", 0, 1)], 0);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0);
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
        s.apply_block_report(WorkerId(to), &[info("f", 0, 1)], 0);
        s.apply_block_report(WorkerId(1), &[info("f", 0, 1)], 0);
        let o = s.plan_replication(40, &holders([true; 4]), &mut journal);
        assert!(o.copies.is_empty(), "{o:?}");
        assert_eq!(o.drops.len(), 1, "{o:?}");
        // Trimming it already: not twice.
        let o = s.plan_replication(50, &holders([true; 4]), &mut journal);
        assert!(o.drops.is_empty(), "{o:?}");
    }
}
