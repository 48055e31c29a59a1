//! Large byte buffers kept for reuse across tasks, as Hadoop keeps its map
//! sort buffer (`mapreduce.task.io.sort.mb`) and Spark its execution memory,
//! instead of asking the kernel for fresh pages for every block.
//!
//! A fresh page costs a fault and a zeroing in the kernel; on a VM whose
//! balloon takes freed memory back (free page reporting, as on this
//! testbed's machines), it also costs the host's fault on first touch:
//! writing 1 GiB into new memory took 1.06 s there, into memory just freed
//! 0.24 s. A map reads its 64 MiB block into a buffer from here, the reduce
//! fetches its inputs into them and hands its output on in pieces taken
//! from here ([`Pooled`] gives a piece back once its last reader is done),
//! and each goes back when its task is done with it.
//!
//! The pool is process-wide and holds at most [`limit`] bytes of free
//! buffers (the least recently returned go first); a worker drops buffers
//! nobody took for a while ([`trim_idle`]). Buffers under [`MIN_POOLED`]
//! are left to the allocator, which reuses small blocks itself.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buffers smaller than this are not kept.
pub const MIN_POOLED: usize = 1 << 20;
/// Free bytes the pool keeps unless told otherwise ([`set_limit`]).
pub const DEFAULT_LIMIT: usize = 1 << 30;
/// A free buffer serves a request at most this many times smaller.
pub const FIT_SLACK: usize = 4;

struct Pool {
    /// Free buffers, oldest first, each with when it came back.
    free: Vec<(Vec<u8>, Instant)>,
    held: usize,
    limit: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    held: 0,
    limit: DEFAULT_LIMIT,
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // The pool's state is valid after any panic (a push or a remove).
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// An empty buffer with room for at least `min` bytes: the smallest free
/// one that holds them (at most [`FIT_SLACK`] times `min`: a 4 MiB piece
/// does not take a 512 MiB buffer another task will want), else the
/// largest of those too small grown to them (a grown mapping keeps its
/// pages), else a new one.
pub fn take(min: usize) -> Vec<u8> {
    if min < MIN_POOLED {
        return Vec::with_capacity(min);
    }
    let found = {
        let mut p = pool();
        let fits = p
            .free
            .iter()
            .enumerate()
            .filter(|(_, (b, _))| b.capacity() >= min && b.capacity() / FIT_SLACK <= min)
            .min_by_key(|(_, (b, _))| b.capacity())
            .map(|(i, _)| i);
        let pick = fits.or_else(|| {
            p.free
                .iter()
                .enumerate()
                .filter(|(_, (b, _))| b.capacity() < min)
                .max_by_key(|(_, (b, _))| b.capacity())
                .map(|(i, _)| i)
        });
        pick.map(|i| {
            let (b, _) = p.free.remove(i);
            p.held -= b.capacity();
            b
        })
    };
    match found {
        Some(mut b) => {
            b.clear();
            b.reserve_exact(min);
            b
        }
        None => Vec::with_capacity(min),
    }
}

/// Returns a buffer for reuse (its contents are dropped).
pub fn give(b: Vec<u8>) {
    if b.capacity() < MIN_POOLED {
        return;
    }
    let evicted = {
        let mut p = pool();
        p.held += b.capacity();
        p.free.push((b, Instant::now()));
        evict(&mut p, |_| false)
    };
    // Unmapped outside the lock.
    drop(evicted);
}

/// A buffer from the pool that goes back to it when dropped: the owner of
/// bytes shared with another thread or an HTTP body (`Bytes::from_owner`).
pub struct Pooled(Vec<u8>);

impl Pooled {
    pub fn new(b: Vec<u8>) -> Self {
        Pooled(b)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// Drops the buffers returned more than `age` ago.
pub fn trim_idle(age: Duration) {
    let now = Instant::now();
    let evicted = evict(&mut pool(), |t| now.saturating_duration_since(t) > age);
    drop(evicted);
}

/// Sets the most free bytes the pool keeps (0 keeps none).
pub fn set_limit(bytes: usize) {
    let evicted = {
        let mut p = pool();
        p.limit = bytes;
        evict(&mut p, |_| false)
    };
    drop(evicted);
}

/// The most free bytes the pool keeps.
pub fn limit() -> usize {
    pool().limit
}

/// Free bytes the pool holds now.
pub fn held() -> usize {
    pool().held
}

/// Removes the buffers `stale` says to drop, then the oldest until the
/// pool is within its limit.
fn evict(p: &mut Pool, stale: impl Fn(Instant) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.free.len() {
        if stale(p.free[i].1) || p.held > p.limit {
            let (b, _) = p.free.remove(i);
            p.held -= b.capacity();
            out.push(b);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is process-wide: its tests run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn a_returned_buffer_is_reused_best_fit_first() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        set_limit(0);
        set_limit(64 << 20);
        let big = take(8 << 20);
        let small = take(2 << 20);
        let (big_at, small_at) = (big.as_ptr(), small.as_ptr());
        give(big);
        give(small);
        assert_eq!(held(), (8 << 20) + (2 << 20));
        // 1.5 MiB: the 2 MiB buffer fits best.
        let b = take(3 << 19);
        assert_eq!(b.as_ptr(), small_at);
        assert!(b.is_empty() && b.capacity() >= 3 << 19);
        let c = take(4 << 20);
        assert_eq!(c.as_ptr(), big_at);
        assert_eq!(held(), 0);
        // Nothing free: a new buffer.
        let d = take(4 << 20);
        assert!(d.capacity() >= 4 << 20);
        // Small buffers are never kept.
        give(Vec::with_capacity(1000));
        assert_eq!(held(), 0);
        set_limit(DEFAULT_LIMIT);
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit_dropping_the_oldest() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        set_limit(0);
        set_limit(5 << 20);
        let a = take(2 << 20);
        let b = take(2 << 20);
        let c = take(2 << 20);
        give(a);
        give(b);
        give(c);
        // 6 MiB returned, 5 kept: the first one returned went.
        assert!(held() <= 5 << 20, "{}", held());
        assert_eq!(held(), 2 * (2 << 20));
        trim_idle(Duration::from_secs(3600));
        assert_eq!(held(), 2 * (2 << 20));
        trim_idle(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        trim_idle(Duration::ZERO);
        assert_eq!(held(), 0);
        // A buffer too small for the request grows in place of a new one.
        give(take(2 << 20));
        let grown = take(3 << 20);
        assert!(grown.capacity() >= 3 << 20);
        assert_eq!(held(), 0);
        set_limit(DEFAULT_LIMIT);
    }

    #[test]
    fn a_small_request_leaves_a_much_larger_buffer_and_pooled_returns() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        set_limit(0);
        set_limit(64 << 20);
        let big = take(32 << 20);
        let big_at = big.as_ptr();
        give(big);
        // 32 MiB is more than FIT_SLACK times 2 MiB: a new buffer.
        let small = take(2 << 20);
        assert_ne!(small.as_ptr(), big_at);
        assert_eq!(held(), 32 << 20);
        // 16 MiB: within the slack, the big one serves it.
        let b = take(16 << 20);
        assert_eq!(b.as_ptr(), big_at);
        assert_eq!(held(), 0);
        // A Pooled buffer goes back when dropped.
        drop(Pooled::new(b));
        assert_eq!(held(), 32 << 20);
        drop(small);
        set_limit(DEFAULT_LIMIT);
    }
}
