//! A spec's checks: every key of the run, the cluster, the inputs, the
//! jobs and the points, each error naming its key.

use super::*;

impl Spec {
    pub(super) fn check(&self) -> Result<(), KeyError> {
        self.check_run()?;
        let map_workers = self.check_cluster()?;
        self.check_inputs()?;
        self.check_jobs()?;
        self.check_points(map_workers)
    }

    /// The spec's name, schedulers, repetitions and timeout.
    pub(super) fn check_run(&self) -> Result<(), KeyError> {
        let bad = |key: &str, problem: String| KeyError::new(key, problem);
        if common::ids::validate_file_name(&self.name).is_err() {
            return Err(bad(
                "name",
                format!(
                    "{:?} must be a plain name (letters, digits, -_.)",
                    self.name
                ),
            ));
        }
        if self.schedulers.is_empty() {
            return Err(bad("schedulers", "name at least one scheduler".into()));
        }
        self.schedulers()?;
        if self.repetitions == 0 {
            return Err(bad("repetitions", "must be at least 1".into()));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(bad(
                "timeout_s",
                format!("must be > 0 (got {})", self.timeout_s),
            ));
        }
        Ok(())
    }

    /// The cluster's workers, slots, roles, layout and replication;
    /// returns the number of workers holding data.
    pub(super) fn check_cluster(&self) -> Result<u32, KeyError> {
        let bad = |key: &str, problem: String| KeyError::new(key, problem);
        let c = &self.cluster;
        if c.workers == 0 || c.workers > 240 {
            return Err(bad(
                "cluster.workers",
                format!("must be 1..=240 (got {})", c.workers),
            ));
        }
        if c.slots == 0 {
            return Err(bad("cluster.slots", "must be at least 1".into()));
        }
        if c.reduce_workers >= c.workers {
            return Err(bad(
                "cluster.reduce_workers",
                format!(
                    "must leave at least one map worker: 0..{} (got {})",
                    c.workers, c.reduce_workers
                ),
            ));
        }
        if c.storage_workers > 0 {
            if c.reduce_workers > 0 {
                return Err(bad(
                    "cluster.storage_workers",
                    "not with cluster.reduce_workers: a layout's compute workers run maps and reduces".into(),
                ));
            }
            if c.storage_workers >= c.workers {
                return Err(bad(
                    "cluster.storage_workers",
                    format!(
                        "must leave at least one compute worker: 0..{} (got {})",
                        c.workers, c.storage_workers
                    ),
                ));
            }
        }
        for (i, p) in self.points.iter().enumerate() {
            if p.layout.is_some() && c.storage_workers == 0 {
                return Err(bad(
                    &format!("points[{i}].layout"),
                    "needs cluster.storage_workers".into(),
                ));
            }
        }
        // Workers holding data: under either layout as many as the
        // smaller side (co-located: the compute workers; separate: the
        // storage workers).
        let map_workers = if c.storage_workers > 0 {
            c.storage_workers.min(c.workers - c.storage_workers)
        } else {
            c.workers - c.reduce_workers
        };
        if c.replication == 0 || c.replication > map_workers {
            return Err(bad(
                "cluster.replication",
                format!(
                    "must be 1..={map_workers}, the workers holding data (got {})",
                    c.replication
                ),
            ));
        }
        if let Err((key, problem)) = c.speculation.check() {
            return Err(bad(&format!("cluster.{key}"), problem));
        }
        if let Some(r) = c.output_replication {
            if r == 0 || r > map_workers + 1 {
                return Err(bad(
                    "cluster.output_replication",
                    format!(
                        "must be 1..={}, the reducer and the workers holding data (got {r})",
                        map_workers + 1
                    ),
                ));
            }
        }
        Ok(map_workers)
    }

