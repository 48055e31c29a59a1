//! BAR's compile-time scheme (Jin et al., CCGrid 2011, Section V.B), which
//! drives the master's own online [`Scheduler`]s over an [`Instance`] the
//! way the BAR paper ran its greedy baselines (HDS, GCC, DS): "place all
//! servers into a min-heap; pop a minimum load server, invoke a real-time
//! scheduling algorithm to allocate a task, then update load of servers.
//! The remote cost is renewed when a remote task is allocated."
//!
//! Here the heap holds cores, keyed by their load under the instance's
//! static cost model: initial load, plus C_loc per data-local task, plus
//! the remote cost *with the remote tasks allocated so far* per data-remote
//! task, plus any time the core spent waiting (below). Each remote
//! allocation raises the remote cost, and so the load of every core that
//! holds a remote task: "update load of servers". The popped core's server
//! gets one free slot in the [`ClusterView`] and is offered through
//! [`offer`], as the master offers a heartbeat's free slot. Its time is its
//! load.
//!
//! The paper does not say what happens to a server the policy skips (DS
//! and GCC skip servers). [`Skip`] holds the readings: the server is set
//! aside, set aside until the next launch, or offered again a fixed time
//! later. A skipped server stays free in the view meanwhile, so it counts
//! as idle (GCC's count) until it gets a task.
//!
//! The assignment is evaluated under the static model as the papers'
//! makespan; waiting time orders the offers, it is not part of it.

use crate::sim::{add_as_job, SimError, UNIT_MS};
use base::{JobId, WorkerId};
use sched::model::{Assignment, Instance, OrdF64};
use sched::view::{offer, ClusterView, Millis, Scheduler};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a server the policy left idle does next, in the compile-time
/// scheme.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Skip {
    /// It leaves the heap for good (a compile-time scheme allocates each
    /// server's tasks once, in load order). Only when every core has been
    /// set aside are they all offered again, at the last offer's time.
    SetAside,
    /// It leaves the heap until the next launch anywhere, then is offered
    /// again at that launch's time (a launch changes what the policies
    /// see, as a finished task does in a real cluster).
    Wake,
    /// It is offered again `h` time units later (a heartbeat).
    After(f64),
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::SetAside => write!(f, "set-aside"),
            Skip::Wake => write!(f, "wake"),
            Skip::After(h) => write!(f, "after={h}"),
        }
    }
}

impl std::str::FromStr for Skip {
    type Err = String;
    /// `set-aside`, `wake` or `after=H` (H > 0, time units).
    fn from_str(s: &str) -> Result<Skip, String> {
        let s = s.trim();
        match s {
            "set-aside" => Ok(Skip::SetAside),
            "wake" => Ok(Skip::Wake),
            _ => {
                let h = s.strip_prefix("after=").ok_or_else(|| {
                    format!("{s:?} is not a skip rule (set-aside, wake, after=H)")
                })?;
                match h.trim().parse::<f64>() {
                    Ok(h) if h.is_finite() && h > 0.0 => Ok(Skip::After(h)),
                    _ => Err(format!("after={h}: H must be a number of time units > 0")),
                }
            }
        }
    }
}

/// Offers in a row without a launch, per core, after which a run is given
/// up (a policy that never launches would loop for ever).
const STALL_OFFERS_PER_CORE: usize = 100;

struct Loads<'a> {
    inst: &'a Instance,
    server: Vec<u32>,
    init: Vec<f64>,
    waited: Vec<f64>,
    local: Vec<u32>,
    remote: Vec<u32>,
    remote_on: Vec<usize>,
    remote_total: usize,
}

impl Loads<'_> {
    /// Core `p`'s load under the static model with the remote tasks
    /// allocated so far, plus its waiting time.
    fn of(&self, p: usize) -> f64 {
        let s = self.server[p] as usize;
        let remote = if self.remote[p] == 0 {
            0.0
        } else {
            self.remote[p] as f64
                * self.inst.cost.remote(
                    self.inst.cores[s].len(),
                    self.remote_on[s],
                    self.remote_total,
                )
        };
        self.init[p] + self.waited[p] + self.local[p] as f64 * self.inst.cost.local() + remote
    }
}

