//! A job's emulated compute per map task.

use crate::hash::splitmix64;
use serde::{Deserialize, Serialize};

/// Per map task, extra time drawn uniformly from `[min_ms, max_ms]`; the
/// draw depends only on `seed` and the task's index, so every scheduler
/// (and every attempt of the task) sees the same task lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCompute {
    pub min_ms: u64,
    pub max_ms: u64,
    #[serde(default)]
    pub seed: u64,
}

impl TaskCompute {
    /// The longest compute a task may ask for: one hour.
    pub const MAX_MS: u64 = 3_600_000;

    /// Checks the range; the error names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.min_ms > self.max_ms || self.max_ms > Self::MAX_MS {
            return Err(format!(
                "`compute` needs min_ms <= max_ms <= {} (got [{}, {}])",
                Self::MAX_MS,
                self.min_ms,
                self.max_ms
            ));
        }
        Ok(())
    }

    /// The compute time of map task `index`, uniform in the range.
    pub fn for_task(&self, index: u32) -> u64 {
        let span = self.max_ms - self.min_ms + 1;
        let h = splitmix64(self.seed ^ splitmix64(index as u64 + 1));
        // 128-bit multiply-shift: uniform over the span without modulo bias worth noting.
        self.min_ms + ((h as u128 * span as u128) >> 64) as u64
    }
}
