//! Experiment specs: `experiments/<name>.toml`. One spec names the cluster,
//! the data, the background load, the jobs and their arrivals, the
//! schedulers to compare, the parameter points and the repetitions. Parsed
//! strictly: an unknown key or a bad value is an error naming the file and
//! the key.

use crate::ops::loader::{parse_size, Generator};
use common::config::BackgroundConfig;
use common::placement::Placement;
use common::tomlfile::{self, FileError, KeyError, TomlFile};
use sched::policy::{JobOrder, SchedulerConfig};
use sched::reduce::ReducePlacement;
use serde::{Deserialize, Serialize};
use std::path::Path;
use workloads::Workload;

mod check;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Seeds data, placement, background load, arrivals and schedulers.
    /// Repetition r uses seed + r.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default = "one_rep")]
    pub repetitions: u32,
    /// Per-run limit in seconds; a run over it is recorded as failed.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// The policies to compare, in this order (the first is the baseline of
    /// the slowdown column): a name or inline TOML accepted by
    /// `--scheduler`, or `{ label = "...", scheduler = "..." }`.
    pub schedulers: Vec<SchedulerEntry>,
    /// Job order as a factor apart from placement: every entry of
    /// `schedulers` (a placement) runs once per order, labelled
    /// `<label>/<order>`, and the summary separates the two main effects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridSpec>,
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub background: Option<BackgroundConfig>,
    pub data: DataSpec,
    pub jobs: JobsSpec,
    /// Parameter points; each overrides some of cluster/data/jobs. None = one
    /// point with the values above.
    #[serde(default)]
    pub points: Vec<PointSpec>,
    /// Free text for summary.md: scale factors and how to compare with the paper.
    #[serde(default)]
    pub notes: String,
    /// The public cloud (as cluster.toml's `[public]` and
    /// `[[public_type]]`): instances `mrosa` and `coshic` may rent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<common::public::PublicSection>,
    #[serde(rename = "public_type", default, skip_serializing_if = "Vec::is_empty")]
    pub public_type: Vec<common::public::PublicType>,
    /// A production trace as the workload (`[trace]`: SWIM's format; see
    /// [`super::trace`]) instead of `data.files`/`blocks` and generated
    /// arrivals: its files, jobs and submit times, scaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<lab::swim::TraceSpec>,
    /// The trace's rows, read when the spec was located (or why not).
    #[serde(skip)]
    swim: Option<Result<std::sync::Arc<Vec<lab::swim::SwimJob>>, String>>,
}

fn one() -> u64 {
    1
}

fn one_rep() -> u32 {
    1
}

