//! The results writer shared by the experiment runner and the lab's sweeps.
//!
//! One directory per run of a spec, `results/<name>/<UTC stamp>/`, holding
//! `runs.csv` (one row a run), `summary.md`, `meta.json` (the spec, its
//! seeds, the git commit and whether the tree was dirty, the machine and the
//! command) and `plots/`. Files are written whole under a temporary name and
//! renamed, so no partial file ever looks complete.

pub mod browse;
pub mod plot;
pub mod table;

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A results directory.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    path: PathBuf,
}

impl ResultsDir {
    /// Creates `<results>/<name>/<UTC stamp of started>/`, or, when a run
    /// that started in the same second has it, `<stamp>-2/` (`-3/`, ...):
    /// two runs never write into one folder.
    pub fn create(results: &Path, name: &str, started_unix_ms: u64) -> anyhow::Result<ResultsDir> {
        let parent = results.join(name);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let stamp = utc_stamp(started_unix_ms);
        for n in 1..1000 {
            let leaf = if n == 1 {
                stamp.clone()
            } else {
                format!("{stamp}-{n}")
            };
            let path = parent.join(leaf);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(ResultsDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        anyhow::bail!(
            "{}: a thousand runs started in the same second",
            parent.join(stamp).display()
        )
    }

    /// An existing results directory (to replot it).
    pub fn open(path: &Path) -> ResultsDir {
        ResultsDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `runs.csv` whole, one row per element (rewritten after every
    /// run or point, so a crash keeps what finished).
    pub fn write_runs<T: Serialize>(&self, rows: &[T]) -> anyhow::Result<()> {
        self.write_csv("runs.csv", rows)
    }

    /// Writes CSV file `name` whole (through a temporary file), one row per
    /// element.
    pub fn write_csv<T: Serialize>(&self, name: &str, rows: &[T]) -> anyhow::Result<()> {
        let path = self.path.join(name);
        let tmp = path.with_extension("csv.tmp");
        {
            let mut w = csv::Writer::from_path(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            for r in rows {
                w.serialize(r)?;
            }
            w.flush()
                .with_context(|| format!("writing {}", tmp.display()))?;
        }
        rename(&tmp, &path)
    }

    /// Reads `runs.csv` back.
    pub fn read_runs<T: DeserializeOwned>(&self) -> anyhow::Result<Vec<T>> {
        read_csv(&self.path.join("runs.csv"))
    }

    /// Writes `summary.md`.
    pub fn write_summary(&self, text: &str) -> anyhow::Result<()> {
        self.write_file("summary.md", text.as_bytes())
    }

    /// Writes `meta.json`.
    pub fn write_meta(&self, meta: &impl Serialize) -> anyhow::Result<()> {
        self.write_file("meta.json", serde_json::to_string_pretty(meta)?.as_bytes())
    }

    /// Reads `meta.json` back.
    pub fn read_meta(&self) -> anyhow::Result<serde_json::Value> {
        let path = self.path.join("meta.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
    }

    fn write_file(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self.path.join(name);
        let tmp = self.path.join(format!("{name}.tmp"));
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        rename(&tmp, &path)
    }
}

/// A run judged by a verdict (`master chaos`, `master soak`), written as
/// one folder: runs.csv, a second CSV, summary.md ending with the verdict
/// and the files, meta.json with the provenance.
pub struct VerdictRun<'a, E> {
    /// The folder's name under the results directory (and meta.json's
    /// `experiment`).
    pub name: &'a str,
    /// Taken when the run started (`Provenance::capture`).
    pub provenance: Provenance,
    /// The second CSV (`events.csv`, `samples.csv`) and its rows.
    pub extra: (&'a str, &'a [E]),
    /// summary.md up to the verdict.
    pub body: String,
    /// What fell short (empty: the run passed), and the verdict when
    /// nothing did.
    pub problems: Vec<String>,
    pub passed: String,
    /// The summary's list of files.
    pub files: &'a str,
    /// meta.json's fields besides `experiment` and `provenance` (a JSON
    /// object).
    pub meta: serde_json::Value,
}

impl<E: Serialize> VerdictRun<'_, E> {
    /// Writes `<results>/<name>/<stamp>/` with `rows` as runs.csv, each
    /// file whole; returns the folder.
    pub fn write<R: Serialize>(self, results: &Path, rows: &[R]) -> anyhow::Result<PathBuf> {
        let dir = ResultsDir::create(results, self.name, self.provenance.started_unix_ms)?;
        dir.write_runs(rows)?;
        dir.write_csv(self.extra.0, self.extra.1)?;
        let verdict = if self.problems.is_empty() {
            self.passed
        } else {
            self.problems.join("; ")
        };
        dir.write_summary(&format!(
            "{}\nVerdict: {verdict}\n\nFiles: {}\n",
            self.body, self.files
        ))?;
        let mut provenance = self.provenance;
        provenance.finish();
        let serde_json::Value::Object(mut meta) = self.meta else {
            anyhow::bail!("{}: meta.json's fields must be a JSON object", self.name);
        };
        meta.insert("experiment".into(), self.name.into());
        meta.insert("provenance".into(), serde_json::to_value(&provenance)?);
        dir.write_meta(&meta)?;
        Ok(dir.path().to_path_buf())
    }
}

fn rename(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("renaming {} to {}", from.display(), to.display()))
}

/// What every meta.json records besides its spec: where the figures came
/// from and on what.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Provenance {
    pub git_commit: String,
    /// Tracked files differed from the commit: figures to regenerate at a
    /// clean commit before they are published.
    pub git_dirty: bool,
    pub machine: serde_json::Value,
    pub command: Vec<String>,
    pub started_unix_ms: u64,
    pub finished_unix_ms: Option<u64>,
}

impl Provenance {
    /// The commit, the tree's state, the machine and the command, now.
    pub fn capture(started_unix_ms: u64) -> Provenance {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| {
                c.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_owned())
            })
            .unwrap_or_default();
        let mem_kb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .unwrap_or(0);
        Provenance {
            git_commit: cmd_out("git", &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into()),
            git_dirty: git_dirty(None),
            machine: serde_json::json!({
                "hostname": cmd_out("hostname", &[]).unwrap_or_default(),
                "kernel": cmd_out("uname", &["-sr"]).unwrap_or_default(),
                "cpu": cpu,
                "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                "memory_gib": mem_kb as f64 / 1024.0 / 1024.0,
            }),
            command: std::env::args().collect(),
            started_unix_ms,
            finished_unix_ms: None,
        }
    }

