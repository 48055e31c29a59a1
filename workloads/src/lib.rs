//! The jobs' map and reduce functions. A map task is fed its input block as a
//! sequence of byte chunks (already checksum-verified by the worker) and
//! returns what it produced; where the bytes come from (local disk, another
//! worker over HTTP) is not its concern.

pub mod input_sink;
pub mod pool;
pub mod sort;
pub mod wordcount;

use serde::{Deserialize, Serialize};

/// A job's workload. One enum, parsed by serde (API, specs) and clap (CLI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "cli", clap(rename_all = "kebab-case"))]
pub enum Workload {
    /// Reads its whole input and discards it: the IO job of Guo et al.
    InputSink,
    /// Word counts with a combiner; hash-partitioned reduces.
    Wordcount,
    /// TeraSort-style sort of 100-byte records; range-partitioned reduces.
    Sort,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::InputSink => "input-sink",
            Workload::Wordcount => "wordcount",
            Workload::Sort => "sort",
        }
    }

    /// Reduce tasks a job of this workload gets when it does not say.
    pub fn default_reduces(self) -> u32 {
        match self {
            Workload::InputSink => 0,
            Workload::Wordcount | Workload::Sort => 1,
        }
    }

    /// Whether this workload has a reduce phase at all.
    pub fn has_reduce(self) -> bool {
        self != Workload::InputSink
    }

    /// A fresh map task of this workload for a job with `reduces` reduces.
    pub fn map_task(self, reduces: u32) -> Box<dyn MapTask> {
        match self {
            Workload::InputSink => Box::new(input_sink::InputSink::default()),
            Workload::Wordcount => Box::new(wordcount::WordcountMap::new(reduces)),
            Workload::Sort => Box::new(sort::SortMap::default()),
        }
    }

    /// A fresh reduce task, or None for map-only workloads.
    pub fn reduce_task(self) -> Option<Box<dyn ReduceTask>> {
        match self {
            Workload::InputSink => None,
            Workload::Wordcount => Some(Box::<wordcount::WordcountReduce>::default()),
            Workload::Sort => Some(Box::<sort::SortReduce>::default()),
        }
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a finished map task produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MapSummary {
    /// Input bytes consumed.
    pub input_bytes: u64,
    /// Records seen (lines for text input).
    pub records: u64,
    /// Bytes of map output written (0 for map-only sinks).
    pub output_bytes: u64,
    /// sort: keys sampled from this block, for the range partitioner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<Vec<u8>>,
}

/// What a map task leaves for the reduces.
pub enum MapOutput {
    /// Map-only workload.
    None,
    /// One encoded partition per reduce (hash partitioning).
    Partitions(Vec<Vec<u8>>),
    /// Whole sorted records, served by key range once splits are known.
    SortedRun {
        run: sort::SortedRun,
        sample: Vec<Vec<u8>>,
    },
    /// The input is not what this workload reads (the task fails with this).
    Invalid(String),
}

/// One running map task. `consume` is called with consecutive pieces of the
/// input block, in order; `finish` once after the last piece.
pub trait MapTask: Send {
    /// The input's length, told before the first piece (a task that keeps
    /// its input reserves it once instead of growing by copies).
    fn expect_input(&mut self, _bytes: u64) {}
    fn consume(&mut self, piece: &[u8]);
    fn finish(self: Box<Self>) -> (MapSummary, MapOutput);
}

/// What a finished reduce task produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReduceSummary {
    /// Shuffle bytes consumed.
    pub input_bytes: u64,
    /// Output records (words, or sort records).
    pub records: u64,
    pub output_bytes: u64,
}

/// One running reduce task: `consume` once per mapper's partition, then
/// `finish` returns the output bytes of this reduce's partition.
pub trait ReduceTask: Send {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String>;
    fn finish(self: Box<Self>) -> (ReduceSummary, Vec<u8>);
}