fn default_timeout() -> f64 {
    900.0
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum SchedulerEntry {
    Plain(String),
    Labelled {
        label: String,
        scheduler: String,
        /// Reduce placement for this scheduler's runs (cluster.toml's
        /// `reduce_placement`); absent = the spec's `cluster.reduce_placement`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reduces: Option<String>,
        /// With `[grid]`: false runs this entry once, as written, beside
        /// the grid (a policy's own order that no other placement has).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        grid: bool,
    },
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `[grid]`: the job orders every scheduler entry runs under.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    /// `fifo`, `fair`, `shortest-remaining`, `deadline`.
    pub orders: Vec<JobOrder>,
}

/// Where a scheduler sits in the order x placement grid.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GridCell {
    /// The entry's label: the placement.
    pub placement: String,
    pub order: JobOrder,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    pub workers: u32,
    pub slots: u32,
    /// NIC rate per worker and direction, Mbit/s; absent = unlimited.
    #[serde(default)]
    pub nic_mbps: Option<f64>,
    /// Compute pacing per slot, MB/s; absent = off.
    #[serde(default)]
    pub slot_rate_mbs: Option<f64>,
    /// An emulated disk per worker, MB/s (cluster.toml's `disk_mbs`);
    /// absent = off.
    #[serde(default)]
    pub disk_mbs: Option<f64>,
    pub replication: u32,
    /// Replicas of job output (cluster.toml's `output_replication`);
    /// absent = each point's `replication`.
    #[serde(default)]
    pub output_replication: Option<u32>,
    #[serde(default = "default_heartbeat")]
    pub heartbeat_ms: u64,
    /// Workers also heartbeat at once when a task ends (cluster.toml's
    /// `out_of_band_heartbeat`); false = only every `heartbeat_ms`.
    #[serde(default = "yes")]
    pub out_of_band_heartbeat: bool,
    /// Silence after which the master declares a worker lost (cluster.toml's
    /// `worker_timeout_ms`); absent = 50 heartbeats, at least 5 s. A slow
    /// shared link that delays heartbeats behind block transfers needs
    /// more (Hadoop's TaskTracker expiry is 10 minutes).
    #[serde(default)]
    pub worker_timeout_ms: Option<u64>,
    /// The last this many workers run only reduces, the others only maps
    /// (and hold the data); 0 = every worker does both.
    #[serde(default)]
    pub reduce_workers: u32,
    /// Where reduces run (cluster.toml's `reduce_placement`); default
    /// `policy`: EAS's Algorithm 3 for `eas`, `spread` for the others.
    #[serde(default, skip_serializing_if = "ReducePlacement::is_policy")]
    pub reduce_placement: ReducePlacement,
    /// The last this many workers are storage nodes for the points'
    /// `layout`: with `separate` they hold every block and run no task
    /// while the others run every task and hold nothing (Guo et al.'s
    /// HPC-style deployment); with `co-located` they are left out (role
    /// `spare`) and the others both hold the data and run the tasks.
    #[serde(default)]
    pub storage_workers: u32,
    /// Racks of consecutive workers (w1.. first), sizes differing by at
    /// most one, named `/r1`, `/r2`, ...; 1 (default) = no rack set.
    #[serde(default = "one_rack")]
    pub racks: u32,
    /// Each rack's link to the core, Mbit/s per direction (cluster.toml's
    /// `rack_link_mbps`; needs racks >= 2 and `--deployment netns`).
    #[serde(default)]
    pub rack_link_mbps: Option<f64>,
    /// Keep the master's decision record in every run (cluster.toml's
    /// `master.decisions`): written as `decisions/<point>-<scheduler>-r<rep>.csv.gz`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decisions: bool,
    /// Speculative execution in every run (cluster.toml's `[speculation]`);
    /// absent = off, as in the papers' Hadoop set-ups.
    #[serde(default, skip_serializing_if = "is_off")]
    pub speculation: sched::speculation::Speculation,
}

fn is_off(s: &sched::speculation::Speculation) -> bool {
    *s == sched::speculation::Speculation::default()
}

fn one_rack() -> u32 {
    1
}

/// Where a point's data lives relative to its tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// The workers that run tasks hold the data (Hadoop's usual layout).
    #[default]
    CoLocated,
    /// Compute workers hold nothing; `cluster.storage_workers` hold it all.
    Separate,
}

fn default_heartbeat() -> u64 {
    100
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    #[serde(default = "default_kind")]
    pub kind: Generator,
    /// Number of input files; jobs read them round-robin. Required unless
    /// `jobs.mix` is set (then each job has its own file).
    #[serde(default)]
    pub files: Option<u32>,
    /// Blocks per file. Required unless `jobs.mix` is set.
    #[serde(default)]
    pub blocks: Option<u32>,
    /// e.g. "8MiB", "1MB".
    pub block_size: String,
    /// Replica placement: `random` (default) or `even` (every map worker
    /// holds the same share of each file).
    #[serde(default)]
    pub placement: Placement,
}

