//! A task's attempts: started, numbered and settled.

use super::*;

impl Task {
    pub(super) fn new(block: BlockId, reduce: Option<u32>, len: u64) -> Self {
        Task {
            block,
            reduce,
            len,
            next_attempt: 0,
            failures: 0,
            status: TaskStatus::Pending,
            backup: None,
            stalled_on: Vec::new(),
            out_targets: Vec::new(),
        }
    }

    pub fn kind(&self) -> common::wire::TaskKind {
        if self.reduce.is_some() {
            common::wire::TaskKind::Reduce
        } else {
            common::wire::TaskKind::Map
        }
    }

    /// Its next attempt starts, running on `worker` and reading from
    /// `source`; returns the attempt's number.
    pub(super) fn start(&mut self, worker: WorkerId, source: WorkerId, now: Millis) -> u32 {
        let attempt = self.number();
        self.status = TaskStatus::Running(RunningAttempt::new(attempt, worker, source, now));
        self.backup = None;
        attempt
    }

    /// The next attempt's number, taken.
    pub(super) fn number(&mut self) -> u32 {
        self.next_attempt += 1;
        self.next_attempt - 1
    }

    /// Its running attempts: the current one, then the backup.
    pub fn attempts(&self) -> impl Iterator<Item = RunningAttempt> + '_ {
        let current = match self.status {
            TaskStatus::Running(ra) => Some(ra),
            _ => None,
        };
        current.into_iter().chain(self.backup)
    }

    /// The task is done or pending again: no attempt runs.
    pub(super) fn settle(&mut self, status: TaskStatus) {
        self.status = status;
        self.backup = None;
    }
}
