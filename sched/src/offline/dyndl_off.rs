//! DynDLOff (DynDL, Section 5): the offline two-phase algorithm.
//!
//! Phase I (Algorithm 2) builds a *balanced* data-local assignment B:
//! every task on one of its replica servers (Constraint 1), and no task
//! could move to another of its servers and finish earlier (Constraint 2),
//! which makes B optimal among data-local assignments (Property 1).
//! 1. Greedy: each task, in id order, goes to the least-loaded core among
//!    the cores of its replica servers.
//! 2. Cost-reducing paths: in the bipartite graph with arcs server -> task
//!    (the task runs there) and task -> server (another replica), take the
//!    not-DONE server with the largest MAX (its most loaded active core),
//!    search depth-first, and among the servers reached pick the one with the
//!    smallest MIN (its least loaded core). If MAX - MIN exceeds one task's
//!    cost, flip the path: every task on it moves one server along, so the
//!    first server loses a task and the last gains one. Otherwise mark the
//!    start DONE. Repeat until every server is DONE.
//!    Within a server, tasks are identical, so a server's tasks fill its
//!    cores by water-filling (each to the least loaded core); MAX and MIN
//!    are taken over that filling.
//!
//! Phase II (Algorithm 3) adds data-remote tasks. F_B(t) is t's finish time
//! in B; sorted descending, D[i] = F_B of the (i+1)-th task is the deadline
//! that makes the i latest tasks data-remote. Deadline D[i] passes the test
//! if the servers can finish those i tasks remotely before it: server s can
//! finish r remote tasks iff Σ_{p ∈ core(s), L(p) < D} ⌊(D - L(p)) / g_s(r)⌋
//! ≥ r (L = loads without the moved tasks); its maximum r is found between
//! Theorem 1's bounds max(γ - |core(s)|, 0) ≤ r ≤ γ, γ the largest r with
//! r·g_s(r) ≤ ΔL(s, D). A binary search finds the last passing index k. A_k
//! places the k tasks within the servers' capacities; A_{k+1} places as many
//! of k + 1 as fit before D[k+1] and the rest by max-min (the core whose
//! future load L_init + l + (r_p + 1)·g_s(1 + Σ r) is least). The better of
//! A_k and A_{k+1} (and B) is returned.
//!
//! Shortcuts that keep the paper's choices: a search stops early once it
//! reaches a server at the global minimum (none can be lower); when no
//! server is low enough for any path, the loop ends; a search that finds no
//! path marks every server it reached DONE (each reaches only servers that
//! search reached, and has a MAX no larger).
//!
//! Deviation: the paper precomputes R[s][i] = i·g_s(i) for every server and
//! i ≤ |T|; here i·g_s(i) is computed when the binary search needs it (it is
//! O(1)), which saves an |S| x |T| matrix (80 MB at 1,000 x 10,000).

use crate::model::{Assignment, Cores, Instance, OrdF64};
use std::collections::BinaryHeap;

/// Tolerance for load comparisons.
const EPS: f64 = 1e-9;

/// Phase I's state: tasks per server, water-filled over the cores.
pub(crate) struct Balanced<'a> {
    inst: &'a Instance,
    cores: &'a Cores,
    lc: f64,
    /// Local tasks per core.
    cnt: Vec<u32>,
    /// Server of each task.
    server_of: Vec<u32>,
    /// Tasks on each server, and each task's position there.
    on: Vec<Vec<u32>>,
    pos: Vec<usize>,
}

impl<'a> Balanced<'a> {
    fn load(&self, p: usize) -> f64 {
        self.cores.init[p] + self.cnt[p] as f64 * self.lc
    }

