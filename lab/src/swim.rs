//! Production traces as an experiment's workload: SWIM's format (Facebook's
//! 2009 and 2010 MapReduce clusters, project SWIM), with or without input
//! paths.
//!
//! A SWIM file has one tab-separated row per job: job id, submit time (s),
//! gap since the previous job (s), map input bytes, shuffle bytes, output
//! bytes, and in the files `...withInputPaths...` an input path
//! (`inputPathN`; jobs naming the same path read the same data). The 24
//! one-hour samples of a file are concatenated: sample `h` holds the jobs
//! submitted in [3600 h, 3600 (h + 1)) s.
//!
//! A spec's `[trace]` turns one sample into a run's files and jobs
//! ([`plan`]):
//! - bytes are multiplied by `bytes_scale` and time is divided by
//!   `time_scale` (arrivals only: how long a task runs follows from its
//!   bytes, the cluster's pacing and its NICs);
//! - each input path becomes one file, loaded once with the cluster's
//!   replication and placement and read whole by every job naming it; its
//!   size is the largest scaled input of those jobs (a job that read less of
//!   the path reads the whole file here). Without input paths every job has
//!   a file of its own;
//! - a file is `round(size / block)` blocks of the point's block size, or,
//!   smaller than half a block, one block of its own size (at least 4 KiB):
//!   a job of a few bytes becomes one small map task, not a block's worth;
//! - a job without shuffle bytes is map-only (`input-sink`; the trace's
//!   output bytes of a map-only job are not written); a job with shuffle
//!   runs `ceil(scaled shuffle / block)` reduces, at most `max_reduces`.
//!   With `shuffle = "trace"` (the default) it is a `synthetic` job whose
//!   maps write the trace's scaled shuffle bytes (its ratio to the bytes
//!   the job's file holds, so a job reading a path shared with a larger
//!   job still shuffles its own figure) and whose reduces write its scaled
//!   output bytes (their ratio to the shuffle), as SWIM's own synthetic
//!   jobs do. Each map writes its share rounded to the byte, so a job whose
//!   figure is under half a byte per map (a few bytes over many blocks)
//!   shuffles nothing; with `shuffle = "wordcount"` (how the folders of before
//!   2026-11-28 were made) it is a `wordcount`, whose shuffle follows its
//!   input (about a sixth of it on the generated text): the trace then
//!   decides which jobs shuffle and how many reduces they run, not how many
//!   bytes cross;
//! - a job with no input bytes is left out (a job here reads a file), and
//!   counted.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use workloads::Workload;

/// `[trace]` in an experiment spec.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The SWIM file, relative to the spec's directory.
    pub file: PathBuf,
    /// Which one-hour sample (0 = the first): jobs submitted in
    /// [3600 hour, 3600 (hour + 1)) s of the file.
    pub hour: u32,
    /// How many one-hour samples from `hour` on (default 1; 24 from hour
    /// 0: the whole day of a 24-sample file).
    #[serde(default = "one_hour", skip_serializing_if = "is_one_hour")]
    pub hours: u32,
    /// Every byte count is multiplied by this (e.g. 1e-5: 1 TB -> 10 MB).
    pub bytes_scale: f64,
    /// Submit times are divided by this (e.g. 60: the hour in a minute).
    #[serde(default = "one")]
    pub time_scale: f64,
    /// Reduces of a job at most.
    #[serde(default = "default_max_reduces")]
    pub max_reduces: u32,
    /// What a job with shuffle runs: `trace` (a synthetic job moving the
    /// trace's scaled shuffle and output bytes) or `wordcount`.
    #[serde(default)]
    pub shuffle: TraceShuffle,
}

/// `[trace] shuffle`: whose bytes a replayed job with shuffle moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceShuffle {
    /// The trace's scaled shuffle and output bytes (`synthetic`).
    #[default]
    Trace,
    /// wordcount's over the job's input (a few % of it).
    Wordcount,
}

fn one() -> f64 {
    1.0
}

fn one_hour() -> u32 {
    1
}

fn is_one_hour(h: &u32) -> bool {
    *h == 1
}

impl TraceSpec {
    /// "hour 10", or "hours 0-23" for a longer sample.
    pub fn hours_label(&self) -> String {
        if self.hours <= 1 {
            format!("hour {}", self.hour)
        } else {
            format!("hours {}-{}", self.hour, self.hour + self.hours - 1)
        }
    }
}

fn default_max_reduces() -> u32 {
    8
}

/// One row of a SWIM file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwimJob {
    pub id: String,
    pub submit_s: u64,
    pub gap_s: u64,
    pub input_bytes: u64,
    pub shuffle_bytes: u64,
    pub output_bytes: u64,
    pub input_path: Option<String>,
}

