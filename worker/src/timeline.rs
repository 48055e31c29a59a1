//! What a worker remembers for per-run timelines: its NIC byte counters,
//! sampled every [`TIMELINE_SAMPLE_MS`], and the background processes it ran
//! (slot, start, end). Both are bounded (the oldest entries go first),
//! allocated whole at start so a worker's heap does not grow with its
//! uptime (the fault campaign reads it at rest), and served by
//! `GET /timeline?since_ms=T`.

use crate::nic::{Link, Nic};
use common::wire::{BackgroundRun, NicSample, WorkerTimeline, TIMELINE_SAMPLE_MS};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// At most this many NIC samples are kept: about 83 minutes at 4 Hz.
pub const MAX_SAMPLES: usize = 20_000;
/// At most this many background runs are kept.
pub const MAX_BACKGROUND: usize = 20_000;

#[derive(Debug)]
pub struct Timeline {
    samples: Mutex<VecDeque<NicSample>>,
    background: Mutex<VecDeque<BackgroundRun>>,
}

impl Default for Timeline {
    /// Both rings at their bound (640 kB and 480 kB, mapped lazily): an
    /// uptime of 83 minutes would otherwise double them on the way there.
    fn default() -> Self {
        Timeline {
            samples: Mutex::new(VecDeque::with_capacity(MAX_SAMPLES)),
            background: Mutex::new(VecDeque::with_capacity(MAX_BACKGROUND)),
        }
    }
}

impl Timeline {
    fn push_sample(&self, s: NicSample) {
        let mut q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() == MAX_SAMPLES {
            q.pop_front();
        }
        q.push_back(s);
    }

    /// Receive and transmit rates (bytes/s) over the last second of
    /// samples (0 before there are two).
    pub fn current_rates(&self) -> (f64, f64) {
        let q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let Some(last) = q.back() else {
            return (0.0, 0.0);
        };
        let back = (1000 / TIMELINE_SAMPLE_MS) as usize;
        let first = &q[q.len().saturating_sub(back + 1)];
        let dt = last.unix_ms.saturating_sub(first.unix_ms) as f64 / 1000.0;
        if dt <= 0.0 {
            return (0.0, 0.0);
        }
        (
            last.rx_bytes.saturating_sub(first.rx_bytes) as f64 / dt,
            last.tx_bytes.saturating_sub(first.tx_bytes) as f64 / dt,
        )
    }

    /// A background process took `slot`.
    pub fn background_started(&self, slot: u32, unix_ms: u64) {
        let mut q = self.background.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() == MAX_BACKGROUND {
            q.pop_front();
        }
        q.push_back(BackgroundRun {
            slot,
            start_unix_ms: unix_ms,
            end_unix_ms: None,
        });
    }

    /// The background process on `slot` ended.
    pub fn background_ended(&self, slot: u32, unix_ms: u64) {
        let mut q = self.background.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = q
            .iter_mut()
            .rev()
            .find(|r| r.slot == slot && r.end_unix_ms.is_none())
        {
            r.end_unix_ms = Some(unix_ms);
        }
    }

    /// Everything from `since_ms` (unix) on, for worker `name` of `slots`
    /// slots whose NIC and disk run at `nic` and `disk`; background runs
    /// still going at `since_ms` are included.
    pub fn since(
        &self,
        name: &str,
        slots: u32,
        nic: &Nic,
        disk: &Link,
        since_ms: u64,
    ) -> WorkerTimeline {
        let samples = self
            .samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|s| s.unix_ms >= since_ms)
            .copied()
            .collect();
        let background = self
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|r| r.end_unix_ms.is_none_or(|e| e >= since_ms))
            .copied()
            .collect();
        WorkerTimeline {
            worker: name.to_owned(),
            slots,
            nic_bytes_per_sec: nic.tx.rate(),
            disk_bytes_per_sec: disk.rate(),
            samples,
            background,
        }
    }
}

/// Samples the NIC's and the disk's counters into `timeline` until aborted.
pub async fn run(timeline: Arc<Timeline>, nic: Arc<Nic>, disk: Arc<Link>) {
    let mut tick = tokio::time::interval(Duration::from_millis(TIMELINE_SAMPLE_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        timeline.push_sample(NicSample {
            unix_ms: common::unix_ms(),
            tx_bytes: nic.tx.bytes(),
            rx_bytes: nic.rx.bytes(),
            disk_bytes: disk.bytes(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_runs_close_on_their_slot_and_the_rings_are_allocated_once() {
        let t = Timeline::default();
        let (samples_cap, background_cap) = (
            t.samples.lock().unwrap().capacity(),
            t.background.lock().unwrap().capacity(),
        );
        assert!(samples_cap >= MAX_SAMPLES && background_cap >= MAX_BACKGROUND);
        t.background_started(0, 100);
        t.background_started(1, 150);
        t.background_ended(1, 400);
        t.background_ended(0, 900);
        let q = t.background.lock().unwrap();
        assert_eq!(q[0].end_unix_ms, Some(900));
        assert_eq!(q[1].end_unix_ms, Some(400));
        drop(q);
        for i in 0..MAX_SAMPLES as u64 + 5 {
            t.push_sample(NicSample {
                unix_ms: i,
                tx_bytes: i,
                rx_bytes: 0,
                disk_bytes: 0,
            });
        }
        let q = t.samples.lock().unwrap();
        assert_eq!(q.len(), MAX_SAMPLES);
        assert_eq!(q.front().unwrap().unix_ms, 5);
        // Allocated once: a full ring is the one made at start.
        assert_eq!(q.capacity(), samples_cap);
    }
}
