//! The scheduling policy and its parameters: one enum, read by serde from
//! `[scheduler]` in cluster.toml and from experiment specs, and by clap from
//! `--scheduler` (see [`FromStr`]). The implementations live in the `sched`
//! crate, `sched/src/policy/`, one file each, documented there.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Group weights for the fair policies: group name -> weight (any positive
/// numbers; they are normalised). Jobs name their group at submission
/// (`group`, default `default`); a group not listed has weight 1.
pub type Weights = BTreeMap<String, f64>;

/// Which pending task a data-remote launch takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RemotePick {
    /// A uniformly random pending task, from a random replica (Guo's dl-sched).
    #[default]
    Random,
    /// The oldest pending task, from its first replica (Hadoop 1.x's
    /// non-local task list, and the tie-break of DynDL's worked example).
    Oldest,
}

impl RemotePick {
    fn is_random(&self) -> bool {
        *self == RemotePick::Random
    }

    fn suffix(&self) -> &'static str {
        match self {
            RemotePick::Random => "",
            RemotePick::Oldest => ",oldest",
        }
    }
}

/// Where a job's reduces run once its maps are done. Reduces have no input
/// locality of their own (every reduce fetches from every map), so this
/// decides how the shuffle loads the workers' receive links and slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReducePlacement {
    /// The policy's own: `least-loaded` for EAS (its Algorithm 3),
    /// `spread` for every other policy.
    #[default]
    Policy,
    /// Every free slot of the worker that asks takes a waiting reduce,
    /// oldest job first (the testbed before reduce placement was a policy:
    /// one worker may take all of a job's reduces).
    FirstFree,
    /// At most one new reduce per worker per heartbeat, oldest job first,
    /// as Hadoop 1.x's JobQueueTaskScheduler and the Fair Scheduler assign
    /// them; and a worker that runs more reduces than another reduce-capable
    /// worker takes none for 3 s (out-of-band heartbeats would otherwise
    /// hand one worker every reduce): a job's reduces spread over the
    /// reduce-capable workers.
    Spread,
    /// EAS's Algorithm 3: when a job's maps are done, each of its reduces
    /// is pushed to the live reduce machine with the least reduce load
    /// (the estimated input bytes of the reduces queued or running there),
    /// and that load grows by the reduce's; each machine runs its queue in
    /// order as its slots free up.
    LeastLoaded,
    /// Where the job's map output already sits (Spark's reduce locality):
    /// a worker holding at least a fifth of the job's map output takes the
    /// job's reduces first, one per heartbeat; after 3 s, or when no live
    /// reduce-capable worker holds that much, any worker takes them.
    MostOutput,
}

impl ReducePlacement {
    pub const ALL: [ReducePlacement; 5] = [
        ReducePlacement::Policy,
        ReducePlacement::FirstFree,
        ReducePlacement::Spread,
        ReducePlacement::LeastLoaded,
        ReducePlacement::MostOutput,
    ];

    pub fn is_policy(&self) -> bool {
        *self == ReducePlacement::Policy
    }

    /// The kebab-case name, as cluster.toml and specs spell it.
    pub fn name(&self) -> &'static str {
        match self {
            ReducePlacement::Policy => "policy",
            ReducePlacement::FirstFree => "first-free",
            ReducePlacement::Spread => "spread",
            ReducePlacement::LeastLoaded => "least-loaded",
            ReducePlacement::MostOutput => "most-output",
        }
    }

    /// What `policy` means for `scheduler`; other values stand as they are.
    pub fn resolve(self, scheduler: &SchedulerConfig) -> ReducePlacement {
        match (self, scheduler) {
            (ReducePlacement::Policy, SchedulerConfig::Eas {}) => ReducePlacement::LeastLoaded,
            (ReducePlacement::Policy, _) => ReducePlacement::Spread,
            (other, _) => other,
        }
    }
}

impl FromStr for ReducePlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ReducePlacement::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                let known: Vec<&str> = ReducePlacement::ALL.iter().map(|p| p.name()).collect();
                format!("reduce placement {s:?} is not one of {}", known.join(", "))
            })
    }
}

