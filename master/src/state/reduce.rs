//! The reduce phase: reduce tasks are created when a job's last map is
//! done (sort: split keys from the maps' samples) and announced to the view;
//! the reduce placer (`sched::reduce`, by `cluster.reduce_placement`) picks
//! the worker, before any map is offered its free slots.

use super::jobs::{LostRef, TaskStatus};
use super::Master;
use common::wire::{
    JobState, KeyRange, Launch, LaunchTask, OutputTarget, ReduceLaunch, ShuffleInput,
};
use common::{AttemptId, JobId, TaskRef, WorkerId};
use sched::reduce::targets::{output_targets, Load};
use sched::Millis;

impl Master {
    /// Starts an attempt of reduce `idx` of job `jid` on `worker`: its next
    /// attempt, or a `backup` of the one that runs (speculation).
    pub(super) fn start_reduce(
        &mut self,
        now: Millis,
        jid: JobId,
        idx: u32,
        worker: WorkerId,
        backup: bool,
    ) -> Launch {
        // Output replicas go to live workers that hold data (run maps),
        // plus the reducer itself.
        let alive: Vec<WorkerId> = self
            .workers
            .ids()
            .filter(|&w| {
                self.workers.alive(w)
                    && (w == worker
                        || (self.workers.settings(w).role.holds_data() && !self.workers.full(w)))
            })
            .collect();
        let replication = self.output_factor(&self.jobs.job(jid).spec) as usize;
        // Output replicas each worker is receiving from running reduces:
        // a target takes the whole block through its receive link, so the
        // least loaded go first (HDFS's considerLoad avoids busy datanodes
        // the same way).
        let mut incoming = vec![0u32; self.workers.len()];
        let mut reducing = vec![false; self.workers.len()];
        for j in self.jobs.all().filter(|j| j.state == JobState::Running) {
            for t in j.reduce_tasks() {
                if let TaskStatus::Running(_) = &t.status {
                    for ra in t.attempts() {
                        reducing[ra.worker.0 as usize] = true;
                    }
                    for w in &t.out_targets {
                        incoming[w.0 as usize] += 1;
                    }
                }
            }
        }
        let t = TaskRef {
            job: jid,
            index: idx,
        };
        let r = self.jobs.task(t).reduce.expect("a reduce task");
        let shift = (jid.0 as usize + r as usize) % alive.len().max(1);
        // Slow nodes of the job (a backup overtook a map there) come last,
        // as HDFS's placement excludes slow datanodes
        // (`dfs.namenode.block-placement-policy.exclude-slow-nodes.enabled`).
        let mut slow: Vec<bool> = (0..self.workers.len())
            .map(|w| self.placement.slow_for(jid, WorkerId(w as u32)))
            .collect();
        if backup {
            // A backup's replicas go elsewhere than the attempt it backs up
            // (slow, most likely) when they can.
            for ra in self.jobs.task(t).attempts() {
                slow[ra.worker.0 as usize] = true;
            }
        }
        let others = output_targets(
            &alive,
            worker,
            replication.saturating_sub(1),
            &Load {
                slow: &slow,
                incoming: &incoming,
                reducing: &reducing,
            },
            shift,
        );
        let attempt = self
            .jobs
            .start_reduce(t, worker, now, others.clone(), backup);
        self.journal_launch(AttemptId { task: t, attempt }, worker, worker);
        let job = self.jobs.job(jid);
        let inputs = job
            .map_out
            .iter()
            .enumerate()
            .filter_map(|(m, o)| {
                o.map(|o| ShuffleInput {
                    map: m as u32,
                    attempt: o.attempt,
                    worker: o.worker,
                    addr: self.workers.addr(o.worker).to_owned(),
                })
            })
            .collect();
        let range = job.spec.workload.range_partitioned().then(|| KeyRange {
            lo: (r > 0)
                .then(|| job.splits.get(r as usize - 1).cloned())
                .flatten(),
            hi: job.splits.get(r as usize).cloned(),
        });
        let output = job
            .output
            .clone()
            .expect("jobs with reduces name an output");
        Launch {
            attempt: AttemptId { task: t, attempt },
            workload: job.spec.workload,
            task: LaunchTask::Reduce(ReduceLaunch {
                partition: r,
                inputs,
                range,
                output: OutputTarget {
                    block: self.jobs.task(t).block.clone(),
                    file: output,
                    index: r,
                    file_blocks: job.reduces,
                    replicas: others
                        .iter()
                        .map(|&w| self.workers.addr(w).to_owned())
                        .collect(),
                    generation: common::wire::output_generation(t.job, attempt),
                },
            }),
            ratios: job.spec.launch_ratios(),
        }
    }

    /// All maps are done: create the reduce tasks (sort: split keys first).
    pub(super) fn create_reduces(&mut self, id: JobId) {
        let replication = self.output_factor(&self.jobs.job(id).spec);
        let (indices, output) = self.jobs.create_reduces(id);
        tracing::info!(job = %id, reduces = indices.len(), "maps done; reduces created");
        self.release_reduces(id, indices);
        // Kept at the job's factor once written.
        self.storage.output_writing(output, replication);
    }

    /// The job's maps are all done: its reduces `indices` (and those already
    /// waiting) may start, with their load estimated from the map output.
    pub(super) fn release_reduces(&mut self, id: JobId, indices: Vec<u32>) {
        let job = self.jobs.job(id);
        let output_on = job.output_on();
        let total: u64 = output_on.values().sum();
        let load_each = total / u64::from(job.reduces.max(1));
        self.placement
            .reduces_added(id, indices, load_each, output_on);
    }

    /// Map outputs a job's reduces can no longer fetch, as (map, worker,
    /// attempt): each map whose current output is that one runs again (its
    /// counters are taken back); outputs already replaced are ignored (a
    /// late report, or a worker back from the dead). Returns how many maps
    /// run again. For a job a restarted master holds, the maps wait,
    /// pending, until it goes on (`requeue` leaves them to `resume`).
    pub(super) fn rerun_maps(
        &mut self,
        jid: JobId,
        lost: impl IntoIterator<Item = LostRef>,
    ) -> usize {
        let lost: Vec<LostRef> = lost.into_iter().collect();
        let again = self.jobs.lose_outputs(jid, lost.iter().copied());
        let given_up: Vec<LostRef> = lost
            .into_iter()
            .filter(|(m, _, _)| again.contains(m))
            .collect();
        self.journal_outputs_lost(jid, &given_up);
        if !again.is_empty() {
            // No reduce starts until the outputs are back.
            self.placement.reduces_held(jid);
        }
        for &m in &again {
            self.requeue(TaskRef { job: jid, index: m });
        }
        again.len()
    }

    /// Worker `id` is gone (lost, or restarted with a new process): the map
    /// outputs it kept for jobs whose reduces still need them run again.
    pub(super) fn rerun_outputs_on(&mut self, id: WorkerId) {
        for (jid, lost) in self.jobs.outputs_needed_on(id) {
            let n = self.rerun_maps(jid, lost);
            tracing::warn!(job = %jid, worker = %self.worker_name(id), maps = n, "map output lost with its worker; maps run again");
        }
    }
}
