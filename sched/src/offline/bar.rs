//! BAR, Balance-Reduce (Jin et al., CCGrid 2011).
//!
//! Balance (Algorithm 1, BAA): a flow network source-less, server -> task
//! (the task's block is on the server) -> sink, unit capacities. m times:
//! take the least-loaded unvisited server node (load = L_init + tasks ·
//! C_loc), grow a search tree in the residual graph towards the sink; if an
//! augmenting path exists, push one unit along it (the server gains a task,
//! the tasks on the path shift one server along), else mark the tree's nodes
//! visited and try the next least-loaded server. The result is a balanced
//! local allocation (Definition 6), optimal among local ones (Theorem 1).
//!
//! Reduce (Algorithm 2): repeatedly move one task of the most loaded active
//! server into a remote pool P; the expected makespan M_exp is the largest
//! load left; with remote cost C_rem(|P|), place the pool's tasks one by
//! one on the least-loaded server (any whose load is at most M_exp - C_rem
//! qualifies; else the least loaded anyway). Stop when the result exceeds
//! M_exp, returning the better of this and the previous allocation.
//!
//! BAR's servers are single processors. On multicore instances every core
//! is a node of its own (it prefers the tasks whose block is on its server),
//! and BAR's remote cost estimate is its own HTA model: C_loc + q·|P| for
//! BAR instances, and 1 + θ·|P| (all remote tasks, not per server) for
//! DynDL instances, which is the overestimate DynDL's Fig 5 discusses. The
//! returned assignment is then evaluated under the instance's true model.
//! RandomTask of Algorithm 2 picks the task placed last on the server
//! (deterministic).

use crate::model::OrdF64;
use crate::model::{Assignment, Cores, Cost, Instance};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// BAR's remote cost estimate with `r` remote tasks in all.
fn c_rem(inst: &Instance, r: usize) -> f64 {
    match inst.cost {
        Cost::Bar { c_loc, q } => c_loc + q * r as f64,
        Cost::Dyndl { theta } => 1.0 + theta * r as f64,
    }
}

/// Balance phase: per task, its core.
pub fn balance(inst: &Instance, cores: &Cores) -> Assignment {
    let lc = inst.cost.local();
    let n_cores = cores.init.len();
    let m = inst.tasks();
    // Tasks whose block is on each server (arcs core -> task for its cores).
    let pref = inst.tasks_by_server();
    const NONE: u32 = u32::MAX;
    let mut at = vec![NONE; m];
    let mut num = vec![0u32; n_cores];
    let load = |num: &[u32], p: usize| cores.init[p] + num[p] as f64 * lc;
    let mut heap: BinaryHeap<Reverse<(OrdF64, u32)>> = (0..n_cores)
        .map(|p| Reverse((OrdF64(load(&num, p)), p as u32)))
        .collect();
    let mut visited_core = vec![0u32; n_cores];
    let mut visited_task = vec![0u32; m];
    let mut parent_task: Vec<u32> = vec![NONE; m];
    // The task (held by a core) through which the search entered the core.
    let mut via: Vec<u32> = vec![NONE; n_cores];
    let mut epoch = 0u32;
    let mut assigned = 0;
    while assigned < m {
        epoch += 1;
        let mut popped: Vec<u32> = Vec::new();
        let mut found = false;
        while let Some(Reverse((OrdF64(l), p0))) = heap.pop() {
            if l != load(&num, p0 as usize) {
                continue; // stale
            }
            popped.push(p0);
            if visited_core[p0 as usize] == epoch {
                continue;
            }
            // Search tree from p0 (breadth-first): core -> task (not on this
            // core) -> the task's current core (residual back arc) ... until
            // an unassigned task (arc to the sink).
            visited_core[p0 as usize] = epoch;
            let mut queue = std::collections::VecDeque::from([p0]);
            let mut end: Option<u32> = None;
            'search: while let Some(p) = queue.pop_front() {
                for &t in &pref[cores.server[p as usize] as usize] {
                    let ti = t as usize;
                    if visited_task[ti] == epoch || at[ti] == p {
                        continue;
                    }
                    visited_task[ti] = epoch;
                    parent_task[ti] = p;
                    if at[ti] == NONE {
                        end = Some(t);
                        break 'search;
                    }
                    let q = at[ti];
                    if visited_core[q as usize] != epoch {
                        visited_core[q as usize] = epoch;
                        via[q as usize] = t;
                        queue.push_back(q);
                    }
                }
            }
            if let Some(mut t) = end {
                // Augment: every task on the path moves to the core that
                // reached it; that core gives up the task it was entered by.
                loop {
                    let p = parent_task[t as usize];
                    at[t as usize] = p;
                    if p == p0 {
                        break;
                    }
                    t = via[p as usize];
                }
                num[p0 as usize] += 1;
                assigned += 1;
                found = true;
                break;
            }
            // No path: the whole tree stays visited for this iteration.
        }
        for p in popped {
            heap.push(Reverse((OrdF64(load(&num, p as usize)), p)));
        }
        if !found {
            // Impossible: every task has a replica, so some core can take it.
            unreachable!("BAA found no augmenting path with tasks left");
        }
    }
    at
}

/// BAR's two phases, as [`super::Probe`] hears of them.
pub const PHASES: [&str; 2] = ["balance", "reduce"];

/// BAR: balance, then reduce.
pub fn assign(inst: &Instance) -> Assignment {
    assign_probed(inst, &mut super::NoProbe).expect("NoProbe never stops a planner")
}