    /// The core the next task of `s` lands on, and its load.
    fn min_core(&self, s: u32) -> (usize, f64) {
        self.cores
            .of_server(s)
            .map(|p| (p, self.load(p)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .expect("a server has cores")
    }

    /// The most loaded active core of `s` (the one that loses a task).
    fn max_active_core(&self, s: u32) -> Option<(usize, f64)> {
        self.cores
            .of_server(s)
            .filter(|&p| self.cnt[p] > 0)
            .map(|p| (p, self.load(p)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    fn add(&mut self, t: u32, s: u32) {
        let (p, _) = self.min_core(s);
        self.cnt[p] += 1;
        self.server_of[t as usize] = s;
        self.pos[t as usize] = self.on[s as usize].len();
        self.on[s as usize].push(t);
    }

    fn remove(&mut self, t: u32) {
        let s = self.server_of[t as usize];
        let (p, _) = self.max_active_core(s).expect("the server holds t");
        self.cnt[p] -= 1;
        let list = &mut self.on[s as usize];
        let i = self.pos[t as usize];
        list.swap_remove(i);
        if let Some(&moved) = list.get(i) {
            self.pos[moved as usize] = i;
        }
    }

    /// Phase I: greedy data-local assignment, then cost-reducing paths.
    pub(crate) fn build(inst: &'a Instance, cores: &'a Cores) -> Balanced<'a> {
        let n = inst.tasks();
        let mut b = Balanced {
            inst,
            cores,
            lc: inst.cost.local(),
            cnt: vec![0; cores.init.len()],
            server_of: vec![0; n],
            on: vec![Vec::new(); inst.servers()],
            pos: vec![0; n],
        };
        // Step 1: greedy, least-loaded preferred core.
        for t in 0..n {
            let (_, s) = inst.replicas[t]
                .iter()
                .map(|&s| (b.min_core(s), s))
                .min_by(|a, b| a.0 .1.total_cmp(&b.0 .1).then(a.0 .0.cmp(&b.0 .0)))
                .expect("a task has replicas");
            b.add(t as u32, s);
        }
        // Step 2: eliminate cost-reducing paths.
        let servers = inst.servers();
        let mut max_of: Vec<f64> = (0..servers as u32)
            .map(|s| b.max_active_core(s).map_or(f64::NEG_INFINITY, |x| x.1))
            .collect();
        let mut min_of: Vec<f64> = (0..servers as u32).map(|s| b.min_core(s).1).collect();
        let mut done = vec![false; servers];
        // Max-heap of (MAX, server); stale entries are skipped.
        let mut heap: BinaryHeap<(OrdF64, std::cmp::Reverse<u32>)> = (0..servers as u32)
            .filter(|&s| !b.on[s as usize].is_empty())
            .map(|s| (OrdF64(max_of[s as usize]), std::cmp::Reverse(s)))
            .collect();
        // Replica lists flattened (CSR) for the searches.
        let mut rep_at: Vec<u32> = Vec::with_capacity(n + 1);
        let mut rep: Vec<u32> = Vec::with_capacity(n * 3);
        rep_at.push(0);
        for r in &inst.replicas {
            rep.extend_from_slice(r);
            rep_at.push(rep.len() as u32);
        }
        let mut visited = vec![u32::MAX; servers];
        let mut parent: Vec<(u32, u32)> = vec![(0, 0); servers];
        let mut stack: Vec<u32> = Vec::new();
        let mut round = 0u32;
        while let Some((OrdF64(m), std::cmp::Reverse(s_max))) = heap.pop() {
            let su = s_max as usize;
            if done[su] || m != max_of[su] || b.on[su].is_empty() {
                continue;
            }
            // No server anywhere is low enough to end a cost-reducing path
            // from s_max: DONE without searching (and, as MAX only falls
            // along the heap, so is every server after it).
            let global_min = min_of
                .iter()
                .enumerate()
                .filter(|&(s, _)| s != su)
                .map(|(_, &l)| l)
                .fold(f64::INFINITY, f64::min);
            if m - global_min <= b.lc + EPS {
                break;
            }
            // Depth-first search from s_max.
            round += 1;
            visited[su] = round;
            stack.clear();
            stack.push(s_max);
            let mut best: Option<(f64, u32)> = None;
            while let Some(s) = stack.pop() {
                if s != s_max {
                    let l = min_of[s as usize];
                    if best.is_none_or(|(bl, bs)| l < bl || (l == bl && s < bs)) {
                        best = Some((l, s));
                    }
                    // Nothing reachable can be lower than the global minimum.
                    if l <= global_min {
                        break;
                    }
                }
                for &t in &b.on[s as usize] {
                    let t_us = t as usize;
                    for &s2 in &rep[rep_at[t_us] as usize..rep_at[t_us + 1] as usize] {
                        if visited[s2 as usize] != round {
                            visited[s2 as usize] = round;
                            parent[s2 as usize] = (s, t);
                            stack.push(s2);
                        }
                    }
                }
            }
            match best {
                Some((l_min, s_min)) if m - l_min > b.lc + EPS => {
                    // Flip the path s_max -> ... -> s_min.
                    let mut cur = s_min;
                    let mut moves = Vec::new();
                    while cur != s_max {
                        let (prev, t) = parent[cur as usize];
                        moves.push((t, cur));
                        cur = prev;
                    }
                    for (t, to) in moves {
                        b.remove(t);
                        b.add(t, to);
                    }
                    for s in [s_max, s_min] {
                        let i = s as usize;
                        max_of[i] = b.max_active_core(s).map_or(f64::NEG_INFINITY, |x| x.1);
                        min_of[i] = b.min_core(s).1;
                        if !done[i] && !b.on[i].is_empty() {
                            heap.push((OrdF64(max_of[i]), std::cmp::Reverse(s)));
                        }
                    }
                }
                _ => {
                    // Every server this search reached has no cost-reducing
                    // path now either: what it reaches was reached, and its
                    // MAX is at most s_max's.
                    for (s, &v) in visited.iter().enumerate() {
                        if v == round {
                            done[s] = true;
                        }
                    }
                }
            }
        }
        b
    }

    /// The balanced assignment: per server, tasks water-filled over its
    /// cores in id order; also each task's finish time F_B(t).
    pub(crate) fn assignment(&self) -> (Assignment, Vec<f64>) {
        let mut a = vec![0u32; self.inst.tasks()];
        let mut f = vec![0.0; self.inst.tasks()];
        let mut load = self.cores.init.clone();
        for s in 0..self.inst.servers() as u32 {
            let mut tasks = self.on[s as usize].clone();
            tasks.sort_unstable();
            for t in tasks {
                let p = self
                    .cores
                    .of_server(s)
                    .min_by(|&x, &y| load[x].total_cmp(&load[y]).then(x.cmp(&y)))
                    .expect("cores");
                load[p] += self.lc;
                a[t as usize] = p as u32;
                f[t as usize] = load[p];
            }
        }
        (a, f)
    }
}

/// Phase I only: the balanced data-local assignment.
pub fn phase1(inst: &Instance) -> Assignment {
    let cores = inst.flat();
    Balanced::build(inst, &cores).assignment().0
}

/// DynDLOff's two phases, as [`super::Probe`] hears of them.
pub const PHASES: [&str; 2] = ["phase I", "phase II"];

/// DynDLOff: Phase I, then Phase II.
pub fn assign(inst: &Instance) -> Assignment {
    assign_probed(inst, &mut super::NoProbe).expect("NoProbe never stops a planner")
}

/// [`assign`], telling `probe` where each phase ends.
pub fn assign_probed(inst: &Instance, probe: &mut dyn super::Probe) -> Option<Assignment> {
    let cores = inst.flat();
    let (b, f) = Balanced::build(inst, &cores).assignment();
    probe.phase_done(PHASES[0]);
    if !probe.go_on() {
        return None;
    }
    let a = Phase2::new(inst, &cores, b, f).run();
    probe.phase_done(PHASES[1]);
    Some(a)
}

struct Phase2<'a> {
    inst: &'a Instance,
    cores: &'a Cores,
    lc: f64,
    b: Assignment,
    /// Tasks by F_B descending (ties: higher id first).
    order: Vec<u32>,
    /// D[i] = F_B(order[i]).
    d: Vec<f64>,
}

impl<'a> Phase2<'a> {
    fn new(inst: &'a Instance, cores: &'a Cores, b: Assignment, f: Vec<f64>) -> Self {
        let mut order: Vec<u32> = (0..inst.tasks() as u32).collect();
        order.sort_by(|&x, &y| f[y as usize].total_cmp(&f[x as usize]).then(y.cmp(&x)));
        let d = order.iter().map(|&t| f[t as usize]).collect();
        Phase2 {
            inst,
            cores,
            lc: inst.cost.local(),
            b,
            order,
            d,
        }
    }

    fn g(&self, s: usize, r: usize) -> f64 {
        self.inst.cost.remote(self.inst.cores[s].len(), r, r)
    }

    /// Core loads without the `i` latest tasks.
    fn loads_without(&self, i: usize) -> Vec<f64> {
        let mut load = self.cores.init.clone();
        for &t in &self.order[i..] {
            load[self.b[t as usize] as usize] += self.lc;
        }
        load
    }

    /// r_max for every server at deadline `d` with core loads `load`.
    fn r_max(&self, d: f64, load: &[f64], limit: usize) -> Vec<usize> {
        (0..self.inst.servers())
            .map(|s| {
                let cores = self.cores.of_server(s as u32);
                let delta: f64 = cores.clone().map(|p| (d - load[p]).max(0.0)).sum();
                if delta <= EPS {
                    return 0;
                }
                let fits = |r: usize| -> bool {
                    let g = self.g(s, r);
                    let n: f64 = cores
                        .clone()
                        .map(|p| ((d - load[p]).max(0.0) / g + EPS).floor())
                        .sum();
                    n >= r as f64
                };
                // γ: the largest r <= limit with r·g(r) <= ΔL (monotone).
                let (mut lo, mut hi) = (0usize, limit);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if mid as f64 * self.g(s, mid) <= delta + EPS {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                let gamma = lo;
                // r_max in [max(γ - |core(s)|, 0), γ]; feasibility is monotone.
                let (mut lo, mut hi) = (gamma.saturating_sub(cores.len()), gamma);
                if !fits(lo) {
                    // Outside Theorem 1's bound only through float noise.
                    lo = 0;
                }
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fits(mid) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                lo
            })
            .collect()
    }

    fn passes(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        let load = self.loads_without(i);
        let total: usize = self.r_max(self.d[i], &load, i).iter().sum();
        total >= i
    }

    /// The assignment with the `i` latest tasks data-remote, at deadline D[i]:
    /// as many as fit before it, the rest by max-min.
    fn assignment(&self, i: usize) -> Assignment {
        let mut a = self.b.clone();
        if i == 0 {
            return a;
        }
        let mut load = self.loads_without(i);
        let d = self.d[i];
        let rmax = self.r_max(d, &load, i);
        let mut moved = self.order[..i].iter().copied();
        let mut r_core = vec![0usize; load.len()];
        let mut r_srv = vec![0usize; self.inst.servers()];
        // Within the deadline: r_max[s] tasks on s, each core by its capacity.
        'servers: for (s, &r) in rmax.iter().enumerate() {
            if r == 0 {
                continue;
            }
            let g = self.g(s, r);
            let mut placed = 0;
            for p in self.cores.of_server(s as u32) {
                let cap = ((d - load[p]).max(0.0) / g + EPS).floor() as usize;
                for _ in 0..cap {
                    if placed == r {
                        continue 'servers;
                    }
                    let Some(t) = moved.next() else {
                        break 'servers;
                    };
                    a[t as usize] = p as u32;
                    r_core[p] += 1;
                    r_srv[s] += 1;
                    placed += 1;
                }
            }
        }
        // The rest: max-min over future loads, via a min-heap of servers.
        let rest: Vec<u32> = moved.collect();
        if rest.is_empty() {
            return a;
        }
        let future = |s: usize, load: &[f64], r_core: &[usize], r_srv: &[usize]| {
            let g = self.g(s, r_srv[s] + 1);
            self.cores
                .of_server(s as u32)
                .map(|p| (load[p] + (r_core[p] + 1) as f64 * g, p))
                .min_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)))
                .expect("cores")
        };
        let mut version = vec![0u32; self.inst.servers()];
        let mut heap: BinaryHeap<std::cmp::Reverse<(OrdF64, u32, u32)>> = (0..self.inst.servers())
            .map(|s| {
                let (f, _) = future(s, &load, &r_core, &r_srv);
                std::cmp::Reverse((OrdF64(f), s as u32, 0))
            })
            .collect();
        for t in rest {
            loop {
                let std::cmp::Reverse((_, s, v)) = heap.pop().expect("servers");
                let s = s as usize;
                if v != version[s] {
                    continue;
                }
                let (_, p) = future(s, &load, &r_core, &r_srv);
                a[t as usize] = p as u32;
                r_core[p] += 1;
                r_srv[s] += 1;
                version[s] += 1;
                let (f, _) = future(s, &load, &r_core, &r_srv);
                heap.push(std::cmp::Reverse((OrdF64(f), s as u32, version[s])));
                break;
            }
        }
        // Loads are only used for the heap; keep the borrow checker honest.
        load.clear();
        a
    }

