//! The online policies, one file each, and [`build`], the one place that
//! turns a [`SchedulerConfig`] into a running policy. A new policy is one
//! file here, one variant of `SchedulerConfig` (common/src/policy.rs) and
//! one arm in [`build`] and in the shared test suite (`tests.rs`), which
//! does not compile until the variant is listed.

pub mod coshic;
pub mod delay;
pub mod dyndl_on;
pub mod eas;
pub mod fair;
pub mod hadoop;
pub mod lsap;
pub mod lsap_fair;
pub mod mrosa;
pub mod opportunity;
pub mod planned;
pub mod rand_sched;
pub mod strict;

use crate::model::Cost;
use crate::offline::Offline;
use crate::view::{Millis, Scheduler};
use common::config::SchedulerConfig;

/// Builds the policy a config names, seeded.
pub fn build(cfg: &SchedulerConfig, seed: u64) -> Box<dyn Scheduler> {
    match cfg.clone() {
        SchedulerConfig::Hadoop { pick } => Box::new(hadoop::Hadoop::new(pick, seed)),
        SchedulerConfig::Delay {
            threshold_s,
            pick,
            order,
            wait_from,
        } => Box::new(delay::Delay::new(
            secs_to_ms(threshold_s),
            pick,
            order,
            wait_from,
            seed,
        )),
        SchedulerConfig::DyndlOn {
            w_s,
            remote_s,
            theta,
            one_remote,
            pick,
            wait,
            order,
        } => Box::new(dyndl_on::DyndlOn::new(
            dyndl_on::DyndlOnParams {
                w: secs_to_ms(w_s),
                remote: secs_to_ms(remote_s),
                theta,
                one_remote,
                pick,
                wait,
                order,
            },
            seed,
        )),
        SchedulerConfig::Rand { randomness } => {
            Box::new(rand_sched::RandSched::new(randomness, seed))
        }
        SchedulerConfig::Fair { delay_s, weights } => {
            Box::new(fair::Fair::new(secs_to_ms(delay_s), weights, seed))
        }
        SchedulerConfig::Lsap {} => Box::new(lsap::Lsap::new(seed)),
        SchedulerConfig::Strict { fair, head_only } => {
            Box::new(strict::Strict::new(fair, head_only))
        }
        SchedulerConfig::Eas {} => Box::new(eas::Eas::new()),
        SchedulerConfig::LsapFair {
            alpha,
            beta,
            weights,
        } => Box::new(lsap_fair::LsapFair::new(alpha, beta, weights, seed)),
        SchedulerConfig::Ds { fraction } => Box::new(opportunity::Ds::new(fraction, seed)),
        SchedulerConfig::DyndlOff { theta, replan } => Box::new(planned::Planned::new(
            Offline::DyndlOff,
            Cost::Dyndl { theta },
            replan,
            seed,
        )),
        SchedulerConfig::Bar { q, replan } => Box::new(planned::Planned::new(
            Offline::Bar,
            Cost::Bar { c_loc: 1.0, q },
            replan,
            seed,
        )),
        SchedulerConfig::Gcc { idle_fraction } => {
            Box::new(opportunity::Gcc::new(idle_fraction, seed))
        }
        SchedulerConfig::Mrosa { rho } => Box::new(mrosa::Mrosa::new(rho)),
        SchedulerConfig::Coshic {} => Box::new(coshic::Coshic::new()),
    }
}

/// Seconds of a policy parameter as scheduler milliseconds.
pub(crate) fn secs_to_ms(s: f64) -> Millis {
    (s * 1000.0).round().max(0.0) as Millis
}

#[cfg(test)]
mod hybrid_tests;
#[cfg(test)]
mod tests;
