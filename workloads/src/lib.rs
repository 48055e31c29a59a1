//! The jobs' map and reduce functions. A map task is fed its input block as a
//! sequence of byte chunks (already checksum-verified by the worker) and
//! returns what it produced; where the bytes come from (local disk, another
//! worker over HTTP) is not its concern.

pub mod input_sink;
pub mod lines;
pub mod pool;
pub mod run;
pub mod sort;
pub mod synthetic;
pub mod wordcount;

pub use synthetic::Ratios;

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
    /// Sort of newline-terminated lines of any length in `LC_ALL=C sort`'s
    /// order; range-partitioned reduces.
    SortLines,
    /// Moves the bytes its ratios say (SWIM's synthetic job): map output
    /// `shuffle` x input, reduce output `output` x shuffle; hash-partitioned
    /// reduces.
    Synthetic,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::InputSink => "input-sink",
            Workload::Wordcount => "wordcount",
            Workload::Sort => "sort",
            Workload::SortLines => "sort-lines",
            Workload::Synthetic => "synthetic",
        }
    }

    /// Reduce tasks a job of this workload gets when it does not say.
    pub fn default_reduces(self) -> u32 {
        match self {
            Workload::InputSink => 0,
            Workload::Wordcount | Workload::Sort | Workload::SortLines | Workload::Synthetic => 1,
        }
    }

    /// Whether its reduces take key ranges of sorted runs (split from the
    /// maps' samples) rather than hash partitions.
    pub fn range_partitioned(self) -> bool {
        matches!(self, Workload::Sort | Workload::SortLines)
    }

    /// The part name a reduce asks a map for: a sorted run's (`run`,
    /// `lines`), or None for hash partitions (`p<r>`).
    pub fn run_part(self) -> Option<&'static str> {
        match self {
            Workload::Sort => Some(sort::RunFormat::Records.part()),
            Workload::SortLines => Some(sort::RunFormat::Lines.part()),
            Workload::InputSink | Workload::Wordcount | Workload::Synthetic => None,
        }
    }

    /// Whether this workload has a reduce phase at all.
    pub fn has_reduce(self) -> bool {
        self != Workload::InputSink
    }

    /// A fresh map task of this workload for a job with `reduces` reduces
    /// (a synthetic job's at ratios of 1).
    pub fn map_task(self, reduces: u32) -> Box<dyn MapTask> {
        self.map_task_with(reduces, Ratios::default())
    }

    /// A fresh map task; `ratios` are read by `synthetic` only.
    pub fn map_task_with(self, reduces: u32, ratios: Ratios) -> Box<dyn MapTask> {
        match self {
            Workload::Synthetic => Box::new(synthetic::SyntheticMap::new(reduces, ratios)),
            Workload::InputSink => Box::new(input_sink::InputSink::default()),
            Workload::Wordcount => Box::new(wordcount::WordcountMap::new(reduces)),
            Workload::Sort => Box::new(sort::SortMap::default()),
            Workload::SortLines => Box::new(lines::LinesMap::default()),
        }
    }

    /// A fresh reduce task holding all its input in memory, or None for
    /// map-only workloads.
    pub fn reduce_task(self) -> Option<Box<dyn ReduceTask>> {
        self.reduce_task_within(None)
    }

    /// A fresh reduce task that, given `spill`, holds at most its budget of
    /// fetched input in memory and merges the rest to disk (sort; a
    /// wordcount reduce holds its distinct words, not its input), or None
    /// for map-only workloads.
    pub fn reduce_task_within(self, spill: Option<Spill>) -> Option<Box<dyn ReduceTask>> {
        self.reduce_task_with(spill, Ratios::default())
    }

    /// A fresh reduce task; `ratios` are read by `synthetic` only (whose
    /// reduce keeps no input, so it never spills).
    pub fn reduce_task_with(
        self,
        spill: Option<Spill>,
        ratios: Ratios,
    ) -> Option<Box<dyn ReduceTask>> {
        match self {
            Workload::Synthetic => Some(Box::new(synthetic::SyntheticReduce::new(ratios))),
            Workload::InputSink => None,
            Workload::Wordcount => Some(Box::<wordcount::WordcountReduce>::default()),
            Workload::Sort => Some(Box::new(sort::SortReduce::new(spill))),
            Workload::SortLines => Some(Box::new(lines::LinesReduce::new(spill))),
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

impl MapOutput {
    /// Part `part`'s bytes (a partition's index; 0 for a sorted run, laid
    /// out in order), if it has that part.
    pub fn part(&self, part: usize) -> Option<&[u8]> {
        match self {
            MapOutput::SortedRun { run, .. } if part == 0 => Some(run.bytes()),
            MapOutput::Partitions(parts) => parts.get(part).map(|p| p.as_slice()),
            _ => None,
        }
    }

    /// Fills `buf` from byte `at` of part `part`.
    pub fn read_at(&self, part: usize, at: usize, buf: &mut [u8]) -> Result<(), String> {
        let end = at + buf.len();
        match self.part(part) {
            Some(p) if end <= p.len() => {
                buf.copy_from_slice(&p[at..end]);
                Ok(())
            }
            Some(_) => Err(format!(
                "bytes {at}..{end} of part {part} are not in this map output"
            )),
            None => Err(format!("this map output has no part {part} to read")),
        }
    }
}

/// Bytes `start..end` of part `part` of a map output this process keeps in
/// memory, handed to a reduce as they are: the reduce reads them where
/// they lie instead of from a copy.
#[derive(Clone)]
pub struct KeptInput {
    pub output: std::sync::Arc<MapOutput>,
    pub part: usize,
    pub start: usize,
    pub end: usize,
}

impl KeptInput {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The bytes, where they lie; `None` if the output has no such range.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.output
            .part(self.part)
            .and_then(|p| p.get(self.start..self.end))
    }

    /// The bytes copied out, laid out as a fetch would have brought them.
    pub fn to_vec(&self) -> Result<Vec<u8>, String> {
        let b = self.bytes().ok_or_else(|| {
            format!(
                "bytes {}..{} of part {} are not in this map output",
                self.start, self.end, self.part
            )
        })?;
        let mut v = pool::take(b.len());
        v.extend_from_slice(b);
        Ok(v)
    }
}

/// A kept range checked to exist ([`KeptInput::bytes`]), as the owner of
/// an HTTP body's bytes: served where they lie, with no copy.
pub struct KeptBytes(KeptInput);

impl KeptBytes {
    pub fn new(k: KeptInput) -> Result<KeptBytes, String> {
        match k.bytes() {
            Some(_) => Ok(KeptBytes(k)),
            None => Err(format!(
                "bytes {}..{} of part {} are not in this map output",
                k.start, k.end, k.part
            )),
        }
    }
}

impl AsRef<[u8]> for KeptBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes().expect("checked by KeptBytes::new")
    }
}

