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
