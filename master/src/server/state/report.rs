//! Job reports, as the API returns them.

use super::{Master, MasterError};
use common::wire::{JobReport, JobState};
use common::JobId;

impl Master {
    pub fn job_state(&self, id: JobId) -> Option<JobState> {
        self.jobs
            .get(&id)
            .map(|j| j.state)
            .or_else(|| self.archived.get(&id).map(|r| r.state))
    }

    pub fn report(&self, id: JobId) -> Result<JobReport, MasterError> {
        let Some(j) = self.jobs.get(&id) else {
            return self
                .archived
                .get(&id)
                .cloned()
                .ok_or(MasterError::UnknownJob(id));
        };
        let finish_ms = match j.state {
            JobState::Succeeded => j.finished.map(|f| f - j.submitted),
            _ => None,
        };
        let mut attempts = j.records.clone();
        attempts.sort_by_key(|r| (r.end_ms, r.task, r.attempt));
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
                .or(j.first_launch.map(|f| f - j.submitted)),
            finish_ms,
            jct_ms: finish_ms,
            tasks: j.maps,
            tasks_done: j.counts.maps_done,
            reduces: j.reduces,
            reduces_done: j.counts.reduces_done,
            shuffle_bytes: j.counts.shuffle_bytes,
            output: j.output.clone(),
            data_local: j.counts.data_local,
            data_remote: j.counts.data_remote,
            bytes_local: j.counts.bytes_local,
            bytes_remote: j.counts.bytes_remote,
            attempts,
        })
    }

    /// All jobs, oldest first, without their attempt lists.
    pub fn reports(&self) -> Vec<JobReport> {
        let mut ids: Vec<JobId> = self
            .jobs
            .keys()
            .chain(self.archived.keys())
            .copied()
            .collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| self.report(id).ok())
            .map(|mut r| {
                r.attempts.clear();
                r
            })
            .collect()
    }
}
