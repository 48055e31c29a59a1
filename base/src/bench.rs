//! A benchmark's figures for its results folder. `make bench` (`scripts/bench`)
//! makes `results/bench/<stamp>/`, sets `BENCH_RESULTS` to it, and each
//! benchmark appends one CSV line per figure it prints to `figures.csv`
//! there; `scripts/bench-table` writes docs/benchmarks.md's table from it.
//! Without the variable (a bare `cargo bench`) nothing is written.

use std::io::Write;

/// The variable naming the folder the figures go to.
pub const RESULTS_VAR: &str = "BENCH_RESULTS";

/// The columns of `figures.csv`, in order.
pub const HEADER: &str = "id,what,value,unit,target";

/// Appends one figure: `id` is stable across runs (`section.case.metric`),
/// `what` says what was measured as the table shows it, `unit` is what
/// `value` counts ("s", "MB/s", "x", "us", ...) and `target` is the bound
/// it is held to (">= 0.9", "<= 5", "0.85..1.15") or "" for a reference
/// figure. A figure that cannot be written is said on stderr: the bench's
/// printed line still stands, and the table then shows it missing.
pub fn record(id: &str, what: &str, value: f64, unit: &str, target: &str) {
    let Some(dir) = std::env::var_os(RESULTS_VAR) else {
        return;
    };
    let path = std::path::Path::new(&dir).join("figures.csv");
    if let Err(e) = append(&path, &line(id, what, value, unit, target)) {
        eprintln!("bench figure {id} not written to {}: {e}", path.display());
    }
}

/// One CSV line (RFC 4180 quoting), newline included.
pub fn line(id: &str, what: &str, value: f64, unit: &str, target: &str) -> String {
    let fields = [
        id.to_string(),
        what.to_string(),
        format!("{value}"),
        unit.to_string(),
        target.to_string(),
    ];
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    format!("{}\n", quoted.join(","))
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// Appends `text` in one write (O_APPEND: concurrent benches' lines do not
/// interleave), the header first when the file is new.
fn append(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let fresh = f.metadata()?.len() == 0;
    let text = if fresh {
        format!("{HEADER}\n{text}")
    } else {
        text.to_string()
    };
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_quote_what_needs_it() {
        assert_eq!(
            line("nic.k1", "1 reader, \"capped\"", 0.996, "x C", ">= 0.9"),
            "nic.k1,\"1 reader, \"\"capped\"\"\",0.996,x C,>= 0.9\n"
        );
        assert_eq!(line("a", "b", 2.0, "s", ""), "a,b,2,s,\n");
    }

    #[test]
    fn appends_after_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("figures.csv");
        append(&p, &line("a", "x", 1.5, "s", "<= 2")).unwrap();
        append(&p, &line("b", "y", 3.0, "s", "")).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, format!("{HEADER}\na,x,1.5,s,<= 2\nb,y,3,s,\n"));
    }
}
