//! Block reads in flight that share links while they last: a fair-share
//! remote read ([`RemoteModel::FairShare`](super::RemoteModel)) shares its
//! source's uplink and its reader's downlink, and with
//! [`DiskShare`](super::DiskShare) every map's read (and every part of a
//! reduce's fetch) also shares its source's disk with the other reads
//! from it.

use base::{JobId, TaskRef, WorkerId};
use std::collections::{BTreeMap, VecDeque};

/// How a read progresses.
#[derive(Clone, Copy, Debug)]
pub(super) enum Flow {
    /// `left` is ms of the transfer alone; it goes at 1 / n, n the larger
    /// of the transfers from its source and to its reader.
    Net,
    /// As `Net`, but not counted on the links: a fair-share read under the
    /// shuffle over the network, whose block's bytes load the links as a
    /// transfer of their own at the links' rate ([`Transfer::only_load`]).
    NetLoaded,
    /// `left` is bytes; it goes at the lesser of the source's disk shared
    /// by the reads from it and (`net_bpms` > 0) the network's rate alone
    /// over the larger of its source's and reader's transfers. Rates in
    /// bytes per ms.
    Disk { disk_bpms: f64, net_bpms: f64 },
}

/// One read in flight.
pub(super) struct Transfer {
    pub(super) job: JobId,
    pub(super) index: u32,
    pub(super) worker: u32,
    pub(super) source: u32,
    pub(super) start: u64,
    /// Work left, in the [`Flow`]'s unit.
    pub(super) left: f64,
    /// The task's own time, run once the block is read (and not before
    /// `floor`: the worker's compute pacing).
    pub(super) then_ms: u64,
    pub(super) floor: u64,
    pub(super) how: Flow,
    /// A part of a reduce's fetch of map output: its end starts the
    /// fetch's next part, and with the shuffle over the network the last
    /// one's end the reduce's output copies (else the reduce runs its own
    /// time, and the parts only load the disks and links).
    pub(super) fetch: bool,
    /// One of the output copies of the reduce running on this worker (its
    /// `source`; `worker` is the copy's target): its end may end the
    /// reduce.
    pub(super) copy_of: Option<u32>,
    /// A data-remote map's block crossing the links under the shuffle over
    /// the network beside a read of its own (the fair-share model's, or
    /// the emulated disk's): it loads its source's transmit and its
    /// reader's receive link while it lasts, and its end ends nothing.
    /// Under the fixed model without the disk the block's transfer is the
    /// map's read instead (its end, not before the model's, ends the map).
    pub(super) only_load: bool,
}

impl Transfer {
    /// Whether it crosses the network (counts on its links).
    fn on_net(&self) -> bool {
        match self.how {
            Flow::Net => true,
            Flow::NetLoaded => false,
            Flow::Disk { net_bpms, .. } => net_bpms > 0.0,
        }
    }

    fn on_disk(&self) -> bool {
        matches!(self.how, Flow::Disk { .. })
    }
}

/// A transfer in flight with its rate: `left` was its work left at time
/// `at` (ms), and it goes at `rate` (work per ms) until the counts on its
/// links or disk change. `later`: its end, where a slower rate put it
/// after its heap entry's time (the entry stands until it comes first,
/// and is then put at this time: a rate lowered and raised again costs no
/// entry).
struct Live {
    x: Transfer,
    rate: f64,
    at: f64,
    later: Option<f64>,
}

/// A heap entry: when it ends at its rate as [`key`], its slot and its
/// version, packed high to low in one integer ([`parts`]), so comparing two
/// is one comparison in the order of the three.
type Due = std::cmp::Reverse<u128>;

/// An entry's (time as [`key`], slot, version).
fn parts(d: Due) -> (u64, usize, u32) {
    let std::cmp::Reverse(x) = d;
    ((x >> 64) as u64, (x >> 32) as u32 as usize, x as u32)
}

