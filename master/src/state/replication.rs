//! Re-replication, as HDFS's NameNode does it: a block with fewer live
//! replicas than `cluster.replication` (its holder was lost, or a replica
//! was found damaged and deleted) is copied from a live holder to another
//! live data worker; a block with more (a lost worker came back) loses the
//! replica of its busiest holder. At most [`MAX_COPIES_PER_WORKER`] copies
//! are in flight per worker as source and as target, so a recovering
//! cluster still runs its jobs.

use super::{Master, MasterError};
use common::wire::CopyOrder;
use common::{BlockId, WorkerId};
use sched::Millis;

/// Copies one worker sends, and receives, at a time.
pub const MAX_COPIES_PER_WORKER: usize = 2;
/// A copy not in the target's block report by then is ordered again.
pub const COPY_TIMEOUT_MS: Millis = 120_000;

/// A job's output is kept at its factor from this long after the job
/// succeeded: its replicas' block reports arrive first, so the master does
/// not take a report still in flight for a loss.
pub const OUTPUT_GRACE_MS: Millis = 1000;

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
    block: BlockId,
    from: WorkerId,
    to: WorkerId,
    started: Millis,
}

impl Master {
    /// Keeps every block of `file` at `replication` replicas from now on.
    pub fn set_file_replication(
        &mut self,
        file: &str,
        replication: u32,
    ) -> Result<(), MasterError> {
        if self.catalog.file(file).is_none() {
            return Err(self.unknown_file(file));
        }
        let data = self
            .settings
            .workers
            .iter()
            .filter(|w| w.role.holds_data())
            .count() as u32;
        if replication == 0 || replication > data {
            return Err(MasterError::BadRequest(format!(
                "replication must be 1..={data} (the workers that hold data) (got {replication})"
            )));
        }
        self.file_replication
            .insert(file.to_owned(), (replication, Kept::From(0)));
        self.journal_out
            .push(super::journal::JournalEntry::Replication {
                file: file.to_owned(),
                replication,
            });
        Ok(())
    }

    /// Workers that hold data: alive, registered, and running maps.
    fn data_workers(&self) -> Vec<WorkerId> {
        (0..self.workers.len())
            .filter(|&i| {
                let w = &self.workers[i];
                w.alive && w.registered && self.settings.workers[i].role.holds_data()
            })
            .map(|i| WorkerId(i as u32))
            .collect()
    }

    /// Plans copies of under-replicated blocks and trims of over-replicated
    /// ones; the orders leave with each worker's next heartbeat reply.
    pub(super) fn plan_replication(&mut self, now: Millis) {
        let alive = |m: &Master, w: WorkerId| m.workers[w.0 as usize].alive;
        // Copies that landed, timed out, or lost an end.
        let mut copies = std::mem::take(&mut self.copies);
        copies.retain(|c| {
            let landed = self.holds(&c.block, c.to);
            !landed
                && now.saturating_sub(c.started) < COPY_TIMEOUT_MS
                && alive(self, c.from)
                && alive(self, c.to)
        });
        self.copies = copies;
        let mut trims = std::mem::take(&mut self.trims);
        trims.retain(|(b, w)| alive(self, *w) && self.holds(b, *w));
        self.trims = trims;

        let data = self.data_workers();
        for (file, (factor, kept)) in self.file_replication.iter_mut() {
            if *kept == Kept::Written {
                *kept = Kept::From(now + OUTPUT_GRACE_MS);
                self.journal_out
                    .push(super::journal::JournalEntry::Replication {
                        file: file.clone(),
                        replication: *factor,
                    });
            }
        }
        let mut orders: Vec<(WorkerId, CopyOrder, CopyInFlight)> = Vec::new();
        let mut drops: Vec<(WorkerId, BlockId)> = Vec::new();
        for (name, f) in self.catalog.files() {
            // Only files whose factor was declared: a file still loading
            // keeps the placement its loader chose.
            let Some(&(factor, Kept::From(since))) = self.file_replication.get(name) else {
                continue;
            };
            if since > now {
                continue;
            }
            let target = (factor as usize).min(data.len());
            if target == 0 {
                continue;
            }
            for b in f.blocks.iter().flatten() {
                let live: Vec<WorkerId> = b
                    .replicas
                    .iter()
                    .copied()
                    .filter(|w| alive(self, *w))
                    .collect();
                let coming = self.copies.iter().filter(|c| c.block == b.id).count()
                    + orders.iter().filter(|o| o.2.block == b.id).count();
                if !live.is_empty() && live.len() + coming < target {
                    for _ in 0..target - live.len() - coming {
                        let out = |w: WorkerId| {
                            self.copies.iter().filter(|c| c.from == w).count()
                                + orders.iter().filter(|o| o.2.from == w).count()
                        };
                        let inc = |w: WorkerId| {
                            self.copies.iter().filter(|c| c.to == w).count()
                                + orders.iter().filter(|o| o.2.to == w).count()
                        };
                        let Some(from) = live
                            .iter()
                            .copied()
                            .filter(|w| out(*w) < MAX_COPIES_PER_WORKER)
                            .min_by_key(|w| (out(*w), w.0))
                        else {
                            break;
                        };
                        let taken = |w: WorkerId| {
                            live.contains(&w)
                                || self.copies.iter().any(|c| c.block == b.id && c.to == w)
                                || orders.iter().any(|o| o.2.block == b.id && o.2.to == w)
                        };
                        let Some(to) = data
                            .iter()
                            .copied()
                            .filter(|w| !taken(*w) && inc(*w) < MAX_COPIES_PER_WORKER)
                            // Not onto a disk that just ran out of room.
                            .filter(|w| self.workers[w.0 as usize].full_at.is_none())
                            .min_by_key(|w| (inc(*w), self.workers[w.0 as usize].blocks, w.0))
                        else {
                            break;
                        };
                        let order = CopyOrder {
                            block: b.id.clone(),
                            to: self.workers[to.0 as usize].addr.clone(),
                        };
                        let c = CopyInFlight {
                            block: b.id.clone(),
                            from,
                            to,
                            started: now,
                        };
                        orders.push((from, order, c));
                    }
                } else if live.len() > target && coming == 0 {
                    let trimming = self.trims.iter().filter(|t| t.0 == b.id).count();
                    if live.len() - trimming > target {
                        // The busiest holder gives its replica up.
                        let w = live
                            .iter()
                            .copied()
                            .filter(|w| !self.trims.iter().any(|t| t.0 == b.id && t.1 == *w))
                            .max_by_key(|w| (self.workers[w.0 as usize].blocks, w.0))
                            .expect("more holders than the target");
                        drops.push((w, b.id.clone()));
                    }
                }
            }
        }
        for (from, order, c) in orders {
            tracing::info!(block = %c.block, from = %self.worker_name(c.from), to = %self.worker_name(c.to), "re-replicating");
            self.workers[from.0 as usize].copy_out.push(order);
            self.copies.push(c);
            self.blocks_copied += 1;
        }
        for (w, b) in drops {
            tracing::info!(block = %b, worker = %self.worker_name(w), "trimming a replica above the replication factor");
            self.workers[w.0 as usize].drop_out.push(b.clone());
            self.trims.push((b, w));
        }
    }

    /// Whether `w`'s last block report listed `block`.
    fn holds(&self, block: &BlockId, w: WorkerId) -> bool {
        self.catalog
            .files()
            .flat_map(|(_, f)| f.blocks.iter().flatten())
            .any(|b| b.id == *block && b.replicas.contains(&w))
    }
}
