//! The report of a job that never started (refused or failed before its
//! first launch).

use super::*;

/// The report of a job that ended without running a task, failed with
/// `error` (a job an earlier incarnation was running when it stopped).
pub(crate) fn unstarted_report(
    job: JobId,
    name: String,
    scheduler: String,
    submit_unix_ms: u64,
    spec: &JobSubmit,
    error: String,
) -> JobReport {
    JobReport {
        job,
        name,
        workload: spec.workload,
        input: spec.input.clone(),
        group: spec.group().to_owned(),
        scheduler,
        state: JobState::Failed,
        error: Some(error),
        submit_unix_ms,
        start_ms: None,
        finish_ms: None,
        jct_ms: None,
        tasks: 0,
        tasks_done: 0,
        reduces: 0,
        reduces_done: 0,
        shuffle_bytes: 0,
        output: None,
        output_replication: None,
        data_local: 0,
        data_remote: 0,
        bytes_local: 0,
        bytes_remote: 0,
        attempts: Vec::new(),
        running: Vec::new(),
        deadline_ms: spec.deadline_s.map(|d| (d * 1000.0) as u64),
        deadline_met: spec.deadline_s.map(|_| false),
        budget: spec.budget,
        public_cost: None,
        master_restarts: 0,
        restart_reruns: 0,
        backups: 0,
        backups_won: 0,
        decided_by: None,
    }
}
