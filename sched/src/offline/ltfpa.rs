//! LTFPA, the local-tasks-first priority algorithm of Pandas (Xie et al.),
//! as DynDL uses it as an offline baseline: every server m keeps a queue
//! Q_m of data-local tasks; a task joins the shortest queue among its
//! replica servers (ties: lower server id). Cores free at their initial
//! loads; a freed core on m runs the head of Q_m (local); if Q_m is empty
//! it takes a task from the longest queue, data-remote, when that queue is
//! longer than the threshold; otherwise the core stays idle. A remote task's
//! running time is the server's data-remote cost with it included. Tasks
//! left when every core would stay idle are then taken remotely regardless
//! of the threshold (so every task is assigned).
//!
//! [`assign`] finds the longest queue with a heap, O(log |S|) a steal;
//! [`assign_scan`] looks at every queue, O(|S|) a steal, as "the longest
//! queue in the system" reads when done directly (DynDL's Fig 9 has its
//! LTFPA's time grow with the number of servers). Both give the same plan.

use crate::model::OrdF64;
use crate::model::{Assignment, Instance};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Queue length a remote steal needs to exceed: 0, so an idle core steals
/// from the longest non-empty queue (a larger threshold leaves tasks queued
/// behind cores busy for their whole initial load, which with DynDL's
/// β = 10,000 makes LTFPA's makespan that of the busiest queue).
pub const DEFAULT_THRESHOLD: usize = 0;

pub fn assign(inst: &Instance, threshold: usize) -> Assignment {
    plan(inst, threshold, false)
}

/// [`assign`], finding the longest queue by scanning every queue.
pub fn assign_scan(inst: &Instance, threshold: usize) -> Assignment {
    plan(inst, threshold, true)
}

fn plan(inst: &Instance, threshold: usize, scan: bool) -> Assignment {
    let cores = inst.flat();
    let lc = inst.cost.local();
    let mut queues: Vec<VecDeque<u32>> = vec![VecDeque::new(); inst.servers()];
    for (t, r) in inst.replicas.iter().enumerate() {
        let s = *r
            .iter()
            .min_by_key(|&&s| (queues[s as usize].len(), s))
            .expect("replicas");
        queues[s as usize].push_back(t as u32);
    }
    // Longest queue: max-heap of (len, Reverse(server)); stale skipped.
    let mut longest: BinaryHeap<(usize, Reverse<u32>)> = queues
        .iter()
        .enumerate()
        .map(|(s, q)| (q.len(), Reverse(s as u32)))
        .collect();
    // Core events: (time the core is free, core).
    let mut free: BinaryHeap<Reverse<(OrdF64, u32)>> = cores
        .init
        .iter()
        .enumerate()
        .map(|(p, &l)| Reverse((OrdF64(l), p as u32)))
        .collect();
    let mut idle: Vec<(f64, u32)> = Vec::new();
    let mut r_srv = vec![0usize; inst.servers()];
    let mut r_total = 0usize;
    let mut left = inst.tasks();
    let mut a = vec![u32::MAX; inst.tasks()];
    let mut force = false;
    while left > 0 {
        let Some(Reverse((OrdF64(now), p))) = free.pop() else {
            // Every core idles under the threshold: steal regardless.
            force = true;
            for (t, p) in idle.drain(..) {
                free.push(Reverse((OrdF64(t), p)));
            }
            continue;
        };
        let s = cores.server[p as usize] as usize;
        if let Some(t) = queues[s].pop_front() {
            if !scan {
                longest.push((queues[s].len(), Reverse(s as u32)));
            }
            a[t as usize] = p;
            left -= 1;
            free.push(Reverse((OrdF64(now + lc), p)));
            continue;
        }
        let steals = |len: usize| len > threshold || (force && len > 0);
        let victim = if scan {
            // The longest queue, the lowest server id among equals.
            let (mut best, mut best_len) = (None, 0usize);
            for (v, q) in queues.iter().enumerate() {
                if q.len() > best_len {
                    (best, best_len) = (Some(v as u32), q.len());
                }
            }
            best.filter(|_| steals(best_len))
        } else {
            // Longest queue, skipping stale entries.
            loop {
                match longest.peek() {
                    Some(&(len, Reverse(v))) if len != queues[v as usize].len() => {
                        longest.pop();
                    }
                    Some(&(len, Reverse(v))) if steals(len) => break Some(v),
                    _ => break None,
                }
            }
        };
        match victim {
            Some(v) => {
                let t = queues[v as usize].pop_back().expect("non-empty");
                if !scan {
                    longest.pop();
                    longest.push((queues[v as usize].len(), Reverse(v)));
                }
                a[t as usize] = p;
                left -= 1;
                let cost = if inst.is_local(t as usize, s as u32) {
                    lc
                } else {
                    r_srv[s] += 1;
                    r_total += 1;
                    inst.cost.remote(inst.cores[s].len(), r_srv[s], r_total)
                };
                free.push(Reverse((OrdF64(now + cost), p)));
            }
            None => idle.push((now, p)),
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cost;

    #[test]
    fn local_queue_first_then_steal_from_the_longest() {
        // Both cores idle; every block on server 0. Core 0 runs t0, t1 from
        // its queue; core 1 steals the queue's last task, t2, remotely.
        let inst = Instance {
            cores: vec![vec![0.0], vec![0.0]],
            replicas: vec![vec![0], vec![0], vec![0]],
            cost: Cost::Dyndl { theta: 1.0 },
            racks: Vec::new(),
        };
        let a = assign(&inst, 0);
        assert_eq!(a, vec![0, 0, 1]);
        let e = inst.evaluate(&a);
        assert_eq!(e.remote, 1);
        assert!((e.makespan - 2.0).abs() < 1e-9, "{e:?}");
        // Threshold 3: the queue (3 long) is never longer, so core 1 stays
        // idle and core 0 runs all three locally.
        let a = assign(&inst, 3);
        assert_eq!(a, vec![0, 0, 0]);
        assert!((inst.evaluate(&a).makespan - 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_scan_plans_as_the_heap_does() {
        use crate::model::GenParams;
        for seed in 0..40 {
            let g = GenParams {
                servers: 30,
                cores: 1 + (seed % 3) as u32,
                tasks: 200,
                replication: 3,
                alpha: 0.0,
                beta: 50.0,
                cost: Cost::Dyndl { theta: 1.0 },
                idle: None,
                racks: None,
                placement: Default::default(),
            };
            let inst = g.generate(seed);
            for threshold in [0, 2, 5] {
                assert_eq!(
                    assign(&inst, threshold),
                    assign_scan(&inst, threshold),
                    "seed {seed}, threshold {threshold}"
                );
            }
        }
    }
}
