//! Job submission (checks, one map task per input block, the job's
//! pending tasks in the scheduler's view) and map launches.

use super::jobs::NewJob;
use super::{Master, MasterError, MAX_REDUCES};
use common::wire::{JobSubmit, Launch, LaunchTask, ReplicaAddr, ReplicaSource};
use common::{AttemptId, BlockId, JobId, TaskRef};
use sched::{Assignment, Millis, PendingTask};

impl Master {
    /// Accepts a job: checks it, makes one map task per block of its input
    /// and hands them to the scheduler's view.
    pub fn submit(
        &mut self,
        now: Millis,
        unix_ms: u64,
        spec: JobSubmit,
    ) -> Result<JobId, MasterError> {
        let reduces = check_spec(&spec)?;
        self.check_output_replication(&spec)?;
        let blocks = self.input_blocks(&spec.input)?;
        let id = self.jobs.next_id();
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", spec.workload, id.0));
        let output = self.output_name(&spec, &name)?;
        let pending = blocks
            .iter()
            .enumerate()
            .map(|(i, &(_, len))| PendingTask {
                task: TaskRef {
                    job: id,
                    index: i as u32,
                },
                len,
                replicas: self.live_replicas(&spec.input, i as u32),
            })
            .collect();
        self.placement.job_added(id, now, spec.group(), pending);
        self.set_qos(id, &spec, now);
        self.journal.push(super::journal::JournalEntry::Submitted {
            job: id,
            name: name.clone(),
            scheduler: self.placement.scheduler_name(),
            submit_unix_ms: unix_ms,
            spec: spec.clone(),
            blocks: blocks.clone(),
        });
        tracing::info!(job = %id, %name, workload = %spec.workload, input = %spec.input, tasks = blocks.len(), "job submitted");
        let added = self.jobs.add(NewJob {
            name,
            spec,
            scheduler: self.placement.scheduler_name(),
            submitted: now,
            submit_unix_ms: unix_ms,
            blocks,
            reduces,
            output,
        });
        debug_assert_eq!(added, id);
        Ok(id)
    }

    /// A job's output replication is at most the workers that hold data,
    /// as a file's factor is (`set_file_replication`).
    fn check_output_replication(&self, spec: &JobSubmit) -> Result<(), MasterError> {
        let Some(r) = spec.output_replication else {
            return Ok(());
        };
        let data = self.data_workers();
        if r > data {
            return Err(MasterError::BadRequest(format!(
                "`output_replication` must be 1..={data} (the workers that hold data) (got {r})"
            )));
        }
        Ok(())
    }

    /// The replicas job `spec`'s output is written and kept at.
    pub(super) fn output_factor(&self, spec: &JobSubmit) -> u32 {
        spec.output_replication
            .unwrap_or(self.settings.replication)
            .max(1)
    }

    /// Job `id`'s quality-of-service terms in the view (its pending maps
    /// are there), for a job submitted at `submitted`.
    pub(super) fn set_qos(&mut self, id: JobId, spec: &JobSubmit, submitted: Millis) {
        let input_bytes = self
            .placement
            .view()
            .job(id)
            .map_or(0, |j| j.qos.input_bytes);
        self.placement.job_qos(
            id,
            sched::JobQos {
                deadline: spec
                    .deadline_s
                    .map(|d| submitted + (d * 1000.0).round() as Millis),
                budget: spec.budget,
                input_bytes,
                reduces: spec.reduces.unwrap_or(spec.workload.default_reduces()),
            },
        );
    }

    /// (block, length) of every block of `input`, which must exist and
    /// have a live replica of each block.
    fn input_blocks(&self, input: &str) -> Result<Vec<(BlockId, u64)>, MasterError> {
        let file = self
            .storage
            .catalog()
            .file(input)
            .ok_or_else(|| self.unknown_file(input))?;
        let missing: Vec<u32> = (0..file.blocks.len() as u32)
            .filter(|&i| self.live_replicas(input, i).is_empty())
            .collect();
        if !missing.is_empty() {
            return Err(MasterError::IncompleteFile {
                name: input.to_owned(),
                missing,
            });
        }
        Ok(file
            .blocks
            .iter()
            .map(|b| {
                let b = b.as_ref().expect("checked: every block has a replica");
                (b.id.clone(), b.len)
            })
            .collect())
    }

