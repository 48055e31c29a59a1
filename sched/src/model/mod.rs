//! The planning model of DynDL and BAR: the scheduling instance, its cost
//! models, assignments and their evaluation. The offline planners
//! ([`crate::offline`]) and the simulator ([`crate::sim`]) work on it; the
//! generator ([`gen`]) draws instances with the papers' parameters.
//!
//! Model. Servers hold cores; core p is busy with its initial load
//! L_init(p) first. Each task reads one block whose replicas are on
//! `replicas[t]` (distinct servers). An assignment maps every task to a core;
//! the task is data-local iff the core's server holds a replica. Tasks on a
//! core run one after another, so a core's load is L_init(p) plus the costs
//! of its tasks, and the makespan is the largest load of an *active* core
//! (one with at least one task). Costs ([`Cost`]):
//! - DynDL: a local task costs 1; a remote task on server s costs
//!   g_s(r_s) = 1 + θ·min(r_s, |core(s)|), r_s = remote tasks assigned to s.
//! - BAR (HTA): a local task costs C_loc; a remote one C_loc + q·r, r = all
//!   remote tasks of the assignment. BAR's servers have one core each.

pub mod gen;

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

pub use gen::{GenError, GenParams};

/// What is wrong with an instance; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InstanceError {
    #[error("cores: the instance has no server")]
    NoServer,
    #[error("cores[{server}]: server {server} has no core")]
    NoCore { server: usize },
    #[error("cores[{server}]: initial loads must be finite and >= 0 (got {load})")]
    BadLoad { server: usize, load: f64 },
    #[error("replicas[{task}]: task {task} has no replica")]
    NoReplica { task: usize },
    #[error("replicas[{task}]: server {server} does not exist (servers 0..{servers})")]
    UnknownServer {
        task: usize,
        server: u32,
        servers: usize,
    },
    #[error("replicas[{task}]: server {server} is listed twice")]
    DuplicateReplica { task: usize, server: u32 },
    #[error("racks: {got} entries for {servers} servers (one rack per server, or none)")]
    RackCount { got: usize, servers: usize },
    #[error("cost.theta must be finite and >= 0 (got {theta})")]
    BadTheta { theta: f64 },
    #[error("cost: c_loc must be > 0 and q >= 0 (got c_loc {c_loc}, q {q})")]
    BadBarCost { c_loc: f64, q: f64 },
    #[error("not an instance: {reason}")]
    Json { reason: String },
}

/// The data-remote cost model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Cost {
    /// DynDL: local 1, remote g_s(r_s) = 1 + θ·min(r_s, cores of s).
    Dyndl { theta: f64 },
    /// BAR / HTA: local C_loc, remote C_loc + q·r over all remote tasks.
    Bar { c_loc: f64, q: f64 },
}

impl Cost {
    pub fn local(&self) -> f64 {
        match *self {
            Cost::Dyndl { .. } => 1.0,
            Cost::Bar { c_loc, .. } => c_loc,
        }
    }

    /// The cost of each remote task on a server with `cores` cores, when
    /// that server runs `r_server` remote tasks and the assignment `r_total`.
    pub fn remote(&self, cores: usize, r_server: usize, r_total: usize) -> f64 {
        match *self {
            Cost::Dyndl { theta } => 1.0 + theta * r_server.min(cores) as f64,
            Cost::Bar { c_loc, q } => c_loc + q * r_total as f64,
        }
    }
}

/// One scheduling instance. Readable and writable as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Per server, the initial load of each of its cores.
    pub cores: Vec<Vec<f64>>,
    /// Per task, the distinct servers holding its input block.
    pub replicas: Vec<Vec<u32>>,
    pub cost: Cost,
    /// Per server, its rack; empty = one rack. A remote task whose block
    /// has a replica in its server's rack is rack-local (counted apart;
    /// the cost models charge it as remote).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub racks: Vec<u32>,
}

/// Where each task runs: a global core index (cores numbered server by
/// server, in order).
pub type Assignment = Vec<u32>;

/// Makespan and locality of an assignment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Eval {
    /// Under the instance's (static) cost model, as the papers define it.
    pub makespan: f64,
    pub remote: usize,
    /// Of the remote tasks, those with a replica in their server's rack
    /// (0 on one rack).
    pub rack_local: usize,
    pub tasks: usize,
    /// For online policies, the makespan the discrete-event simulation
    /// reached (remote costs following the remote tasks running *at the
    /// time*); NaN for offline planners.
    pub sim_makespan: f64,
}

impl Eval {
    pub fn locality(&self) -> f64 {
        if self.tasks == 0 {
            1.0
        } else {
            1.0 - self.remote as f64 / self.tasks as f64
        }
    }

    /// Node-local or rack-local tasks over all tasks.
    pub fn rack_locality(&self) -> f64 {
        if self.tasks == 0 {
            1.0
        } else {
            1.0 - (self.remote - self.rack_local) as f64 / self.tasks as f64
        }
    }
}