    /// Where the jobs and their data come from: a trace, a job mix, or
    /// the files and blocks of one workload.
    pub(super) fn check_inputs(&self) -> Result<(), KeyError> {
        let bad = |key: &str, problem: String| KeyError::new(key, problem);
        let mix = !self.jobs.mix.is_empty();
        let trace = self.trace.is_some();
        if trace {
            for (key, set) in [
                ("jobs.mix", mix),
                ("data.files", self.data.files.is_some()),
                ("data.blocks", self.data.blocks.is_some()),
                ("jobs.workload", self.jobs.workload.is_some()),
                ("jobs.reduces", self.jobs.reduces.is_some()),
                ("jobs.reduce_fraction", self.jobs.reduce_fraction.is_some()),
                ("jobs.arrival_s", self.jobs.arrival_s != [0.0, 0.0]),
            ] {
                if set {
                    return Err(bad(
                        key,
                        "not allowed with [trace] (the trace gives the files, the jobs' workloads and reduces, and their submit times)".into(),
                    ));
                }
            }
            self.points_leave_counts("[trace]")?;
            if self.jobs.count == 0 {
                return Err(bad(
                    "jobs.count",
                    "with [trace]: the most jobs of the hour to run (the first ones), at least 1"
                        .into(),
                ));
            }
        }
        if mix {
            for (key, set) in [
                ("data.files", self.data.files.is_some()),
                ("data.blocks", self.data.blocks.is_some()),
                ("jobs.workload", self.jobs.workload.is_some()),
                ("jobs.reduces", self.jobs.reduces.is_some()),
            ] {
                if set {
                    return Err(bad(
                        key,
                        "not allowed with jobs.mix (each class names its workload, maps and reduces, and reads its own file)".into(),
                    ));
                }
            }
            self.points_leave_counts("jobs.mix")?;
            // In u64: a count near u32::MAX must be refused, not overflow.
            let total: u64 = self.jobs.mix.iter().map(|m| u64::from(m.count)).sum();
            if total != u64::from(self.jobs.count) {
                return Err(bad(
                    "jobs.count",
                    format!(
                        "must equal the sum of jobs.mix counts ({total}) (got {})",
                        self.jobs.count
                    ),
                ));
            }
            for (i, m) in self.jobs.mix.iter().enumerate() {
                if m.maps == 0 || m.count == 0 {
                    return Err(bad(
                        &format!("jobs.mix[{i}]"),
                        format!(
                            "needs count >= 1 and maps >= 1 (got count {}, maps {})",
                            m.count, m.maps
                        ),
                    ));
                }
                match m.reduces {
                    Some(_) if !m.workload.has_reduce() => {
                        return Err(bad(
                            &format!("jobs.mix[{i}].reduces"),
                            format!("{} is map-only", m.workload),
                        ))
                    }
                    Some(0) => {
                        return Err(bad(
                            &format!("jobs.mix[{i}].reduces"),
                            "must be at least 1".into(),
                        ))
                    }
                    _ => {}
                }
            }
        }
        if !mix && !trace {
            for (key, v) in [
                ("data.files", self.data.files),
                ("data.blocks", self.data.blocks),
            ] {
                if v.is_none() {
                    return Err(bad(key, "required unless jobs.mix is set".into()));
                }
            }
        }
        Ok(())
    }