/// The order in which an online policy visits jobs for a free slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobOrder {
    /// Submission order (Hadoop's FIFO; DynDLOn's default).
    Fifo,
    /// Fewest running tasks first, ties by submission (Zaharia's fair
    /// sharing; delay scheduling's default).
    Fair,
}

impl JobOrder {
    fn is_fifo(&self) -> bool {
        *self == JobOrder::Fifo
    }
    fn is_fair(&self) -> bool {
        *self == JobOrder::Fair
    }
}

/// Where DynDLOn's wait for a data-local task is measured from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaitClock {
    /// Per worker, from the first offer of a free slot that found no
    /// data-local task since the worker's last launch.
    #[default]
    Worker,
    /// Per core, from the core's last assignment, as Algorithm 1 writes it
    /// (`p.wait <- currentTime` on every launch): a core freed by a task
    /// that ran longer than the delay may go remote at once.
    Core,
}

impl WaitClock {
    fn is_worker(&self) -> bool {
        *self == WaitClock::Worker
    }
}

/// Where delay scheduling measures a job's wait for a data-local slot from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFrom {
    /// From the first time the job was skipped since its last data-local
    /// launch; once over the threshold it may launch remote tasks until it
    /// next launches a data-local one (Zaharia's `j.skipped` / level rule).
    #[default]
    FirstSkip,
    /// From the job's last launch of any task (or its submission): a job
    /// that has not launched for `threshold_s` takes the next free slot
    /// whether or not its data is there, and each launch restarts the clock.
    LastLaunch,
    /// Hadoop 1.x fair scheduler's accounting (`updateLocalityWaitTimes`):
    /// at every heartbeat, a job that was offered a slot and skipped at the
    /// previous heartbeat (from any worker) adds the time between the two to
    /// its wait; any launch resets the wait. Time in which the job is not
    /// offered a slot (every slot busy, or taken by a job ahead of it) does
    /// not count. After a remote launch it may launch remote tasks at once
    /// until it next launches a data-local one (Hadoop's rack level, all
    /// workers being on one rack).
    SkippedHeartbeats,
}

