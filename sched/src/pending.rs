//! A job's pending tasks in insertion order, with O(1) lookup by task
//! index, O(log n) removal from anywhere and O(log n) access to the i-th
//! pending task (uniform random picks).
//!
//! Removal leaves a hole that a Fenwick tree of live slots skips; the queue
//! is compacted when more than half of its slots are holes, so iteration
//! stays linear in the number of pending tasks. (An `IndexMap` with
//! `shift_remove` is O(n) per launch, quadratic over a 20,000-task job.)

use base::{TaskRef, WorkerId};
use rustc_hash::FxHashMap;

/// A task waiting for a slot.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingTask {
    pub task: TaskRef,
    /// Input bytes.
    pub len: u64,
    /// Live workers holding a replica of the input block.
    pub replicas: Vec<WorkerId>,
}

#[derive(Clone, Debug, Default)]
pub struct PendingQueue {
    /// Tasks in insertion order; `None` where one was removed.
    slots: Vec<Option<PendingTask>>,
    /// Task index -> its slot.
    pos: FxHashMap<u32, usize>,
    /// Fenwick tree over `slots` (1 per live slot), sized to a power of two.
    tree: Vec<u32>,
    /// Slots before `head` are all holes.
    head: usize,
}

impl PendingQueue {
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    pub fn get(&self, index: u32) -> Option<&PendingTask> {
        self.slots[*self.pos.get(&index)?].as_ref()
    }

    /// Where task `index` stands in the insertion order: smaller for an
    /// older task (comparable between the queue's tasks, not a rank).
    pub fn place(&self, index: u32) -> Option<usize> {
        self.pos.get(&index).copied()
    }

    pub fn get_mut(&mut self, index: u32) -> Option<&mut PendingTask> {
        self.slots[*self.pos.get(&index)?].as_mut()
    }

    /// The pending tasks, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &PendingTask> {
        self.slots[self.head..].iter().flatten()
    }

    /// The `i`-th pending task, oldest first.
    pub fn nth(&self, i: usize) -> Option<&PendingTask> {
        if i >= self.len() {
            return None;
        }
        // Fenwick descent: the smallest prefix holding i + 1 live slots.
        let mut at = 0;
        let mut left = i as u32 + 1;
        let mut step = self.tree.len();
        while step > 0 {
            let next = at + step;
            if next <= self.tree.len() && self.tree[next - 1] < left {
                at = next;
                left -= self.tree[next - 1];
            }
            step /= 2;
        }
        self.slots[at].as_ref()
    }

    /// Appends `t` (a task already pending is replaced where it stands).
    pub fn insert(&mut self, t: PendingTask) {
        if let Some(&p) = self.pos.get(&t.task.index) {
            self.slots[p] = Some(t);
            return;
        }
        if self.slots.len() == self.tree.len() {
            self.rebuild((self.slots.len() * 2).max(16));
        }
        let p = self.slots.len();
        self.pos.insert(t.task.index, p);
        self.slots.push(Some(t));
        self.add(p, 1);
    }

    pub fn remove(&mut self, index: u32) -> Option<PendingTask> {
        let p = self.pos.remove(&index)?;
        let t = self.slots[p].take();
        self.add(p, -1);
        while self.head < self.slots.len() && self.slots[self.head].is_none() {
            self.head += 1;
        }
        if self.slots.len() > 16 && self.len() * 2 < self.slots.len() {
            self.compact();
        }
        t
    }

    fn add(&mut self, slot: usize, delta: i32) {
        let mut i = slot + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = self.tree[i - 1].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Drops the holes and rebuilds the index and the tree.
    fn compact(&mut self) {
        self.slots.retain(Option::is_some);
        self.head = 0;
        for (p, t) in self.slots.iter().enumerate() {
            let t = t.as_ref().expect("holes were dropped");
            self.pos.insert(t.task.index, p);
        }
        let cap = self.slots.len().next_power_of_two().max(16);
        self.rebuild(cap);
    }

    /// A tree of `cap` (a power of two) leaves over the current slots.
    fn rebuild(&mut self, cap: usize) {
        debug_assert!(cap.is_power_of_two() && cap >= self.slots.len());
        self.tree.clear();
        self.tree.resize(cap, 0);
        for (p, t) in self.slots.iter().enumerate() {
            if t.is_some() {
                self.tree[p] += 1;
            }
        }
        // Linear-time Fenwick construction: push each node into its parent.
        for i in 1..=cap {
            let parent = i + (i & i.wrapping_neg());
            if parent <= cap {
                self.tree[parent - 1] += self.tree[i - 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::{JobId, TaskRef};
    use indexmap::IndexMap;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn task(i: u32) -> PendingTask {
        PendingTask {
            task: TaskRef {
                job: JobId(1),
                index: i,
            },
            len: i as u64,
            replicas: vec![],
        }
    }

    /// Random inserts, removals and i-th lookups agree with an IndexMap
    /// using shift_remove (the order-preserving reference).
    #[test]
    fn agrees_with_an_order_preserving_map() {
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut q = PendingQueue::default();
            let mut m: IndexMap<u32, PendingTask> = IndexMap::new();
            for step in 0..2000 {
                let i = rng.gen_range(0..300u32);
                match rng.gen_range(0..4) {
                    0 | 1 => {
                        let mut t = task(i);
                        t.len = step;
                        q.insert(t.clone());
                        m.insert(i, t);
                    }
                    2 => assert_eq!(q.remove(i), m.shift_remove(&i)),
                    _ => {
                        let k = rng.gen_range(0..m.len() + 2);
                        assert_eq!(q.nth(k), m.get_index(k).map(|(_, t)| t));
                    }
                }
                assert_eq!(q.len(), m.len());
                assert_eq!(q.get(i), m.get(&i));
            }
            assert!(q.iter().eq(m.values()), "seed {seed}");
            // Compaction keeps the slots within twice the live tasks.
            assert!(q.slots.len() <= (2 * q.len()).max(16), "seed {seed}");
        }
    }

    #[test]
    fn draining_from_the_front_and_back() {
        let mut q = PendingQueue::default();
        for i in 0..1000 {
            q.insert(task(i));
        }
        for i in 0..500 {
            assert_eq!(q.nth(0).unwrap().task.index, i);
            assert_eq!(q.remove(i).unwrap().task.index, i);
            assert_eq!(q.nth(q.len() - 1).unwrap().task.index, 999 - i);
            q.remove(999 - i).unwrap();
        }
        assert!(q.is_empty() && q.nth(0).is_none() && q.iter().next().is_none());
        assert_eq!(q.remove(3), None);
    }
}
