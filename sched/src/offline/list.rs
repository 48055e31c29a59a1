//! LIST (DynDL's baseline, after Graham's list scheduling): tasks in id
//! order, each to the core with the earliest predicted finish time, where
//! the prediction charges 1 (C_loc) for a local task and, for a remote one,
//! the server's data-remote cost with one more remote task there (so the
//! dynamic cost is considered). Cores' loads are their initial loads plus
//! what LIST has placed so far, at the costs predicted when placed.

use crate::model::OrdF64;
use crate::model::{Assignment, Instance};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub fn assign(inst: &Instance) -> Assignment {
    let cores = inst.flat();
    let lc = inst.cost.local();
    let mut load = cores.init.clone();
    let mut r_srv = vec![0usize; inst.servers()];
    let mut r_total = 0usize;
    // Per server, a min-heap of its cores' loads (stale entries skipped).
    let mut heaps: Vec<BinaryHeap<Reverse<(OrdF64, u32)>>> = (0..inst.servers() as u32)
        .map(|s| {
            cores
                .of_server(s)
                .map(|p| Reverse((OrdF64(load[p]), p as u32)))
                .collect()
        })
        .collect();
    let min_core = |heaps: &mut Vec<BinaryHeap<Reverse<(OrdF64, u32)>>>, load: &[f64], s: usize| loop {
        let &Reverse((OrdF64(l), p)) = heaps[s].peek().expect("cores");
        if l == load[p as usize] {
            return (l, p);
        }
        heaps[s].pop();
    };
    let mut a = Vec::with_capacity(inst.tasks());
    for t in 0..inst.tasks() {
        let mut best: Option<(f64, u32, usize, bool)> = None;
        #[allow(clippy::needless_range_loop)] // s indexes several arrays
        for s in 0..inst.servers() {
            let local = inst.is_local(t, s as u32);
            let cost = if local {
                lc
            } else {
                inst.cost
                    .remote(inst.cores[s].len(), r_srv[s] + 1, r_total + 1)
            };
            let (l, p) = min_core(&mut heaps, &load, s);
            let f = l + cost;
            if best.is_none_or(|(bf, bp, _, _)| f < bf || (f == bf && p < bp)) {
                best = Some((f, p, s, local));
            }
        }
        let (f, p, s, local) = best.expect("servers");
        load[p as usize] = f;
        heaps[s].push(Reverse((OrdF64(f), p)));
        if !local {
            r_srv[s] += 1;
            r_total += 1;
        }
        a.push(p);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::table2;

    #[test]
    fn list_on_table2() {
        // By hand: t1 -> p21 local (1.25); t2 -> p12 remote (0.5 + g(1) =
        // 2.0 beats p21 at 2.25); t3 -> p21 local (2.25); t4 -> p11 remote
        // (0.75 + g(2) = 2.75); t5 -> p31 local (3.25). Evaluated: s1's two
        // remote tasks cost g(2) = 2 each, makespan 3.25 on p31.
        let inst = table2();
        let a = assign(&inst);
        assert_eq!(a, vec![2, 1, 2, 0, 4], "cores p21, p12, p21, p11, p31");
        let e = inst.evaluate(&a);
        assert_eq!(e.remote, 2);
        assert!((e.makespan - 3.25).abs() < 1e-9, "{e:?}");
    }
}
