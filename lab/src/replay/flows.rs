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
    /// the network, with a fixed remote model: it loads its source's
    /// transmit and its reader's receive link while it lasts, and its end
    /// ends nothing (the map's length is its model's).
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

/// The reads in flight and how many use each worker's links and disk.
pub(super) struct Flows {
    pub(super) list: Vec<Transfer>,
    out: Vec<u32>,
    into: Vec<u32>,
    disk: Vec<u32>,
}

impl Flows {
    pub(super) fn new(workers: usize) -> Flows {
        Flows {
            list: Vec::new(),
            out: vec![0; workers],
            into: vec![0; workers],
            disk: vec![0; workers],
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(super) fn push(&mut self, x: Transfer) {
        if x.on_net() {
            self.out[x.source as usize] += 1;
            self.into[x.worker as usize] += 1;
        }
        if x.on_disk() {
            self.disk[x.source as usize] += 1;
        }
        self.list.push(x);
    }

    /// Takes read `i` out (its links and disk freed).
    pub(super) fn remove(&mut self, i: usize) -> Transfer {
        let x = self.list.swap_remove(i);
        if x.on_net() {
            self.out[x.source as usize] -= 1;
            self.into[x.worker as usize] -= 1;
        }
        if x.on_disk() {
            self.disk[x.source as usize] -= 1;
        }
        x
    }

    /// The read of `job`'s task `index` started at `start` on `worker`.
    pub(super) fn find(&self, job: JobId, index: u32, worker: u32, start: u64) -> Option<usize> {
        self.list.iter().position(|x| {
            !x.fetch
                && x.copy_of.is_none()
                && !x.only_load
                && x.job == job
                && x.index == index
                && x.worker == worker
                && x.start == start
        })
    }

    /// Drops the fetch parts and output copies in flight of `task`'s
    /// reduce attempt started at `start` on `worker`.
    pub(super) fn drop_reduce(&mut self, task: TaskRef, worker: u32, start: u64) {
        let mut i = self.list.len();
        while i > 0 {
            i -= 1;
            let x = &self.list[i];
            let of_it = (x.fetch && x.worker == worker) || x.copy_of == Some(worker);
            if of_it && x.job == task.job && x.index == task.index && x.start == start {
                self.remove(i);
            }
        }
    }

    /// Drops the block load on the links ([`Transfer::only_load`]) of
    /// `job`'s map `index` started at `start` on `worker` (its attempt
    /// killed), if still in flight.
    pub(super) fn drop_load(&mut self, job: JobId, index: u32, worker: u32, start: u64) {
        let at = self.list.iter().position(|x| {
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

    /// A network read's share: the larger of its source's and reader's
    /// transfers in flight.
    fn share(&self, x: &Transfer) -> f64 {
        f64::from(
            self.out[x.source as usize]
                .max(self.into[x.worker as usize])
                .max(1),
        )
    }

    /// A disk read's rate now (bytes per ms).
    fn rate(&self, x: &Transfer, disk_bpms: f64, net_bpms: f64) -> f64 {
        let mut r = disk_bpms / f64::from(self.disk[x.source as usize].max(1));
        if net_bpms > 0.0 {
            r = r.min(net_bpms / self.share(x));
        }
        r
    }

    /// When the first read in flight ends at the current rates, from
    /// `clock` (infinity if none).
    pub(super) fn next_done(&self, clock: f64) -> f64 {
        self.list
            .iter()
            .map(|x| match x.how {
                Flow::Net | Flow::NetLoaded => clock + x.left * self.share(x),
                Flow::Disk {
                    disk_bpms,
                    net_bpms,
                } => clock + x.left / self.rate(x, disk_bpms, net_bpms),
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Every read progresses `dt` ms at its current rate.
    pub(super) fn progress(&mut self, dt: f64) {
        let steps: Vec<f64> = self
            .list
            .iter()
            .map(|x| match x.how {
                Flow::Net | Flow::NetLoaded => dt / self.share(x),
                Flow::Disk {
                    disk_bpms,
                    net_bpms,
                } => dt * self.rate(x, disk_bpms, net_bpms),
            })
            .collect();
        for (x, step) in self.list.iter_mut().zip(steps) {
            x.left -= step;
        }
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
