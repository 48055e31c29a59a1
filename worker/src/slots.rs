//! Task slots. `TaskBook` is the single place that knows which slots are
//! busy, which attempts run and which results wait to be reported; one
//! lock guards all three so a heartbeat never sees an attempt that is
//! neither running nor finished. `Slots` is the handle the executor, the
//! background load, the HTTP server and the heartbeat loop share: the
//! book, the outcome counters, and the wake-up of the heartbeat loop.

use crate::metrics::{Outcome, Outcomes};
use crate::progress::Progress;
use common::wire::{AttemptProgress, TaskResult};
use common::AttemptId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

struct RunningTask {
    slot: u32,
    progress: Progress,
    /// Stops the attempt's runner (set just after it is spawned).
    abort: Option<tokio::task::AbortHandle>,
}

pub struct TaskBook {
    busy: Vec<bool>,
    /// Per busy slot: since when, and for how long if known (background).
    since: Vec<Option<(std::time::Instant, Option<Duration>)>>,
    /// Slots held by background processes (see `background`).
    background: u32,
    running: HashMap<AttemptId, RunningTask>,
    finished: Vec<TaskResult>,
}

impl TaskBook {
    pub fn new(slots: u32) -> Self {
        TaskBook {
            busy: vec![false; slots as usize],
            since: vec![None; slots as usize],
            background: 0,
            running: HashMap::new(),
            finished: Vec::new(),
        }
    }

    pub fn free_slots(&self) -> u32 {
        self.busy.iter().filter(|b| !**b).count() as u32
    }

    pub fn running(&self) -> Vec<AttemptId> {
        let mut v: Vec<_> = self.running.keys().copied().collect();
        v.sort();
        v
    }

    /// Attempts running, and those finished whose results wait for a
    /// heartbeat (sorted): what a restarted master may adopt.
    pub fn unreported(&self) -> Vec<AttemptId> {
        let mut v = self.running();
        v.extend(self.finished.iter().map(|r| r.attempt));
        v.sort();
        v.dedup();
        v
    }

    /// Takes the finished results for a heartbeat; `restore` puts them back
    /// if the heartbeat did not get through.
    pub fn take_finished(&mut self) -> Vec<TaskResult> {
        std::mem::take(&mut self.finished)
    }

    pub fn restore(&mut self, mut results: Vec<TaskResult>) {
        results.append(&mut self.finished);
        self.finished = results;
    }

    /// Slots held by background processes now.
    pub fn background(&self) -> u32 {
        self.background
    }

    /// Takes a free slot for a background process that holds it for `dur`.
    pub fn start_background(&mut self, dur: Duration) -> Option<u32> {
        let slot = self.busy.iter().position(|b| !*b)?;
        self.busy[slot] = true;
        self.since[slot] = Some((std::time::Instant::now(), Some(dur)));
        self.background += 1;
        Some(slot as u32)
    }

    pub fn end_background(&mut self, slot: u32) {
        if let Some(b) = self.busy.get_mut(slot as usize) {
            if *b {
                *b = false;
                self.since[slot as usize] = None;
                self.background = self.background.saturating_sub(1);
            }
        }
    }

    /// Every busy slot's age and known remaining time, for the heartbeat.
    pub fn busy_report(&self) -> Vec<common::wire::SlotBusy> {
        let now = std::time::Instant::now();
        self.since
            .iter()
            .flatten()
            .map(|(t0, dur)| {
                let elapsed = now.saturating_duration_since(*t0);
                common::wire::SlotBusy {
                    elapsed_ms: elapsed.as_millis() as u64,
                    remaining_ms: dur.map(|d| d.saturating_sub(elapsed).as_millis() as u64),
                }
            })
            .collect()
    }

    /// Every running attempt's progress count, for the heartbeat.
    pub fn progress_report(&self) -> Vec<AttemptProgress> {
        let mut v: Vec<AttemptProgress> = self
            .running
            .iter()
            .map(|(a, r)| AttemptProgress {
                attempt: *a,
                units: r.progress.get(),
                slot: r.slot,
                done_ppm: r.progress.done_ppm(),
            })
            .collect();
        v.sort_by_key(|p| p.attempt);
        v
    }

    pub(crate) fn start(&mut self, attempt: AttemptId) -> Option<(u32, Progress)> {
        if self.running.contains_key(&attempt) {
            return None;
        }
        let slot = self.busy.iter().position(|b| !*b)? as u32;
        self.busy[slot as usize] = true;
        self.since[slot as usize] = Some((std::time::Instant::now(), None));
        let progress = Progress::default();
        self.running.insert(
            attempt,
            RunningTask {
                slot,
                progress: progress.clone(),
                abort: None,
            },
        );
        Some((slot, progress))
    }

    fn free(&mut self, attempt: &AttemptId) -> Option<RunningTask> {
        let r = self.running.remove(attempt)?;
        self.busy[r.slot as usize] = false;
        self.since[r.slot as usize] = None;
        Some(r)
    }

    pub(crate) fn finish(&mut self, result: TaskResult) {
        // A killed attempt's runner may still finish: nobody waits for it.
        if self.free(&result.attempt).is_some() {
            self.finished.push(result);
        }
    }

    /// A launch that found no free slot: its rejection waits for the
    /// next heartbeat.
    pub(crate) fn reject(&mut self, result: TaskResult) {
        self.finished.push(result);
    }

