//! The seeded instance generator, with the papers' parameters (DynDL
//! Section 6.1.1; BAR's is the case cores = 1, α = 0, β = W; Guo's idle
//! ratio).

use super::{Cost, Instance};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What is wrong with generator parameters; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenError {
    #[error("servers and cores must be at least 1 (got servers {servers}, cores {cores})")]
    Empty { servers: u32, cores: u32 },
    #[error("replication must be 1..={servers} (the servers) (got {replication})")]
    Replication { replication: u32, servers: u32 },
    #[error("idle must be in [0, 1] (got {idle})")]
    Idle { idle: f64 },
    #[error("alpha and beta must be finite and >= 0 (got {alpha}, {beta})")]
    Loads { alpha: f64, beta: f64 },
    #[error("racks must be 1..={servers} (the servers) (got {racks})")]
    Racks { racks: u32, servers: u32 },
    #[error("placement = \"rack-aware\" needs racks >= 2 (got {racks})")]
    RackAwareOneRack { racks: u32 },
}

impl GenError {
    /// The parameter the error is about (as named in specs).
    pub fn key(&self) -> &'static str {
        match self {
            GenError::Empty { servers: 0, .. } => "servers",
            GenError::Empty { .. } => "cores",
            GenError::Replication { .. } => "replication",
            GenError::Idle { .. } => "idle",
            GenError::Loads { alpha, .. } if !(alpha.is_finite() && *alpha >= 0.0) => "alpha",
            GenError::Loads { .. } => "beta",
            GenError::Racks { .. } => "racks",
            GenError::RackAwareOneRack { .. } => "placement",
        }
    }
}

/// Generator parameters, named as in the papers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenParams {
    /// |S|.
    pub servers: u32,
    /// Cores per server (DynDL's core_num; 1 for BAR).
    pub cores: u32,
    /// |T|.
    pub tasks: u32,
    /// Replicas per block, on distinct servers chosen uniformly.
    pub replication: u32,
    /// DynDL's load skew α: core m's initial load is U[0, α·⌊m/cores⌋ + β].
    #[serde(default)]
    pub alpha: f64,
    /// DynDL's β (BAR's W): the initial-load range.
    pub beta: f64,
    pub cost: Cost,
    /// Guo's idle ratio: if set, this fraction of all cores (chosen at
    /// random) is idle (load 0) and the rest busy for β; α is then unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<f64>,
    /// Racks: servers are split into this many racks of consecutive
    /// servers, sizes differing by at most one (absent = one rack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racks: Option<u32>,
    /// Where a block's replicas go.
    #[serde(default, skip_serializing_if = "Placement::is_random")]
    pub placement: Placement,
}

/// Replica placement of the generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Distinct servers chosen uniformly (Guo's model, DynDL's, BAR's).
    #[default]
    Random,
    /// HDFS's default policy for a writer outside the cluster: the first
    /// replica on a uniformly random server, the second on a random server
    /// of another rack, the third on another server of the second's rack,
    /// any further ones on random servers not yet used.
    RackAware,
}

impl Placement {
    fn is_random(&self) -> bool {
        *self == Placement::Random
    }

    /// As specs spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Random => "random",
            Placement::RackAware => "rack-aware",
        }
    }
}

impl GenParams {
    pub fn validate(&self) -> Result<(), GenError> {
        if self.servers == 0 || self.cores == 0 {
            return Err(GenError::Empty {
                servers: self.servers,
                cores: self.cores,
            });
        }
        if self.replication == 0 || self.replication > self.servers {
            return Err(GenError::Replication {
                replication: self.replication,
                servers: self.servers,
            });
        }
        if let Some(racks) = self.racks {
            if racks == 0 || racks > self.servers {
                return Err(GenError::Racks {
                    racks,
                    servers: self.servers,
                });
            }
        }
        if self.placement == Placement::RackAware && self.racks.unwrap_or(1) < 2 {
            return Err(GenError::RackAwareOneRack {
                racks: self.racks.unwrap_or(1),
            });
        }
        if let Some(idle) = self.idle {
            if !(0.0..=1.0).contains(&idle) {
                return Err(GenError::Idle { idle });
            }
        }
        if !(self.alpha.is_finite()
            && self.alpha >= 0.0
            && self.beta.is_finite()
            && self.beta >= 0.0)
        {
            return Err(GenError::Loads {
                alpha: self.alpha,
                beta: self.beta,
            });
        }
        Ok(())
    }