    pub fn finish(&mut self) {
        self.finished_unix_ms = Some(common::unix_ms());
    }
}

/// Whether the checkout (at `dir`, else the current directory) differs
/// from its commit in a tracked file outside `results/`: the code, specs
/// and docs that ran. Results folders are the tools' own output (a
/// calibration writes into the folder it reads, and the next one must not
/// count that as a change to the code).
fn git_dirty(dir: Option<&Path>) -> bool {
    let mut args = vec![];
    if let Some(d) = dir.and_then(|d| d.to_str()) {
        args.extend(["-C", d]);
    }
    args.extend([
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":/",
        ":(top,exclude)results",
    ]);
    cmd_out("git", &args).is_some_and(|s| !s.is_empty())
}

fn cmd_out(program: &str, args: &[&str]) -> Option<String> {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
}

/// `YYYYMMDD-HHMMSS` in UTC.
pub fn utc_stamp(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Every row of a CSV file with a header (or of `<path>.gz` when only that
/// is there); an error names the file.
pub fn read_csv<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    // Committed results keep their large CSVs gzipped (`tasks.csv.gz`).
    let gz = {
        let mut p = path.as_os_str().to_owned();
        p.push(".gz");
        std::path::PathBuf::from(p)
    };
    let (file, input): (&Path, Box<dyn std::io::Read>) = if !path.exists() && gz.exists() {
        let f = std::fs::File::open(&gz).with_context(|| format!("reading {}", gz.display()))?;
        (&gz, Box::new(flate2::read::GzDecoder::new(f)))
    } else {
        let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        (path, Box::new(f))
    };
    csv::Reader::from_reader(input)
        .deserialize()
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_run_is_one_whole_folder() {
        let dir = tempfile::tempdir().unwrap();
        let run = |problems: Vec<String>| {
            let meta = serde_json::json!({ "seed": 7 });
            VerdictRun {
                name: "chaos",
                provenance: Provenance::capture(1_700_000_000_000),
                extra: ("events.csv", &[(1, "kill")][..]),
                body: "# body\n".into(),
                problems,
                passed: "all good".into(),
                files: "`runs.csv`.",
                meta,
            }
            .write(dir.path(), &[(0.5, "job-1")])
            .unwrap()
        };
        let out = run(vec![]);
        assert!(out.starts_with(dir.path().join("chaos")));
        let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
        assert_eq!(
            read("summary.md"),
            "# body\n\nVerdict: all good\n\nFiles: `runs.csv`.\n"
        );
        assert_eq!(read("events.csv"), "1,kill\n");
        assert_eq!(read("runs.csv"), "0.5,job-1\n");
        let meta: serde_json::Value = serde_json::from_str(&read("meta.json")).unwrap();
        assert_eq!(
            (meta["experiment"].as_str(), meta["seed"].as_u64()),
            (Some("chaos"), Some(7))
        );
        assert!(meta["provenance"].is_object(), "{meta}");
        // The provenance is the one taken at the start, finished at the end.
        assert_eq!(meta["provenance"]["started_unix_ms"], 1_700_000_000_000u64);
        assert!(meta["provenance"]["finished_unix_ms"].as_u64() > Some(1_700_000_000_000));
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        // A shortfall is the verdict, each named.
        let bad = run(vec!["1 of 2 jobs".into(), "w2 exited".into()]);
        let text = std::fs::read_to_string(bad.join("summary.md")).unwrap();
        assert!(text.contains("Verdict: 1 of 2 jobs; w2 exited\n"), "{text}");
    }

    #[test]
    fn a_tree_is_dirty_for_its_code_not_for_its_results() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(dir.path().join("results/x")).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("results/x/summary.md"), "a").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "a").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "c"]);
        assert!(!git_dirty(Some(dir.path())));
        std::fs::write(dir.path().join("results/x/summary.md"), "b").unwrap();
        std::fs::write(dir.path().join("new.rs"), "untracked").unwrap();
        assert!(!git_dirty(Some(dir.path())), "results and untracked files");
        std::fs::write(dir.path().join("src/lib.rs"), "b").unwrap();
        assert!(
            git_dirty(Some(&dir.path().join("src"))),
            "from a subdirectory too"
        );
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        // 2026-11-22 13:50:19 UTC
        assert_eq!(utc_stamp(1_795_355_419_000), "20261122-135019");
        assert_eq!(utc_stamp(951_782_400_000), "20000229-000000");
    }

    #[test]
    fn files_are_written_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let rd = ResultsDir::create(dir.path(), "exp", 0).unwrap();
        assert!(rd.path().ends_with("exp/19700101-000000"));
        // A second run of the same second gets a folder of its own.
        let again = ResultsDir::create(dir.path(), "exp", 0).unwrap();
        assert!(
            again.path().ends_with("exp/19700101-000000-2"),
            "{:?}",
            again.path()
        );
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Row {
            a: u32,
            b: String,
        }
        let rows = vec![
            Row {
                a: 1,
                b: "x".into(),
            },
            Row {
                a: 2,
                b: "y".into(),
            },
        ];
        rd.write_runs(&rows).unwrap();
        assert_eq!(rd.read_runs::<Row>().unwrap(), rows);
        rd.write_meta(&serde_json::json!({"k": 1})).unwrap();
        assert_eq!(rd.read_meta().unwrap()["k"], 1);
        rd.write_summary("# s\n").unwrap();
        let names: Vec<String> = std::fs::read_dir(rd.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
        assert_eq!(names.len(), 3, "{names:?}");
    }
}
