//! MaxCover-BalAssign (MB): Algorithm 2 of Fischer, Su and Yin, "Assigning
//! Tasks for Efficiency in Hadoop" (SPAA 2010), the flow-based baseline of
//! BAR's Section V.
//!
//! The algorithm iterates a threshold τ = 1, 2, ... and keeps a partial
//! assignment α of data-local tasks between iterations. Each iteration has
//! two phases:
//! - max-cover: Ford-Fulkerson, started from the flow α, on the network
//!   task -> server (the task's block is there) with server capacities τ;
//!   α becomes a maximum set of tasks assigned locally with no server over
//!   τ tasks;
//! - bal-assign: the tasks α leaves unassigned are added one step at a time,
//!   each step to a server of least *virtual* load. The virtual cost of a
//!   local task is w_loc; of a remote one w_rem(u), pessimistically as if
//!   all u = m - |α| tasks α leaves out ended up remote. The result is a
//!   complete assignment B_τ.
//!
//! The output is the B_τ of least maximum load under the true cost model.
//!
//! Fischer et al.'s servers have no initial load and one processor. On the
//! lab's instances (BAR's initial loads U[0, W], DynDL's multicore servers)
//! the threshold is a time, τ·w_loc: a core with initial load L may take
//! ⌊τ - L/w_loc⌋ local tasks (so with no initial load, τ tasks as in the
//! paper), a server the sum over its cores, and virtual loads start at the
//! initial loads. A bal-assign step that picks a core whose server still
//! has an unassigned data-local task assigns that one (local, w_loc), else
//! the first unassigned task (remote). Under DynDL's per-server cost the
//! virtual remote cost on server s is g_s(u) = 1 + θ·min(u, cores of s).
//! The iterations stop once α covers every task: later ones would repeat
//! the same α and so the same B_τ. An iteration that leaves α unchanged
//! reuses the previous B_τ.

use crate::model::OrdF64;
use crate::model::{Assignment, Cores, Instance};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;

/// The max-cover state: α, kept across iterations.
struct Cover<'a> {
    inst: &'a Instance,
    /// Server of each task under α, or NONE.
    at: Vec<u32>,
    /// Tasks α assigns to each server, and each task's index there.
    on: Vec<Vec<u32>>,
    slot: Vec<u32>,
    cap: Vec<u64>,
    covered: usize,
    /// Per-search and per-iteration marks (stamps).
    seen_task: Vec<u32>,
    seen_server: Vec<u32>,
    dead: Vec<u32>,
    search: u32,
    parent: Vec<(u32, u32)>,
}

impl<'a> Cover<'a> {
    fn new(inst: &'a Instance) -> Self {
        let (m, n) = (inst.tasks(), inst.servers());
        Cover {
            inst,
            at: vec![NONE; m],
            on: vec![Vec::new(); n],
            slot: vec![0; m],
            cap: vec![0; n],
            covered: 0,
            seen_task: vec![0; m],
            seen_server: vec![0; n],
            dead: vec![0; n],
            search: 0,
            parent: vec![(NONE, NONE); m],
        }
    }

    fn move_task(&mut self, t: u32, to: u32) {
        let from = self.at[t as usize];
        if from != NONE {
            let list = &mut self.on[from as usize];
            let i = self.slot[t as usize] as usize;
            list.swap_remove(i);
            if let Some(&moved) = list.get(i) {
                self.slot[moved as usize] = i as u32;
            }
        } else {
            self.covered += 1;
        }
        self.slot[t as usize] = self.on[to as usize].len() as u32;
        self.on[to as usize].push(t);
        self.at[t as usize] = to;
    }