/// Where a reduce puts the input beyond its memory budget, as Hadoop's
/// reduce merges fetched map outputs to its local disk once they outgrow
/// `mapreduce.reduce.shuffle.input.buffer.percent` of its heap.
#[derive(Clone)]
pub struct Spill {
    /// Bytes of fetched input held in memory; beyond them, what is held is
    /// merged into a sorted file.
    pub memory_budget: u64,
    /// Directory of the spill files. They are anonymous (`O_TMPFILE`):
    /// gone when the task ends, however it ends, even if its process dies.
    pub dir: std::path::PathBuf,
    /// Told the bytes of every spill write and read, before it is made
    /// (the worker's emulated disk paces it).
    pub charge: std::sync::Arc<dyn Fn(u64) + Send + Sync>,
}

impl Spill {
    /// Spill files in `dir` beyond `memory_budget`, paced by nothing.
    pub fn unpaced(memory_budget: u64, dir: impl Into<std::path::PathBuf>) -> Spill {
        Spill {
            memory_budget,
            dir: dir.into(),
            charge: std::sync::Arc::new(|_| {}),
        }
    }
}

/// One running map task. `consume` (or `consume_owned`) is called with
/// consecutive pieces of the input block, in order; `finish` once after the
/// last piece.
pub trait MapTask: Send {
    /// The input's length, told before the first piece (a task that keeps
    /// its input reserves it once instead of growing by copies).
    fn expect_input(&mut self, _bytes: u64) {}
    /// Whether the task keeps its whole input before it maps it (a sort):
    /// a reader may then fill one buffer of the block's length (and a byte
    /// more) and hand it over with `consume_owned` rather than in pieces
    /// the task copies.
    fn keeps_input(&self) -> bool {
        false
    }
    fn consume(&mut self, piece: &[u8]);
    /// A piece in a buffer the task may keep as it is (one from
    /// [`pool::take`]): by default consumed as a borrowed piece and given
    /// back to the pool.
    fn consume_owned(&mut self, piece: Vec<u8>) {
        self.consume(&piece);
        pool::give(piece);
    }
    fn finish(self: Box<Self>) -> (MapSummary, MapOutput);
}