/// A time as an integer in the order of [`f64::total_cmp`].
fn key(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// The time a [`key`] was made from.
fn time(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// A heap entry for slot `i`'s end at `t`, its version `v`.
fn due(t: f64, i: usize, v: u32) -> Due {
    std::cmp::Reverse(u128::from(key(t)) << 64 | u128::from(i as u32) << 32 | u128::from(v))
}

/// The reads in flight and how many use each worker's links and disk.
/// Each progresses at its share, which changes only when a transfer on
/// one of its links or its disk starts or ends: the others' work is
/// settled lazily (only the transfers of the two workers touched are
/// settled and re-timed), and the next to end comes from a heap, so an
/// event costs the transfers of two workers, not all of them.
pub(super) struct Flows {
    slots: Vec<Option<Live>>,
    /// Per slot, whether a transfer is in it, and the version of its heap
    /// entry (free: the version its next transfer starts from, above every
    /// one an earlier transfer in that slot left in the heap, so a stale
    /// entry never passes for the new transfer's). Apart from the
    /// transfers, so that telling a stale entry reads little memory.
    live: Vec<bool>,
    vers: Vec<u32>,
    free: Vec<usize>,
    len: usize,
    out: Vec<u32>,
    into: Vec<u32>,
    disk: Vec<u32>,
    /// Per worker, the slots of the transfers from it and into it.
    from: Vec<Vec<usize>>,
    to: Vec<Vec<usize>>,
    due: std::collections::BinaryHeap<Due>,
    /// A scratch list of the transfers an event re-times.
    near: Vec<usize>,
    /// The clock the transfers have progressed to (ms).
    now: f64,
}

/// A transfer whose work left is at most this is done.
const DONE: f64 = 1e-6;

impl Flows {
    pub(super) fn new(workers: usize) -> Flows {
        Flows {
            slots: Vec::new(),
            live: Vec::new(),
            vers: Vec::new(),
            free: Vec::new(),
            len: 0,
            out: vec![0; workers],
            into: vec![0; workers],
            disk: vec![0; workers],
            from: vec![Vec::new(); workers],
            to: vec![Vec::new(); workers],
            due: std::collections::BinaryHeap::new(),
            near: Vec::new(),
            now: 0.0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The transfers whose rate depends on worker `src`'s transmit link or
    /// disk or on worker `dst`'s receive link, each once, in the kept
    /// scratch list (given back to [`Flows::near`] once the event is done).
    fn touching(&mut self, src: u32, dst: u32) -> Vec<usize> {
        let mut v = std::mem::take(&mut self.near);
        let (from, to) = (&self.from[src as usize], &self.to[dst as usize]);
        v.clear();
        v.extend_from_slice(from);
        // A transfer into `dst` from `src` is in both lists: taken once.
        v.extend(
            to.iter()
                .copied()
                .filter(|&i| self.slots[i].as_ref().is_none_or(|l| l.x.source != src)),
        );
        v
    }

    /// Brings `ids`' work left up to now at their old rates.
    fn settle(&mut self, ids: &[usize]) {
        for &i in ids {
            let l = self.slots[i].as_mut().expect("a live transfer");
            l.x.left -= l.rate * (self.now - l.at);
            l.at = self.now;
        }
    }

    /// Gives `ids` their rates at the current counts, and each whose rate
    /// changed a new heap entry for its end (one whose rate stands keeps
    /// its entry: its end has not moved). Entries left stale are dropped
    /// once they outnumber the live ones, so the heap stays as large as
    /// the transfers in flight, whatever the events.
    fn retime(&mut self, ids: &[usize]) {
        for &i in ids {
            let rate = self.rate(&self.slots[i].as_ref().expect("a live transfer").x);
            let l = self.slots[i].as_mut().expect("a live transfer");
            if rate == l.rate {
                continue;
            }
            let end = self.now + l.x.left.max(0.0) / rate;
            let slower = rate < l.rate;
            l.rate = rate;
            if slower {
                // Its entry comes before this end: it stands ([`Live::later`]).
                l.later = Some(end);
                continue;
            }
            l.later = None;
            self.vers[i] = self.vers[i].wrapping_add(1);
            self.due.push(due(end, i, self.vers[i]));
        }
        if self.due.len() > 2 * self.len + 1024 {
            let (live, vers) = (&self.live, &self.vers);
            self.due.retain(|&d| {
                let (_, i, v) = parts(d);
                live[i] && vers[i] == v
            });
        }
    }

    /// Counts `x` on (`add`) or off its links and disk.
    fn count(&mut self, x: &Transfer, add: bool) {
        let step = |c: &mut u32| {
            if add {
                *c += 1
            } else {
                *c -= 1
            }
        };
        if x.on_net() {
            step(&mut self.out[x.source as usize]);
            step(&mut self.into[x.worker as usize]);
        }
        if x.on_disk() {
            step(&mut self.disk[x.source as usize]);
        }
    }

    pub(super) fn push(&mut self, x: Transfer) {
        let mut near = self.touching(x.source, x.worker);
        self.settle(&near);
        self.count(&x, true);
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.live.push(false);
            self.vers.push(0);
            self.slots.len() - 1
        });
        self.from[x.source as usize].push(i);
        self.to[x.worker as usize].push(i);
        self.slots[i] = Some(Live {
            x,
            rate: 0.0,
            at: self.now,
            later: None,
        });
        self.live[i] = true;
        self.len += 1;
        near.push(i);
        self.retime(&near);
        self.near = near;
    }

    /// Takes transfer `i` out (its links and disk freed, the transfers
    /// sharing them re-timed).
    fn remove(&mut self, i: usize) -> Transfer {
        let (src, dst) = {
            let x = &self.slots[i].as_ref().expect("a live transfer").x;
            (x.source, x.worker)
        };
        let mut near = self.touching(src, dst);
        near.retain(|&j| j != i);
        self.settle(&near);
        let l = self.slots[i].take().expect("a live transfer");
        self.live[i] = false;
        self.vers[i] = self.vers[i].wrapping_add(1);
        self.count(&l.x, false);
        for list in [&mut self.from[src as usize], &mut self.to[dst as usize]] {
            if let Some(k) = list.iter().position(|&j| j == i) {
                list.swap_remove(k);
            }
        }
        self.free.push(i);
        self.len -= 1;
        self.retime(&near);
        self.near = near;
        l.x
    }

    /// The slot of the first live transfer that `keep` picks.
    fn position(&self, keep: impl Fn(&Transfer) -> bool) -> Option<usize> {
        self.slots
            .iter()
            .position(|l| l.as_ref().is_some_and(|l| keep(&l.x)))
    }

    /// Takes out the read of `job`'s task `index` started at `start` on
    /// `worker`, if in flight.
    pub(super) fn take_read(
        &mut self,
        job: JobId,
        index: u32,
        worker: u32,
        start: u64,
    ) -> Option<Transfer> {
        let i = self.position(|x| {
            !x.fetch
                && x.copy_of.is_none()
                && !x.only_load
                && x.job == job
                && x.index == index
                && x.worker == worker
                && x.start == start
        })?;
        Some(self.remove(i))
    }

    /// Drops the block load on the links ([`Transfer::only_load`]) of
    /// `job`'s map `index` started at `start` on `worker` (its attempt
    /// killed), if still in flight.
    pub(super) fn drop_load(&mut self, job: JobId, index: u32, worker: u32, start: u64) {
        let at = self.position(|x| {
            x.only_load
                && x.job == job
                && x.index == index
                && x.worker == worker
                && x.start == start
        });
        if let Some(i) = at {
            self.remove(i);
        }
    }

    /// Drops the fetch parts and output copies in flight of `task`'s
    /// reduce attempt started at `start` on `worker`.
    pub(super) fn drop_reduce(&mut self, task: TaskRef, worker: u32, start: u64) {
        while let Some(i) = self.position(|x| {
            let of_it = (x.fetch && x.worker == worker) || x.copy_of == Some(worker);
            of_it && x.job == task.job && x.index == task.index && x.start == start
        }) {
            self.remove(i);
        }
    }

    /// A network read's share: the larger of its source's and reader's
    /// transfers in flight.
    fn share(&self, x: &Transfer) -> f64 {
        f64::from(
            self.out[x.source as usize]
                .max(self.into[x.worker as usize])
                .max(1),
        )
    }

    /// A read's rate now, in its [`Flow`]'s unit of work per ms.
    fn rate(&self, x: &Transfer) -> f64 {
        match x.how {
            Flow::Net | Flow::NetLoaded => 1.0 / self.share(x),
            Flow::Disk {
                disk_bpms,
                net_bpms,
            } => {
                let mut r = disk_bpms / f64::from(self.disk[x.source as usize].max(1));
                if net_bpms > 0.0 {
                    r = r.min(net_bpms / self.share(x));
                }
                r
            }
        }
    }

    /// When the first read in flight ends at the current rates
    /// (infinity if none).
    pub(super) fn next_done(&mut self) -> f64 {
        while let Some(mut top) = self.due.peek_mut() {
            let (end, i, v) = parts(*top);
            if !(self.live[i] && self.vers[i] == v) {
                std::collections::binary_heap::PeekMut::pop(top);
                continue;
            }
            // A slower rate put its end later: the entry goes there now
            // (sifted down in place).
            if let Some(later) = self.slots[i].as_mut().and_then(|l| l.later.take()) {
                *top = due(later, i, v);
                continue;
            }
            return time(end);
        }
        f64::INFINITY
    }

    /// Every read progresses at its current rate until `t` (settled
    /// lazily; an event the clock has passed, a rounded millisecond, does
    /// not take work back).
    pub(super) fn advance_to(&mut self, t: f64) {
        self.now = self.now.max(t);
    }

    /// Takes out a read whose work is done by now, if any (the one due
    /// first).
    pub(super) fn pop_done(&mut self) -> Option<Transfer> {
        let end = self.next_done();
        if end > self.now {
            // Due later, unless what is left is below the threshold.
            let (_, i, _) = parts(*self.due.peek()?);
            let l = self.slots[i].as_ref()?;
            if l.x.left - l.rate * (self.now - l.at) > DONE {
                return None;
            }
        }
        let (_, i, _) = parts(self.due.pop()?);
        Some(self.remove(i))
    }
}

/// Reduce `task`'s fetch of its input of `load` bytes when it starts on
/// `w` at `t`: one part per map of its job (`spread`: maps per worker),
/// taken one from each worker in turn starting at the worker its number
/// picks (as the worker's `fetch_order` does), each a read of that
/// worker's disk (`disk_bpms`, bytes per ms; 0: none) and, from another
/// worker, a transfer over its links (`net_bpms`, bytes per ms; 0: none).
/// A part that loads neither is left out. The reduce runs
/// [`super::FETCH_PARALLEL`] at once.
pub(super) fn fetch_parts(
    task: TaskRef,
    (w, t): (u32, u64),
    load: u64,
    spread: &BTreeMap<WorkerId, u64>,
    disk_bpms: impl Fn(usize) -> f64,
    net_bpms: f64,
) -> VecDeque<Transfer> {
    let total: u64 = spread.values().sum();
    let net = |v: u32| if v != w { net_bpms } else { 0.0 };
    let queues = spread
        .iter()
        .filter(|(v, n)| **n > 0 && (disk_bpms(v.0 as usize) > 0.0 || net(v.0) > 0.0))
        .map(|(v, &n)| (v.0, (0..n).collect::<VecDeque<u64>>()))
        .collect();
    if total == 0 {
        return VecDeque::new();
    }
    let part = load as f64 / total as f64;
    super::fetch_order(queues, task.index)
        .into_iter()
        .map(|(source, _)| {
            let (disk, net) = (disk_bpms(source as usize), net(source));
            // Over the links alone, the part is ms of its transfer alone.
            let (left, how) = if disk > 0.0 {
                (
                    part,
                    Flow::Disk {
                        disk_bpms: disk,
                        net_bpms: net,
                    },
                )
            } else {
                (part / net, Flow::Net)
            };
            Transfer {
                job: task.job,
                index: task.index,
                worker: w,
                source,
                start: t,
                left,
                then_ms: 0,
                floor: 0,
                how,
                fetch: true,
                copy_of: None,
                only_load: false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network transfer of `ms` alone from worker `source` to `worker`.
    fn net(source: u32, worker: u32, ms: f64) -> Transfer {
        Transfer {
            job: JobId(1),
            index: source * 10 + worker,
            worker,
            source,
            start: 0,
            left: ms,
            then_ms: 0,
            floor: 0,
            how: Flow::Net,
            fetch: false,
            copy_of: None,
            only_load: false,
        }
    }

    #[test]
    fn heap_keys_order_times_as_total_cmp_and_give_them_back() {
        let ts = [
            f64::NEG_INFINITY,
            -1e9,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            0.5,
            700.4,
            1e12,
            f64::INFINITY,
        ];
        for a in ts {
            assert_eq!(time(key(a)).to_bits(), a.to_bits(), "{a}");
            for b in ts {
                assert_eq!(key(a).cmp(&key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
        // An entry orders as its (time, slot, version) and gives them back.
        let entries: Vec<(f64, usize, u32)> = ts
            .iter()
            .flat_map(|&t| [(t, 0, 0), (t, 1, u32::MAX), (t, u32::MAX as usize, 1)])
            .collect();
        for &(ta, ia, va) in &entries {
            let d = due(ta, ia, va);
            assert_eq!(parts(d), (key(ta), ia, va));
            for &(tb, ib, vb) in &entries {
                let want = ta.total_cmp(&tb).then(ia.cmp(&ib)).then(va.cmp(&vb));
                assert_eq!(d.0.cmp(&due(tb, ib, vb).0), want, "{ta} {ia} {va}");
            }
        }
    }

    #[test]
    fn shares_change_only_on_the_links_a_transfer_uses_and_time_is_not_taken_back() {
        let mut f = Flows::new(4);
        f.push(net(0, 1, 1_000.0));
        assert_eq!(f.next_done(), 1_000.0);
        // An event the clock has passed (a rounded millisecond) takes no
        // work back.
        f.advance_to(500.4);
        f.advance_to(500.0);
        assert_eq!(f.next_done(), 1_000.0);
        // A second transfer out of worker 0 at 500.4 ms: both at half, the
        // second's 100 ms of work take 200 ms.
        f.push(net(0, 2, 100.0));
        assert!((f.next_done() - 700.4).abs() < 1e-9, "{}", f.next_done());
        // A transfer between two other workers changes neither.
        f.push(net(3, 3, 5_000.0));
        assert!((f.next_done() - 700.4).abs() < 1e-9);
        f.advance_to(700.4);
        let done = f.pop_done().expect("the short one is done");
        assert_eq!((done.source, done.worker), (0, 2));
        assert!(f.pop_done().is_none());
        // Alone again: the first's 399.6 ms left (100 done at half rate)
        // go at full rate.
        assert!((f.next_done() - 1_100.0).abs() < 1e-9, "{}", f.next_done());
        assert!(!f.is_empty());
    }

    #[test]
    fn a_slot_taken_again_is_not_timed_by_its_last_transfers_entries() {
        let mut f = Flows::new(8);
        // A (slot 0) is re-timed twice: at 0 ms to end at 2,000 (B beside
        // it), at 200 ms to end at 1,100 (B done). Its 2,000 ms entry stays
        // in the heap, stale.
        f.push(net(0, 1, 1_000.0));
        f.push(net(0, 2, 100.0));
        f.advance_to(200.0);
        assert_eq!(f.pop_done().map(|x| x.worker), Some(2));
        f.advance_to(1_100.0);
        assert_eq!(f.pop_done().map(|x| x.worker), Some(1));
        // C takes slot 0 and is re-timed once by D beside it: C ends at
        // 11,100 ms and D at 3,100; A's stale entry (2,000 ms) is neither.
        f.push(net(4, 5, 5_000.0));
        f.push(net(4, 6, 1_000.0));
        assert!((f.next_done() - 3_100.0).abs() < 1e-9, "{}", f.next_done());
        f.advance_to(2_000.0);
        assert!(f.pop_done().is_none());
        f.advance_to(3_100.0);
        assert_eq!(f.pop_done().map(|x| x.worker), Some(6));
        // C alone: 4,000 ms of work left at full rate.
        assert!((f.next_done() - 7_100.0).abs() < 1e-9, "{}", f.next_done());
    }

    #[test]
    fn a_slower_rate_moves_the_end_when_its_entry_comes_first() {
        let mut f = Flows::new(4);
        // A alone ends at 1,000 ms; B beside it from 0 halves both: A's
        // entry at 1,000 stands, and at the top it becomes 2,000.
        f.push(net(0, 1, 1_000.0));
        f.push(net(0, 2, 5_000.0));
        assert_eq!(f.due.len(), 2);
        assert_eq!(f.next_done(), 2_000.0);
        f.advance_to(1_000.0);
        assert!(f.pop_done().is_none(), "A is half done at 1,000 ms");
        f.advance_to(2_000.0);
        assert_eq!(f.pop_done().map(|x| x.worker), Some(1));
        // B alone: 4,000 ms of work left at full rate.
        assert!((f.next_done() - 6_000.0).abs() < 1e-9, "{}", f.next_done());
    }

    #[test]
    fn the_heap_keeps_no_more_than_its_live_transfers_entries_and_some() {
        let mut f = Flows::new(3);
        // A long transfer out of worker 0 beside 10,000 short ones that
        // start and end one after another: each re-times the long one.
        f.push(net(0, 1, 1e9));
        for k in 0..10_000u32 {
            f.push(net(0, 2, 1.0));
            let t = f.next_done();
            f.advance_to(t);
            let done = f.pop_done().expect("the short one");
            assert_eq!(done.worker, 2, "at {k}");
            assert!(
                f.due.len() <= 2 * f.len + 1024,
                "{} entries at {k}",
                f.due.len()
            );
        }
        assert_eq!(f.len, 1);
    }
}