    fn run(&self) -> Assignment {
        let n = self.order.len();
        if n == 0 {
            return Vec::new();
        }
        // The last passing index k in [0, n - 1] (test(0) always passes).
        let (mut lo, mut hi) = (0usize, n - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.passes(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let mut best = self.b.clone();
        let mut best_ms = self.inst.evaluate_with(self.cores, &best).makespan;
        for i in [lo, lo + 1] {
            if i == 0 || i >= n {
                continue;
            }
            let a = self.assignment(i);
            let ms = self.inst.evaluate_with(self.cores, &a).makespan;
            if ms < best_ms - EPS {
                (best, best_ms) = (a, ms);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{random, table2};
    use crate::model::Cost;

    #[test]
    fn table2_phase1_finds_the_cost_reducing_path() {
        // Greedy B0 leaves s4 with MAX 3.5 (t5 on p41) while s1's MIN is
        // below 2.5; cost-reducing paths move t5 to s3 (Fig 3c, 3d).
        let inst = table2();
        let cores = inst.flat();
        let b = Balanced::build(&inst, &cores);
        let (a, _) = b.assignment();
        let e = inst.evaluate(&a);
        assert_eq!(e.remote, 0);
        // The paper's balanced assignment has makespan 3.25 (t5 on p31).
        assert!((e.makespan - 3.25).abs() < 1e-9, "{a:?} {e:?}");
        assert_eq!(cores.server[a[4] as usize], 2, "t5 runs on s3: {a:?}");
    }

    #[test]
    fn table2_dyndl_off_makespan() {
        let inst = table2();
        let e = inst.evaluate(&assign(&inst));
        // Phase II cannot beat 3.25 here: a remote task costs >= 1.5 and
        // every core free before 1.75 is already used.
        assert!(e.makespan <= 3.25 + 1e-9, "{e:?}");
    }

    /// Brute force over all data-local assignments (task -> core of a
    /// replica server).
    fn best_local(inst: &Instance) -> f64 {
        let cores = inst.flat();
        let options: Vec<Vec<u32>> = inst
            .replicas
            .iter()
            .map(|r| {
                r.iter()
                    .flat_map(|&s| cores.of_server(s).map(|p| p as u32))
                    .collect()
            })
            .collect();
        let mut idx = vec![0usize; options.len()];
        let mut best = f64::INFINITY;
        loop {
            let a: Vec<u32> = idx.iter().zip(&options).map(|(&i, o)| o[i]).collect();
            best = best.min(inst.evaluate_with(&cores, &a).makespan);
            let mut k = 0;
            loop {
                if k == idx.len() {
                    return best;
                }
                idx[k] += 1;
                if idx[k] < options[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }

    /// Brute force over all assignments.
    fn best_any(inst: &Instance) -> f64 {
        let n = inst.flat().init.len() as u32;
        let mut a = vec![0u32; inst.tasks()];
        let mut best = f64::INFINITY;
        loop {
            best = best.min(inst.evaluate(&a).makespan);
            let mut k = 0;
            loop {
                if k == a.len() {
                    return best;
                }
                a[k] += 1;
                if a[k] < n {
                    break;
                }
                a[k] = 0;
                k += 1;
            }
        }
    }

    #[test]
    fn phase1_is_optimal_among_data_local_assignments() {
        for seed in 0..300 {
            let inst = random(seed, Cost::Dyndl { theta: 1.0 });
            let a = phase1(&inst);
            let e = inst.evaluate(&a);
            assert_eq!(e.remote, 0, "seed {seed}");
            let opt = best_local(&inst);
            assert!(
                (e.makespan - opt).abs() < 1e-9,
                "seed {seed}: phase I {} vs optimum {opt}; {inst:?} {a:?}",
                e.makespan
            );
        }
    }

    #[test]
    fn dyndl_off_never_loses_to_phase1_and_is_close_to_optimal() {
        let mut gap = 0.0;
        for seed in 0..150 {
            let inst = random(seed, Cost::Dyndl { theta: 0.5 });
            let p1 = inst.evaluate(&phase1(&inst)).makespan;
            let e = inst.evaluate(&assign(&inst)).makespan;
            assert!(e <= p1 + 1e-9, "seed {seed}: {e} > phase I {p1}");
            if inst.tasks() <= 5 && inst.flat().init.len() <= 6 {
                let opt = best_any(&inst);
                assert!(e >= opt - 1e-9);
                gap += e / opt - 1.0;
            }
        }
        assert!(gap.is_finite());
    }
}
