//! A simulator of a hybrid cloud that runs the master's own policies
//! (`mrosa`, `coshic`, or any other) through the same [`offer`] calls, on
//! virtual time: private workers with paced slots and a link each, jobs of
//! maps arriving with deadlines and budgets, and public instances that
//! boot when the policy asks, run the maps planned for them over their one
//! link, and stop when idle, billed by the second and by the byte.
//!
//! Model (a time step of `tick_ms`, every worker offered at every step, as
//! heartbeats do):
//! - a map reads its block (from its own disk at once when it holds a
//!   replica, else over the link of the worker that runs it, shared fairly
//!   by that worker's transfers in progress), then computes for
//!   len / (slot rate x speed);
//! - an instance registers `start_s` after the request, and stops after
//!   `idle_stop_s` without a running map; its life is billed at its
//!   price to the job that asked for it, the bytes it receives at the type's
//!   storage and transfer-in prices to the map's job (map output is not
//!   modelled: jobs here are map-only);
//! - a refused job ends at once, missing its deadline.

use base::public::PublicType;
use base::{JobId, TaskRef, WorkerId};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sched::hybrid::{InstanceId, WorkerProfile};
use sched::view::{offer, ClusterView, JobQos, Millis, PendingTask, Scheduler};
use std::collections::BTreeMap;

/// The hybrid cloud simulated.
#[derive(Clone, Debug)]
pub struct HybridCluster {
    pub private_workers: u32,
    pub slots: u32,
    /// Compute pacing per private slot, bytes/s.
    pub slot_rate: f64,
    /// Each private worker's link, bytes/s.
    pub nic: f64,
    pub replication: u32,
    pub types: Vec<PublicType>,
    pub max_instances: u32,
    pub idle_stop_s: f64,
    pub tick_ms: u64,
}

/// One job: `maps` blocks of `block` bytes.
#[derive(Clone, Debug)]
pub struct SimJob {
    pub arrival_ms: Millis,
    pub maps: u32,
    pub block: u64,
    pub deadline_s: Option<f64>,
    pub budget: Option<f64>,
}

/// What became of a job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobOutcome {
    /// None when it was refused.
    pub jct_ms: Option<Millis>,
    pub deadline_met: Option<bool>,
    pub refused: bool,
    pub cost: f64,
    pub instances: u32,
    pub public_maps: u32,
}

struct Running {
    job: usize,
    worker: WorkerId,
    remote: bool,
    len: u64,
    /// Bytes still to move, then compute seconds left.
    to_move: f64,
    compute_s: f64,
    started: Millis,
}

struct Instance {
    ty: usize,
    job: usize,
    requested: Millis,
    worker: Option<WorkerId>,
    idle_since: Millis,
}

/// Runs `sched` over `jobs` on `cluster`, seeded (replica placement), until
/// every job has ended or `limit_ms` of virtual time have passed.
pub fn simulate(
    sched: &mut dyn Scheduler,
    cluster: &HybridCluster,
    jobs: &[SimJob],
    seed: u64,
    limit_ms: Millis,
) -> Vec<JobOutcome> {
    let mut sim = HybridSim::new(cluster, jobs, seed);
    let dt = cluster.tick_ms.max(1);
    while sim.now <= limit_ms && sim.ended.iter().any(|e| !e) {
        sim.arrivals(dt);
        sim.boot();
        sim.offers(sched);
        sim.progress(dt);
        sim.stop_idle();
    }
    // Instances still up at the end: billed until now.
    let now = sim.now;
    for inst in sim.instances.values() {
        let ty = &cluster.types[inst.ty];
        sim.out[inst.job].cost += ty.price_per_s * (now - inst.requested) as f64 / 1000.0;
    }
    sim.out
}

fn job_id(i: usize) -> JobId {
    JobId(i as u32 + 1)
}

/// The run's state: the view the policy decides on, the jobs' progress,
/// the maps running and the instances rented.
struct HybridSim<'a> {
    cluster: &'a HybridCluster,
    jobs: &'a [SimJob],
    rng: ChaCha8Rng,
    view: ClusterView,
    out: Vec<JobOutcome>,
    /// Maps still to end, per job.
    left: Vec<u32>,
    ended: Vec<bool>,
    running: Vec<Running>,
    instances: BTreeMap<InstanceId, Instance>,
    next_worker: u32,
    /// Worker -> (link bytes/s, speed, instance).
    link: BTreeMap<WorkerId, (f64, f64, Option<InstanceId>)>,
    now: Millis,
}

impl<'a> HybridSim<'a> {
    fn new(cluster: &'a HybridCluster, jobs: &'a [SimJob], seed: u64) -> Self {
        let mut view = ClusterView::new();
        view.set_public_types(cluster.types.clone(), cluster.max_instances);
        let n = cluster.private_workers;
        for w in 0..n {
            let id = WorkerId(w);
            view.upsert_worker(id, cluster.slots);
            view.set_profile(
                id,
                WorkerProfile {
                    slot_rate: Some(cluster.slot_rate),
                    nic: Some(cluster.nic),
                    speed: 1.0,
                },
            );
        }
        HybridSim {
            cluster,
            jobs,
            rng: ChaCha8Rng::seed_from_u64(seed),
            view,
            out: vec![JobOutcome::default(); jobs.len()],
            left: jobs.iter().map(|j| j.maps).collect(),
            ended: vec![false; jobs.len()],
            running: Vec::new(),
            instances: BTreeMap::new(),
            next_worker: n,
            link: (0..n)
                .map(|w| (WorkerId(w), (cluster.nic, 1.0, None)))
                .collect(),
            now: 0,
        }
    }

