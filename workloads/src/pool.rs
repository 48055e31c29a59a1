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
//!
//! So the first job on a fresh worker, and a job after a pause longer
//! than the idle trim, pay for fresh pages that the jobs between them do
//! not. [`pretouch`] (the worker's `workers.pretouch_mb`, as the JVM's
//! `-XX:+AlwaysPreTouch` with `-Xms`) faults buffers in at start and
//! keeps that many free bytes through trims and limits from then on.

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
    /// Free bytes kept whatever the limit and however long idle
    /// ([`pretouch`]).
    reserved: usize,
}

impl Pool {
    /// The most free bytes kept: the limit, or the reserve if more.
    fn ceiling(&self) -> usize {
        self.limit.max(self.reserved)
    }
}

static POOL: Mutex<Pool> = Mutex::new(Pool::new());

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
    let found = pool().take(min);
    ready(found, min)
}

/// A buffer the pool gave (or none) as an empty one of at least `min` bytes.
fn ready(found: Option<Vec<u8>>, min: usize) -> Vec<u8> {
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
    let evicted = pool().give(b);
    // Unmapped outside the lock.
    drop(evicted);
}

impl Pool {
    const fn new() -> Pool {
        Pool {
            free: Vec::new(),
            held: 0,
            limit: DEFAULT_LIMIT,
            reserved: 0,
        }
    }

    /// The free buffer [`take`] picks for `min` bytes, out of the pool.
    fn take(&mut self, min: usize) -> Option<Vec<u8>> {
        let fits = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, (b, _))| b.capacity() >= min && b.capacity() / FIT_SLACK <= min)
            .min_by_key(|(_, (b, _))| b.capacity())
            .map(|(i, _)| i);
        let pick = fits.or_else(|| {
            self.free
                .iter()
                .enumerate()
                .filter(|(_, (b, _))| b.capacity() < min)
                .max_by_key(|(_, (b, _))| b.capacity())
                .map(|(i, _)| i)
        });
        pick.map(|i| {
            let (b, _) = self.free.remove(i);
            self.held -= b.capacity();
            b
        })
    }

    /// Keeps `b`; what is then over the limit, to be dropped.
    fn give(&mut self, b: Vec<u8>) -> Vec<Vec<u8>> {
        self.held += b.capacity();
        self.free.push((b, Instant::now()));
        evict(self, |_| false)
    }

    /// Keeps the `made` buffers for good ([`pretouch`]).
    fn reserve(&mut self, made: Vec<Vec<u8>>) {
        let now = Instant::now();
        for b in made {
            self.reserved += b.capacity();
            self.held += b.capacity();
            self.free.push((b, now));
        }
    }

    /// Stops keeping `bytes` of the reserve; what is then over the limit.
    fn unreserve(&mut self, bytes: usize) -> Vec<Vec<u8>> {
        self.reserved = self.reserved.saturating_sub(bytes);
        evict(self, |_| false)
    }

    /// Drops the buffers returned more than `age` ago, down to the reserve.
    fn trim_idle(&mut self, age: Duration) -> Vec<Vec<u8>> {
        let now = Instant::now();
        evict(self, |t| now.saturating_duration_since(t) > age)
    }

    /// Sets the limit; what is then over it.
    fn set_limit(&mut self, bytes: usize) -> Vec<Vec<u8>> {
        self.limit = bytes;
        evict(self, |_| false)
    }
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

/// Size of the buffers [`pretouch`] makes: the testbed's and Hadoop 1's
/// default block size, so a map's input buffer is one of them, and a
/// 16-64 MiB fetched part or sorted run takes one as it is (larger
/// requests grow one, keeping its pages).
pub const PRETOUCH_PIECE: usize = 64 << 20;

/// Faults `bytes` (rounded up to whole [`PRETOUCH_PIECE`]s) of new buffers
/// into the pool, writing one byte in every page, and from then on keeps
/// that many more free bytes: through [`trim_idle`] and above [`limit`].
/// Each call adds to what earlier ones reserved (workers sharing a process
/// share the pool). Returns the bytes faulted in.
pub fn pretouch(bytes: usize) -> usize {
    let made = faulted(bytes.div_ceil(PRETOUCH_PIECE));
    let total = made.len() * PRETOUCH_PIECE;
    pool().reserve(made);
    total
}