/// The input a map that keeps it whole holds: a pooled buffer of the
/// expected length (and one byte more, for a newline a last line lacks)
/// taken at the first borrowed piece, or the reader's own buffer kept
/// without a copy when it is the first.
#[derive(Default)]
pub(crate) struct WholeInput {
    data: Vec<u8>,
    expected: usize,
}

impl WholeInput {
    pub(crate) fn expect(&mut self, bytes: u64) {
        // A hint: a length beyond any block is not reserved.
        if bytes <= 1 << 32 {
            self.expected = bytes as usize + 1;
        }
    }

    pub(crate) fn push(&mut self, piece: &[u8]) {
        if self.data.capacity() == 0 {
            self.data = pool::take(self.expected.max(piece.len()));
        }
        self.data.extend_from_slice(piece);
    }

    pub(crate) fn push_owned(&mut self, piece: Vec<u8>) {
        if self.data.is_empty() {
            pool::give(std::mem::replace(&mut self.data, piece));
        } else {
            self.push(&piece);
            pool::give(piece);
        }
    }

    pub(crate) fn into_vec(mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }
}

/// A map dropped before it finished (its attempt killed, its input cut
/// short) gives the buffer it gathered back to the pool, as a finished
/// one does once its run is read: the next map finds its pages faulted in.
impl Drop for WholeInput {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.data));
    }
}

/// What a finished reduce task produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReduceSummary {
    /// Shuffle bytes consumed.
    pub input_bytes: u64,
    /// Output records (words, or sort records).
    pub records: u64,
    pub output_bytes: u64,
    /// Bytes written to spill files past the reduce's memory budget
    /// (Hadoop's spilled records, in bytes); 0 when all of it fit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spilled_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One running reduce task: `consume` (or `consume_kept`) once per
/// mapper's partition, then `finish_into` hands the output of this
/// reduce's partition on in pieces, as it is produced.
pub trait ReduceTask: Send {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String>;

    /// A map output kept in this process's memory; by default read from a
    /// copy.
    fn consume_kept(&mut self, input: KeptInput) -> Result<(), String> {
        self.consume(input.to_vec()?)
    }

    /// The bytes its output will have, once every input is consumed (its
    /// runner's progress: how much of the output is written). None: it
    /// cannot say before producing it.
    fn output_len(&self) -> Option<u64> {
        None
    }

    /// Produces the output in order, one piece (a buffer from [`pool`]) at
    /// a time, to `emit`; stops early when `emit` returns false (whoever
    /// takes the output gave up). An error (a spill file that cannot be
    /// read back) ends the output where it stands: what was handed on is
    /// not the whole output.
    fn finish_into(
        self: Box<Self>,
        emit: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<ReduceSummary, String>;

    /// The whole output in one buffer.
    fn finish(self: Box<Self>) -> Result<(ReduceSummary, Vec<u8>), String> {
        let mut out = Vec::new();
        let summary = self.finish_into(&mut |piece| {
            out.extend_from_slice(&piece);
            pool::give(piece);
            true
        })?;
        Ok((summary, out))
    }
}

/// Size of the output pieces reduces hand on: large enough that each costs
/// little to pass between threads, small enough that a few in flight use
/// little memory.
pub const OUTPUT_PIECE: usize = 4 << 20;

#[cfg(test)]
mod props {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// A reduce fed map output it did not expect (damaged on the way, or
        /// from a confused peer) refuses it with an error or takes it; it
        /// never panics, and it still finishes.
        #[test]
        fn reduces_refuse_or_take_arbitrary_map_output(
            pieces in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), 1..4),
        ) {
            for w in [Workload::Wordcount, Workload::Sort, Workload::SortLines, Workload::Synthetic] {
                let mut r = w.reduce_task().expect("has a reduce");
                for p in &pieces {
                    if let Err(e) = r.consume(p.clone()) {
                        proptest::prop_assert!(!e.is_empty());
                    }
                }
                if let Err(e) = r.finish() {
                    proptest::prop_assert!(!e.is_empty());
                }
            }
        }
    }
}
