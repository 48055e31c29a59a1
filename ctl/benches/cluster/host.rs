//! The host's own speed at a moment, to read a job's time against: a fixed
//! computation on both cores and a fixed O_DIRECT write to the stores'
//! disk, timed just before a job on the idle cluster. Where these vary from
//! one job to the next, a job's time varies with them, whatever the
//! testbed does; where they hold still, the job's spread is its own.

use std::path::PathBuf;
use std::time::Instant;

/// Bytes of 100-byte records each of the two threads sorts.
const CPU_BYTES: usize = 16 << 20;
/// Bytes the disk probe writes (O_DIRECT, 4 MiB writes, synced).
const DISK_BYTES: usize = 128 << 20;

pub struct HostProbe {
    blocks: [Vec<u8>; 2],
    dir: PathBuf,
}

/// One reading: seconds for the cores' fixed sort and the disk's fixed
/// write (None where the file system refuses O_DIRECT).
#[derive(Clone, Copy)]
pub struct Reading {
    pub cpu_s: f64,
    pub disk_s: Option<f64>,
}

impl HostProbe {
    /// A probe writing into `dir` (on the stores' disk).
    pub fn new(dir: PathBuf) -> HostProbe {
        let block = |i| ctl::ops::loader::generate_records(5, i, CPU_BYTES);
        HostProbe {
            blocks: [block(0), block(1)],
            dir,
        }
    }

    /// Both cores sorting their own records at once (the later end), then
    /// the disk's write.
    pub fn read(&self) -> Reading {
        let t = Instant::now();
        std::thread::scope(|s| {
            for b in &self.blocks {
                s.spawn(move || {
                    let mut recs: Vec<&[u8]> = b.chunks(100).collect();
                    recs.sort_unstable();
                    std::hint::black_box(recs.concat());
                });
            }
        });
        let cpu_s = t.elapsed().as_secs_f64();
        let disk_s =
            super::disk::direct_write_rate(&self.dir, DISK_BYTES).map(|r| DISK_BYTES as f64 / r);
        Reading { cpu_s, disk_s }
    }
}

/// Slowest over fastest of `xs` (1 for fewer than two).
pub fn spread(xs: &[f64]) -> f64 {
    let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().cloned().fold(0.0, f64::max);
    if xs.len() < 2 || lo <= 0.0 {
        1.0
    } else {
        hi / lo
    }
}

/// Pearson's correlation of `xs` and `ys` (0 where either holds still).
pub fn correlation(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len().min(ys.len()) as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n;
    let (mx, my) = (mean(xs), mean(ys));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        0.0
    } else {
        sxy / (sxx * syy).sqrt()
    }
}

/// What this process and the host used up to a moment: the process's CPU
/// time and page faults (the in-process cluster's master, workers and
/// client; not GNU sort, a child) and the host's ticks in iowait and stolen
/// by the hypervisor (/proc/stat's first line).
#[derive(Clone, Copy, Default)]
pub struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Context switches the process was forced into (its threads' time
    /// slices taken by others).
    pub involuntary: u64,
    pub iowait_s: f64,
    pub steal_s: f64,
}

impl Usage {
    /// Now (zeros where the kernel does not say).
    pub fn now() -> Usage {
        // SAFETY: getrusage writes one rusage into the zeroed struct.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let ticks: Vec<f64> = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| s.lines().next().map(str::to_owned))
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .filter_map(|t| t.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let tick = |i: usize| ticks.get(i).copied().unwrap_or(0.0) / hz;
        Usage {
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
            minor_faults: ru.ru_minflt as u64,
            major_faults: ru.ru_majflt as u64,
            involuntary: ru.ru_nivcsw as u64,
            // user nice system idle iowait irq softirq steal
            iowait_s: tick(4),
            steal_s: tick(7),
        }
    }

    /// What was used from `earlier` to this one.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_s: self.user_s - earlier.user_s,
            sys_s: self.sys_s - earlier.sys_s,
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            iowait_s: self.iowait_s - earlier.iowait_s,
            steal_s: self.steal_s - earlier.steal_s,
        }
    }

    /// The process's CPU seconds, user and system.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}