    /// The jobs' background, arrivals, task times, deadlines, reduces,
    /// QoS deadlines and the public instances.
    pub(super) fn check_jobs(&self) -> Result<(), KeyError> {
        let bad = |key: &str, problem: String| KeyError::new(key, problem);
        if let Some(b) = &self.background {
            b.validate().map_err(|(k, p)| bad(&k, p))?;
        }
        let [a, b] = self.jobs.arrival_s;
        if !(a.is_finite() && b.is_finite() && 0.0 <= a && a <= b) {
            return Err(bad(
                "jobs.arrival_s",
                format!("must be [a, b] seconds with 0 <= a <= b (got [{a}, {b}])"),
            ));
        }
        if let Some([a, b]) = self.jobs.task_time_s {
            let max = common::wire::TaskCompute::MAX_MS as f64 / 1000.0;
            if !(a.is_finite() && b.is_finite() && 0.0 <= a && a <= b && b <= max) {
                return Err(bad(
                    "jobs.task_time_s",
                    format!("must be [a, b] seconds with 0 <= a <= b <= {max} (got [{a}, {b}])"),
                ));
            }
        }
        if self.jobs.deadline_s.is_some() && !self.jobs.deadlines_s.is_empty() {
            return Err(bad(
                "jobs.deadlines_s",
                "gives each job its deadline: not with jobs.deadline_s".into(),
            ));
        }
        let mut probe = common::wire::JobSubmit::new(Workload::InputSink, "x");
        probe.deadline_s = self.jobs.deadline_s;
        probe.budget = self.jobs.budget;
        if let Err(e) = probe.check_qos() {
            return Err(bad("jobs", e));
        }
        for (i, d) in self.jobs.deadlines_s.iter().enumerate() {
            probe.deadline_s = Some(*d);
            if let Err(e) = probe.check_qos() {
                return Err(bad(&format!("jobs.deadlines_s[{i}]"), e));
            }
        }
        if let Some(f) = self.jobs.reduce_fraction {
            if !(f.is_finite() && f > 0.0 && f <= 10.0) || self.jobs.reduces.is_some() {
                return Err(bad(
                    "jobs.reduce_fraction",
                    format!("must be in (0, 10], and not with `reduces` (got {f})"),
                ));
            }
        }
        if self
            .jobs
            .qos_deadlines_s
            .iter()
            .any(|d| !(d.is_finite() && *d > 0.0))
        {
            return Err(bad("jobs.qos_deadlines_s", "must be seconds > 0".into()));
        }
        common::public::check(
            self.public.as_ref(),
            &self.public_type,
            self.cluster.slot_rate_mbs.is_some(),
        )?;
        Ok(())
    }

    /// Each point's counts, heartbeat, replication and rates.
    pub(super) fn check_points(&self, map_workers: u32) -> Result<(), KeyError> {
        let bad = |key: &str, problem: String| KeyError::new(key, problem);
        let (mix, trace) = (!self.jobs.mix.is_empty(), self.trace.is_some());
        for (i, p) in self.points()?.iter().enumerate() {
            let key = |k: &str| format!("points[{i}].{k}");
            if !mix && !trace && (p.files == 0 || p.blocks == 0 || p.jobs == 0) {
                return Err(bad(&key("files/blocks/jobs"), "must be at least 1".into()));
            }
            if !(10..=60_000).contains(&p.heartbeat_ms) {
                return Err(bad(
                    &key("heartbeat_ms"),
                    format!("must be 10..=60000 ms (got {})", p.heartbeat_ms),
                ));
            }
            if let Some(t) = self.cluster.worker_timeout_ms {
                if t < 2 * p.heartbeat_ms || t > 3_600_000 {
                    return Err(bad(
                        "cluster.worker_timeout_ms",
                        format!(
                            "must be at least two heartbeats ({} ms at {}) and at most an hour (got {t})",
                            2 * p.heartbeat_ms,
                            p.label
                        ),
                    ));
                }
            }
            if p.replication == 0 || p.replication > map_workers {
                return Err(bad(
                    &key("replication"),
                    format!("must be 1..={map_workers} (got {})", p.replication),
                ));
            }
            // The cluster config's own range, so a spec that would fail at
            // every run's start fails here, before any run.
            use common::config::{MAX_RATE, MIN_RATE};
            for (k, v) in [
                ("nic_mbps", p.nic_mbps),
                ("slot_rate_mbs", p.slot_rate_mbs),
                ("disk_mbs", p.disk_mbs),
                ("storage_nic_mbps", p.storage_nic_mbps),
                ("rack_link_mbps", p.rack_link_mbps),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && (MIN_RATE..=MAX_RATE).contains(&v)) {
                        return Err(bad(
                            &key(k),
                            format!("must be a number in [{MIN_RATE}, {MAX_RATE}] (got {v})"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