    /// The runner of attempt `a`, so that `kill` can stop it.
    pub(crate) fn set_abort(&mut self, a: &AttemptId, abort: tokio::task::AbortHandle) {
        if let Some(r) = self.running.get_mut(a) {
            r.abort = Some(abort);
        }
    }

    /// Stops attempt `a` (the master no longer waits for it) and frees its
    /// slot; no result is reported. A thread blocked inside the kernel (a
    /// hung disk read) cannot be interrupted: it ends when its call returns,
    /// and its output is discarded. False if `a` was not running.
    pub fn kill(&mut self, a: &AttemptId) -> bool {
        match self.free(a) {
            Some(r) => {
                if let Some(h) = r.abort {
                    h.abort();
                }
                true
            }
            None => false,
        }
    }
}

/// The slots' book, the attempts' outcome counters and the heartbeat's
/// wake-up.
pub struct Slots {
    count: u32,
    book: Mutex<TaskBook>,
    /// Task attempts ended here, by outcome (`GET /metrics`).
    outcomes: Outcomes,
    /// Wakes the heartbeat loop early.
    heartbeat_now: Arc<Notify>,
    out_of_band_heartbeat: bool,
}

impl Slots {
    pub fn new(count: u32, heartbeat_now: Arc<Notify>, out_of_band_heartbeat: bool) -> Self {
        Slots {
            count,
            book: Mutex::new(TaskBook::new(count)),
            outcomes: Outcomes::default(),
            heartbeat_now,
            out_of_band_heartbeat,
        }
    }

    /// How many slots this worker has.
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn book(&self) -> MutexGuard<'_, TaskBook> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn outcomes(&self) -> &Outcomes {
        &self.outcomes
    }

    /// Counts an attempt's end.
    pub fn ended(&self, o: Outcome) {
        self.outcomes.count(o);
    }

    /// Heartbeat at once (the block store changed).
    pub fn wake_heartbeat(&self) {
        self.heartbeat_now.notify_one();
    }

    /// The heartbeat loop's wake-up.
    pub fn heartbeat_wanted(&self) -> &Notify {
        &self.heartbeat_now
    }

    /// Whether this worker heartbeats when a slot frees.
    pub fn out_of_band(&self) -> bool {
        self.out_of_band_heartbeat
    }

    /// A slot became free (a task or background process ended, a launch was
    /// rejected): heartbeat at once if out-of-band heartbeats are on.
    pub fn slot_freed(&self) {
        if self.out_of_band_heartbeat {
            self.wake_heartbeat();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::wire::TaskOutcome;
    use common::{JobId, TaskRef};

    fn attempt(index: u32) -> AttemptId {
        AttemptId {
            task: TaskRef {
                job: JobId(1),
                index,
            },
            attempt: 0,
        }
    }

    fn result(a: AttemptId) -> TaskResult {
        TaskResult {
            attempt: a,
            slot: 0,
            outcome: TaskOutcome::Failed { error: "x".into() },
            started_unix_ms: 0,
            finished_unix_ms: 0,
            local_bytes: 0,
            remote_bytes: 0,
        }
    }

    #[test]
    fn the_book_gives_slots_out_once_and_reports_what_ended() {
        let mut b = TaskBook::new(2);
        let (s0, p0) = b.start(attempt(0)).unwrap();
        assert!(b.start(attempt(0)).is_none(), "already running");
        let (s1, _) = b.start(attempt(1)).unwrap();
        assert_ne!(s0, s1);
        assert!(b.start(attempt(2)).is_none(), "no free slot");
        assert!(b.start_background(Duration::from_secs(1)).is_none());
        p0.add(7);
        let progress = b.progress_report();
        assert_eq!((progress[0].attempt, progress[0].units), (attempt(0), 7));
        assert_eq!(b.busy_report().len(), 2);
        // A killed attempt's late result is not reported.
        assert!(b.kill(&attempt(1)));
        assert!(!b.kill(&attempt(1)));
        b.finish(result(attempt(1)));
        b.finish(result(attempt(0)));
        assert_eq!(b.running(), Vec::<AttemptId>::new());
        assert_eq!(b.free_slots(), 2);
        let done = b.take_finished();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].attempt, attempt(0));
        // Results a failed heartbeat did not deliver come back first.
        b.reject(result(attempt(5)));
        b.restore(done);
        let again: Vec<AttemptId> = b.take_finished().iter().map(|r| r.attempt).collect();
        assert_eq!(again, vec![attempt(0), attempt(5)]);
        // Background processes hold slots too.
        let s = b.start_background(Duration::from_secs(9)).unwrap();
        assert_eq!((b.background(), b.free_slots()), (1, 1));
        assert!(b.busy_report()[0].remaining_ms.is_some());
        b.end_background(s);
        b.end_background(s);
        assert_eq!((b.background(), b.free_slots()), (0, 2));
    }

    #[tokio::test]
    async fn a_freed_slot_wakes_the_heartbeat_only_out_of_band() {
        for oob in [false, true] {
            let slots = Slots::new(1, Arc::new(Notify::new()), oob);
            slots.slot_freed();
            let woke = tokio::time::timeout(
                Duration::from_millis(50),
                slots.heartbeat_wanted().notified(),
            )
            .await
            .is_ok();
            assert_eq!(woke, oob, "out of band: {oob}");
            // A stored block always wakes it.
            slots.wake_heartbeat();
            slots.heartbeat_wanted().notified().await;
        }
    }
}