impl WaitFrom {
    fn is_first_skip(&self) -> bool {
        *self == WaitFrom::FirstSkip
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "policy", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SchedulerConfig {
    /// Hadoop's default (Guo's dl-sched): FIFO jobs; a data-local task of the
    /// head job, else a random task of it read remotely.
    Hadoop {
        #[serde(default, skip_serializing_if = "RemotePick::is_random")]
        pick: RemotePick,
    },
    /// Delay scheduling (Zaharia et al., EuroSys 2010): jobs in fair-sharing
    /// order (fewest running tasks first); a job without a data-local task
    /// for the free slot is skipped until it has waited `threshold_s`
    /// seconds. Presets: `delay3`, `delay6`, `delay10`.
    Delay {
        /// Seconds a job may be skipped before it launches remote tasks.
        threshold_s: f64,
        #[serde(default, skip_serializing_if = "RemotePick::is_random")]
        pick: RemotePick,
        /// Job order; `fifo` is an ablation (locality waits without fair
        /// sharing), labelled `delayN(fifo)`.
        #[serde(default = "defaults::fair", skip_serializing_if = "JobOrder::is_fair")]
        order: JobOrder,
        /// Where the wait is measured from: `first-skip` (default),
        /// `last-launch` or `skipped-heartbeats` (Hadoop 1.x's fair
        /// scheduler), labelled `delayN(last-launch)` and so on.
        #[serde(default, skip_serializing_if = "WaitFrom::is_first_skip")]
        wait_from: WaitFrom,
    },
    /// DynDL's online algorithm (DynDLOn, Algorithm 1).
    DyndlOn {
        /// W: the base delay in seconds a free slot waits for a data-local task.
        #[serde(default = "defaults::w_s")]
        w_s: f64,
        /// Seconds a data-remote task takes when it is alone on its worker;
        /// the data-remote cost is g(n) = remote_s * (1 + theta * min(n, slots)).
        #[serde(default)]
        remote_s: f64,
        /// θ, the network factor of g(n).
        #[serde(default = "defaults::theta")]
        theta: f64,
        /// The variant the paper ran for real: never start a second
        /// data-remote task on a worker already running one.
        #[serde(default = "defaults::yes")]
        one_remote: bool,
        #[serde(default, skip_serializing_if = "RemotePick::is_random")]
        pick: RemotePick,
        /// Where the wait is measured from: `worker` (default) or `core`
        /// (Algorithm 1 as written).
        #[serde(default, skip_serializing_if = "WaitClock::is_worker")]
        wait: WaitClock,
        /// Job order; `fair` is an ablation (DynDLOn's locality rule under
        /// delay scheduling's fair sharing).
        #[serde(default = "defaults::fifo", skip_serializing_if = "JobOrder::is_fifo")]
        order: JobOrder,
    },
    /// Guo et al.'s rand-sched: with probability `randomness` a free slot gets
    /// a random pending task of the head job, otherwise dl-sched's choice.
    Rand {
        /// r in [0, 1]; 0 is `hadoop`.
        randomness: f64,
    },
    /// Hadoop Fair Scheduler style: max-min fair shares across groups (by
    /// weight), then across the group's jobs; optional delay scheduling.
    Fair {
        /// Delay threshold in seconds; 0 launches remote tasks at once.
        #[serde(default)]
        delay_s: f64,
        #[serde(default)]
        weights: Weights,
    },
    /// Guo's lsap-sched: every idle slot and pending task at once, an
    /// assignment with the fewest data-remote tasks (maximum matching).
    Lsap {},
    /// Strict data locality (EAS's FIFO-S and HFS-S baselines): a free slot
    /// takes a data-local task of the first job that has one, in FIFO order
    /// or (`fair`) fair-sharing order; never a remote one.
    Strict {
        #[serde(default)]
        fair: bool,
        /// Look only at the first job of the order (the EAS paper's search,
        /// its line 255): a slot whose head job has nothing local here stays
        /// idle. Off: the first job with a local task takes the slot.
        #[serde(default, skip_serializing_if = "is_false")]
        head_only: bool,
    },
    /// EAS (IEICE 2013): load-balance-aware job selection; a selected job's
    /// maps are all placed at once on their least-loaded replica holder.
    Eas {},
    /// BAR's DS baseline, delay scheduling counted in scheduling
    /// opportunities: a free slot without a data-local task of the head job
    /// is skipped and a counter grows; once the counter exceeds
    /// `fraction` x the number of workers, the slot takes a random task
    /// remotely and the counter restarts. Presets `ds0.15`, `ds0.25`.
    Ds { fraction: f64 },
    /// BAR's GCC baseline (Good Cache Compute, Raicu et al.): a free slot
    /// without a data-local task is skipped while fewer than `idle_fraction`
    /// of the workers have a free slot; otherwise it takes a random task
    /// remotely.
    Gcc {
        #[serde(default = "defaults::idle_fraction")]
        idle_fraction: f64,
    },
    /// DynDLOff as a live policy: each new batch of pending tasks is planned
    /// at once from every slot's estimated free time (heartbeats report how
    /// long each busy slot has been busy; the mean finished map task gives
    /// the expected length), then launched slot by slot as planned.
    DyndlOff {
        /// θ of g(n) = 1 + θ·min(n, slots), in units of one local task.
        #[serde(default = "defaults::theta")]
        theta: f64,
        /// Plan again, from the slots as they are then, whenever a free slot
        /// has nothing planned while other workers still have tasks queued
        /// (at most every half task length). Off: a plan is fixed when made.
        #[serde(default)]
        replan: bool,
    },
    /// BAR as a live policy, planned like `dyndl-off`; remote cost
    /// 1 + q·r in units of one local task, r = all remote tasks of the plan.
    Bar {
        #[serde(default = "defaults::bar_q")]
        q: f64,
        /// As for `dyndl-off`.
        #[serde(default)]
        replan: bool,
    },
    /// MROSA (Mao et al.): jobs by QoS priority (equation 8), maps placed
    /// by the improved Max-Min on estimated finish times, those that would
    /// miss the job's deadline sent to the cheapest public instance type
    /// that meets it; a job no type can finish in time is refused.
    Mrosa {
        /// ρ, the weight of the budget against the deadline in the priority.
        #[serde(default = "defaults::rho")]
        rho: f64,
    },
    /// COSHIC (Van den Bossche et al., IEEE CLOUD 2010) as MROSA's paper
    /// uses it: a job runs wholly in the private cluster when it can meet
    /// its deadline there, else wholly on the cheapest set of instances of
    /// one type that meets it; earliest deadline first.
    Coshic {},
    /// Guo's lsap-fair-sched: assignment cost = fairness cost + data-locality cost.
    LsapFair {
        /// α: the data-locality cost of a data-remote assignment.
        #[serde(default = "defaults::alpha")]
        alpha: f64,
        /// β: a task beyond its group's slots-to-occupy costs β * w(group).
        #[serde(default = "defaults::beta")]
        beta: f64,
        #[serde(default)]
        weights: Weights,
    },
}

mod defaults {
    use super::JobOrder;
    pub fn fair() -> JobOrder {
        JobOrder::Fair
    }
    pub fn fifo() -> JobOrder {
        JobOrder::Fifo
    }
    pub fn w_s() -> f64 {
        3.0
    }
    pub fn theta() -> f64 {
        1.0
    }
    pub fn yes() -> bool {
        true
    }
    pub fn alpha() -> f64 {
        50.0
    }
    pub fn beta() -> f64 {
        200.0
    }
    pub fn idle_fraction() -> f64 {
        0.9
    }
    pub fn bar_q() -> f64 {
        0.1
    }
    pub fn rho() -> f64 {
        0.5
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig::hadoop()
    }
}

impl SchedulerConfig {
    /// `hadoop` with its defaults.
    pub fn hadoop() -> Self {
        SchedulerConfig::Hadoop {
            pick: RemotePick::Random,
        }
    }

    /// Delay scheduling with `threshold_s`, random remote picks.
    pub fn delay(threshold_s: f64) -> Self {
        SchedulerConfig::Delay {
            threshold_s,
            pick: RemotePick::Random,
            order: JobOrder::Fair,
            wait_from: WaitFrom::FirstSkip,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            SchedulerConfig::Hadoop { .. } => "hadoop",
            SchedulerConfig::Delay { .. } => "delay",
            SchedulerConfig::DyndlOn { .. } => "dyndl-on",
            SchedulerConfig::Rand { .. } => "rand",
            SchedulerConfig::Fair { .. } => "fair",
            SchedulerConfig::Lsap {} => "lsap",
            SchedulerConfig::Strict { fair: false, .. } => "fifo-s",
            SchedulerConfig::Strict { fair: true, .. } => "hfs-s",
            SchedulerConfig::Eas {} => "eas",
            SchedulerConfig::LsapFair { .. } => "lsap-fair",
            SchedulerConfig::Ds { .. } => "ds",
            SchedulerConfig::DyndlOff { .. } => "dyndl-off",
            SchedulerConfig::Bar { .. } => "bar",
            SchedulerConfig::Gcc { .. } => "gcc",
            SchedulerConfig::Mrosa { .. } => "mrosa",
            SchedulerConfig::Coshic {} => "coshic",
        }
    }

    /// The policy with its parameters, as reports and result tables show it.
    pub fn label(&self) -> String {
        self.label_with(false)
    }

    /// [`SchedulerConfig::label`] for a policy whose data-remote cost
    /// (DynDLOn's g, `dyndl-off`'s θ, `bar`'s q) the lab takes from each
    /// instance's cost model: that part reads `instance`.
    pub fn label_cost_from_instance(&self) -> String {
        self.label_with(true)
    }

    /// The keys the text [`FromStr`] takes sets explicitly (none for a
    /// name or preset; `policy` is one of them in the key-list form).
    pub fn keys_given(s: &str) -> Vec<String> {
        let s = s.trim();
        if !s.contains('=') {
            return Vec::new();
        }
        toml::from_str::<toml::Table>(&format!("s = {{ {s} }}"))
            .ok()
            .and_then(|t| t.get("s")?.as_table().map(|t| t.keys().cloned().collect()))
            .unwrap_or_default()
    }

    fn label_with(&self, cost_from_instance: bool) -> String {
        match self {
            SchedulerConfig::Hadoop { pick } => match pick {
                RemotePick::Random => "hadoop".into(),
                RemotePick::Oldest => "hadoop(oldest)".into(),
            },
            SchedulerConfig::Lsap {} | SchedulerConfig::Eas {} | SchedulerConfig::Coshic {} => {
                self.name().into()
            }
            SchedulerConfig::Mrosa { rho } => format!("mrosa(rho={})", fmt_num(*rho)),
            SchedulerConfig::Strict { head_only, .. } => {
                format!("{}{}", self.name(), if *head_only { "(head)" } else { "" })
            }
            SchedulerConfig::Delay {
                threshold_s,
                pick,
                order,
                wait_from,
            } => {
                let mut extra: Vec<&str> = Vec::new();
                match wait_from {
                    WaitFrom::FirstSkip => {}
                    WaitFrom::LastLaunch => extra.push("last-launch"),
                    WaitFrom::SkippedHeartbeats => extra.push("skipped-heartbeats"),
                }
                if *pick == RemotePick::Oldest {
                    extra.push("oldest");
                }
                if *order == JobOrder::Fifo {
                    extra.push("fifo");
                }
                if extra.is_empty() {
                    format!("delay{}", fmt_num(*threshold_s))
                } else {
                    format!("delay{}({})", fmt_num(*threshold_s), extra.join(","))
                }
            }
            SchedulerConfig::DyndlOn {
                w_s,
                remote_s,
                theta,
                one_remote,
                pick,
                wait,
                order,
            } => format!(
                "dyndl-on(W={}s,g={}{}{}{}{})",
                fmt_num(*w_s),
                if cost_from_instance {
                    "instance".to_owned()
                } else {
                    format!("{}s*(1+{}n)", fmt_num(*remote_s), fmt_num(*theta))
                },
                if *one_remote { ",one-remote" } else { "" },
                pick.suffix(),
                if *wait == WaitClock::Core {
                    ",per-core"
                } else {
                    ""
                },
                if *order == JobOrder::Fair {
                    ",fair"
                } else {
                    ""
                },
            ),
            SchedulerConfig::Rand { randomness } => format!("rand(r={})", fmt_num(*randomness)),
            SchedulerConfig::Fair { delay_s, .. } => format!("fair(delay={}s)", fmt_num(*delay_s)),
            SchedulerConfig::LsapFair { alpha, beta, .. } => {
                format!("lsap-fair(a={},b={})", fmt_num(*alpha), fmt_num(*beta))
            }
            SchedulerConfig::Ds { fraction } => format!("ds{}", fmt_num(*fraction)),
            SchedulerConfig::DyndlOff { theta, replan } => format!(
                "dyndl-off(theta={}{})",
                if cost_from_instance {
                    "instance".to_owned()
                } else {
                    fmt_num(*theta)
                },
                if *replan { ",replan" } else { "" }
            ),
            SchedulerConfig::Bar { q, replan } => format!(
                "bar(q={}{})",
                if cost_from_instance {
                    "instance".to_owned()
                } else {
                    fmt_num(*q)
                },
                if *replan { ",replan" } else { "" }
            ),
            SchedulerConfig::Gcc { idle_fraction } => format!("gcc({})", fmt_num(*idle_fraction)),
        }
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        let nonneg = |key: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "{}: `{key}` must be a finite number >= 0 (got {v})",
                    self.name()
                ))
            }
        };
        let weights = |w: &Weights| {
            for (g, v) in w {
                if !(v.is_finite() && *v > 0.0) {
                    return Err(format!(
                        "{}: weight of group {g:?} must be > 0 (got {v})",
                        self.name()
                    ));
                }
            }
            Ok(())
        };
        match self {
            SchedulerConfig::Hadoop { .. }
            | SchedulerConfig::Lsap {}
            | SchedulerConfig::Strict { .. }
            | SchedulerConfig::Coshic {}
            | SchedulerConfig::Eas {} => Ok(()),
            SchedulerConfig::Mrosa { rho } => {
                if (0.0..=1.0).contains(rho) {
                    Ok(())
                } else {
                    Err(format!("mrosa: `rho` must be in [0, 1] (got {rho})"))
                }
            }
            SchedulerConfig::Delay { threshold_s, .. } => nonneg("threshold_s", *threshold_s),
            SchedulerConfig::DyndlOn {
                w_s,
                remote_s,
                theta,
                ..
            } => {
                nonneg("w_s", *w_s)?;
                nonneg("remote_s", *remote_s)?;
                nonneg("theta", *theta)
            }
            SchedulerConfig::Rand { randomness } => {
                if (0.0..=1.0).contains(randomness) {
                    Ok(())
                } else {
                    Err(format!(
                        "rand: `randomness` must be in [0, 1] (got {randomness})"
                    ))
                }
            }
            SchedulerConfig::Fair {
                delay_s,
                weights: w,
            } => {
                nonneg("delay_s", *delay_s)?;
                weights(w)
            }
            SchedulerConfig::LsapFair {
                alpha,
                beta,
                weights: w,
            } => {
                nonneg("alpha", *alpha)?;
                nonneg("beta", *beta)?;
                weights(w)
            }
            SchedulerConfig::DyndlOff { theta, .. } => nonneg("theta", *theta),
            SchedulerConfig::Bar { q, .. } => nonneg("q", *q),
            SchedulerConfig::Ds { fraction: f } | SchedulerConfig::Gcc { idle_fraction: f } => {
                if (0.0..=1.0).contains(f) {
                    Ok(())
                } else {
                    Err(format!(
                        "{}: the fraction must be in [0, 1] (got {f})",
                        self.name()
                    ))
                }
            }
        }
    }
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A name (`hadoop`, `lsap`, `eas`, presets `delay3`, `delay6`, `delay10`,
/// `fifo-be`, `fifo-s`, `hfs-be`, `hfs-s`, `dyndl-on`, `ds0.15`, `ds0.25`, `gcc`, `dyndl-off`, `bar`), or an inline TOML key list such as
/// `policy = "rand", randomness = 0.5`. Parameters are validated.
impl FromStr for SchedulerConfig {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let preset = SchedulerConfig::delay;
        let cfg = match s {
            "delay3" => preset(3.0),
            "delay6" => preset(6.0),
            "delay10" => preset(10.0),
            // EAS's baselines: FIFO / Hadoop Fair Scheduler x best-effort / strict locality.
            "fifo-be" => SchedulerConfig::hadoop(),
            "fifo-s" => SchedulerConfig::Strict {
                fair: false,
                head_only: false,
            },
            "hfs-be" => SchedulerConfig::Fair {
                delay_s: 0.0,
                weights: Weights::new(),
            },
            "hfs-s" => SchedulerConfig::Strict {
                fair: true,
                head_only: false,
            },
            // BAR's baselines.
            "ds0.15" => SchedulerConfig::Ds { fraction: 0.15 },
            "ds0.25" => SchedulerConfig::Ds { fraction: 0.25 },
            "gcc" => SchedulerConfig::Gcc { idle_fraction: 0.9 },
            _ => {
                #[derive(Deserialize, utoipa::ToSchema)]
                struct Wrap {
                    s: SchedulerConfig,
                }
                let inline = if s.contains('=') {
                    format!("s = {{ {s} }}")
                } else {
                    format!("s = {{ policy = {s:?} }}")
                };
                toml::from_str::<Wrap>(&inline)
                    .map_err(|e| format!("scheduler {s:?}: {}", e.message()))?
                    .s
            }
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_presets_and_parameters() {
        assert_eq!("hadoop".parse(), Ok(SchedulerConfig::hadoop()));
        assert_eq!(
            "policy = \"hadoop\", pick = \"oldest\"".parse(),
            Ok(SchedulerConfig::Hadoop {
                pick: RemotePick::Oldest
            })
        );
        assert_eq!("delay6".parse(), Ok(SchedulerConfig::delay(6.0)));
        assert_eq!("ds0.25".parse(), Ok(SchedulerConfig::Ds { fraction: 0.25 }));
        assert_eq!(
            "gcc".parse(),
            Ok(SchedulerConfig::Gcc { idle_fraction: 0.9 })
        );
        assert_eq!(
            "dyndl-off".parse(),
            Ok(SchedulerConfig::DyndlOff {
                theta: 1.0,
                replan: false
            })
        );
        assert_eq!(
            "policy = 'bar', q = 0.5, replan = true".parse(),
            Ok(SchedulerConfig::Bar {
                q: 0.5,
                replan: true
            })
        );
        let e = "policy = 'ds', fraction = 2"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains("ds") && e.contains("[0, 1]"), "{e}");
        assert_eq!(
            "policy = \"rand\", randomness = 0.3".parse(),
            Ok(SchedulerConfig::Rand { randomness: 0.3 })
        );
        let d: SchedulerConfig = "dyndl-on".parse().unwrap();
        assert_eq!(
            d,
            SchedulerConfig::DyndlOn {
                w_s: 3.0,
                remote_s: 0.0,
                theta: 1.0,
                one_remote: true,
                pick: RemotePick::Random,
                wait: WaitClock::Worker,
                order: JobOrder::Fifo,
            }
        );
        assert_eq!(d.label(), "dyndl-on(W=3s,g=0s*(1+1n),one-remote)");
        let d: SchedulerConfig = "policy = 'dyndl-on', wait = 'core', order = 'fair'"
            .parse()
            .unwrap();
        assert_eq!(
            d.label(),
            "dyndl-on(W=3s,g=0s*(1+1n),one-remote,per-core,fair)"
        );
        let d: SchedulerConfig = "policy = 'delay', threshold_s = 3, order = 'fifo'"
            .parse()
            .unwrap();
        assert_eq!(d.label(), "delay3(fifo)");
        let d: SchedulerConfig = "policy = 'delay', threshold_s = 3, wait_from = 'last-launch'"
            .parse()
            .unwrap();
        assert_eq!(d.label(), "delay3(last-launch)");
        let d: SchedulerConfig =
            "policy = 'delay', threshold_s = 1.5, wait_from = 'skipped-heartbeats'"
                .parse()
                .unwrap();
        assert_eq!(d.label(), "delay1.5(skipped-heartbeats)");
        let e = "policy = 'delay', threshold_s = 3, wait_from = 'heartbeats'"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains("heartbeats"), "{e}");
        let d: SchedulerConfig = "policy = 'strict', fair = true, head_only = true"
            .parse()
            .unwrap();
        assert_eq!(d.label(), "hfs-s(head)");
        let e = "policy = 'dyndl-on', wait = 'node'"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains("node"), "{e}");
        assert_eq!(
            "delay10".parse::<SchedulerConfig>().unwrap().label(),
            "delay10"
        );
    }

    #[test]
    fn reduce_placements_read_back_by_name() {
        for p in ReducePlacement::ALL {
            assert_eq!(p.name().parse(), Ok(p));
            let toml = format!("p = {:?}", p.name());
            #[derive(Deserialize, utoipa::ToSchema)]
            struct W {
                p: ReducePlacement,
            }
            assert_eq!(toml::from_str::<W>(&toml).unwrap().p, p);
        }
        let e = "closest".parse::<ReducePlacement>().unwrap_err();
        assert!(
            e.contains("\"closest\"") && e.contains("least-loaded"),
            "{e}"
        );
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = "policy = \"rand\", randomness = 1.5"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains("randomness") && e.contains("1.5"), "{e}");
        let e = "policy = \"delay\"".parse::<SchedulerConfig>().unwrap_err();
        assert!(e.contains("threshold_s"), "{e}");
        let e = "policy = \"delay\", threshold_s = 3, x = 1"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains('x'), "{e}");
        let f: SchedulerConfig = "policy = \"fair\", weights = { a = 2, b = 1 }"
            .parse()
            .unwrap();
        assert_eq!(f.label(), "fair(delay=0s)");
        let e = "policy = \"fair\", weights = { a = 0 }"
            .parse::<SchedulerConfig>()
            .unwrap_err();
        assert!(e.contains("\"a\""), "{e}");
        let e = "fifo".parse::<SchedulerConfig>().unwrap_err();
        assert!(e.contains("fifo"), "{e}");
    }
}