/// `pieces` new buffers of [`PRETOUCH_PIECE`] bytes, every page faulted in.
fn faulted(pieces: usize) -> Vec<Vec<u8>> {
    let mut made = Vec::with_capacity(pieces);
    for _ in 0..pieces {
        let mut b: Vec<u8> = Vec::with_capacity(PRETOUCH_PIECE);
        let spare = b.spare_capacity_mut();
        for i in (0..spare.len()).step_by(PAGE) {
            // SAFETY: `i` is within the buffer's spare capacity. A volatile
            // write, so the fault cannot be optimised away.
            unsafe { std::ptr::write_volatile(spare[i].as_mut_ptr(), 0) };
        }
        made.push(b);
    }
    made
}

/// Stops keeping `bytes` that [`pretouch`] reserved (a worker sharing the
/// process stopped); the pool drops what is then over its limit.
pub fn unreserve(bytes: usize) {
    let evicted = pool().unreserve(bytes);
    drop(evicted);
}

/// Free bytes [`pretouch`] reserved.
pub fn reserved() -> usize {
    pool().reserved
}

/// The smallest page the kernel maps: writing one byte in every span this
/// long faults every page in.
const PAGE: usize = 4096;

/// Drops the buffers returned more than `age` ago, down to the bytes
/// [`pretouch`] reserved.
pub fn trim_idle(age: Duration) {
    let evicted = pool().trim_idle(age);
    drop(evicted);
}

/// Sets the most free bytes the pool keeps (0 keeps none).
pub fn set_limit(bytes: usize) {
    let evicted = pool().set_limit(bytes);
    drop(evicted);
}

/// The most free bytes the pool keeps: the limit set, or what
/// [`pretouch`] reserved if that is more.
pub fn limit() -> usize {
    pool().ceiling()
}

/// Free bytes the pool holds now.
pub fn held() -> usize {
    pool().held
}

