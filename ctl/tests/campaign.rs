//! The randomized fault campaign on a real cluster, short: in network
//! namespaces as root (partitions, one-way cuts and full disks included),
//! else on local processes. Every check of the history must hold.

use ctl::campaign::{self, CampaignOptions, Deploy};
use std::path::Path;

mod skip;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_campaign_heals_and_every_check_of_its_history_holds() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    let root = ctl::ops::netns::require_root().is_ok();
    if !root {
        skip::skipped(
            "the campaign's partitions and full disks need root (network namespaces, tmpfs); \
             it runs on local processes without them",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = CampaignOptions {
        results: dir.path().join("results"),
        work: dir.path().join("work"),
        bin: bin.to_owned(),
        seed: 3,
        minutes: 1.25,
        mean_gap_s: 4.0,
        arrival_s: 2.0,
        sample_s: 10.0,
        // The master retains 24 jobs' reports: a minute of quiet jobs (one
        // every 2 s) makes the ones it holds at rest after the jobs like the
        // warm-up's it held before, not jobs that ran through faults with
        // many more attempts each (a heap larger by a megabyte).
        quiet_minutes: 1.0,
        // HTTPS on every link: the campaign's client, injector and sampler
        // speak it too (the 30-minute campaigns run both).
        tls: true,
        input_blocks: 8,
        block_bytes: 1_000_000,
        thread_caches: false,
        deploy: if root {
            Deploy::Netns {
                prefix: format!("mct{}-", std::process::id() % 10_000),
                // A subnet no other cluster on this machine holds (a
                // second run of the suite, or one killed mid-way).
                third: ctl::ops::netns::free_third(7).unwrap(),
            }
        } else {
            Deploy::Processes
        },
    };
    let (out, figures) = campaign::run(&opts).await.unwrap();
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let problems = figures.problems();
    assert!(problems.is_empty(), "{summary}");
    assert!(
        figures
            .verdicts
            .iter()
            .any(|v| v.check == "deleted files stay deleted"),
        "the check ran: {summary}"
    );
    assert!(figures.faults_injected >= 10, "{summary}");
    assert!(figures.jobs_succeeded >= 10, "{summary}");
    // The quiet minutes ran jobs after the last heal.
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let col = runs
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "submit_s")
        .unwrap();
    let quiet_jobs = runs
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(col).unwrap().parse::<f64>().unwrap() > figures.healed_s)
        .count();
    assert!(
        quiet_jobs >= 3,
        "{quiet_jobs} jobs after the last heal: {summary}"
    );
    assert!(figures.tls && summary.contains("HTTPS"), "{summary}");
    let kinds = |names: &[&str]| names.iter().all(|k| figures.faults_by_kind[*k] > 0);
    assert!(kinds(&["master-restart", "stop-worker"]), "{summary}");
    if root {
        let cuts = [
            "partition-master",
            "one-way-to-master",
            "one-way-from-master",
        ];
        assert!(
            cuts.iter().any(|k| figures.faults_by_kind[*k] > 0) && kinds(&["disk-full"]),
            "namespaces give partitions and full disks: {summary}"
        );
    }
    for f in [
        "schedule.csv",
        "history.csv",
        "runs.csv",
        "verdicts.csv",
        "meta.json",
    ] {
        assert!(out.join(f).exists(), "{f} missing in {}", out.display());
    }
    // Nothing of the cluster is left: no namespace, no mount.
    if root {
        let left = ctl::ops::netns::list(&format!("mct{}-", std::process::id() % 10_000)).unwrap();
        assert!(left.is_empty(), "namespaces left: {left:?}");
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        assert!(
            !mounts.contains(&dir.path().display().to_string()),
            "a disk of the campaign is still mounted"
        );
    }
}