    /// The output file of a job with reduces (`<name>.out` by default): a
    /// valid name that no file and no running job has.
    fn output_name(&self, spec: &JobSubmit, name: &str) -> Result<Option<String>, MasterError> {
        if !spec.workload.has_reduce() {
            return Ok(None);
        }
        let out = spec.output.clone().unwrap_or_else(|| format!("{name}.out"));
        common::ids::validate_file_name(&out)
            .map_err(|e| MasterError::BadRequest(format!("output file name {out:?}: {e}")))?;
        let taken = self.storage.catalog().file(&out).is_some() || self.jobs.writing(&out);
        if taken {
            return Err(MasterError::BadRequest(format!(
                "output file {out:?} already exists or is being written; pick another `output`"
            )));
        }
        // A file of that name just deleted: its replicas' ids are the new
        // output's, and the orders to drop them would drop the new blocks.
        if let Some(e) = self.storage.being_deleted(&out, &|w| self.is_alive(w)) {
            return Err(e);
        }
        Ok(Some(out))
    }

    pub(super) fn start_attempt(&mut self, now: Millis, a: &Assignment) -> Launch {
        if self.jobs.task(a.task).reduce.is_some() {
            // A reduce's backup (speculation).
            return self.start_reduce(now, a.task.job, a.task.index, a.worker, true);
        }
        // Where else the block is, should the source fail mid-read.
        let alternates: Vec<ReplicaAddr> = self
            .task_replicas(a.task)
            .into_iter()
            .filter(|w| *w != a.source && *w != a.worker)
            .map(|w| ReplicaAddr {
                worker: w,
                addr: self.workers.addr(w).to_owned(),
            })
            .collect();
        let attempt = if a.backup {
            self.jobs.start_backup(a.task, a.worker, a.source, now)
        } else {
            self.jobs.start_map(a.task, a.worker, a.source, now)
        };
        self.journal_launch(
            AttemptId {
                task: a.task,
                attempt,
            },
            a.worker,
            a.source,
        );
        let job = self.jobs.job(a.task.job);
        let task = self.jobs.task(a.task);
        let source = if a.is_local() {
            ReplicaSource::Local
        } else {
            ReplicaSource::Remote {
                worker: a.source,
                addr: self.workers.addr(a.source).to_owned(),
            }
        };
        Launch {
            attempt: AttemptId {
                task: a.task,
                attempt,
            },
            workload: job.spec.workload,
            task: LaunchTask::Map {
                block: task.block.clone(),
                len: task.len,
                source,
                reduces: job.reduces,
                alternates,
                compute_ms: job.spec.compute.map_or(0, |c| c.for_task(a.task.index)),
            },
            ratios: job.spec.launch_ratios(),
        }
    }
}

/// Checks what a submission asks for on its own (group name, reduces,
/// output); returns its number of reduces.
pub(super) fn check_spec(spec: &JobSubmit) -> Result<u32, MasterError> {
    if let Some(g) = &spec.group {
        if g.is_empty()
            || g.len() > 64
            || !g
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(MasterError::BadRequest(format!(
                "group {g:?} must be 1-64 ASCII letters, digits, '-', '_' or '.'"
            )));
        }
    }
    if let Some(c) = &spec.compute {
        c.validate().map_err(MasterError::BadRequest)?;
    }
    spec.check_qos().map_err(MasterError::BadRequest)?;
    spec.check_ratios().map_err(MasterError::BadRequest)?;
    let reduces = spec.reduces.unwrap_or(spec.workload.default_reduces());
    if !spec.workload.has_reduce() && reduces > 0 {
        return Err(MasterError::BadRequest(format!(
            "{} is map-only; `reduces` must be 0 or absent (got {reduces})",
            spec.workload
        )));
    }
    if spec.workload.has_reduce() && !(1..=MAX_REDUCES).contains(&reduces) {
        return Err(MasterError::BadRequest(format!(
            "`reduces` must be 1..={MAX_REDUCES} for {} (got {reduces})",
            spec.workload
        )));
    }
    if !spec.workload.has_reduce() && spec.output.is_some() {
        return Err(MasterError::BadRequest(format!(
            "{} writes no output; drop `output`",
            spec.workload
        )));
    }
    if let Some(r) = spec.output_replication {
        if !spec.workload.has_reduce() {
            return Err(MasterError::BadRequest(format!(
                "{} writes no output; drop `output_replication`",
                spec.workload
            )));
        }
        if r == 0 {
            return Err(MasterError::BadRequest(
                "`output_replication` must be at least 1 (got 0)".into(),
            ));
        }
    }
    Ok(reduces)
}