    /// One augmenting-path search (breadth first) from the unassigned task
    /// `root`; on success the path's tasks shift one server along.
    /// `iteration` stamps the servers a failed search proves saturated: no
    /// later search of the same iteration can get through them.
    fn augment(&mut self, root: u32, iteration: u32) -> bool {
        self.search += 1;
        let stamp = self.search;
        let mut queue = vec![root];
        self.seen_task[root as usize] = stamp;
        let mut visited_servers = Vec::new();
        let mut head = 0;
        while head < queue.len() {
            let u = queue[head];
            head += 1;
            for &s in &self.inst.replicas[u as usize] {
                let si = s as usize;
                if s == self.at[u as usize]
                    || self.dead[si] == iteration
                    || self.seen_server[si] == stamp
                {
                    continue;
                }
                self.seen_server[si] = stamp;
                visited_servers.push(s);
                if (self.on[si].len() as u64) < self.cap[si] {
                    // Shift along the path back to the root.
                    let (mut cur, mut dest) = (u, s);
                    loop {
                        let old = self.at[cur as usize];
                        self.move_task(cur, dest);
                        if cur == root {
                            return true;
                        }
                        let (p, via) = self.parent[cur as usize];
                        debug_assert_eq!(via, old);
                        cur = p;
                        dest = old;
                    }
                }
                for k in 0..self.on[si].len() {
                    let v = self.on[si][k];
                    if self.seen_task[v as usize] != stamp {
                        self.seen_task[v as usize] = stamp;
                        self.parent[v as usize] = (u, s);
                        queue.push(v);
                    }
                }
            }
        }
        for s in visited_servers {
            self.dead[s as usize] = iteration;
        }
        false
    }
}

/// bal-assign: completes α by least-virtual-load steps.
fn bal_assign(inst: &Instance, cores: &Cores, pref: &[Vec<u32>], cover: &Cover) -> Assignment {
    let m = inst.tasks();
    let lc = inst.cost.local();
    let left = m - cover.covered;
    let mut load = cores.init.clone();
    let mut a = vec![NONE; m];
    // α's tasks, each on its server's least loaded core.
    for (s, tasks) in cover.on.iter().enumerate() {
        for &t in tasks {
            let p = cores
                .of_server(s as u32)
                .min_by(|&x, &y| load[x].total_cmp(&load[y]))
                .expect("a server has a core");
            load[p] += lc;
            a[t as usize] = p as u32;
        }
    }
    let mut heap: BinaryHeap<Reverse<(OrdF64, u32)>> = (0..load.len())
        .map(|p| Reverse((OrdF64(load[p]), p as u32)))
        .collect();
    let mut next_pref = vec![0usize; inst.servers()];
    let mut next_any = 0usize;
    for _ in 0..left {
        let Reverse((OrdF64(l), p)) = heap.pop().expect("cores are never exhausted");
        let s = cores.server[p as usize] as usize;
        let list = &pref[s];
        while next_pref[s] < list.len() && a[list[next_pref[s]] as usize] != NONE {
            next_pref[s] += 1;
        }
        let (t, cost) = if next_pref[s] < list.len() {
            (list[next_pref[s]], lc)
        } else {
            while a[next_any] != NONE {
                next_any += 1;
            }
            let n_cores = inst.cores[s].len();
            (next_any as u32, inst.cost.remote(n_cores, left, left))
        };
        a[t as usize] = p;
        heap.push(Reverse((OrdF64(l + cost), p)));
    }
    a
}

pub fn assign(inst: &Instance) -> Assignment {
    assign_probed(inst, &mut super::NoProbe).expect("NoProbe never stops a planner")
}

