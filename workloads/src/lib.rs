//! The jobs' map and reduce functions. A map task is fed its input block as a
//! sequence of byte chunks (already checksum-verified by the worker) and
//! returns what it produced; where the bytes come from (local disk, another
//! worker over HTTP) is not its concern.

pub mod input_sink;

use serde::{Deserialize, Serialize};

/// A job's workload. One enum, parsed by serde (API, specs) and clap (CLI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[clap(rename_all = "kebab-case")]
pub enum Workload {
    /// Reads its whole input and discards it: the IO job of Guo et al.
    InputSink,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::InputSink => "input-sink",
        }
    }

    /// A fresh map task of this workload.
    pub fn map_task(self) -> Box<dyn MapTask> {
        match self {
            Workload::InputSink => Box::new(input_sink::InputSink::default()),
        }
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a finished map task produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapSummary {
    /// Input bytes consumed.
    pub input_bytes: u64,
    /// Records seen (lines for text input).
    pub records: u64,
    /// Bytes of map output written (0 for map-only sinks).
    pub output_bytes: u64,
}

/// One running map task. `consume` is called with consecutive pieces of the
/// input block, in order; `finish` once after the last piece.
pub trait MapTask: Send {
    fn consume(&mut self, piece: &[u8]);
    fn finish(self: Box<Self>) -> MapSummary;
}
