//! Job reports, as the API returns them.

use super::jobs::Job;
use super::{Master, MasterError};
use common::wire::{JobReport, JobState, RunningRecord};
use common::JobId;

impl Master {
    pub fn job_state(&self, id: JobId) -> Option<JobState> {
        self.jobs.state(id)
    }

    pub fn report(&self, id: JobId) -> Result<JobReport, MasterError> {
        self.report_with(id, true)
    }

    /// [`Master::report`], with the attempt lists or without.
    fn report_with(&self, id: JobId, attempts: bool) -> Result<JobReport, MasterError> {
        let Some(j) = self.jobs.get(id) else {
            let mut r = self
                .jobs
                .archived(id)
                .ok_or(if self.jobs.retired(id) {
                    MasterError::RetiredJob(id)
                } else {
                    MasterError::UnknownJob(id)
                })?
                .clone();
            if !attempts {
                r.attempts.clear();
            }
            return Ok(r);
        };
        let finish_ms = match j.state {
            JobState::Succeeded => j.finished.map(|f| f.saturating_sub(j.submitted)),
            _ => None,
        };
        let deadline_ms = j.spec.deadline_s.map(|d| (d * 1000.0).round() as u64);
        let (attempts, running) = if attempts {
            let mut done = j.records.clone();
            done.sort_by_key(|r| (r.end_ms, r.task, r.attempt));
            (done, self.running_records(j))
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(JobReport {
            job: j.id,
            name: j.name.clone(),
            workload: j.spec.workload,
            input: j.spec.input.clone(),
            group: j.spec.group().to_owned(),
            scheduler: j.scheduler.clone(),
            state: j.state,
            error: j.error.clone(),
            submit_unix_ms: j.submit_unix_ms,
            start_ms: j
                .records
                .iter()
                .map(|r| r.start_ms)
                .min()
                .or(j.first_launch.map(|f| f.saturating_sub(j.submitted))),
            finish_ms,
            jct_ms: finish_ms,
            tasks: j.maps,
            tasks_done: j.counts.maps_done,
            reduces: j.reduces,
            reduces_done: j.counts.reduces_done,
            shuffle_bytes: j.counts.shuffle_bytes,
            output: j.output.clone(),
            output_replication: j.output.as_ref().map(|_| self.output_factor(&j.spec)),
            data_local: j.counts.data_local,
            data_remote: j.counts.data_remote,
            bytes_local: j.counts.bytes_local,
            bytes_remote: j.counts.bytes_remote,
            attempts,
            running,
            deadline_ms,
            deadline_met: deadline_ms.and_then(|d| match j.state {
                JobState::Succeeded => finish_ms.map(|f| f <= d),
                JobState::Failed => Some(false),
                _ => None,
            }),
            budget: j.spec.budget,
            public_cost: self.instances.cost(j.id),
            master_restarts: j.restarts,
            restart_reruns: j.restart_reruns,
            backups: j.backups,
            backups_won: j.backups_won,
            decided_by: self
                .placement
                .launched_by(j.id)
                .map(|b| common::wire::DecidedBy {
                    policy: b.policy,
                    fallback: b.fallback,
                    fallback_name: b.fallback_name,
                }),
        })
    }

    fn running_records(&self, j: &Job) -> Vec<RunningRecord> {
        j.tasks
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                t.attempts().map(move |ra| RunningRecord {
                    task: i as u32,
                    kind: t.kind(),
                    attempt: ra.attempt,
                    worker: self.worker_name(ra.worker),
                    slot: ra.slot,
                    locality: ra.locality(),
                    source: self.worker_name(ra.source),
                    start_ms: ra.started.saturating_sub(j.submitted),
                })
            })
            .collect()
    }

    /// All jobs, oldest first, without their attempt lists.
    pub fn reports(&self) -> Vec<JobReport> {
        self.jobs
            .ids()
            .into_iter()
            .filter_map(|id| self.report_with(id, false).ok())
            .collect()
    }
}
