//! `master sim hybrid <spec>`: an experiment spec with public instance
//! types (experiments/mrosa-*.toml) run in `lab::hybrid_sim` instead of on
//! a real cluster: the same policies, jobs, arrivals and prices, on virtual
//! time, and with as many private workers as asked (`--workers`), so a
//! policy can be tried at thousands of servers. Jobs are map-only there (the
//! simulator models no reduce phase); the table says so.

use crate::experiment::qos::spread;
use crate::experiment::run::arrivals;
use crate::experiment::spec::Spec;
use anyhow::Context;
use lab::hybrid_sim::{simulate, HybridCluster, JobOutcome, SimJob};
use std::path::Path;

/// Runs every point, scheduler and repetition of the spec at `path`; returns
/// the table (markdown).
pub fn run(path: &Path, workers: Option<u32>) -> anyhow::Result<String> {
    let (spec, _) = Spec::load(path)?;
    let schedulers = spec.schedulers().map_err(|e| e.in_file(path))?;
    let points = spec.points().map_err(|e| e.in_file(path))?;
    if !spec.jobs.mix.is_empty() {
        anyhow::bail!(
            "{}: `sim hybrid` takes specs without `jobs.mix`",
            path.display()
        );
    }
    let public = spec.public.clone().unwrap_or_default();
    let private = workers.unwrap_or(spec.cluster.workers - spec.cluster.reduce_workers);
    if private == 0 {
        anyhow::bail!("--workers must be at least 1");
    }
    let mut out = format!(
        "# {} in the hybrid-cloud simulator\n\n{} private workers x {} slots; map-only jobs (no \
         reduce phase); mean (min-max) over {} repetitions.\n\n\
         | point | scheduler | mean JCT (s) | deadline met % | refused | public cost | instances | public maps |\n\
         |---|---|---|---|---|---|---|---|\n",
        spec.name, private, spec.cluster.slots, spec.repetitions
    );
    for p in &points {
        let cluster = HybridCluster {
            private_workers: private,
            slots: spec.cluster.slots,
            slot_rate: p.slot_rate_mbs.unwrap_or(100.0) * 1e6,
            nic: p.nic_mbps.map_or(1e12, common::config::mbps_to_bytes),
            replication: p.replication,
            types: spec.public_type.clone(),
            max_instances: if spec.public_type.is_empty() {
                0
            } else {
                public.max_instances
            },
            idle_stop_s: public.idle_stop_s,
            tick_ms: p.heartbeat_ms,
        };
        for s in &schedulers {
            let mut runs: Vec<Vec<JobOutcome>> = Vec::new();
            for rep in 0..spec.repetitions {
                let seed = spec.seed + rep as u64;
                let jobs: Vec<SimJob> = arrivals(seed, p.jobs, spec.jobs.arrival_s)
                    .into_iter()
                    .enumerate()
                    .map(|(i, at)| SimJob {
                        arrival_ms: at,
                        maps: p.blocks,
                        block: p.block_bytes,
                        deadline_s: spec.jobs.deadline_of(i),
                        budget: spec.jobs.budget,
                    })
                    .collect();
                let mut policy = sched::build(&s.config, seed);
                let limit = (spec.timeout_s * 1000.0) as u64;
                runs.push(simulate(policy.as_mut(), &cluster, &jobs, seed, limit));
            }
            let per = |f: &dyn Fn(&[JobOutcome]) -> f64| -> Vec<f64> {
                runs.iter().map(|r| f(r)).collect()
            };
            let jct = per(&|r| {
                let ok: Vec<f64> = r
                    .iter()
                    .filter_map(|o| o.jct_ms)
                    .map(|j| j as f64 / 1e3)
                    .collect();
                if ok.is_empty() {
                    f64::NAN
                } else {
                    ok.iter().sum::<f64>() / ok.len() as f64
                }
            });
            let met = per(&|r| {
                let with: Vec<_> = r.iter().filter_map(|o| o.deadline_met).collect();
                if with.is_empty() {
                    f64::NAN
                } else {
                    100.0 * with.iter().filter(|m| **m).count() as f64 / with.len() as f64
                }
            });
            let refused = per(&|r| r.iter().filter(|o| o.refused).count() as f64);
            let cost = per(&|r| r.iter().map(|o| o.cost).sum());
            let inst = per(&|r| r.iter().map(|o| o.instances as f64).sum());
            let maps = per(&|r| r.iter().map(|o| o.public_maps as f64).sum());
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                p.label,
                s.label,
                spread(&jct, 2),
                spread(&met, 0),
                spread(&refused, 1),
                spread(&cost, 4),
                spread(&inst, 1),
                spread(&maps, 1),
            );
        }
    }
    Ok(out)
}

/// `run`, with the spec's path in the error.
pub fn run_file(path: &Path, workers: Option<u32>) -> anyhow::Result<String> {
    run(path, workers).with_context(|| format!("sim hybrid {}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shipped_spec_runs_in_the_simulator() {
        let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../experiments/mrosa-fig5-d90.toml");
        let t = super::run_file(&spec, None).unwrap();
        // 3 points x 2 schedulers.
        assert_eq!(
            t.lines()
                .filter(|l| l.starts_with("| 48 maps")
                    || l.starts_with("| 96 maps")
                    || l.starts_with("| 180 maps"))
                .count(),
            6,
            "{t}"
        );
        // At 180 maps both rent, COSHIC every map.
        let coshic = t
            .lines()
            .find(|l| l.starts_with("| 180 maps | COSHIC"))
            .unwrap();
        assert!(coshic.ends_with("| 180.0 (180.0-180.0) |"), "{t}");
        let mrosa = t
            .lines()
            .find(|l| l.starts_with("| 180 maps | MROSA"))
            .unwrap();
        assert!(
            !mrosa.ends_with("| 0.0 (0.0-0.0) |"),
            "MROSA rents something: {t}"
        );
    }
}
