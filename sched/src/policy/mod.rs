//! The online policies, one file each, and [`SchedulerConfig`], the
//! `[scheduler]` section of cluster.toml and of experiment specs.
//!
//! Each policy's file holds all of it: the algorithm, its parameters (a
//! struct read by serde, whose doc comments are the reference), and their
//! [`Policy`] implementation: its name, its label in results, the check of
//! its values, its presets, the configurations the shared test suite runs,
//! and how it is built. Adding a policy is one new file here and one line
//! in [`policies!`]'s list below; the shared suite (`tests.rs`) runs every
//! listed policy's examples and fails on a file that implements [`Policy`]
//! without being listed.

pub mod coshic;
pub mod delay;
pub mod dyndl_on;
pub mod eas;
pub mod external;
pub mod fair;
pub mod hadoop;
pub mod lsap;
pub mod lsap_fair;
pub mod mrosa;
pub mod opportunity;
pub mod planned;
pub mod rand_sched;
pub mod strict;

pub use crate::order::{JobOrder, Weights};
pub use crate::pick::{RemotePick, WaitFrom};
pub use dyndl_on::WaitClock;

use crate::view::{Millis, Scheduler};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// What a policy's parameter struct says about the policy.
pub trait Policy: Sized {
    /// Configurations the shared suite (`tests.rs`) runs: the defaults and,
    /// where a parameter changes decisions, another setting. Each is what
    /// `--scheduler` takes (a name, a preset or a TOML key list) and must
    /// read back as this policy.
    const EXAMPLES: &'static [&'static str];
    /// The name results show (`hadoop`, `delay`; `fifo-s` or `hfs-s` for
    /// `strict`).
    fn name(&self) -> &'static str;
    /// The policy with its parameters, as reports and result tables show it.
    /// `cost_from_instance`: the lab takes the data-remote cost (DynDLOn's
    /// g, `dyndl-off`'s θ, `bar`'s q) from each instance's cost model, and
    /// that part reads `instance`.
    fn label(&self, cost_from_instance: bool) -> String;
    /// Checks the values; the error names the parameter and what is allowed.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// Sets the order in which the policy visits jobs, a factor apart from
    /// where it places their tasks; an error for a policy whose decisions
    /// have no job order (a batch matching, a plan of every task at once)
    /// or whose order is what it is (fair shares by group weight, MROSA's
    /// priority, COSHIC's deadlines).
    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        Err(format!(
            "{}: takes no job order (asked for `{}`)",
            self.name(),
            order.name()
        ))
    }
    /// Names that stand for a setting of this policy (`delay3`, `fifo-s`).
    fn presets() -> Vec<(&'static str, Self)> {
        Vec::new()
    }
    /// The running policy, seeded.
    fn build(&self, seed: u64) -> Box<dyn Scheduler>;
}

/// The list: one line per policy, `Variant = "policy name" (its parameters)`.
/// The name is the variant's in kebab case (`DyndlOn` is `dyndl-on`), as
/// TOML's `policy = "..."` spells it; a test checks that the two agree.
macro_rules! policies {
    ($($(#[$doc:meta])* $variant:ident = $tag:literal ($params:ty)),* $(,)?) => {
        /// The scheduling policy and its parameters: `[scheduler]` in
        /// cluster.toml and experiment specs (`policy = "<name>"` and the
        /// policy's keys), and `--scheduler` on the command line (see
        /// [`FromStr`]).
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(tag = "policy", rename_all = "kebab-case")]
        pub enum SchedulerConfig {
            $($(#[$doc])* $variant($params),)*
        }

        impl SchedulerConfig {
            /// The parameter types of the listed policies.
            pub const LISTED: &'static [&'static str] = &[$(stringify!($params)),*];

            /// The `policy` names of the listed policies.
            pub const POLICIES: &'static [&'static str] = &[$($tag),*];

            /// Every listed policy's presets.
            pub fn presets() -> Vec<(&'static str, SchedulerConfig)> {
                let mut all = Vec::new();
                $(all.extend(
                    <$params as Policy>::presets()
                        .into_iter()
                        .map(|(n, p)| (n, SchedulerConfig::$variant(p))),
                );)*
                all
            }

            /// Every listed policy's [`Policy::EXAMPLES`], with the policy's
            /// `policy` name.
            pub fn examples() -> Vec<(&'static str, &'static str)> {
                let mut all = Vec::new();
                $(all.extend(<$params as Policy>::EXAMPLES.iter().map(|e| ($tag, *e)));)*
                all
            }

            /// The `policy` name of this configuration's variant.
            pub fn policy(&self) -> &'static str {
                match self {
                    $(SchedulerConfig::$variant(_) => $tag,)*
                }
            }

            /// The name results show (`hadoop`, `delay`, `fifo-s`, ...).
            pub fn name(&self) -> &'static str {
                match self {
                    $(SchedulerConfig::$variant(p) => p.name(),)*
                }
            }

            fn label_with(&self, cost_from_instance: bool) -> String {
                match self {
                    $(SchedulerConfig::$variant(p) => p.label(cost_from_instance),)*
                }
            }

            /// Checks the parameters; the error names the parameter and
            /// what is allowed.
            pub fn validate(&self) -> Result<(), String> {
                match self {
                    $(SchedulerConfig::$variant(p) => p.validate(),)*
                }
            }

            /// The same policy visiting jobs in `order` (see
            /// [`Policy::set_order`]).
            pub fn with_order(&self, order: JobOrder) -> Result<SchedulerConfig, String> {
                let mut c = self.clone();
                match &mut c {
                    $(SchedulerConfig::$variant(p) => p.set_order(order)?,)*
                }
                Ok(c)
            }

            /// The running policy, seeded.
            pub fn build(&self, seed: u64) -> Box<dyn Scheduler> {
                match self {
                    $(SchedulerConfig::$variant(p) => p.build(seed),)*
                }
            }
        }

        $(impl From<$params> for SchedulerConfig {
            fn from(p: $params) -> Self {
                SchedulerConfig::$variant(p)
            }
        })*
    };
}