/// Runs `sched` on `inst` (all tasks one job, submitted at 0) in BAR's
/// compile-time scheme and returns the core of every task. Fails if the
/// policy goes [`STALL_OFFERS_PER_CORE`] offers per core without a launch.
pub fn run(sched: &mut dyn Scheduler, inst: &Instance, skip: Skip) -> Result<Assignment, SimError> {
    let cores = inst.flat();
    let n = cores.init.len();
    let mut view = ClusterView::new();
    for (s, loads) in inst.cores.iter().enumerate() {
        let w = WorkerId(s as u32);
        view.upsert_worker(w, loads.len() as u32);
        if !inst.racks.is_empty() {
            view.set_rack(w, inst.rack(s as u32));
        }
        view.set_free(w, 0);
    }
    let job = JobId(1);
    add_as_job(inst, &mut view, job);
    let mut loads = Loads {
        inst,
        server: cores.server.clone(),
        init: cores.init.clone(),
        waited: vec![0.0; n],
        local: vec![0; n],
        remote: vec![0; n],
        remote_on: vec![0; inst.servers()],
        remote_total: 0,
    };
    // The task each core runs until its load is reached: Some(remote).
    let mut running: Vec<Option<bool>> = vec![None; n];
    // Free in the view (popped and not given a task).
    let mut waiting = vec![false; n];
    let mut in_heap = vec![true; n];
    let mut heap: BinaryHeap<Reverse<(OrdF64, u32)>> = (0..n)
        .map(|p| Reverse((OrdF64(cores.init[p]), p as u32)))
        .collect();
    let mut aside: Vec<u32> = Vec::new();
    let mut a = vec![u32::MAX; inst.tasks()];
    let mut left = inst.tasks();
    let mut now = 0.0f64;
    let mut stalled = 0usize;
    let stall_limit = STALL_OFFERS_PER_CORE * n.max(1);
    while left > 0 {
        if stalled > stall_limit {
            return Err(SimError {
                policy: sched.name(),
                unassigned: left,
                tasks: inst.tasks(),
                at: now,
                reason: None,
            });
        }
        let Some(Reverse((OrdF64(stored), p))) = heap.pop() else {
            // Every core is set aside: offer them all again, now.
            if aside.is_empty() {
                return Err(SimError {
                    policy: sched.name(),
                    unassigned: left,
                    tasks: inst.tasks(),
                    at: now,
                    reason: None,
                });
            }
            wake(&mut aside, &mut loads, &mut heap, &mut in_heap, now);
            continue;
        };
        let p = p as usize;
        let real = loads.of(p);
        if real > stored {
            // Its remote cost was renewed since it was pushed.
            heap.push(Reverse((OrdF64(real), p as u32)));
            continue;
        }
        in_heap[p] = false;
        now = real;
        let s = cores.server[p];
        let w = WorkerId(s);
        if !waiting[p] {
            match running[p].take() {
                Some(remote) => view.task_ended(job, w, remote),
                None => view.set_free(w, view.free_slots(w) + 1),
            }
            waiting[p] = true;
        }
        let launched = offer(sched, (now * UNIT_MS).round() as Millis, w, &mut view);
        stalled += 1;
        for l in &launched {
            stalled = 0;
            // The offered core first, then the server's other free cores.
            let q = if waiting[p] {
                p
            } else {
                cores
                    .of_server(s)
                    .find(|&q| waiting[q])
                    .expect("a launch takes a free slot")
            };
            waiting[q] = false;
            a[l.task.index as usize] = q as u32;
            left -= 1;
            if l.is_local() {
                loads.local[q] += 1;
            } else {
                loads.remote[q] += 1;
                loads.remote_on[s as usize] += 1;
                loads.remote_total += 1;
            }
            running[q] = Some(!l.is_local());
            if q != p && !in_heap[q] {
                aside.retain(|&x| x as usize != q);
                in_heap[q] = true;
                heap.push(Reverse((OrdF64(loads.of(q)), q as u32)));
            }
        }
        if waiting[p] {
            match skip {
                Skip::SetAside | Skip::Wake => aside.push(p as u32),
                Skip::After(h) => {
                    loads.waited[p] += h;
                    in_heap[p] = true;
                    heap.push(Reverse((OrdF64(loads.of(p)), p as u32)));
                }
            }
        } else {
            in_heap[p] = true;
            heap.push(Reverse((OrdF64(loads.of(p)), p as u32)));
        }
        if skip == Skip::Wake && !launched.is_empty() {
            wake(&mut aside, &mut loads, &mut heap, &mut in_heap, now);
        }
    }
    Ok(a)
}