/// Removes the buffers `stale` says to drop, then the oldest until the
/// pool is within its limit, each only if the pool keeps what it reserved
/// without it.
fn evict(p: &mut Pool, stale: impl Fn(Instant) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let limit = p.ceiling();
    let mut i = 0;
    while i < p.free.len() {
        let cap = p.free[i].0.capacity();
        // Never below the reserve: over the limit by less than one
        // buffer rather than under the reserve by most of one.
        let keeps_reserve = p.held - cap >= p.reserved;
        if keeps_reserve && (stale(p.free[i].1) || p.held > limit) {
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

    /// A pool of the test's own: the process-wide one is shared with every
    /// other test of the crate that sorts or counts at the same time.
    struct Local(Pool);

    impl Local {
        fn new(limit: usize) -> Local {
            let mut p = Pool::new();
            p.set_limit(limit);
            Local(p)
        }
        fn take(&mut self, min: usize) -> Vec<u8> {
            let found = (min >= MIN_POOLED).then(|| self.0.take(min)).flatten();
            ready(found, min)
        }
        fn give(&mut self, b: Vec<u8>) {
            if b.capacity() >= MIN_POOLED {
                self.0.give(b);
            }
        }
        fn held(&self) -> usize {
            self.0.held
        }
    }

    #[test]
    fn a_returned_buffer_is_reused_best_fit_first() {
        let mut p = Local::new(64 << 20);
        let big = p.take(8 << 20);
        let small = p.take(2 << 20);
        let (big_at, small_at) = (big.as_ptr(), small.as_ptr());
        p.give(big);
        p.give(small);
        assert_eq!(p.held(), (8 << 20) + (2 << 20));
        // 1.5 MiB: the 2 MiB buffer fits best.
        let b = p.take(3 << 19);
        assert_eq!(b.as_ptr(), small_at);
        assert!(b.is_empty() && b.capacity() >= 3 << 19);
        let c = p.take(4 << 20);
        assert_eq!(c.as_ptr(), big_at);
        assert_eq!(p.held(), 0);
        // Nothing free: a new buffer.
        let d = p.take(4 << 20);
        assert!(d.capacity() >= 4 << 20);
        assert_ne!(d.as_ptr(), big_at);
        // Small buffers are never kept.
        p.give(Vec::with_capacity(1000));
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit_dropping_the_oldest() {
        let mut p = Local::new(5 << 20);
        let a = p.take(2 << 20);
        let b = p.take(2 << 20);
        let c = p.take(2 << 20);
        let a_at = a.as_ptr();
        p.give(a);
        p.give(b);
        p.give(c);
        // 6 MiB returned, 5 kept: the first one returned went.
        assert_eq!(p.held(), 2 * (2 << 20));
        assert!(p.0.free.iter().all(|(f, _)| f.as_ptr() != a_at));
        p.0.trim_idle(Duration::from_secs(3600));
        assert_eq!(p.held(), 2 * (2 << 20));
        std::thread::sleep(Duration::from_millis(2));
        p.0.trim_idle(Duration::ZERO);
        assert_eq!(p.held(), 0);
        // A buffer too small for the request grows in place of a new one.
        let small = p.take(2 << 20);
        p.give(small);
        let grown = p.take(3 << 20);
        assert!(grown.capacity() >= 3 << 20);
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn pretouched_bytes_stay_through_idle_trims_and_limits() {
        let mut p = Local::new(0);
        p.0.reserve(faulted(2));
        assert_eq!(p.0.reserved, 2 * PRETOUCH_PIECE);
        // Kept above a lower limit, which now reads as the reserve.
        assert_eq!(p.held(), 2 * PRETOUCH_PIECE);
        assert_eq!(p.0.ceiling(), 2 * PRETOUCH_PIECE);
        std::thread::sleep(Duration::from_millis(2));
        p.0.trim_idle(Duration::ZERO);
        assert_eq!(p.held(), 2 * PRETOUCH_PIECE);
        // A block-sized request takes a faulted buffer whole.
        let a = p.take(PRETOUCH_PIECE);
        assert_eq!(a.capacity(), PRETOUCH_PIECE);
        assert_eq!(p.held(), PRETOUCH_PIECE);
        // With more returned than reserved, the idle trim drops down to
        // the reserve, never below it.
        p.0.set_limit(4 * PRETOUCH_PIECE);
        let more = p.take(2 << 20);
        p.give(more);
        p.give(a);
        assert_eq!(p.held(), 2 * PRETOUCH_PIECE + (2 << 20));
        std::thread::sleep(Duration::from_millis(2));
        p.0.trim_idle(Duration::ZERO);
        assert_eq!(p.held(), 2 * PRETOUCH_PIECE);
        // The limit still bounds what is kept above the reserve.
        p.0.set_limit(0);
        let more = p.take(2 << 20);
        p.give(more);
        assert_eq!(p.held(), 2 * PRETOUCH_PIECE);
        // Given back: the pool is held to its limit again.
        p.0.unreserve(2 * PRETOUCH_PIECE);
        assert_eq!((p.0.reserved, p.held(), p.0.ceiling()), (0, 0, 0));
    }

    #[test]
    fn a_small_request_leaves_a_much_larger_buffer() {
        let mut p = Local::new(64 << 20);
        let big = p.take(32 << 20);
        let big_at = big.as_ptr();
        p.give(big);
        // 32 MiB is more than FIT_SLACK times 2 MiB: a new buffer.
        let small = p.take(2 << 20);
        assert_ne!(small.as_ptr(), big_at);
        assert_eq!(p.held(), 32 << 20);
        // 16 MiB: within the slack, the big one serves it.
        let b = p.take(16 << 20);
        assert_eq!(b.as_ptr(), big_at);
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn a_pooled_buffer_goes_back_to_the_process_pool_when_dropped() {
        // Within the default limit, and more than FIT_SLACK times what any
        // other test of the crate asks for, so none running now takes it
        // before the check (its pages are never touched).
        let b: Vec<u8> = Vec::with_capacity(900 << 20);
        let at = b.as_ptr();
        drop(Pooled::new(b));
        let back = pool().free.iter().any(|(f, _)| f.as_ptr() == at);
        // Out again, so the process does not keep it.
        let found = pool().take(900 << 20);
        assert!(back, "the dropped buffer is in the pool");
        assert_eq!(found.map(|f| f.as_ptr()), Some(at));
    }

    #[test]
    fn a_keeping_map_dropped_before_it_finished_gives_its_buffer_back() {
        // 100 MiB: with the test above's 900 within the default limit, and
        // more than FIT_SLACK times any other test's request.
        for w in [crate::Workload::Sort, crate::Workload::SortLines] {
            let mut b: Vec<u8> = Vec::with_capacity(100 << 20);
            b.extend_from_slice(&[b'a'; 4096]);
            let at = b.as_ptr();
            let mut task = w.map_task(2);
            assert!(task.keeps_input(), "{w:?}");
            task.expect_input(1 << 20);
            task.consume_owned(b);
            // Its attempt killed, the input cut short: never finished.
            drop(task);
            let mut p = pool();
            let back = p.free.iter().position(|(f, _)| f.as_ptr() == at);
            // Out again, so the process does not keep it.
            let found = back.map(|i| p.free.remove(i).0);
            if let Some(f) = &found {
                p.held -= f.capacity();
            }
            assert!(
                back.is_some(),
                "{w:?}: the dropped map's buffer is in the pool"
            );
        }
    }
}