/// Parses a SWIM file's text; an error names the line and the column.
pub fn parse_swim(text: &str) -> Result<Vec<SwimJob>, String> {
    let mut jobs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 6 {
            return Err(format!(
                "line {line_no}: {} tab-separated columns, expected at least 6 (job id, submit s, gap s, input, shuffle, output bytes)",
                cols.len()
            ));
        }
        let num = |i: usize, what: &str| -> Result<u64, String> {
            cols[i].trim().parse::<u64>().map_err(|_| {
                format!(
                    "line {line_no}, column {} ({what}): {:?} is not a whole number",
                    i + 1,
                    cols[i]
                )
            })
        };
        let path = cols.get(6).map(|p| p.trim()).filter(|p| !p.is_empty());
        jobs.push(SwimJob {
            id: cols[0].trim().to_owned(),
            submit_s: num(1, "submit time")?,
            gap_s: num(2, "gap")?,
            input_bytes: num(3, "map input bytes")?,
            shuffle_bytes: num(4, "shuffle bytes")?,
            output_bytes: num(5, "output bytes")?,
            input_path: path.map(str::to_owned),
        });
    }
    if jobs.is_empty() {
        return Err("no job rows".into());
    }
    Ok(jobs)
}

/// Reads and parses a SWIM file.
pub fn read_swim(path: &Path) -> Result<Vec<SwimJob>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_swim(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One input file of a trace run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFile {
    /// The trace's input path (or the job id without paths).
    pub path: String,
    pub blocks: u32,
    pub block_bytes: u64,
}

/// One job of a trace run.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceJob {
    /// The trace's job id.
    pub id: String,
    /// Milliseconds after the run starts.
    pub arrival_ms: u64,
    pub workload: Workload,
    /// Index into [`TracePlan::files`].
    pub file: usize,
    pub reduces: Option<u32>,
    /// The trace's shuffle bytes, scaled (what its reduces fetch).
    pub shuffle_bytes: u64,
    /// The trace's output bytes, scaled.
    pub output_bytes: u64,
    /// A synthetic job's ratios (`shuffle = "trace"`).
    pub ratios: Option<workloads::Ratios>,
}

/// A trace sample made into files and jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct TracePlan {
    pub files: Vec<TraceFile>,
    /// In submission order.
    pub jobs: Vec<TraceJob>,
    /// Jobs of the sample left out because they read no input.
    pub no_input: u32,
}

impl TracePlan {
    /// Bytes stored once (before replication).
    pub fn stored_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| f.block_bytes * u64::from(f.blocks))
            .sum()
    }

    /// Map tasks over all jobs.
    pub fn maps(&self) -> u64 {
        self.jobs
            .iter()
            .map(|j| u64::from(self.files[j.file].blocks))
            .sum()
    }
}

/// The smallest block a tiny file gets.
pub const MIN_BLOCK: u64 = 4096;