/// [`assign`], asking `probe` before each threshold τ whether to go on
/// (Fischer et al.'s algorithm is the one whose running time grows past
/// any practical limit: BAR's paper reports 203 s at 12,800 tasks and
/// DynDL's a cut-off at 30 minutes for 20,000).
pub fn assign_probed(inst: &Instance, probe: &mut dyn super::Probe) -> Option<Assignment> {
    let m = inst.tasks();
    if m == 0 {
        return Some(Vec::new());
    }
    let cores = inst.flat();
    let lc = inst.cost.local();
    let pref = inst.tasks_by_server();
    let max_init = cores.init.iter().copied().fold(0.0, f64::max);
    let last = m as u64 + (max_init / lc).ceil() as u64;
    let mut cover = Cover::new(inst);
    let mut best: Option<(f64, Assignment)> = None;
    let mut covered_before = usize::MAX;
    for tau in 1..=last {
        if !probe.go_on() {
            return None;
        }
        // Capacities at threshold τ·w_loc.
        for (s, c) in cover.cap.iter_mut().enumerate() {
            *c = cores
                .of_server(s as u32)
                .map(|p| (tau as f64 - cores.init[p] / lc + 1e-9).floor().max(0.0) as u64)
                .sum();
        }
        let iteration = tau as u32;
        for t in 0..m as u32 {
            if cover.at[t as usize] == NONE {
                cover.augment(t, iteration);
            }
        }
        if cover.covered != covered_before {
            covered_before = cover.covered;
            let b = bal_assign(inst, &cores, &pref, &cover);
            let makespan = inst.evaluate_with(&cores, &b).makespan;
            if best.as_ref().is_none_or(|(bm, _)| makespan < *bm) {
                best = Some((makespan, b));
            }
        }
        if cover.covered == m {
            break;
        }
    }
    Some(best.expect("the last iteration covers every task").1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{bar_example1, random};
    use crate::model::Cost;

    /// With no initial load and one core per server, max-cover at τ covers
    /// as many tasks as a brute force over capped local assignments.
    #[test]
    fn max_cover_is_maximum_against_brute_force() {
        for seed in 0..300 {
            let mut inst = random(seed, Cost::Bar { c_loc: 1.0, q: 0.5 });
            for c in &mut inst.cores {
                *c = vec![0.0];
            }
            for tau in 1..=3u64 {
                let mut cover = Cover::new(&inst);
                cover.cap.iter_mut().for_each(|c| *c = tau);
                for t in 0..inst.tasks() as u32 {
                    cover.augment(t, 1);
                }
                assert_eq!(
                    cover.covered,
                    brute_cover(&inst, tau),
                    "seed {seed} tau {tau}: {inst:?}"
                );
                for (s, on) in cover.on.iter().enumerate() {
                    assert!(on.len() as u64 <= tau);
                    assert!(on.iter().all(|&t| inst.is_local(t as usize, s as u32)));
                }
            }
        }
    }

    /// Most tasks coverable locally with at most `tau` per server.
    fn brute_cover(inst: &Instance, tau: u64) -> usize {
        fn go(inst: &Instance, t: usize, used: &mut Vec<u64>, tau: u64) -> usize {
            if t == inst.tasks() {
                return 0;
            }
            let mut best = go(inst, t + 1, used, tau);
            for &s in &inst.replicas[t] {
                if used[s as usize] < tau {
                    used[s as usize] += 1;
                    best = best.max(1 + go(inst, t + 1, used, tau));
                    used[s as usize] -= 1;
                }
            }
            best
        }
        go(inst, 0, &mut vec![0; inst.servers()], tau)
    }

    #[test]
    fn bar_example_1() {
        // Initial loads 7.1, 4.2, 0.3; C_rem(r) = 1 + 0.1 r. At τ = 1 no
        // core may take a local task, so bal-assign builds the whole
        // assignment with a virtual remote cost of 1.7: s3 takes its three
        // local tasks (3.3), then remote t1 (5.0); s2 takes t4 (5.2); s3
        // remote t5 (6.7 virtual); s2 t7 (6.2). Under the true cost (2
        // remote tasks, 1.2 each) s3 ends at 5.7 and the makespan is s2's
        // 6.2, BAR's result after its reduce phase (Example 4).
        let inst = bar_example1();
        let a = assign(&inst);
        let e = inst.evaluate(&a);
        assert_eq!(e.remote, 2, "{a:?}");
        assert!((e.makespan - 6.2).abs() < 1e-9, "{e:?} {a:?}");
    }

    #[test]
    fn a_single_overloaded_replica_holder_sends_tasks_remote() {
        // Every block on server 0; 6 idle servers; a remote task costs
        // 1 + 0.1 r. All-local takes 6; MB spreads them.
        let inst = Instance {
            cores: vec![vec![0.0]; 6],
            replicas: vec![vec![0]; 6],
            cost: Cost::Bar { c_loc: 1.0, q: 0.1 },
            racks: Vec::new(),
        };
        let e = inst.evaluate(&assign(&inst));
        assert!(e.remote > 0 && e.makespan < 6.0, "{e:?}");
    }
}