policies! {
    /// Hadoop's default (Guo's dl-sched).
    Hadoop = "hadoop" (hadoop::HadoopParams),
    /// Delay scheduling (Zaharia et al., EuroSys 2010).
    Delay = "delay" (delay::DelayParams),
    /// DynDL's online algorithm (DynDLOn, Algorithm 1).
    DyndlOn = "dyndl-on" (dyndl_on::DyndlOnParams),
    /// Guo et al.'s rand-sched.
    Rand = "rand" (rand_sched::RandParams),
    /// Hadoop Fair Scheduler style fair sharing by group weights.
    Fair = "fair" (fair::FairParams),
    /// Guo's lsap-sched.
    Lsap = "lsap" (lsap::LsapParams),
    /// Strict data locality (EAS's FIFO-S and HFS-S baselines).
    Strict = "strict" (strict::StrictParams),
    /// EAS (IEICE 2013).
    Eas = "eas" (eas::EasParams),
    /// Guo's lsap-fair-sched.
    LsapFair = "lsap-fair" (lsap_fair::LsapFairParams),
    /// BAR's DS baseline (delay counted in scheduling opportunities).
    Ds = "ds" (opportunity::DsParams),
    /// DynDLOff as a live policy.
    DyndlOff = "dyndl-off" (planned::DyndlOffParams),
    /// BAR as a live policy.
    Bar = "bar" (planned::BarParams),
    /// BAR's GCC baseline (Good Cache Compute).
    Gcc = "gcc" (opportunity::GccParams),
    /// MROSA (Mao et al.), with rented public instances.
    Mrosa = "mrosa" (mrosa::MrosaParams),
    /// COSHIC (Van den Bossche et al.), with rented public instances.
    Coshic = "coshic" (coshic::CoshicParams),
    /// A policy served outside this codebase (any language), over a Unix
    /// or TCP socket ([`external`]).
    External = "external" (external::ExternalParams),
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig::hadoop()
    }
}

impl SchedulerConfig {
    /// `hadoop` with its defaults.
    pub fn hadoop() -> Self {
        SchedulerConfig::Hadoop(hadoop::HadoopParams::default())
    }

    /// Delay scheduling with `threshold_s`, its other parameters default.
    pub fn delay(threshold_s: f64) -> Self {
        SchedulerConfig::Delay(delay::DelayParams::new(threshold_s))
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
}

/// A policy's name (`hadoop`, `lsap`, `eas`, `dyndl-on`, ...), a preset
/// (`delay3`, `delay6`, `delay10`, `fifo-be`, `fifo-s`, `hfs-be`, `hfs-s`,
/// `ds0.15`, `ds0.25`; each policy's file lists its own), or an inline TOML
/// key list such as `policy = "rand", randomness = 0.5`. Parameters are
/// validated.
impl FromStr for SchedulerConfig {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let cfg = match SchedulerConfig::presets()
            .into_iter()
            .find(|(n, _)| *n == s)
        {
            Some((_, cfg)) => cfg,
            None => {
                #[derive(Deserialize)]
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

/// Builds the policy a config names, seeded.
pub fn build(cfg: &SchedulerConfig, seed: u64) -> Box<dyn Scheduler> {
    cfg.build(seed)
}

/// Seconds of a policy parameter as scheduler milliseconds.
pub(crate) fn secs_to_ms(s: f64) -> Millis {
    (s * 1000.0).round().max(0.0) as Millis
}

/// A parameter as labels print it: at most three decimals, no trailing zeros.
pub(crate) fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `policy: `key` must be a finite number >= 0` unless it is.
pub(crate) fn nonneg(policy: &str, key: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{policy}: `{key}` must be a finite number >= 0 (got {v})"
        ))
    }
}

/// `policy: `key` must be in [0, 1]` unless it is.
pub(crate) fn unit_interval(policy: &str, key: &str, v: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("{policy}: `{key}` must be in [0, 1] (got {v})"))
    }
}

/// Every group weight positive.
pub(crate) fn check_weights(policy: &str, w: &Weights) -> Result<(), String> {
    for (g, v) in w {
        if !(v.is_finite() && *v > 0.0) {
            return Err(format!(
                "{policy}: weight of group {g:?} must be > 0 (got {v})"
            ));
        }
    }
    Ok(())
}

/// For `skip_serializing_if`.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod hybrid_tests;
#[cfg(test)]
pub(crate) mod tests;