    /// The jobs arriving in this step, their maps' replicas drawn on the
    /// private workers.
    fn arrivals(&mut self, dt: Millis) {
        let (now, n) = (self.now, self.cluster.private_workers);
        for (i, j) in self.jobs.iter().enumerate() {
            if j.arrival_ms == now || (j.arrival_ms < now && j.arrival_ms + dt > now) {
                let tasks = (0..j.maps)
                    .map(|t| PendingTask {
                        task: TaskRef {
                            job: job_id(i),
                            index: t,
                        },
                        len: j.block,
                        replicas: sample(
                            &mut self.rng,
                            n as usize,
                            self.cluster.replication.min(n) as usize,
                        )
                        .into_iter()
                        .map(|w| WorkerId(w as u32))
                        .collect(),
                    })
                    .collect();
                self.view.add_job(job_id(i), now, "default", tasks);
                self.view.set_job_qos(
                    job_id(i),
                    JobQos {
                        deadline: j.deadline_s.map(|d| now + (d * 1000.0) as Millis),
                        budget: j.budget,
                        input_bytes: j.maps as u64 * j.block,
                        reduces: 0,
                    },
                );
            }
        }
    }

    /// Instances that finished booting register as workers.
    fn boot(&mut self) {
        let now = self.now;
        for (id, inst) in self.instances.iter_mut() {
            let ty = &self.cluster.types[inst.ty];
            if inst.worker.is_none() && now >= inst.requested + (ty.start_s * 1000.0) as Millis {
                let w = WorkerId(self.next_worker);
                self.next_worker += 1;
                self.view.upsert_worker(w, ty.slots);
                self.view.set_runs_reduces(w, false);
                self.view.set_profile(
                    w,
                    WorkerProfile {
                        slot_rate: Some(self.cluster.slot_rate * ty.speed),
                        nic: Some(ty.nic_bytes_per_sec()),
                        speed: ty.speed,
                    },
                );
                self.view.instance_up(*id, w);
                self.link
                    .insert(w, (ty.nic_bytes_per_sec(), ty.speed, Some(*id)));
                inst.worker = Some(w);
                inst.idle_since = now;
            }
        }
    }

    /// Offers every live worker (and so lets the policy plan): its
    /// launches start, its instance requests are booked, its refusals end
    /// their jobs.
    fn offers(&mut self, sched: &mut dyn Scheduler) {
        let now = self.now;
        let workers: Vec<WorkerId> = self
            .view
            .workers()
            .filter(|w| w.alive)
            .map(|w| w.id)
            .collect();
        for w in workers {
            for a in offer(sched, now, w, &mut self.view) {
                let i = (a.task.job.0 - 1) as usize;
                let (_, speed, inst) = self.link[&a.worker];
                let remote = a.worker != a.source;
                if let Some(id) = inst {
                    self.out[i].public_maps += 1;
                    let ty = &self.cluster.types[self.instances[&id].ty];
                    self.out[i].cost +=
                        a.len as f64 * (ty.storage_per_gb + ty.transfer_in_per_gb) / 1e9;
                }
                self.running.push(Running {
                    job: i,
                    worker: a.worker,
                    remote,
                    len: a.len,
                    to_move: if remote { a.len as f64 } else { 0.0 },
                    compute_s: a.len as f64 / (self.cluster.slot_rate * speed),
                    started: now,
                });
            }
            for r in self.view.take_requests() {
                self.instances.insert(
                    r.id,
                    Instance {
                        ty: r.ty,
                        job: (r.for_job.0 - 1) as usize,
                        requested: now,
                        worker: None,
                        idle_since: now,
                    },
                );
                self.out[(r.for_job.0 - 1) as usize].instances += 1;
            }
            for (job, _) in self.view.take_refusals() {
                let i = (job.0 - 1) as usize;
                self.view.remove_job(job);
                self.ended[i] = true;
                self.out[i].refused = true;
                self.out[i].deadline_met = self.jobs[i].deadline_s.map(|_| false);
            }
        }
    }