/// Samples `spec.hour` to `spec.hour + spec.hours - 1` of `jobs` as files of `block` bytes and jobs, at most
/// `max_jobs` of them (the first ones). Errors name the `[trace]` key.
pub fn plan(
    jobs: &[SwimJob],
    spec: &TraceSpec,
    block: u64,
    max_jobs: u32,
) -> Result<TracePlan, (String, String)> {
    let bad = |k: &str, p: String| (format!("trace.{k}"), p);
    if block == 0 {
        return Err((
            "data.block_size".into(),
            "a block must hold at least one byte (got 0)".into(),
        ));
    }
    if !(spec.bytes_scale.is_finite() && spec.bytes_scale > 0.0) {
        return Err(bad(
            "bytes_scale",
            format!("must be > 0 (got {})", spec.bytes_scale),
        ));
    }
    if !(spec.time_scale.is_finite() && spec.time_scale > 0.0) {
        return Err(bad(
            "time_scale",
            format!("must be > 0 (got {})", spec.time_scale),
        ));
    }
    if spec.max_reduces == 0 {
        return Err(bad("max_reduces", "must be at least 1".into()));
    }
    if spec.hours == 0 {
        return Err(bad("hours", "must be at least 1".into()));
    }
    let start = u64::from(spec.hour) * 3600;
    let end = start + u64::from(spec.hours) * 3600;
    let mut sample: Vec<&SwimJob> = jobs
        .iter()
        .filter(|j| (start..end).contains(&j.submit_s))
        .collect();
    if sample.is_empty() {
        let last = jobs.iter().map(|j| j.submit_s).max().unwrap_or(0) / 3600;
        return Err(bad(
            "hour",
            format!(
                "no job was submitted in {} of the file (it has hours 0..={last})",
                spec.hours_label()
            ),
        ));
    }
    // Submission order (stable: rows of one second keep the file's order).
    sample.sort_by_key(|j| j.submit_s);
    let no_input = sample.iter().filter(|j| j.input_bytes == 0).count() as u32;
    let sample: Vec<&SwimJob> = sample
        .into_iter()
        .filter(|j| j.input_bytes > 0)
        .take(max_jobs as usize)
        .collect();
    let scaled = |b: u64| (b as f64 * spec.bytes_scale).round() as u64;
    // Each path's size: the largest scaled input of the jobs naming it.
    let key = |j: &SwimJob| j.input_path.clone().unwrap_or_else(|| j.id.clone());
    let mut size: BTreeMap<String, u64> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for j in &sample {
        let k = key(j);
        let e = size.entry(k.clone()).or_insert_with(|| {
            order.push(k);
            0
        });
        *e = (*e).max(scaled(j.input_bytes));
    }
    // A testbed file is at most 1 TiB: a larger scale is a typo, and its
    // sizes would overflow the block arithmetic below.
    const MAX_FILE: u64 = 1 << 40;
    if let Some((p, b)) = size.iter().find(|(_, b)| **b > MAX_FILE) {
        return Err(bad(
            "bytes_scale",
            format!(
                "{} makes input path {p} {b} bytes; a file may have at most {MAX_FILE} (1 TiB)",
                spec.bytes_scale
            ),
        ));
    }
    let files: Vec<TraceFile> = order
        .iter()
        .map(|p| {
            let bytes = size[p];
            let (blocks, block_bytes) = if bytes.saturating_mul(2) < block {
                (1, bytes.max(MIN_BLOCK).div_ceil(MIN_BLOCK) * MIN_BLOCK)
            } else {
                (((bytes as f64 / block as f64).round() as u32).max(1), block)
            };
            TraceFile {
                path: p.clone(),
                blocks,
                block_bytes,
            }
        })
        .collect();
    let index: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_str(), i))
        .collect();
    let jobs = sample
        .iter()
        .map(|j| {
            let file = index[key(j).as_str()];
            let f = &files[file];
            let stored = f.block_bytes * u64::from(f.blocks);
            let shuffle = scaled(j.shuffle_bytes);
            let output = scaled(j.output_bytes);
            let (workload, reduces, ratios) = if j.shuffle_bytes == 0 {
                (Workload::InputSink, None, None)
            } else {
                let r = shuffle
                    .div_ceil(block)
                    .clamp(1, u64::from(spec.max_reduces)) as u32;
                match spec.shuffle {
                    TraceShuffle::Wordcount => (Workload::Wordcount, Some(r), None),
                    TraceShuffle::Trace => {
                        let ratios = workloads::Ratios {
                            shuffle: shuffle as f64 / stored as f64,
                            output: if shuffle == 0 {
                                0.0
                            } else {
                                output as f64 / shuffle as f64
                            },
                        };
                        (Workload::Synthetic, Some(r), Some(ratios))
                    }
                }
            };
            TraceJob {
                id: j.id.clone(),
                arrival_ms: ((j.submit_s - start) as f64 * 1000.0 / spec.time_scale).round() as u64,
                workload,
                file,
                reduces,
                shuffle_bytes: shuffle,
                output_bytes: output,
                ratios,
            }
        })
        .collect();
    Ok(TracePlan {
        files,
        jobs,
        no_input,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &str = "job0\t3600\t0\t2000000\t0\t10\tinputPath1\t\t\n\
job1\t3601\t1\t50000000\t1000000\t10\tinputPath2\t\t\n\
job2\t3602\t1\t0\t5\t10\tinputPath3\t\t\n\
job3\t3660\t58\t30000000\t0\t10\tinputPath1\t\t\n\
job4\t7300\t0\t1\t0\t0\tinputPath4\t\t\n\
job5\t3610\t0\t300\t0\t0\t\t\t\n";

    fn spec(hour: u32) -> TraceSpec {
        TraceSpec {
            file: "t.tsv".into(),
            hour,
            hours: 1,
            bytes_scale: 0.1,
            time_scale: 60.0,
            max_reduces: 4,
            shuffle: TraceShuffle::Wordcount,
        }
    }

    #[test]
    fn a_sample_becomes_files_read_by_the_jobs_sharing_a_path() {
        let jobs = parse_swim(ROWS).unwrap();
        assert_eq!(jobs.len(), 6);
        assert_eq!(jobs[5].input_path, None);
        let (key, e) = plan(&jobs, &spec(1), 0, 100).unwrap_err();
        assert_eq!(key, "data.block_size", "{e}");
        let p = plan(&jobs, &spec(1), 1 << 20, 100).unwrap();
        // job2 reads nothing: left out; job4 is in hour 2.
        assert_eq!(p.no_input, 1);
        let ids: Vec<&str> = p.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["job0", "job1", "job5", "job3"]);
        // inputPath1: the larger of 200 kB and 3 MB -> 3 blocks of 1 MiB
        // (3 MB / 1 MiB = 2.86), read by job0 and job3.
        assert_eq!(p.jobs[0].file, p.jobs[3].file);
        let f1 = &p.files[p.jobs[0].file];
        assert_eq!(
            (f1.path.as_str(), f1.blocks, f1.block_bytes),
            ("inputPath1", 3, 1 << 20)
        );
        // inputPath2: 5 MB -> 5 blocks; a shuffling job: wordcount with
        // ceil(100 kB / 1 MiB) = 1 reduce.
        let j1 = &p.jobs[1];
        assert_eq!(p.files[j1.file].blocks, 5);
        assert_eq!((j1.workload, j1.reduces), (Workload::Wordcount, Some(1)));
        // job5 has no path: a file of its own, 30 bytes -> one 4 KiB block.
        let f5 = &p.files[p.jobs[2].file];
        assert_eq!(
            (f5.path.as_str(), f5.blocks, f5.block_bytes),
            ("job5", 1, MIN_BLOCK)
        );
        assert_eq!(p.jobs[0].workload, Workload::InputSink);
        // Time compressed 60x from the hour's start: job3 at 60 s -> 1 s.
        let at: Vec<u64> = p.jobs.iter().map(|j| j.arrival_ms).collect();
        assert_eq!(at, [0, 17, 167, 1000]);
        assert_eq!(p.files.len(), 3);
        assert_eq!(p.maps(), 3 + 5 + 1 + 3);
        // At most 2 jobs: the first two.
        assert_eq!(plan(&jobs, &spec(1), 1 << 20, 2).unwrap().jobs.len(), 2);
        // Two hours from hour 1: job4 (7,300 s, hour 2) joins, its arrival
        // counted from hour 1's start, time compressed alike.
        let two = TraceSpec {
            hours: 2,
            ..spec(1)
        };
        assert_eq!(two.hours_label(), "hours 1-2");
        let p2 = plan(&jobs, &two, 1 << 20, 100).unwrap();
        let last = p2.jobs.last().unwrap();
        assert_eq!((last.id.as_str(), last.arrival_ms), ("job4", 61_667));
        assert_eq!(p2.jobs.len(), 5);
    }

    #[test]
    fn bad_traces_and_settings_are_named() {
        let e = parse_swim("job0\t1\t0\tlots\t0\t0\n").unwrap_err();
        assert!(e.contains("line 1, column 4 (map input bytes)"), "{e}");
        let e = parse_swim("job0\t1\t0\n").unwrap_err();
        assert!(e.contains("line 1: 3 tab-separated columns"), "{e}");
        assert_eq!(parse_swim("\n").unwrap_err(), "no job rows");
        let jobs = parse_swim(ROWS).unwrap();
        let (k, e) = plan(&jobs, &spec(5), 1 << 20, 10).unwrap_err();
        assert_eq!(k, "trace.hour");
        assert!(e.contains("hours 0..=2"), "{e}");
        let mut s = spec(1);
        s.bytes_scale = 0.0;
        assert_eq!(
            plan(&jobs, &s, 1 << 20, 10).unwrap_err().0,
            "trace.bytes_scale"
        );
        let mut s = spec(1);
        s.hours = 0;
        assert_eq!(plan(&jobs, &s, 1 << 20, 10).unwrap_err().0, "trace.hours");
        let mut s = spec(1);
        s.max_reduces = 0;
        assert_eq!(
            plan(&jobs, &s, 1 << 20, 10).unwrap_err().0,
            "trace.max_reduces"
        );
    }

    /// The shipped trace parses whole: 24 hours, every row with a path.
    #[test]
    fn the_shipped_swim_trace_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let jobs =
            read_swim(&root.join("traces/swim/FB-2010_samples_24_times_1hr_withInputPaths_0.tsv"))
                .unwrap();
        assert_eq!(jobs.len(), 25_428);
        assert!(jobs.iter().all(|j| j.input_path.is_some()));
        assert_eq!(jobs.iter().map(|j| j.submit_s / 3600).max(), Some(24));
    }
}
