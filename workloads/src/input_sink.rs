//! input-sink: reads the whole input and discards it (Guo et al.'s IO job).
//! Counts bytes and newline-terminated records so the read is observable.

use crate::{MapOutput, MapSummary, MapTask};

#[derive(Default)]
pub struct InputSink {
    bytes: u64,
    newlines: u64,
    /// Whether the last byte seen ended a record; an unterminated tail still counts as one.
    ends_clean: bool,
}

impl MapTask for InputSink {
    fn consume(&mut self, piece: &[u8]) {
        self.bytes += piece.len() as u64;
        self.newlines += piece.iter().filter(|&&b| b == b'\n').count() as u64;
        if let Some(&last) = piece.last() {
            self.ends_clean = last == b'\n';
        }
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let tail = u64::from(self.bytes > 0 && !self.ends_clean);
        (
            MapSummary {
                input_bytes: self.bytes,
                records: self.newlines + tail,
                output_bytes: 0,
                sample: Vec::new(),
            },
            MapOutput::None,
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::Workload;

    #[test]
    fn counts_bytes_and_records_across_pieces() {
        let mut t = Workload::InputSink.map_task(0);
        t.consume(b"ab\ncd");
        t.consume(b"\nef");
        let (s, _) = t.finish();
        assert_eq!(s.input_bytes, 8);
        assert_eq!(s.records, 3);
        assert_eq!(s.output_bytes, 0);
        let (empty, _) = Workload::InputSink.map_task(0).finish();
        assert_eq!(empty.records, 0);
    }
}