/// Flattened view of the cores: server of each core and initial loads.
#[derive(Clone, Debug)]
pub struct Cores {
    pub server: Vec<u32>,
    pub init: Vec<f64>,
    /// First global core index of each server (len = servers + 1).
    pub first: Vec<usize>,
}

impl Cores {
    pub fn of_server(&self, s: u32) -> std::ops::Range<usize> {
        self.first[s as usize]..self.first[s as usize + 1]
    }
}

impl Instance {
    pub fn servers(&self) -> usize {
        self.cores.len()
    }

    pub fn tasks(&self) -> usize {
        self.replicas.len()
    }

    pub fn flat(&self) -> Cores {
        let mut c = Cores {
            server: Vec::new(),
            init: Vec::new(),
            first: vec![0],
        };
        for (s, loads) in self.cores.iter().enumerate() {
            for &l in loads {
                c.server.push(s as u32);
                c.init.push(l);
            }
            c.first.push(c.init.len());
        }
        c
    }

    /// Checks the instance: every server has a core, loads are finite and
    /// non-negative, every task has at least one replica, replicas are
    /// distinct and name existing servers, costs are sane.
    pub fn validate(&self) -> Result<(), InstanceError> {
        if self.cores.is_empty() {
            return Err(InstanceError::NoServer);
        }
        for (server, c) in self.cores.iter().enumerate() {
            if c.is_empty() {
                return Err(InstanceError::NoCore { server });
            }
            if let Some(&load) = c.iter().find(|l| !(l.is_finite() && **l >= 0.0)) {
                return Err(InstanceError::BadLoad { server, load });
            }
        }
        for (task, r) in self.replicas.iter().enumerate() {
            if r.is_empty() {
                return Err(InstanceError::NoReplica { task });
            }
            for (i, &server) in r.iter().enumerate() {
                if server as usize >= self.cores.len() {
                    return Err(InstanceError::UnknownServer {
                        task,
                        server,
                        servers: self.cores.len(),
                    });
                }
                if r[..i].contains(&server) {
                    return Err(InstanceError::DuplicateReplica { task, server });
                }
            }
        }
        if !self.racks.is_empty() && self.racks.len() != self.cores.len() {
            return Err(InstanceError::RackCount {
                got: self.racks.len(),
                servers: self.cores.len(),
            });
        }
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        match self.cost {
            Cost::Dyndl { theta } if !ok(theta) => Err(InstanceError::BadTheta { theta }),
            Cost::Bar { c_loc, q } if !(ok(q) && c_loc.is_finite() && c_loc > 0.0) => {
                Err(InstanceError::BadBarCost { c_loc, q })
            }
            _ => Ok(()),
        }
    }

    /// Parses and validates an instance from its JSON text (unknown fields
    /// are refused). Loads parse back to the very same f64 they were
    /// written from (serde_json's `float_roundtrip`).
    pub fn from_json(text: &str) -> Result<Instance, InstanceError> {
        let inst: Instance = serde_json::from_str(text).map_err(|e| InstanceError::Json {
            reason: e.to_string(),
        })?;
        inst.validate()?;
        Ok(inst)
    }

    /// The instance as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an instance always serializes")
    }

    /// Per server, the tasks whose block it holds, in task order.
    pub fn tasks_by_server(&self) -> Vec<Vec<u32>> {
        let mut by_server = vec![Vec::new(); self.servers()];
        for (t, r) in self.replicas.iter().enumerate() {
            for &s in r {
                by_server[s as usize].push(t as u32);
            }
        }
        by_server
    }

    pub fn is_local(&self, task: usize, server: u32) -> bool {
        self.replicas[task].contains(&server)
    }

    /// The rack of `server` (0 when the instance has one rack).
    pub fn rack(&self, server: u32) -> u32 {
        self.racks.get(server as usize).copied().unwrap_or(0)
    }

    /// Whether `task` run on `server` is rack-local: not node-local, with
    /// a replica on another server of the same rack (never on one rack).
    pub fn is_rack_local(&self, task: usize, server: u32) -> bool {
        !self.racks.is_empty()
            && !self.is_local(task, server)
            && self.replicas[task]
                .iter()
                .any(|&r| self.rack(r) == self.rack(server))
    }

    /// Makespan and locality of `a` under this instance's cost model.
    pub fn evaluate(&self, a: &[u32]) -> Eval {
        let cores = self.flat();
        self.evaluate_with(&cores, a)
    }

    pub fn evaluate_with(&self, cores: &Cores, a: &[u32]) -> Eval {
        assert_eq!(a.len(), self.tasks(), "one core per task");
        let mut r_server = vec![0usize; self.servers()];
        let mut remote = vec![false; a.len()];
        for (t, &p) in a.iter().enumerate() {
            let s = cores.server[p as usize];
            if !self.is_local(t, s) {
                remote[t] = true;
                r_server[s as usize] += 1;
            }
        }
        let r_total: usize = r_server.iter().sum();
        let rack_local = a
            .iter()
            .enumerate()
            .filter(|&(t, &p)| self.is_rack_local(t, cores.server[p as usize]))
            .count();
        let mut load = cores.init.clone();
        let mut active = vec![false; load.len()];
        for (t, &p) in a.iter().enumerate() {
            let s = cores.server[p as usize] as usize;
            load[p as usize] += if remote[t] {
                self.cost.remote(self.cores[s].len(), r_server[s], r_total)
            } else {
                self.cost.local()
            };
            active[p as usize] = true;
        }
        let makespan = load
            .iter()
            .zip(&active)
            .filter(|(_, a)| **a)
            .map(|(l, _)| *l)
            .fold(0.0, f64::max);
        Eval {
            makespan,
            remote: r_total,
            rack_local,
            tasks: a.len(),
            sim_makespan: f64::NAN,
        }
    }
}

