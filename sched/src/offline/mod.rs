//! The offline planners, one file each: given the whole instance (initial
//! loads included), they assign every task to a core at once.
//! - [`bar`]: BAR (Jin et al.): balance by augmenting paths, then reduce;
//! - [`dyndl_off`]: DynDLOff: Phase I greedy + cost-reducing paths, Phase II
//!   deadline binary search and max-min remainder;
//! - [`list`], [`ltfpa`]: DynDL's LIST and LTFPA baselines;
//! - [`maxcover`]: Fischer et al.'s MaxCover-BalAssign.

pub mod bar;
pub mod dyndl_off;
pub mod list;
pub mod ltfpa;
pub mod maxcover;

use crate::model::{Assignment, Instance};
use serde::{Deserialize, Serialize};

/// The offline algorithms of the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Offline {
    Bar,
    DyndlOff,
    List,
    Ltfpa,
    /// LTFPA finding the longest queue by a scan of every queue.
    LtfpaScan,
    /// MaxCover-BalAssign (Fischer et al.), BAR's flow-based baseline.
    #[serde(rename = "mb")]
    MaxCover,
}

impl Offline {
    pub fn name(self) -> &'static str {
        match self {
            Offline::Bar => "BAR",
            Offline::DyndlOff => "DynDLOff",
            Offline::List => "LIST",
            Offline::Ltfpa => "LTFPA",
            Offline::LtfpaScan => "LTFPA-scan",
            Offline::MaxCover => "MB",
        }
    }

    /// Every offline planner.
    pub const ALL: [Offline; 6] = [
        Offline::Bar,
        Offline::DyndlOff,
        Offline::List,
        Offline::Ltfpa,
        Offline::LtfpaScan,
        Offline::MaxCover,
    ];

    /// The name the command line and specs use.
    pub fn key(self) -> &'static str {
        match self {
            Offline::Bar => "bar",
            Offline::DyndlOff => "dyndl-off",
            Offline::List => "list",
            Offline::Ltfpa => "ltfpa",
            Offline::LtfpaScan => "ltfpa-scan",
            Offline::MaxCover => "mb",
        }
    }

    pub fn run(self, inst: &Instance) -> Assignment {
        self.run_probed(inst, &mut NoProbe)
            .expect("NoProbe never stops a planner")
    }

    /// The names of the phases [`Offline::run_probed`] reports, in order
    /// (empty for a one-phase planner).
    pub fn phases(self) -> &'static [&'static str] {
        match self {
            Offline::Bar => &bar::PHASES,
            Offline::DyndlOff => &dyndl_off::PHASES,
            Offline::List | Offline::Ltfpa | Offline::LtfpaScan | Offline::MaxCover => &[],
        }
    }

    /// [`Offline::run`], telling `probe` where each phase ends and asking
    /// it between phases (and between MaxCover-BalAssign's iterations)
    /// whether to go on; None if it said no.
    pub fn run_probed(self, inst: &Instance, probe: &mut dyn Probe) -> Option<Assignment> {
        match self {
            Offline::Bar => bar::assign_probed(inst, probe),
            Offline::DyndlOff => dyndl_off::assign_probed(inst, probe),
            Offline::List => Some(list::assign(inst)),
            Offline::Ltfpa => Some(ltfpa::assign(inst, ltfpa::DEFAULT_THRESHOLD)),
            Offline::LtfpaScan => Some(ltfpa::assign_scan(inst, ltfpa::DEFAULT_THRESHOLD)),
            Offline::MaxCover => maxcover::assign_probed(inst, probe),
        }
    }
}

/// What a planner tells its caller while it runs, and asks it. The planners
/// hold no clock: a caller that times phases or enforces a time limit (the
/// lab's sweeps) does it here.
pub trait Probe {
    /// The phase `name` (one of [`Offline::phases`]) has just ended.
    fn phase_done(&mut self, _name: &'static str) {}
    /// Whether the planner may go on; false stops it without a result.
    fn go_on(&mut self) -> bool {
        true
    }
}

/// A probe that records nothing and never stops a planner.
pub struct NoProbe;

impl Probe for NoProbe {}

/// Not the name of an offline planner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not an offline algorithm (bar, dyndl-off, list, ltfpa, ltfpa-scan, mb)")]
pub struct UnknownOffline {
    pub input: String,
}

impl std::str::FromStr for Offline {
    type Err = UnknownOffline;
    /// `bar`, `dyndl-off`, `list`, `ltfpa`, `ltfpa-scan`, `mb` (or `maxcover-balassign`),
    /// case-insensitive.
    fn from_str(s: &str) -> Result<Offline, UnknownOffline> {
        let key = s.trim().to_ascii_lowercase();
        if key == "maxcover-balassign" {
            return Ok(Offline::MaxCover);
        }
        Offline::ALL
            .into_iter()
            .find(|o| o.key() == key)
            .ok_or_else(|| UnknownOffline { input: s.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::random;
    use crate::model::Cost;

    /// Every offline algorithm assigns every task exactly once, to an
    /// existing core.
    #[test]
    fn every_algorithm_assigns_every_task_once() {
        for seed in 0..200 {
            for cost in [
                Cost::Dyndl { theta: 1.0 },
                Cost::Bar {
                    c_loc: 20.0,
                    q: 5.0,
                },
            ] {
                let inst = random(seed, cost);
                let n = inst.flat().init.len() as u32;
                for alg in Offline::ALL {
                    let a = alg.run(&inst);
                    assert_eq!(a.len(), inst.tasks(), "{alg:?} seed {seed}");
                    assert!(a.iter().all(|&p| p < n), "{alg:?} seed {seed}");
                }
            }
        }
    }

    #[test]
    fn names_parse_back() {
        for o in Offline::ALL {
            assert_eq!(o.key().parse::<Offline>().unwrap(), o);
            assert_eq!(o.key().to_uppercase().parse::<Offline>().unwrap(), o);
        }
        assert_eq!(
            "maxcover-balassign".parse::<Offline>().unwrap(),
            Offline::MaxCover
        );
        let e = "bogus".parse::<Offline>().unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains("dyndl-off"), "{e}");
    }
}
