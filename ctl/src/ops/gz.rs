//! Gzipped JSON files: written aside and renamed (never a partial file
//! under the real name), read back with the file named in any error. The
//! decision record with its inputs and a calibration's models use them.

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::Path;

/// Writes `value` as gzipped JSON to `path`, aside first and then renamed:
/// never a partial file under the real name.
pub fn write_json(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("gz.partial");
    let f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), Default::default());
    serde_json::to_writer(&mut gz, value)?;
    gz.finish()?
        .flush()
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Reads JSON written by [`write_json`] (or plain JSON where `path`
/// does not end in `.gz`); the error names the file and says it is not
/// `what`.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> anyhow::Result<T> {
    let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let input: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(f))
    } else {
        Box::new(f)
    };
    serde_json::from_reader(std::io::BufReader::new(input))
        .with_context(|| format!("{}: not {what}", path.display()))
}