    /// A seeded instance (DynDL Section 6.1.1's generator; BAR's is the
    /// case cores = 1, α = 0, β = W).
    pub fn generate(&self, seed: u64) -> Instance {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cores: Vec<Vec<f64>> = Vec::with_capacity(self.servers as usize);
        for s in 0..self.servers {
            let hi = self.alpha * s as f64 + self.beta;
            cores.push(
                (0..self.cores)
                    .map(|_| {
                        if hi > 0.0 {
                            rng.gen_range(0.0..=hi)
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            );
        }
        if let Some(f) = self.idle {
            let total = (self.servers * self.cores) as usize;
            let n_idle = (f * total as f64).round() as usize;
            let idle = rand::seq::index::sample(&mut rng, total, n_idle);
            for c in cores.iter_mut().flatten() {
                *c = self.beta;
            }
            for i in idle {
                cores[i / self.cores as usize][i % self.cores as usize] = 0.0;
            }
        }
        let racks: Vec<u32> = match self.racks {
            Some(n) if n > 1 => (0..self.servers)
                .map(|s| (s as u64 * n as u64 / self.servers as u64) as u32)
                .collect(),
            _ => Vec::new(),
        };
        let k = self.replication.min(self.servers) as usize;
        let replicas = (0..self.tasks)
            .map(|_| match self.placement {
                Placement::Random => rand::seq::index::sample(&mut rng, self.servers as usize, k)
                    .into_iter()
                    .map(|s| s as u32)
                    .collect(),
                Placement::RackAware => rack_aware(&mut rng, &racks, k),
            })
            .collect();
        Instance {
            cores,
            replicas,
            cost: self.cost,
            racks,
        }
    }
}

/// `k` distinct servers by HDFS's default placement ([`Placement::RackAware`])
/// over servers whose racks are `racks` (at least two racks). When a rack
/// has no server left for a replica, the replica goes to any unused server.
fn rack_aware(rng: &mut impl Rng, racks: &[u32], k: usize) -> Vec<u32> {
    let n = racks.len() as u32;
    let mut chosen: Vec<u32> = Vec::with_capacity(k);
    let pick = |rng: &mut dyn rand::RngCore, chosen: &[u32], ok: &dyn Fn(u32) -> bool| {
        let cands: Vec<u32> = (0..n).filter(|s| !chosen.contains(s) && ok(*s)).collect();
        (!cands.is_empty()).then(|| cands[rng.gen_range(0..cands.len())])
    };
    let any = |_: u32| true;
    while chosen.len() < k {
        let want: Option<u32> = match chosen.len() {
            1 => {
                let r0 = racks[chosen[0] as usize];
                pick(rng, &chosen, &|s| racks[s as usize] != r0)
            }
            2 => {
                let r1 = racks[chosen[1] as usize];
                pick(rng, &chosen, &|s| racks[s as usize] == r1)
            }
            _ => None,
        };
        let s = match want {
            Some(s) => s,
            None => pick(rng, &chosen, &any).expect("k <= servers"),
        };
        chosen.push(s);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_seeded_and_respects_its_parameters() {
        let p = GenParams {
            servers: 50,
            cores: 4,
            tasks: 300,
            replication: 3,
            alpha: 10.0,
            beta: 100.0,
            cost: Cost::Dyndl { theta: 1.0 },
            idle: None,
            racks: None,
            placement: Placement::Random,
        };
        let a = p.generate(9);
        assert_eq!(a, p.generate(9));
        assert_ne!(a, p.generate(10));
        a.validate().unwrap();
        assert_eq!((a.servers(), a.tasks()), (50, 300));
        for (s, c) in a.cores.iter().enumerate() {
            assert_eq!(c.len(), 4);
            assert!(c.iter().all(|l| *l <= 10.0 * s as f64 + 100.0));
        }
        assert!(a.replicas.iter().all(|r| r.len() == 3));
        // Skew: the last servers' loads average far above the first ones'.
        let mean = |r: std::ops::Range<usize>| a.cores[r].iter().flatten().sum::<f64>() / 40.0;
        assert!(mean(40..50) > mean(0..10) + 100.0);
    }

    #[test]
    fn rack_aware_placement_puts_two_replicas_in_one_other_rack() {
        let p = GenParams {
            servers: 10,
            cores: 1,
            tasks: 200,
            replication: 3,
            alpha: 0.0,
            beta: 0.0,
            cost: Cost::Dyndl { theta: 0.0 },
            idle: None,
            racks: Some(3),
            placement: Placement::RackAware,
        };
        p.validate().unwrap();
        let a = p.generate(4);
        a.validate().unwrap();
        // Racks of consecutive servers, sizes 4, 3, 3 (differing by <= 1).
        assert_eq!(a.racks, vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        let mut firsts = std::collections::BTreeSet::new();
        for r in &a.replicas {
            let rk: Vec<u32> = r.iter().map(|&s| a.rack(s)).collect();
            assert_ne!(
                rk[0], rk[1],
                "{r:?}: the second replica leaves the first's rack"
            );
            assert_eq!(rk[1], rk[2], "{r:?}: the third joins the second's rack");
            firsts.insert(r[0]);
        }
        assert_eq!(firsts.len(), 10, "the first replica goes anywhere");
        // Replication 5 on racks of 4 and 3 servers still finds 5 servers.
        let many = GenParams {
            replication: 5,
            ..p.clone()
        }
        .generate(1);
        assert!(many.replicas.iter().all(|r| r.len() == 5));
        many.validate().unwrap();
        // Bad racks are named.
        let e = GenParams {
            racks: Some(11),
            ..p.clone()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.key(), "racks");
        let e = GenParams {
            racks: None,
            ..p.clone()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.key(), "placement");
        assert!(e.to_string().contains("rack-aware"), "{e}");
        // Random placement with racks draws the very instance it draws
        // without them, plus the racks.
        let plain = GenParams {
            racks: None,
            placement: Placement::Random,
            ..p.clone()
        };
        let racked = GenParams {
            placement: Placement::Random,
            ..p
        };
        assert_eq!(plain.generate(3).replicas, racked.generate(3).replicas);
    }
}
