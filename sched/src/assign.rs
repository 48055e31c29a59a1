//! Assignment solvers shared by the batch policies (and the simulator):
//! a maximum bipartite matching with node capacities for 0/1 costs, and the
//! Hungarian algorithm for a rectangular min-cost assignment.

/// Maximum matching of tasks to capacitated nodes: `cands[t]` lists the nodes
/// task t may use (for lsap: the idle workers holding its input), `cap[n]` is
/// node n's capacity (free slots). Tasks are processed in order with
/// augmenting paths (Kuhn's algorithm), so the result is a maximum matching
/// and, among maximum matchings, the set of matched tasks is the
/// lexicographically first one: earlier tasks are never dropped for later
/// ones. Returns each task's node, or None.
pub fn max_matching(cands: &[Vec<usize>], cap: &[u32]) -> Vec<Option<usize>> {
    struct State<'a> {
        cands: &'a [Vec<usize>],
        cap: &'a [u32],
        holders: Vec<Vec<usize>>,
        of_task: Vec<Option<usize>>,
        seen: Vec<u32>,
        stamp: u32,
    }
    fn augment(s: &mut State<'_>, t: usize) -> bool {
        for i in 0..s.cands[t].len() {
            let n = s.cands[t][i];
            if s.seen[n] == s.stamp {
                continue;
            }
            s.seen[n] = s.stamp;
            if (s.holders[n].len() as u32) < s.cap[n] {
                s.holders[n].push(t);
                s.of_task[t] = Some(n);
                return true;
            }
            for k in 0..s.holders[n].len() {
                let other = s.holders[n][k];
                if augment(s, other) {
                    s.holders[n][k] = t;
                    s.of_task[t] = Some(n);
                    return true;
                }
            }
        }
        false
    }
    let total: u64 = cap.iter().map(|&c| c as u64).sum();
    let mut s = State {
        cands,
        cap,
        holders: vec![Vec::new(); cap.len()],
        of_task: vec![None; cands.len()],
        seen: vec![0; cap.len()],
        stamp: 0,
    };
    let mut matched = 0u64;
    for (t, c) in cands.iter().enumerate() {
        if matched == total {
            break;
        }
        if c.is_empty() {
            continue;
        }
        s.stamp += 1;
        if augment(&mut s, t) {
            matched += 1;
        }
    }
    s.of_task
}

/// Min-cost assignment on a rows x cols cost matrix (row-major): every row
/// gets a distinct column if rows <= cols, else every column a distinct row.
/// Returns each row's column (None for rows left out when rows > cols).
/// O(min^2 * max) (the Hungarian algorithm with potentials).
pub fn min_cost_assignment(cost: &[i64], rows: usize, cols: usize) -> Vec<Option<usize>> {
    assert_eq!(cost.len(), rows * cols, "cost matrix shape");
    if rows == 0 || cols == 0 {
        return vec![None; rows];
    }
    if rows <= cols {
        hungarian(rows, cols, |i, j| cost[i * cols + j])
            .into_iter()
            .map(Some)
            .collect()
    } else {
        let col_to_row = hungarian(cols, rows, |i, j| cost[j * cols + i]);
        let mut out = vec![None; rows];
        for (c, r) in col_to_row.into_iter().enumerate() {
            out[r] = Some(c);
        }
        out
    }
}

/// n <= m; returns the column of each row.
fn hungarian(n: usize, m: usize, a: impl Fn(usize, usize) -> i64) -> Vec<usize> {
    const INF: i64 = i64::MAX / 4;
    let mut u = vec![0i64; n + 1];
    let mut v = vec![0i64; m + 1];
    let mut p = vec![0usize; m + 1];
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![INF; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = INF;
            let mut j1 = 0;
            for j in 1..=m {
                if !used[j] {
                    let cur = a(i0 - 1, j - 1) - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut ans = vec![0; n];
    for j in 1..=m {
        if p[j] != 0 {
            ans[p[j] - 1] = j - 1;
        }
    }
    ans
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Best total over all injective maps of the smaller side, by brute force.
    fn brute(cost: &[i64], rows: usize, cols: usize) -> i64 {
        fn go(r: usize, rows: usize, cols: usize, cost: &[i64], used: &mut Vec<bool>) -> i64 {
            if r == rows {
                return 0;
            }
            let mut best = i64::MAX;
            for c in 0..cols {
                if !used[c] {
                    used[c] = true;
                    best = best.min(cost[r * cols + c] + go(r + 1, rows, cols, cost, used));
                    used[c] = false;
                }
            }
            best
        }
        if rows <= cols {
            go(0, rows, cols, cost, &mut vec![false; cols])
        } else {
            let t: Vec<i64> = (0..cols)
                .flat_map(|c| (0..rows).map(move |r| (r, c)))
                .map(|(r, c)| cost[r * cols + c])
                .collect();
            go(0, cols, rows, &t, &mut vec![false; rows])
        }
    }

    #[test]
    fn hungarian_matches_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let rows = rng.gen_range(1..6);
            let cols = rng.gen_range(1..6);
            let cost: Vec<i64> = (0..rows * cols).map(|_| rng.gen_range(0..50)).collect();
            let a = min_cost_assignment(&cost, rows, cols);
            let mut used = vec![false; cols];
            let mut total = 0;
            for (r, c) in a.iter().enumerate() {
                if let Some(c) = *c {
                    assert!(!used[c], "column {c} used twice");
                    used[c] = true;
                    total += cost[r * cols + c];
                }
            }
            assert_eq!(a.iter().flatten().count(), rows.min(cols));
            assert_eq!(total, brute(&cost, rows, cols), "{rows}x{cols} {cost:?}");
        }
    }

    /// Size of a maximum matching by brute force over slot-expanded nodes.
    fn brute_matching(cands: &[Vec<usize>], cap: &[u32]) -> usize {
        fn go(t: usize, cands: &[Vec<usize>], left: &mut Vec<u32>) -> usize {
            if t == cands.len() {
                return 0;
            }
            let mut best = go(t + 1, cands, left);
            for &n in &cands[t] {
                if left[n] > 0 {
                    left[n] -= 1;
                    best = best.max(1 + go(t + 1, cands, left));
                    left[n] += 1;
                }
            }
            best
        }
        go(0, cands, &mut cap.to_vec())
    }

    #[test]
    fn matching_is_maximum_and_respects_capacity() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..300 {
            let nodes = rng.gen_range(1..5);
            let cap: Vec<u32> = (0..nodes).map(|_| rng.gen_range(0..3)).collect();
            let tasks = rng.gen_range(0..8);
            let cands: Vec<Vec<usize>> = (0..tasks)
                .map(|_| (0..nodes).filter(|_| rng.gen_bool(0.4)).collect())
                .collect();
            let m = max_matching(&cands, &cap);
            let mut load = vec![0u32; nodes];
            for (t, n) in m.iter().enumerate() {
                if let Some(n) = *n {
                    assert!(cands[t].contains(&n));
                    load[n] += 1;
                }
            }
            assert!(load.iter().zip(&cap).all(|(l, c)| l <= c));
            assert_eq!(m.iter().flatten().count(), brute_matching(&cands, &cap));
        }
    }

    #[test]
    fn matching_keeps_earlier_tasks() {
        // One slot, two tasks that both could use it: the first wins.
        let m = max_matching(&[vec![0], vec![0]], &[1]);
        assert_eq!(m, vec![Some(0), None]);
        // Augmenting moves task 0 to node 1 so task 1 fits on node 0.
        let m = max_matching(&[vec![0, 1], vec![0]], &[1, 1]);
        assert_eq!(m, vec![Some(1), Some(0)]);
    }
}
