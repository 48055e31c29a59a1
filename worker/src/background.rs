//! Background load: processes that occupy this worker's slots without being
//! tasks of any job, like the seeds' "initial load" (DynDL: every core busy
//! for U[2, 12] s when the experiment starts). They hold a slot for their
//! duration (they need not burn CPU), so the worker reports fewer free slots
//! and slots free up at realistic, staggered times.
//!
//! Seeded: the same seed draws the same durations and arrival gaps in the
//! same order, whatever the timing of the run.

use crate::slots::Slots;
use crate::timeline::Timeline;
use common::config::BackgroundConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;

/// How often a waiting background process looks for a free slot.
const SLOT_POLL: Duration = Duration::from_millis(20);

/// Seed for worker `name` from the cluster seed (FNV-1a over the name).
pub fn worker_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn draw(rng: &mut ChaCha8Rng, cfg: &BackgroundConfig) -> Duration {
    let [lo, hi] = cfg.duration_s;
    let s = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
    Duration::from_secs_f64(s)
}

/// What a background process touches: the slots it holds and the
/// timeline that records it.
#[derive(Clone)]
pub struct Load {
    pub slots: Arc<Slots>,
    pub timeline: Arc<Timeline>,
}

/// Runs worker `name`'s background load until aborted (aborting also ends
/// every background process it started and frees their slots... by
/// dropping them with the worker).
pub async fn run(load: Load, name: String, cfg: BackgroundConfig, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut procs = tokio::task::JoinSet::new();
    let initial = (cfg.initial * load.slots.count() as f64).round() as u32;
    for _ in 0..initial {
        procs.spawn(occupy(load.clone(), draw(&mut rng, &cfg)));
    }
    tracing::info!(worker = %name, initial, per_minute = cfg.per_minute, "background load started");
    if cfg.per_minute <= 0.0 {
        while procs.join_next().await.is_some() {}
        return;
    }
    let mean_gap = 60.0 / cfg.per_minute;
    loop {
        // Exponential inter-arrival gaps: a Poisson process.
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let gap = Duration::from_secs_f64(-mean_gap * u.ln());
        let dur = draw(&mut rng, &cfg);
        tokio::time::sleep(gap).await;
        procs.spawn(occupy(load.clone(), dur));
        while procs.try_join_next().is_some() {}
    }
}

/// One background process: waits for a free slot, holds it for `dur`.
async fn occupy(load: Load, dur: Duration) {
    let slot = loop {
        if let Some(s) = load.slots.book().start_background(dur) {
            break s;
        }
        tokio::time::sleep(SLOT_POLL).await;
    };
    load.timeline.background_started(slot, common::unix_ms());
    load.slots.slot_freed();
    // Released on drop, so an aborted worker's processes free their slots too.
    let _guard = Release(load, slot);
    tokio::time::sleep(dur).await;
}

struct Release(Load, u32);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.slots.book().end_background(self.1);
        self.0.timeline.background_ended(self.1, common::unix_ms());
        self.0.slots.slot_freed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_per_worker_and_repeat() {
        assert_eq!(worker_seed(1, "w1"), worker_seed(1, "w1"));
        assert_ne!(worker_seed(1, "w1"), worker_seed(1, "w2"));
        assert_ne!(worker_seed(1, "w1"), worker_seed(2, "w1"));
    }
}