/// Puts the set-aside cores back in the heap, to be offered at `now`.
fn wake(
    aside: &mut Vec<u32>,
    loads: &mut Loads<'_>,
    heap: &mut BinaryHeap<Reverse<(OrdF64, u32)>>,
    in_heap: &mut [bool],
    now: f64,
) {
    for q in aside.drain(..) {
        let q = q as usize;
        loads.waited[q] += (now - loads.of(q)).max(0.0);
        in_heap[q] = true;
        heap.push(Reverse((OrdF64(loads.of(q)), q as u32)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched::model::Cost;
    use sched::policy::build;

    fn policy(text: &str) -> Box<dyn Scheduler> {
        build(&text.parse().unwrap(), 1)
    }

    /// Servers 0..n of one core, initial loads `init`; task i's only
    /// replica on `replica[i]`; BAR's cost with C_loc = 10 and q.
    fn inst(init: &[f64], replica: &[u32], q: f64) -> Instance {
        Instance {
            cores: init.iter().map(|&l| vec![l]).collect(),
            replicas: replica.iter().map(|&s| vec![s]).collect(),
            cost: Cost::Bar { c_loc: 10.0, q },
            racks: Vec::new(),
        }
    }

    #[test]
    fn the_least_loaded_server_is_offered_first_and_remote_costs_are_renewed() {
        // Tasks 0, 1, 3 on server 0 (busy until 100), task 2 on server 2;
        // servers 1, 2, 3 free at 0, 8, 9; C_loc = 10, q = 5. HDS taking
        // the oldest task when none is local: server 1 takes task 0
        // remotely at 0 (load 10 + 5·1 = 15); server 2 task 2 locally at 8
        // (load 18); server 3 task 1 remotely at 9, which renews the remote
        // cost to 10 + 5·2 = 20, so server 1's load is 20. Server 2 (18)
        // is then the least loaded and takes task 3; without the renewal
        // server 1 (15) would have.
        let i = inst(&[100.0, 0.0, 8.0, 9.0], &[0, 0, 2, 0], 5.0);
        let hds = "policy = 'hadoop', pick = 'oldest'";
        let a = run(policy(hds).as_mut(), &i, Skip::SetAside).unwrap();
        assert_eq!(a, vec![1, 3, 2, 2]);
        // Evaluated statically: three remote tasks at 10 + 5·3 = 25 each.
        let e = i.evaluate(&a);
        assert_eq!(e.remote, 3);
        assert!((e.makespan - 43.0).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn a_skipped_server_is_set_aside_or_offered_again_later() {
        // DS over 3 servers with fraction 0.34: the counter must exceed
        // 1.02, so one skip, then a remote launch. The block is on server
        // 0, busy until 50; server 1 is free at 0, server 2 at 30.
        let i = inst(&[50.0, 0.0, 30.0], &[0], 1.0);
        let ds = "policy = 'ds', fraction = 0.34";
        // Set aside: server 1 skips at 0 and leaves; server 2, offered at
        // 30, takes the task remotely.
        let a = run(policy(ds).as_mut(), &i, Skip::SetAside).unwrap();
        assert_eq!(a, vec![2]);
        // Offered again 10 units later, server 1 comes back at 10, before
        // server 2, and takes it.
        let a = run(policy(ds).as_mut(), &i, Skip::After(10.0)).unwrap();
        assert_eq!(a, vec![1]);
        // Strict locality skips both; set aside, they leave, and server 0
        // runs the task locally at 50.
        let a = run(policy("strict").as_mut(), &i, Skip::SetAside).unwrap();
        assert_eq!(a, vec![0]);
    }

    #[test]
    fn the_three_skip_rules_give_three_placements() {
        // DS over 4 servers with fraction 0.5: the third skip in a row
        // launches remotely; any launch restarts the count. Task 0 on
        // server 0 (busy until 100), task 1 on server 2 (free at 1);
        // server 1 free at 0, server 3 at 50. C_loc = 10, q = 1.
        let i = inst(&[100.0, 0.0, 1.0, 50.0], &[0, 2], 1.0);
        let ds = "policy = 'ds', fraction = 0.5";
        let task0 = |skip| run(policy(ds).as_mut(), &i, skip).unwrap()[0];
        // Set aside: 1 skips at 0; 2 runs task 1 at 1 (count 0); 2 skips at
        // 11, 3 at 50 (count 2); 0 runs task 0 locally at 100.
        assert_eq!(task0(Skip::SetAside), 0);
        // Woken by the launch at 1, server 1 skips again at 1; then 2 at
        // 11 and 3 at 50 passes the count: remote on 3.
        assert_eq!(task0(Skip::Wake), 3);
        // Every 5 units: 1 skips at 0, 5 and 10, and 2 at 11 is the third
        // skip since the launch at 1: remote on 2.
        assert_eq!(task0(Skip::After(5.0)), 2);
    }

    #[test]
    fn gcc_counts_the_skipped_servers_as_idle() {
        // Four servers; the block is on server 0, busy until 100. GCC goes
        // remote once at least half the servers are free in the view:
        // server 1 (free at 0) skips and, set aside, stays free, so server
        // 2, offered at 1 with 2 of 4 free, takes the task remotely.
        let i = inst(&[100.0, 0.0, 1.0, 2.0], &[0], 1.0);
        let gcc = |f: &str| {
            run(
                policy(&format!("policy = 'gcc', idle_fraction = {f}")).as_mut(),
                &i,
                Skip::SetAside,
            )
            .unwrap()
        };
        assert_eq!(gcc("0.5"), vec![2]);
        // Three of four: server 3 at 2.
        assert_eq!(gcc("0.75"), vec![3]);
        // Every server free: it waits for server 0 itself.
        assert_eq!(gcc("1"), vec![0]);
    }

    /// Leaves every slot idle.
    struct Never;

    impl Scheduler for Never {
        fn name(&self) -> String {
            "never".into()
        }
        fn offer(&mut self, _: Millis, _: WorkerId, _: &mut sched::view::SchedContext<'_>) {}
    }

    #[test]
    fn a_policy_that_never_launches_is_given_up() {
        let i = inst(&[0.0, 3.0], &[1, 0], 1.0);
        for skip in [Skip::SetAside, Skip::Wake, Skip::After(1.0)] {
            let e = run(&mut Never, &i, skip).unwrap_err();
            assert_eq!((e.unassigned, e.tasks), (2, 2), "{skip}: {e}");
            assert_eq!(e.policy, "never");
        }
    }

    #[test]
    fn skip_rules_parse_and_bad_ones_are_named() {
        assert_eq!("set-aside".parse(), Ok(Skip::SetAside));
        assert_eq!(" wake ".parse(), Ok(Skip::Wake));
        assert_eq!("after=5".parse(), Ok(Skip::After(5.0)));
        assert_eq!(Skip::After(2.5).to_string(), "after=2.5");
        let e = "after=0".parse::<Skip>().unwrap_err();
        assert!(e.contains("after=0") && e.contains("> 0"), "{e}");
        let e = "later".parse::<Skip>().unwrap_err();
        assert!(e.contains("\"later\"") && e.contains("set-aside"), "{e}");
    }
}
