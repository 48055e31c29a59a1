//! The command line's conventions, run as a user runs them: each exit code
//! (ctl/src/cli/exit.rs) from the `master` binary against a real cluster on
//! loopback, and the shell completions.

use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use std::process::Command;

mod support;

const TOKEN: &str = "cli-token";
const BIN: &str = env!("CARGO_BIN_EXE_master");

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

/// 0 for a job that succeeded, 1 for one that failed (`submit --wait`,
/// `report --wait`), 2 for a request the master refuses as bad (no such
/// job), each through the binary against a real cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_that_succeed_fail_or_do_not_exist_exit_0_1_and_2() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 50).await;
    let spec = LoadSpec {
        name: "t".into(),
        source: Source::Generate {
            kind: Generator::Text,
            blocks: 2,
        },
        // Not whole 100-byte records: a sort of it fails.
        block_size: 10_050,
        replication: 2,
        seed: 5,
        placement: Default::default(),
    };
    loader::load(&c.client, &spec).await.unwrap();
    let cli = |args: &[&str]| support::run_cli(BIN, &c, dir.path(), TOKEN, args);
    let ok = cli(&[
        "submit",
        "--workload",
        "wordcount",
        "--input",
        "t",
        "--wait",
    ]);
    assert_eq!(
        code(&ok),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let failed = cli(&["submit", "--workload", "sort", "--input", "t", "--wait"]);
    let err = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(code(&failed), Some(1), "{err}");
    assert!(
        err.contains("did not succeed") && err.contains("job-2"),
        "{err}"
    );
    let again = cli(&["report", "job-2", "--wait"]);
    assert_eq!(code(&again), Some(1));
    assert_eq!(
        code(&cli(&["report", "job-2"])),
        Some(0),
        "a report shown, not waited for"
    );
    let missing = cli(&["report", "job-99"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(code(&missing), Some(2), "{err}");
    assert!(err.contains("404"), "{err}");
    assert_eq!(code(&cli(&["report", "not-a-job"])), Some(2));
}

/// 2 for a bad command line, a configuration that cannot be read and a
/// bad option value; 3 for a master nobody answers for.
#[test]
fn bad_input_exits_2_and_an_unreachable_master_3() {
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    assert_eq!(code(&run(&["--bogus"])), Some(2));
    let out = run(&["--config", "/nonexistent/cluster.toml", "jobs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), Some(2), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "said once: {err}");
    assert_eq!(code(&run(&["sim", "run", "--tick", "0"])), Some(2));
    // A cluster.toml whose master port nobody listens on.
    let dir = tempfile::tempdir().unwrap();
    let cfg = ctl::ops::local::write_loopback_config(dir.path(), TOKEN, 1, "replication = 1", "")
        .unwrap();
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&cfg.path)
        .args(["--retry-s", "0", "jobs"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), Some(3), "{err}");
    assert!(err.contains("master unreachable"), "{err}");
}

/// `master completions SHELL` prints a script that completes the
/// subcommands; a shell it does not know is bad input; `--help` lists the
/// exit codes and a subcommand's help its examples.
#[test]
fn completions_and_help_say_what_a_user_needs() {
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell]);
        assert_eq!(code(&out), Some(0));
        let script = String::from_utf8_lossy(&out.stdout);
        for sub in ["submit", "experiment", "completions"] {
            assert!(script.contains(sub), "{shell} completes {sub}");
        }
    }
    assert_eq!(code(&run(&["completions", "tcsh"])), Some(2));
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    assert!(help.contains("Exit codes: 0 done; 1 a job"), "{help}");
    let help = String::from_utf8_lossy(&run(&["submit", "--help"]).stdout).into_owned();
    assert!(
        help.contains("Examples:\n  master submit --workload wordcount"),
        "{help}"
    );
}