fn default_kind() -> Generator {
    Generator::Text
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsSpec {
    /// Jobs per run (with `mix`: must equal the sum of the mix's counts).
    pub count: u32,
    /// The workload of every job (default input-sink); not with `mix`.
    #[serde(default)]
    pub workload: Option<Workload>,
    /// Reduces per job (wordcount, sort); absent = the workload's default.
    /// Not with `mix` (each class sets its own).
    #[serde(default)]
    pub reduces: Option<u32>,
    /// Reduces per map instead of `reduces` (MROSA: 25% of the maps),
    /// rounded, at least 1.
    #[serde(default)]
    pub reduce_fraction: Option<f64>,
    /// A mix of job classes instead of `workload` (EAS Table 1): each job
    /// reads its own file of `maps` blocks (text for wordcount, records for
    /// sort); the classes are interleaved in a seeded order.
    #[serde(default)]
    pub mix: Vec<JobClass>,
    /// Arrival times uniform in [a, b] seconds after the run starts
    /// (seeded); [0, 0] submits every job at once.
    #[serde(default)]
    pub arrival_s: [f64; 2],
    /// Emulated compute per map task in seconds, uniform in [a, b], seeded
    /// per run, job and task (the same for every scheduler), on top of
    /// reading and pacing. Absent = none.
    #[serde(default)]
    pub task_time_s: Option<[f64; 2]>,
    /// Every job's deadline, seconds after its submission (MROSA's D_i).
    #[serde(default)]
    pub deadline_s: Option<f64>,
    /// Deadlines by job, instead of `deadline_s`: the i-th job submitted
    /// (0-based) has `deadlines_s[i % len]`, so jobs of one size can rank
    /// differently under MROSA's equation 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deadlines_s: Vec<f64>,
    /// Every job's public-cloud budget (MROSA's C_i).
    #[serde(default)]
    pub budget: Option<f64>,
    /// Deadlines, seconds, at which the summary counts each run's QoS
    /// satisfaction from its jobs' JCTs (MROSA's Fig 4).
    #[serde(default)]
    pub qos_deadlines_s: Vec<f64>,
}

impl JobsSpec {
    /// The deadline of the `i`-th job submitted (0-based), if any.
    pub fn deadline_of(&self, i: usize) -> Option<f64> {
        match self.deadlines_s.len() {
            0 => self.deadline_s,
            n => Some(self.deadlines_s[i % n]),
        }
    }

    /// The workload of every job when there is no mix.
    pub fn workload(&self) -> Workload {
        self.workload.unwrap_or(Workload::InputSink)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobClass {
    pub workload: Workload,
    pub count: u32,
    /// Map tasks = input blocks.
    pub maps: u32,
    #[serde(default)]
    pub reduces: Option<u32>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointSpec {
    pub label: String,
    pub block_size: Option<String>,
    pub blocks: Option<u32>,
    pub files: Option<u32>,
    pub jobs: Option<u32>,
    pub nic_mbps: Option<f64>,
    pub slot_rate_mbs: Option<f64>,
    pub replication: Option<u32>,
    /// Overrides `background.duration_s` at this point (needs a
    /// `[background]` section).
    pub background_s: Option<[f64; 2]>,
    /// Override `cluster.heartbeat_ms` / `cluster.out_of_band_heartbeat`.
    pub heartbeat_ms: Option<u64>,
    pub out_of_band_heartbeat: Option<bool>,
    /// Overrides `cluster.disk_mbs`; 0 = no emulated disk at this point.
    pub disk_mbs: Option<f64>,
    /// Where the data lives (needs `cluster.storage_workers`).
    pub layout: Option<Layout>,
    /// NIC rate of each storage worker, Mbit/s, with `layout =
    /// "separate"`: the link between storage and compute (a cross-cluster
    /// link); absent = `nic_mbps` like every worker.
    pub storage_nic_mbps: Option<f64>,
    /// Override `cluster.racks` / `cluster.rack_link_mbps` (0 = unlimited).
    pub racks: Option<u32>,
    pub rack_link_mbps: Option<f64>,
}

/// One fully resolved parameter point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub label: String,
    pub block_bytes: u64,
    pub blocks: u32,
    pub files: u32,
    pub jobs: u32,
    pub nic_mbps: Option<f64>,
    pub slot_rate_mbs: Option<f64>,
    pub replication: u32,
    /// The background load at this point, if any.
    pub background: Option<BackgroundConfig>,
    pub heartbeat_ms: u64,
    pub out_of_band_heartbeat: bool,
    /// The emulated disk per worker, MB/s; `None` = none.
    pub disk_mbs: Option<f64>,
    pub layout: Layout,
    pub storage_nic_mbps: Option<f64>,
    pub racks: u32,
    pub rack_link_mbps: Option<f64>,
}

impl Point {
    /// The shuffle over this point's NICs in the simulator
    /// ([`lab::replay::ShuffleNet`]): each link's rate, each way, and the
    /// output copies beyond a reduce's own (`cluster.output_replication`,
    /// else the point's replication). None without a NIC rate.
    pub fn shuffle_net(&self, spec: &Spec) -> Option<lab::replay::ShuffleNet> {
        self.nic_mbps.map(|mbps| lab::replay::ShuffleNet {
            // Mbit/s to bytes per ms.
            link_bpms: mbps * 1e6 / 8.0 / 1e3,
            extra_copies: spec
                .cluster
                .output_replication
                .unwrap_or(self.replication)
                .saturating_sub(1),
        })
    }

    /// The rack of worker `i` (0-based) of `workers`; None on one rack.
    pub fn rack(&self, i: u32, workers: u32) -> Option<String> {
        (self.racks > 1).then(|| {
            let k = i as u64 * self.racks as u64 / workers as u64;
            format!("/r{}", k + 1)
        })
    }
}

/// A scheduler to compare, with the label tables and plots show.
#[derive(Clone, Debug, Serialize)]
pub struct NamedScheduler {
    pub label: String,
    pub config: SchedulerConfig,
    /// As the runs' cluster.toml gets it (may be `policy`).
    pub reduces: ReducePlacement,
    /// Its cell, when the spec has `[grid]` and this is one of its runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridCell>,
}

impl NamedScheduler {
    /// The policy with its parameters, and its reduce placement when that
    /// is not the policy's own (`eas(reduces=spread)`).
    pub fn policy_label(&self) -> String {
        let own = ReducePlacement::Policy.resolve(&self.config);
        let used = self.reduces.resolve(&self.config);
        if used == own {
            self.config.label()
        } else {
            format!("{}(reduces={})", self.config.label(), used.name())
        }
    }
}

/// Why an experiment spec could not be taken: the file, the key, the problem.
pub type SpecError = FileError;

impl Spec {
    /// Reads, parses and validates a spec; returns it and its text.
    pub fn load(path: &Path) -> Result<(Spec, String), SpecError> {
        tomlfile::load(path)
    }

    /// Parses and validates `text` as if read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
        tomlfile::parse(text, path)
    }

    /// The workers' names that run maps and that run reduces (every worker
    /// does both unless `cluster.reduce_workers` dedicates the last ones,
    /// or `cluster.storage_workers` sets the last ones apart).
    pub fn machines(&self) -> (Vec<String>, Vec<String>) {
        let c = &self.cluster;
        let all: Vec<String> = (1..=c.workers).map(|i| format!("w{i}")).collect();
        if c.storage_workers > 0 {
            let compute = all[..(c.workers - c.storage_workers) as usize].to_vec();
            return (compute.clone(), compute);
        }
        if c.reduce_workers == 0 {
            return (all.clone(), all);
        }
        let split = (c.workers - c.reduce_workers) as usize;
        (all[..split].to_vec(), all[split..].to_vec())
    }

    /// The role of worker `i` (0-based) at `point`.
    pub fn role(&self, point: &Point, i: u32) -> Option<common::config::Role> {
        use common::config::Role;
        let c = &self.cluster;
        if c.storage_workers > 0 {
            let storage = i >= c.workers - c.storage_workers;
            return Some(match (point.layout, storage) {
                (Layout::CoLocated, false) => Role::Both,
                (Layout::CoLocated, true) => Role::Spare,
                (Layout::Separate, false) => Role::ComputeAll,
                (Layout::Separate, true) => Role::Storage,
            });
        }
        (c.reduce_workers > 0).then(|| {
            if i >= c.workers - c.reduce_workers {
                Role::Reduce
            } else {
                Role::Map
            }
        })
    }

    /// The NIC cap of worker `i` (0-based) at `point` where it differs
    /// from the point's `nic_mbps`.
    pub fn nic_mbps(&self, point: &Point, i: u32) -> Option<f64> {
        let c = &self.cluster;
        (c.storage_workers > 0 && i >= c.workers - c.storage_workers)
            .then_some(point.storage_nic_mbps)
            .flatten()
    }

    /// The schedulers with their labels.
    /// An error names the entry (`schedulers[1]`).
    pub fn schedulers(&self) -> Result<Vec<NamedScheduler>, KeyError> {
        if let Some(g) = &self.grid {
            if g.orders.is_empty() {
                return Err(KeyError::new("grid.orders", "names no order"));
            }
            let mut seen = Vec::new();
            for o in &g.orders {
                if seen.contains(o) {
                    return Err(KeyError::new(
                        "grid.orders",
                        format!("names {} twice", o.name()),
                    ));
                }
                seen.push(*o);
            }
        }
        let mut out: Vec<NamedScheduler> = Vec::new();
        for (i, e) in self.schedulers.iter().enumerate() {
            let key = || format!("schedulers[{i}]");
            let (label, text, reduces, in_grid) = match e {
                SchedulerEntry::Plain(s) => (None, s, None, true),
                SchedulerEntry::Labelled {
                    label,
                    scheduler,
                    reduces,
                    grid,
                } => (Some(label.clone()), scheduler, reduces.as_deref(), *grid),
            };
            let config: SchedulerConfig = text.parse().map_err(|e| KeyError::new(key(), e))?;
            let reduces = match reduces {
                None => self.cluster.reduce_placement,
                Some(r) => r
                    .parse()
                    .map_err(|e| KeyError::new(format!("{}.reduces", key()), e))?,
            };
            let label = label.unwrap_or_else(|| config.label());
            let runs: Vec<(String, SchedulerConfig, Option<GridCell>)> = match &self.grid {
                Some(g) if in_grid => g
                    .orders
                    .iter()
                    .map(|&order| {
                        let c = config
                            .with_order(order)
                            .map_err(|e| KeyError::new(key(), e))?;
                        let cell = GridCell {
                            placement: label.clone(),
                            order,
                        };
                        Ok((format!("{label}/{}", order.name()), c, Some(cell)))
                    })
                    .collect::<Result<_, KeyError>>()?,
                _ => vec![(label, config, None)],
            };
            for (label, config, grid) in runs {
                if out.iter().any(|n| n.label == label) {
                    return Err(KeyError::new(
                        key(),
                        format!("two schedulers are labelled {label:?}"),
                    ));
                }
                out.push(NamedScheduler {
                    label,
                    config,
                    reduces,
                    grid,
                });
            }
        }
        Ok(out)
    }

    /// The resolved parameter points.
    pub fn points(&self) -> Result<Vec<Point>, KeyError> {
        let size = |s: &str, key: String| match parse_size(s) {
            Ok(0) => Err(KeyError::new(
                key,
                "a block must hold at least one byte (got 0)",
            )),
            Ok(b) => Ok(b),
            Err(e) => Err(KeyError::new(key, e.to_string())),
        };
        let base = Point {
            label: "default".into(),
            block_bytes: size(&self.data.block_size, "data.block_size".into())?,
            blocks: self.data.blocks.unwrap_or(0),
            files: self.data.files.unwrap_or(1),
            jobs: self.jobs.count,
            nic_mbps: self.cluster.nic_mbps,
            slot_rate_mbs: self.cluster.slot_rate_mbs,
            replication: self.cluster.replication,
            background: self.background.clone(),
            heartbeat_ms: self.cluster.heartbeat_ms,
            out_of_band_heartbeat: self.cluster.out_of_band_heartbeat,
            disk_mbs: self.cluster.disk_mbs,
            layout: Layout::CoLocated,
            storage_nic_mbps: None,
            racks: self.cluster.racks,
            rack_link_mbps: self.cluster.rack_link_mbps,
        };
        if self.points.is_empty() {
            check_racks(&base, self.cluster.workers, "cluster")?;
            return self.with_trace(vec![base]);
        }
        let mut out: Vec<Point> = Vec::new();
        for (i, p) in self.points.iter().enumerate() {
            if out.iter().any(|o| o.label == p.label) {
                return Err(KeyError::new(
                    format!("points[{i}].label"),
                    format!("{:?} is used twice", p.label),
                ));
            }
            out.push(Point {
                label: p.label.clone(),
                block_bytes: match &p.block_size {
                    Some(s) => size(s, format!("points[{i}].block_size"))?,
                    None => base.block_bytes,
                },
                blocks: p.blocks.unwrap_or(base.blocks),
                files: p.files.unwrap_or(base.files),
                layout: p.layout.unwrap_or(base.layout),
                storage_nic_mbps: match p.storage_nic_mbps {
                    None => None,
                    Some(_) if p.layout != Some(Layout::Separate) => {
                        return Err(KeyError::new(
                            format!("points[{i}].storage_nic_mbps"),
                            "goes with layout = \"separate\" (the storage workers' link)",
                        ))
                    }
                    Some(m) if m.is_finite() && m > 0.0 => Some(m),
                    Some(m) => {
                        return Err(KeyError::new(
                            format!("points[{i}].storage_nic_mbps"),
                            format!("must be > 0 (got {m})"),
                        ))
                    }
                },
                racks: p.racks.unwrap_or(base.racks),
                rack_link_mbps: match p.rack_link_mbps {
                    None => base.rack_link_mbps,
                    Some(0.0) => None,
                    Some(m) => Some(m),
                },
                jobs: p.jobs.unwrap_or(base.jobs),
                nic_mbps: p.nic_mbps.or(base.nic_mbps),
                slot_rate_mbs: p.slot_rate_mbs.or(base.slot_rate_mbs),
                replication: p.replication.unwrap_or(base.replication),
                heartbeat_ms: p.heartbeat_ms.unwrap_or(base.heartbeat_ms),
                out_of_band_heartbeat: p
                    .out_of_band_heartbeat
                    .unwrap_or(base.out_of_band_heartbeat),
                disk_mbs: match p.disk_mbs {
                    None => base.disk_mbs,
                    Some(0.0) => None,
                    Some(d) if d.is_finite() && d > 0.0 => Some(d),
                    Some(d) => {
                        return Err(KeyError::new(
                            format!("points[{i}].disk_mbs"),
                            format!("must be > 0, or 0 for no disk (got {d})"),
                        ))
                    }
                },
                background: match (p.background_s, &base.background) {
                    (None, b) => b.clone(),
                    (Some(d), Some(b)) => {
                        let b = BackgroundConfig {
                            duration_s: d,
                            ..b.clone()
                        };
                        b.validate().map_err(|(_, e)| {
                            KeyError::new(format!("points[{i}].background_s"), e)
                        })?;
                        Some(b)
                    }
                    (Some(_), None) => {
                        return Err(KeyError::new(
                            format!("points[{i}].background_s"),
                            "needs a [background] section to override",
                        ))
                    }
                },
            });
            let at = |k: &str| {
                if self.points[i].racks.is_some() && k == "racks"
                    || self.points[i].rack_link_mbps.is_some() && k == "rack_link_mbps"
                {
                    format!("points[{i}]")
                } else {
                    "cluster".into()
                }
            };
            check_racks(out.last().expect("pushed"), self.cluster.workers, "")
                .map_err(|e| KeyError::new(format!("{}.{}", at(&e.key), e.key), e.problem))?;
        }
        self.with_trace(out)
    }

    /// With `[trace]`: each point's jobs and files are its trace sample's
    /// (blocks: the largest file's).
    fn with_trace(&self, mut points: Vec<Point>) -> Result<Vec<Point>, KeyError> {
        for p in &mut points {
            if let Some(plan) = self.trace_plan(p.block_bytes)? {
                p.jobs = plan.jobs.len() as u32;
                p.files = plan.files.len() as u32;
                p.blocks = plan.files.iter().map(|f| f.blocks).max().unwrap_or(0);
            }
        }
        Ok(points)
    }
}

/// A point's racks: 1..=workers, and a rack link only across racks. The
/// error's key is the field alone (the caller says where).
fn check_racks(p: &Point, workers: u32, under: &str) -> Result<(), KeyError> {
    let key = |k: &str| {
        if under.is_empty() {
            k.to_owned()
        } else {
            format!("{under}.{k}")
        }
    };
    if p.racks == 0 || p.racks > workers {
        return Err(KeyError::new(
            key("racks"),
            format!("must be 1..={workers}, the workers (got {})", p.racks),
        ));
    }
    if let Some(m) = p.rack_link_mbps {
        if !(m.is_finite() && m > 0.0) {
            return Err(KeyError::new(
                key("rack_link_mbps"),
                format!("must be > 0, or 0 for none at a point (got {m})"),
            ));
        }
        if p.racks < 2 {
            return Err(KeyError::new(
                key("rack_link_mbps"),
                "a rack link needs racks >= 2".to_owned(),
            ));
        }
    }
    Ok(())
}

impl Spec {
    /// No point sets `files`, `blocks` or `jobs` (`with` gives them).
    fn points_leave_counts(&self, with: &str) -> Result<(), KeyError> {
        for (i, p) in self.points.iter().enumerate() {
            for (k, set) in [
                ("files", p.files.is_some()),
                ("blocks", p.blocks.is_some()),
                ("jobs", p.jobs.is_some()),
            ] {
                if set {
                    return Err(KeyError::new(
                        format!("points[{i}].{k}"),
                        format!("not allowed with {with}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl TomlFile for Spec {
    fn validate(&self) -> Result<(), KeyError> {
        self.check()
    }

    /// Reads `[trace]`'s file, relative to the spec's directory.
    fn located(&mut self, path: &Path) {
        if let Some(t) = &self.trace {
            let file = path.parent().unwrap_or(Path::new(".")).join(&t.file);
            self.swim = Some(lab::swim::read_swim(&file).map(std::sync::Arc::new));
        }
    }
}

impl Spec {
    /// The trace sample of `point` as files and jobs (None without
    /// `[trace]`): at most `jobs.count` jobs, files of the point's blocks.
    pub fn trace_plan(&self, block_bytes: u64) -> Result<Option<lab::swim::TracePlan>, KeyError> {
        let Some(t) = &self.trace else {
            return Ok(None);
        };
        let rows = match &self.swim {
            Some(Ok(rows)) => rows,
            Some(Err(e)) => return Err(KeyError::new("trace.file", e.clone())),
            None => {
                return Err(KeyError::new(
                    "trace.file",
                    "not read (the spec was not loaded from a file)",
                ))
            }
        };
        lab::swim::plan(rows, t, block_bytes, self.jobs.count)
            .map(Some)
            .map_err(|(k, p)| KeyError::new(k, p))
    }
}

#[cfg(test)]
mod tests;
