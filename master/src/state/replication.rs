//! Re-replication, as HDFS's NameNode does it: a block with fewer live
//! replicas than `cluster.replication` (its holder was lost, or a replica
//! was found damaged and deleted) is copied from a live holder to another
//! live data worker; a block with more (a lost worker came back) loses the
//! replica of its busiest holder. At most [`MAX_COPIES_PER_WORKER`] copies
//! are in flight per worker as source and as target, so a recovering
//! cluster still runs its jobs.

use super::journal::{Journal, JournalEntry};
use super::storage::{CopyInFlight, Holder, Kept, LastPlan, PlanInputs, Storage, StorageOrders};
use crate::catalog::BlockEntry;
use common::wire::CopyOrder;
use common::{BlockId, WorkerId};
use sched::Millis;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Copies one worker sends, and receives, at a time.
pub const MAX_COPIES_PER_WORKER: usize = 2;
pub use super::storage::COPY_TIMEOUT_MS;

/// A job's output is kept at its factor from this long after the job
/// succeeded: its replicas' block reports arrive first, so the master does
/// not take a report still in flight for a loss.
pub const OUTPUT_GRACE_MS: Millis = 1000;

impl Storage {
    /// Plans copies of under-replicated blocks and trims of over-replicated
    /// ones; the orders leave with each worker's next heartbeat reply.
    pub fn plan_replication(
        &mut self,
        now: Millis,
        holders: &[Holder],
        journal: &mut Journal,
    ) -> StorageOrders {
        let alive = |_: &Storage, w: WorkerId| holders[w.0 as usize].alive;
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

        let data: Vec<WorkerId> = (0..holders.len() as u32)
            .map(WorkerId)
            .filter(|w| {
                let h = &holders[w.0 as usize];
                h.alive && h.takes_data
            })
            .collect();
        for (file, (factor, kept)) in self.file_replication.iter_mut() {
            if *kept == Kept::Written {
                *kept = Kept::From(now + OUTPUT_GRACE_MS);
                journal.push(JournalEntry::Replication {
                    file: file.clone(),
                    replication: *factor,
                });
            }
        }
        let inputs = PlanInputs::of(self, holders, now);
        let scope = self.plan_scope(&inputs);
        let mut orders: Vec<(WorkerId, CopyOrder, CopyInFlight)> = Vec::new();
        let mut drops: Vec<(WorkerId, BlockId)> = Vec::new();
        let mut again = HashSet::new();
        let mut checked = 0;
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
            // Every block, or those a change may have moved off the factor.
            let looked: Vec<u32> = match scope.as_ref().map(|s| s.get(name)) {
                None | Some(Some(None)) => (0..f.blocks.len() as u32).collect(),
                Some(Some(Some(indices))) => indices.iter().copied().collect(),
                Some(None) => continue,
            };
            for i in looked {
                let Some(b) = f.blocks.get(i as usize).and_then(Option::as_ref) else {
                    continue;
                };
                checked += 1;
                let live: Vec<WorkerId> = b
                    .replicas
                    .iter()
                    .copied()
                    .filter(|w| alive(self, *w))
                    .collect();
                if !live.is_empty() && live.len() != target {
                    again.insert((name.clone(), i));
                }
                self.plan_block(
                    b,
                    &live,
                    target,
                    &data,
                    holders,
                    now,
                    (&mut orders, &mut drops),
                );
            }
        }
        self.blocks_checked += checked;
        let mut out = StorageOrders::default();
        for (from, order, c) in orders {
            tracing::info!(block = %c.block, from = %holders[c.from.0 as usize].name, to = %holders[c.to.0 as usize].name, "re-replicating");
            out.copies.push((from, order));
            self.copies.push(c);
            self.blocks_copied += 1;
        }
        for (w, b) in drops {
            tracing::info!(block = %b, worker = %holders[w.0 as usize].name, "trimming a replica above the replication factor");
            out.drops.push((w, b.clone()));
            self.trims.push((b, w));
        }
        self.last_plan = Some(LastPlan { inputs, again });
        out
    }

    /// Orders the copies or the trim block `b` needs to be at `target`
    /// live replicas (`live`), given the copies in flight and those ordered
    /// so far in this plan.
    #[allow(clippy::too_many_arguments)]
    fn plan_block(
        &self,
        b: &BlockEntry,
        live: &[WorkerId],
        target: usize,
        data: &[WorkerId],
        holders: &[Holder],
        now: Millis,
        (orders, drops): Planned,
    ) {
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
                    .filter(|w| !holders[w.0 as usize].full)
                    .min_by_key(|w| (inc(*w), holders[w.0 as usize].blocks, w.0))
                else {
                    break;
                };
                let order = CopyOrder {
                    block: b.id.clone(),
                    to: holders[to.0 as usize].addr.to_owned(),
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
                    .max_by_key(|w| (holders[w.0 as usize].blocks, w.0))
                    .expect("more holders than the target");
                drops.push((w, b.id.clone()));
            }
        }
    }

    /// The blocks this plan looks at (`None`: every block): those whose
    /// replicas changed since the last plan, those it left off their
    /// factor (a copy or trim in flight, none possible), and every block of
    /// a file whose factor or grace changed; every block after a change of
    /// the workers (one lost, joined, full) or the first plan.
    fn plan_scope(&mut self, inputs: &PlanInputs) -> Option<Scope> {
        let changed = self.catalog.take_changed();
        let last = self.last_plan.as_ref()?;
        if last.inputs.holders != inputs.holders {
            return None;
        }
        let mut scope = Scope::new();
        for (name, class) in &inputs.files {
            if last.inputs.files.get(name) != Some(class) {
                scope.insert(name.clone(), None);
            }
        }
        for (file, i) in changed.into_iter().chain(last.again.iter().cloned()) {
            if let Some(indices) = scope.entry(file).or_insert_with(|| Some(BTreeSet::new())) {
                indices.insert(i);
            }
        }
        Some(scope)
    }
}

/// Blocks to look at, by file: `None` for all of the file's.
type Scope = BTreeMap<String, Option<BTreeSet<u32>>>;

/// A plan's orders so far: copies (source, order, in flight) and trims.
type Planned<'a> = (
    &'a mut Vec<(WorkerId, CopyOrder, CopyInFlight)>,
    &'a mut Vec<(WorkerId, BlockId)>,
);

impl PlanInputs {
    fn of(s: &Storage, holders: &[Holder], now: Millis) -> Self {
        use std::hash::{Hash, Hasher};
        let files = s
            .file_replication
            .iter()
            .map(|(name, (factor, kept))| {
                let kept = match kept {
                    Kept::Writing => 0u8,
                    Kept::Written => 1,
                    Kept::From(since) if *since > now => 2,
                    Kept::From(_) => 3,
                };
                (name.clone(), (*factor, kept))
            })
            .collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for x in holders {
            (x.alive, x.takes_data, x.full).hash(&mut h);
        }
        PlanInputs {
            files,
            holders: h.finish(),
        }
    }
}
