//! A results folder's CSV as a table of strings: its header and rows,
//! read from `<name>.csv` or its gzipped `<name>.csv.gz` (the committed
//! folders keep their large tables gzipped).

use anyhow::{bail, Context};
use std::io::Read;
use std::path::Path;

/// A table of a folder: its header and rows.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads `<dir>/<name>.csv`, or its `.csv.gz`.
    pub fn read(dir: &Path, name: &str) -> anyhow::Result<Table> {
        let plain = dir.join(format!("{name}.csv"));
        let gz = dir.join(format!("{name}.csv.gz"));
        let text = if plain.is_file() {
            std::fs::read_to_string(&plain)
                .with_context(|| format!("reading {}", plain.display()))?
        } else if gz.is_file() {
            let mut s = String::new();
            flate2::read::GzDecoder::new(
                std::fs::File::open(&gz).with_context(|| format!("opening {}", gz.display()))?,
            )
            .read_to_string(&mut s)
            .with_context(|| format!("reading {}", gz.display()))?;
            s
        } else {
            bail!("{} has no {name}.csv", dir.display());
        };
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header = r.headers()?.iter().map(str::to_string).collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|r| r.iter().map(str::to_string).collect()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}: {name}.csv", dir.display()))?;
        Ok(Table { header, rows })
    }
}