/// [`assign`], telling `probe` where each phase ends.
pub fn assign_probed(inst: &Instance, probe: &mut dyn super::Probe) -> Option<Assignment> {
    let cores = inst.flat();
    let b = balance(inst, &cores);
    probe.phase_done(PHASES[0]);
    if !probe.go_on() {
        return None;
    }
    let a = reduce(inst, &cores, b);
    probe.phase_done(PHASES[1]);
    Some(a)
}

/// Reduce phase (Algorithm 2).
pub fn reduce(inst: &Instance, cores: &Cores, b: Assignment) -> Assignment {
    let lc = inst.cost.local();
    let n_cores = cores.init.len();
    // Local partial allocation: tasks per core, in placement order.
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); n_cores];
    for (t, &p) in b.iter().enumerate() {
        on[p as usize].push(t as u32);
    }
    let local_load = |on: &[Vec<u32>], p: usize| cores.init[p] + on[p].len() as f64 * lc;
    // Active cores by local load (max-heap; stale entries skipped).
    let mut active: BinaryHeap<(OrdF64, u32)> = (0..n_cores)
        .filter(|&p| !on[p].is_empty())
        .map(|p| (OrdF64(local_load(&on, p)), p as u32))
        .collect();
    let mut pool: Vec<u32> = Vec::new();
    // The allocation of an iteration is B with the pool's tasks moved to
    // `placed` (core per pool entry); only the previous one is kept.
    let materialize = |pool: &[u32], placed: &[u32]| {
        let mut a = b.clone();
        for (&t, &p) in pool.iter().zip(placed) {
            a[t as usize] = p;
        }
        a
    };
    let mut prev_placed: Vec<u32> = Vec::new();
    let mut prev_ms = est_makespan(cores, &on, &[], lc, 0.0);
    loop {
        // s_max under L_p.
        let s_max = loop {
            match active.pop() {
                None => return materialize(&pool, &prev_placed),
                Some((OrdF64(l), p)) => {
                    let pu = p as usize;
                    if !on[pu].is_empty() && l == local_load(&on, pu) {
                        break pu;
                    }
                }
            }
        };
        let t = on[s_max].pop().expect("active core has a task");
        pool.push(t);
        if !on[s_max].is_empty() {
            active.push((OrdF64(local_load(&on, s_max)), s_max as u32));
        }
        // M_exp: the largest load of an active core of L_p.
        let m_exp = loop {
            match active.peek() {
                None => break 0.0,
                Some(&(OrdF64(l), p)) => {
                    let pu = p as usize;
                    if !on[pu].is_empty() && l == local_load(&on, pu) {
                        break l;
                    }
                    active.pop();
                }
            }
        };
        let c = c_rem(inst, pool.len());
        // Allocate the pool on the least-loaded cores.
        let mut placed = Vec::with_capacity(pool.len());
        let mut heap: BinaryHeap<Reverse<(OrdF64, u32)>> = (0..n_cores)
            .map(|p| Reverse((OrdF64(local_load(&on, p)), p as u32)))
            .collect();
        let mut extra = vec![0u32; n_cores];
        for _ in &pool {
            let Reverse((OrdF64(l), p)) = heap.pop().expect("cores");
            placed.push(p);
            extra[p as usize] += 1;
            heap.push(Reverse((OrdF64(l + c), p)));
        }
        let ms = est_makespan(cores, &on, &extra, lc, c);
        if ms > m_exp + 1e-9 {
            return if ms >= prev_ms {
                materialize(&pool[..pool.len() - 1], &prev_placed)
            } else {
                materialize(&pool, &placed)
            };
        }
        prev_placed = placed;
        prev_ms = ms;
    }
}

/// Makespan as BAR estimates it: local tasks at C_loc, pool tasks at `c`.
fn est_makespan(cores: &Cores, on: &[Vec<u32>], extra: &[u32], lc: f64, c: f64) -> f64 {
    (0..cores.init.len())
        .filter_map(|p| {
            let x = extra.get(p).copied().unwrap_or(0);
            (!on[p].is_empty() || x > 0)
                .then(|| cores.init[p] + on[p].len() as f64 * lc + x as f64 * c)
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{bar_example1 as example1, random};

    #[test]
    fn balance_is_optimal_among_local_allocations() {
        for seed in 0..300 {
            let inst = random(seed, Cost::Bar { c_loc: 1.0, q: 0.5 });
            let cores = inst.flat();
            let b = balance(&inst, &cores);
            let e = inst.evaluate(&b);
            assert_eq!(e.remote, 0, "seed {seed}");
            let p1 = inst
                .evaluate(&crate::offline::dyndl_off::phase1(&inst))
                .makespan;
            assert!(
                (e.makespan - p1).abs() < 1e-9,
                "seed {seed}: {} vs {p1}",
                e.makespan
            );
        }
    }

    #[test]
    fn bar_example_reduces_the_makespan() {
        // BAR Example 4 ends at makespan 6.2 with two remote tasks.
        let inst = example1();
        let a = assign(&inst);
        let e = inst.evaluate(&a);
        let b = inst.evaluate(&balance(&inst, &inst.flat()));
        assert!(e.makespan <= b.makespan + 1e-9);
        assert!((e.makespan - 6.2).abs() < 1e-9, "{a:?} {e:?}");
        assert_eq!(e.remote, 2);
    }
}