/// f64 ordered by total_cmp, for heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrdF64(pub f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// Instances of the papers' worked examples, and small random ones, for
/// tests across the crate and the simulators' (`lab`'s, through the
/// `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// DynDL's Table 2: 4 servers x 2 cores, 5 tasks, g(n) = 1 + 0.5n.
    pub fn table2() -> Instance {
        Instance {
            cores: vec![
                vec![0.75, 0.5],
                vec![0.25, 2.0],
                vec![2.25, 14.0],
                vec![2.5, 3.75],
            ],
            replicas: vec![vec![0, 1], vec![1, 3], vec![1, 2], vec![1, 2], vec![2, 3]],
            cost: Cost::Dyndl { theta: 0.5 },
            racks: Vec::new(),
        }
    }

    /// BAR's Example 1: 3 servers with initial loads 7.1, 4.2, 0.3, 7 tasks
    /// with 2 replicas each, C_loc = 1, C_rem(r) = 1 + 0.1 r.
    pub fn bar_example1() -> Instance {
        Instance {
            cores: vec![vec![7.1], vec![4.2], vec![0.3]],
            replicas: vec![
                vec![0, 1],
                vec![1, 2],
                vec![1, 2],
                vec![0, 1],
                vec![0, 1],
                vec![1, 2],
                vec![0, 1],
            ],
            cost: Cost::Bar { c_loc: 1.0, q: 0.1 },
            racks: Vec::new(),
        }
    }

    /// Small random instances for property tests.
    pub fn random(seed: u64, cost: Cost) -> Instance {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let p = GenParams {
            servers: rng.gen_range(2..6),
            cores: rng.gen_range(1..3),
            tasks: rng.gen_range(1..8),
            replication: 1,
            alpha: 0.0,
            beta: rng.gen_range(0.0..6.0),
            cost,
            idle: None,
            racks: None,
            placement: Default::default(),
        };
        let p = GenParams {
            replication: rng.gen_range(1..=p.servers.min(3)),
            ..p
        };
        p.generate(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluation_follows_bar_example_1() {
        // BAR Example 1: 3 servers with initial loads 7.1, 4.2, 0.3; t5 and t7
        // remote on s3 with C_rem(2) = 1.2: makespan 7.2 (s1 is not active).
        let inst = fixtures::bar_example1();
        // s2: t1, t4, t6... three local; s3: t2, t3 local, t5, t7 remote.
        let a = vec![1, 2, 2, 1, 2, 1, 2];
        let e = inst.evaluate(&a);
        assert_eq!(e.remote, 2);
        assert!((e.makespan - 7.2).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn dyndl_cost_is_per_server_and_capped_at_its_cores() {
        let inst = Instance {
            cores: vec![vec![0.0, 0.0], vec![0.0]],
            replicas: vec![vec![1], vec![1], vec![1]],
            cost: Cost::Dyndl { theta: 1.0 },
            racks: Vec::new(),
        };
        // Three remote tasks on server 0 (2 cores): g = 1 + min(3, 2) = 3.
        let e = inst.evaluate(&[0, 0, 1]);
        assert_eq!(e.remote, 3);
        assert!((e.makespan - 6.0).abs() < 1e-9, "{e:?}");
        let e = inst.evaluate(&[0, 1, 2]);
        assert_eq!(e.remote, 2);
        assert!((e.makespan - 3.0).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn instances_round_trip_and_bad_ones_are_named() {
        let text = fixtures::table2().to_json();
        assert_eq!(Instance::from_json(&text).unwrap(), fixtures::table2());
        let mut bad = fixtures::table2();
        bad.replicas[2] = vec![1, 9];
        let e = Instance::from_json(&bad.to_json()).unwrap_err();
        assert_eq!(
            e,
            InstanceError::UnknownServer {
                task: 2,
                server: 9,
                servers: 4
            }
        );
        let e = e.to_string();
        assert!(e.contains("replicas[2]") && e.contains("server 9"), "{e}");
        let e = Instance::from_json("{\"cores\": [[1]], \"replicas\": [], \"bogus\": 1}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
