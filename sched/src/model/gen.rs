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
        let k = self.replication.min(self.servers) as usize;
        let replicas = (0..self.tasks)
            .map(|_| {
                rand::seq::index::sample(&mut rng, self.servers as usize, k)
                    .into_iter()
                    .map(|s| s as u32)
                    .collect()
            })
            .collect();
        Instance {
            cores,
            replicas,
            cost: self.cost,
        }
    }
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
}