    /// One step of progress (transfers share their worker's link), then
    /// the maps that ended and the jobs they complete.
    fn progress(&mut self, dt: Millis) {
        let mut moving: BTreeMap<WorkerId, u32> = BTreeMap::new();
        for r in self.running.iter().filter(|r| r.to_move > 0.0) {
            *moving.entry(r.worker).or_default() += 1;
        }
        let step = dt as f64 / 1000.0;
        for r in self.running.iter_mut() {
            if r.to_move > 0.0 {
                let share = self.link[&r.worker].0 / moving[&r.worker] as f64;
                r.to_move -= share * step;
            } else {
                r.compute_s -= step;
            }
        }
        self.now += dt;
        let now = self.now;
        let mut k = 0;
        while k < self.running.len() {
            if self.running[k].to_move <= 0.0 && self.running[k].compute_s <= 1e-9 {
                let r = self.running.swap_remove(k);
                self.view.task_ended(job_id(r.job), r.worker, r.remote);
                self.view
                    .note_map(r.worker, r.len, now - r.started, !r.remote, 0);
                self.left[r.job] -= 1;
                if self.left[r.job] == 0 && !self.ended[r.job] {
                    self.ended[r.job] = true;
                    self.view.remove_job(job_id(r.job));
                    let jct = now - self.jobs[r.job].arrival_ms;
                    self.out[r.job].jct_ms = Some(jct);
                    self.out[r.job].deadline_met = self.jobs[r.job]
                        .deadline_s
                        .map(|d| jct as f64 <= d * 1000.0);
                }
            } else {
                k += 1;
            }
        }
    }

    /// Idle instances stop; their life is billed.
    fn stop_idle(&mut self) {
        let now = self.now;
        let busy: std::collections::BTreeSet<WorkerId> =
            self.running.iter().map(|r| r.worker).collect();
        let mut stop = Vec::new();
        for (id, inst) in self.instances.iter_mut() {
            let Some(w) = inst.worker else { continue };
            if busy.contains(&w) {
                inst.idle_since = now;
            } else if (now - inst.idle_since) as f64 >= self.cluster.idle_stop_s * 1000.0 {
                stop.push(*id);
            }
        }
        for id in stop {
            let inst = self.instances.remove(&id).expect("listed");
            let ty = &self.cluster.types[inst.ty];
            self.out[inst.job].cost += ty.price_per_s * (now - inst.requested) as f64 / 1000.0;
            if let Some(w) = inst.worker {
                self.view.lose_worker(w);
            }
            self.view.instance_gone(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched::policy::build;

    fn cluster(private_workers: u32) -> HybridCluster {
        HybridCluster {
            private_workers,
            slots: 2,
            slot_rate: 1e6,
            nic: 100e6,
            replication: 2,
            types: vec![PublicType {
                name: "big".into(),
                provider: String::new(),
                slots: 8,
                speed: 1.0,
                nic_mbps: 80.0,
                start_s: 1.0,
                price_per_s: 1.0,
                storage_per_gb: 0.0,
                transfer_in_per_gb: 0.0,
                transfer_out_per_gb: 0.0,
            }],
            max_instances: 16,
            idle_stop_s: 1.0,
            tick_ms: 50,
        }
    }

    fn job(maps: u32, deadline_s: Option<f64>) -> SimJob {
        SimJob {
            arrival_ms: 0,
            maps,
            block: 1_000_000,
            deadline_s,
            budget: None,
        }
    }

    fn run(policy: &str, c: &HybridCluster, jobs: &[SimJob]) -> Vec<JobOutcome> {
        let mut s = build(&policy.parse().unwrap(), 1);
        simulate(s.as_mut(), c, jobs, 7, 600_000)
    }

    #[test]
    fn a_tight_deadline_rents_and_is_met_a_loose_one_rents_nothing() {
        // 4 private slots, 1 s maps: 16 maps take 4 s privately.
        let c = cluster(2);
        let tight = run("mrosa", &c, &[job(16, Some(3.0))]);
        assert!(tight[0].instances >= 1, "{tight:?}");
        assert!(tight[0].public_maps >= 1);
        assert_eq!(tight[0].deadline_met, Some(true), "{tight:?}");
        assert!(tight[0].cost > 0.0);
        let loose = run("mrosa", &c, &[job(16, Some(60.0))]);
        assert_eq!(loose[0].instances, 0);
        assert_eq!(loose[0].cost, 0.0);
        assert_eq!(loose[0].deadline_met, Some(true));
        // Too tight for anyone: refused.
        let never = run("mrosa", &c, &[job(16, Some(0.5))]);
        assert!(never[0].refused && never[0].deadline_met == Some(false));
    }

    #[test]
    fn coshic_moves_the_whole_job_and_pays_more() {
        let c = cluster(2);
        let m = run("mrosa", &c, &[job(16, Some(3.0))]);
        let k = run("coshic", &c, &[job(16, Some(3.0))]);
        assert_eq!(k[0].public_maps, 16, "{k:?}");
        assert!(m[0].public_maps < 16);
        assert!(k[0].cost > m[0].cost, "{m:?} {k:?}");
    }

    #[test]
    fn five_hundred_servers_and_fifty_jobs() {
        let c = cluster(500);
        let jobs: Vec<SimJob> = (0..50)
            .map(|i| SimJob {
                arrival_ms: i * 200,
                ..job(40, Some(4.0))
            })
            .collect();
        let out = run("mrosa", &c, &jobs);
        assert!(out.iter().all(|o| o.jct_ms.is_some()), "{out:?}");
        assert!(out.iter().all(|o| o.deadline_met == Some(true)));
        assert_eq!(
            out.iter().map(|o| o.instances).sum::<u32>(),
            0,
            "1000 slots suffice"
        );
    }
}
