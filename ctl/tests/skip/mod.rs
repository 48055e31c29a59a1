//! A test that cannot run here says so: on stderr, and in
//! `target/tmp/skipped-tests.txt`, which `make test` prints in its last
//! lines (`scripts/test-deps report`), so a skip is never silent.

use std::io::Write;

/// Records that the running test is skipped, and why (what would run it).
pub fn skipped(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let krate = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| s.split('-').next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    eprintln!("SKIPPED: {why}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{krate}::{test}: {why}");
    }
}
