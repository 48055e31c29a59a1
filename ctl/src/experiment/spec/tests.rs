use super::*;

const SPEC: &str = r#"
name = "t"
schedulers = ["hadoop", { label = "D3", scheduler = "delay3" }]
[cluster]
workers = 3
slots = 2
replication = 2
[data]
files = 2
blocks = 3
block_size = "1MiB"
[jobs]
count = 4
arrival_s = [0, 2]
[[points]]
label = "small"
[[points]]
label = "big"
block_size = "2MiB"
jobs = 8
"#;

fn parse(t: &str) -> Result<Spec, String> {
    Spec::parse(t, Path::new("experiments/t.toml")).map_err(|e| e.to_string())
}

#[test]
fn racks_and_rack_links_resolve_per_point_and_bad_ones_are_named() {
    let t = SPEC
        .replace(
            "replication = 2\n",
            "replication = 2\nracks = 2\nrack_link_mbps = 10\n",
        )
        .replace("jobs = 8\n", "jobs = 8\nracks = 3\nrack_link_mbps = 0\n");
    let p = parse(&t).unwrap().points().unwrap();
    assert_eq!((p[0].racks, p[0].rack_link_mbps), (2, Some(10.0)));
    assert_eq!((p[1].racks, p[1].rack_link_mbps), (3, None));
    let r: Vec<Option<String>> = (0..3).map(|i| p[0].rack(i, 3)).collect();
    assert_eq!(
        r,
        [Some("/r1".into()), Some("/r1".into()), Some("/r2".into())]
    );
    assert_eq!(p[1].rack(2, 3).as_deref(), Some("/r3"));
    let one = parse(SPEC).unwrap().points().unwrap();
    assert_eq!(one[0].rack(0, 3), None);
    for (from, to, key) in [
        ("jobs = 8\n", "jobs = 8\nracks = 4\n", "points[1].racks"),
        (
            "jobs = 8\n",
            "jobs = 8\nracks = 1\nrack_link_mbps = 5\n",
            "points[1].rack_link_mbps",
        ),
        (
            "replication = 2\n",
            "replication = 2\nracks = 2\nrack_link_mbps = -1\n",
            "cluster.rack_link_mbps",
        ),
        (
            "replication = 2\n",
            "replication = 2\nrack_link_mbps = 10\n",
            "cluster.rack_link_mbps",
        ),
    ] {
        let e = parse(&SPEC.replace(from, to)).unwrap_err();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn deadlines_by_job_cycle_and_bad_ones_are_named() {
    let with = |keys: &str| SPEC.replace("count = 4\n", &format!("count = 4\n{keys}\n"));
    let s = parse(&with("deadlines_s = [20, 10]")).unwrap();
    let d: Vec<Option<f64>> = (0..4).map(|i| s.jobs.deadline_of(i)).collect();
    assert_eq!(d, [Some(20.0), Some(10.0), Some(20.0), Some(10.0)]);
    let one = parse(&with("deadline_s = 7")).unwrap();
    assert_eq!(one.jobs.deadline_of(3), Some(7.0));
    assert_eq!(parse(SPEC).unwrap().jobs.deadline_of(0), None);
    for (keys, key) in [
        ("deadline_s = 7\ndeadlines_s = [5]", "jobs.deadlines_s"),
        ("deadlines_s = [5, -1]", "jobs.deadlines_s[1]"),
    ] {
        let e = parse(&with(keys)).unwrap_err();
        assert!(e.contains(key), "{keys}: {e}");
    }
}

#[test]
fn points_and_labels_resolve() {
    let s = parse(SPEC).unwrap();
    let p = s.points().unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].block_bytes, p[0].jobs), (1 << 20, 4));
    assert_eq!((p[1].block_bytes, p[1].jobs), (2 << 20, 8));
    let n: Vec<String> = s
        .schedulers()
        .unwrap()
        .into_iter()
        .map(|n| n.label)
        .collect();
    assert_eq!(n, ["hadoop", "D3"]);
}

#[test]
fn reduce_placement_and_disk_per_scheduler_and_point() {
    let t = SPEC
        .replace(
            r#"{ label = "D3", scheduler = "delay3" }"#,
            r#"{ label = "EAS-spread", scheduler = "eas", reduces = "spread" }, "eas""#,
        )
        .replace("replication = 2\n", "replication = 2\ndisk_mbs = 4\n")
        .replace("jobs = 8\n", "jobs = 8\ndisk_mbs = 0\n");
    let s = parse(&t).unwrap();
    let n = s.schedulers().unwrap();
    assert_eq!(n[1].reduces, ReducePlacement::Spread);
    assert_eq!(n[1].policy_label(), "eas(reduces=spread)");
    assert_eq!(n[2].reduces, ReducePlacement::Policy);
    assert_eq!(n[2].policy_label(), "eas");
    let p = s.points().unwrap();
    assert_eq!((p[0].disk_mbs, p[1].disk_mbs), (Some(4.0), None));
    for (bad, key) in [
        (r#"reduces = "spread""#, r#"reduces = "nearest""#),
        (r#"reduces = "spread""#, r#"reduce = "spread""#),
    ] {
        let e = parse(&t.replace(bad, key)).unwrap_err();
        assert!(e.contains("schedulers"), "{e}");
    }
    let e = parse(&t.replace("disk_mbs = 0", "disk_mbs = -1")).unwrap_err();
    assert!(e.contains("points[1].disk_mbs"), "{e}");
}

#[test]
fn speculation_is_off_unless_a_spec_turns_it_on_and_bad_keys_are_named() {
    assert!(!parse(SPEC).unwrap().cluster.speculation.enabled);
    let on = SPEC.replace(
        "[data]",
        "[cluster.speculation]\nenabled = true\nmin_runtime_ms = 500\n[data]",
    );
    let s = parse(&on).unwrap();
    assert!(s.cluster.speculation.enabled);
    assert_eq!(s.cluster.speculation.min_runtime_ms, 500);
    let e = parse(&on.replace("min_runtime_ms = 500", "cap_total = 2")).unwrap_err();
    assert!(
        e.contains("cluster.speculation.cap_total") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = parse(&on.replace("min_runtime_ms = 500", "slow = 1")).unwrap_err();
    assert!(e.contains("slow"), "{e}");
}

#[test]
fn errors_name_file_and_key() {
    let e = parse(&SPEC.replace("replication = 2", "replication = 4")).unwrap_err();
    assert!(
        e.contains("experiments/t.toml") && e.contains("cluster.replication"),
        "{e}"
    );
    let e = parse(&SPEC.replace("\"delay3\"", "\"delay7\"")).unwrap_err();
    assert!(e.contains("schedulers[1]") && e.contains("delay7"), "{e}");
    let e = parse(&SPEC.replace("arrival_s = [0, 2]", "arrival_s = [3, 2]")).unwrap_err();
    assert!(e.contains("jobs.arrival_s"), "{e}");
    let e = parse(&SPEC.replace("block_size = \"2MiB\"", "block_size = \"2XB\"")).unwrap_err();
    assert!(e.contains("points[1].block_size"), "{e}");
    let e = parse(&SPEC.replace("arrival_s = [0, 2]", "task_time_s = [3, 2]")).unwrap_err();
    assert!(e.contains("jobs.task_time_s"), "{e}");
    let e = parse(&SPEC.replace(
        "block_size = \"1MiB\"",
        "block_size = \"1MiB\"\nplacement = \"round\"",
    ))
    .unwrap_err();
    assert!(e.contains("placement"), "{e}");
    let s = parse(&SPEC.replace("arrival_s = [0, 2]", "task_time_s = [2, 12]")).unwrap();
    assert_eq!(s.jobs.task_time_s, Some([2.0, 12.0]));
    let e = parse(&SPEC.replace("[jobs]", "[jobs]\nbogus = 1")).unwrap_err();
    assert!(e.contains("bogus"), "{e}");
    let e = parse(&SPEC.replace("label = \"big\"", "label = \"small\"")).unwrap_err();
    assert!(e.contains("points[1].label"), "{e}");
    // Rates outside the cluster config's range fail here, not at every
    // run's start.
    let e = parse(&SPEC.replace("jobs = 8", "jobs = 8\nslot_rate_mbs = 0.004")).unwrap_err();
    assert!(
        e.contains("points[1].slot_rate_mbs") && e.contains("[0.01, 1000000]"),
        "{e}"
    );
    let e = parse(&SPEC.replace("slots = 2", "slots = 2\nnic_mbps = 2e6")).unwrap_err();
    assert!(e.contains("points[0].nic_mbps"), "{e}");
    // The worker timeout: at least two heartbeats, at most an hour.
    let s = parse(&SPEC.replace("slots = 2", "slots = 2\nworker_timeout_ms = 60000")).unwrap();
    assert_eq!(s.cluster.worker_timeout_ms, Some(60_000));
    for bad in ["150", "3600001"] {
        let e = parse(&SPEC.replace(
            "slots = 2",
            &format!("slots = 2\nworker_timeout_ms = {bad}"),
        ))
        .unwrap_err();
        assert!(
            e.contains("cluster.worker_timeout_ms") && e.contains(&format!("got {bad}")),
            "{e}"
        );
    }
}

#[test]
fn layouts_give_roles_and_refuse_what_does_not_fit() {
    use common::config::Role;
    let t = SPEC
        .replace("workers = 3", "workers = 5\nstorage_workers = 2")
        .replace(
            "label = \"small\"",
            "label = \"small\"\nlayout = \"co-located\"",
        )
        .replace(
            "jobs = 8\n",
            "jobs = 8\nlayout = \"separate\"\nstorage_nic_mbps = 5\n",
        );
    let s = parse(&t).unwrap();
    let p = s.points().unwrap();
    let roles = |p: &Point| (0..5).map(|i| s.role(p, i).unwrap()).collect::<Vec<_>>();
    use Role::*;
    assert_eq!(roles(&p[0]), [Both, Both, Both, Spare, Spare]);
    assert_eq!(
        roles(&p[1]),
        [ComputeAll, ComputeAll, ComputeAll, Storage, Storage]
    );
    assert_eq!(s.nic_mbps(&p[1], 4), Some(5.0));
    assert_eq!((s.nic_mbps(&p[1], 2), s.nic_mbps(&p[0], 4)), (None, None));
    assert_eq!(s.machines().0, ["w1", "w2", "w3"]);
    for (from, to, key) in [
        (
            "storage_workers = 2",
            "storage_workers = 5",
            "cluster.storage_workers",
        ),
        (
            "storage_workers = 2",
            "storage_workers = 2\nreduce_workers = 1",
            "cluster.storage_workers",
        ),
        (
            "storage_workers = 2",
            "storage_workers = 0",
            "points[0].layout",
        ),
        // Replication 2 needs two storage workers.
        (
            "storage_workers = 2",
            "storage_workers = 1",
            "cluster.replication",
        ),
        (
            "storage_nic_mbps = 5",
            "storage_nic_mbps = -1",
            "points[1].storage_nic_mbps",
        ),
        ("layout = \"separate\"", "layout = \"apart\"", "layout"),
    ] {
        let bad = t.replace(from, to);
        assert_ne!(bad, t, "{from}");
        let e = match parse(&bad) {
            Err(e) => e,
            Ok(s) => s.points().unwrap_err().to_string(),
        };
        assert!(e.contains(key), "{key}: {e}");
    }
    let co = t.replace("layout = \"separate\"", "layout = \"co-located\"");
    let e = parse(&co)
        .map(|s| s.points().unwrap_err().to_string())
        .unwrap_or_else(|e| e);
    assert!(
        e.contains("storage_nic_mbps") && e.contains("separate"),
        "{e}"
    );
}

#[test]
fn a_point_overrides_the_background_duration() {
    let with_bg = SPEC.replace(
        "[data]",
        "[background]\nduration_s = [1, 2]\ninitial = 0.5\n[data]",
    );
    let t = with_bg.replace("jobs = 8", "jobs = 8\nbackground_s = [5, 30]");
    let p = parse(&t).unwrap().points().unwrap();
    let b0 = p[0].background.as_ref().unwrap();
    let b1 = p[1].background.as_ref().unwrap();
    assert_eq!((b0.duration_s, b0.initial), ([1.0, 2.0], 0.5));
    assert_eq!((b1.duration_s, b1.initial), ([5.0, 30.0], 0.5));
    let e = parse(&with_bg.replace("jobs = 8", "jobs = 8\nbackground_s = [30, 5]")).unwrap_err();
    assert!(e.contains("points[1].background_s"), "{e}");
    let e = parse(&SPEC.replace("jobs = 8", "jobs = 8\nbackground_s = [5, 30]")).unwrap_err();
    assert!(
        e.contains("points[1].background_s") && e.contains("[background]"),
        "{e}"
    );
}

const MIX: &str = r#"
name = "m"
schedulers = ["eas", "fifo-s"]
[cluster]
workers = 5
reduce_workers = 2
slots = 2
replication = 2
[data]
block_size = "64KiB"
[jobs]
count = 3
mix = [
    { workload = "wordcount", count = 2, maps = 1, reduces = 1 },
    { workload = "sort", count = 1, maps = 3, reduces = 2 },
]
[[points]]
label = "r1"
replication = 1
[[points]]
label = "r3"
replication = 3
"#;

#[test]
fn a_mix_resolves_and_replication_is_per_point() {
    let s = parse(MIX).unwrap();
    let p = s.points().unwrap();
    assert_eq!(p.iter().map(|p| p.replication).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(s.jobs.mix[1].workload, Workload::Sort);
}

#[test]
fn mix_errors_name_the_key() {
    let cases = [
        ("count = 3", "count = 4", "jobs.count"),
        ("[data]", "[data]\nfiles = 2", "data.files"),
        (
            "count = 3",
            "count = 3\nworkload = \"sort\"",
            "jobs.workload",
        ),
        ("count = 3", "count = 3\nreduces = 2", "jobs.reduces"),
        (
            "label = \"r1\"",
            "label = \"r1\"\njobs = 4",
            "points[0].jobs",
        ),
        (
            "replication = 3",
            "replication = 4",
            "points[1].replication",
        ),
        (
            "reduce_workers = 2",
            "reduce_workers = 5",
            "cluster.reduce_workers",
        ),
        ("count = 1, maps = 3", "count = 1, maps = 0", "jobs.mix[1]"),
        ("reduces = 1 }", "reduces = 0 }", "jobs.mix[0].reduces"),
        // Counts whose sum overflows a u32 are refused, not a panic.
        (
            "count = 2, maps = 1",
            "count = 4294967295, maps = 1",
            "jobs.count",
        ),
    ];
    for (from, to, key) in cases {
        let t = MIX.replacen(from, to, 1);
        assert_ne!(t, MIX, "{from}");
        let e = parse(&t).unwrap_err();
        assert!(e.contains(key), "{key}: {e}");
    }
    // Without a mix, the data shape is required.
    let e = parse(&SPEC.replace("blocks = 3\n", "")).unwrap_err();
    assert!(e.contains("data.blocks"), "{e}");
}

#[test]
fn a_grid_runs_every_placement_under_every_order() {
    let grid = |schedulers: &str, orders: &str| {
        let t = SPEC.replace(
            "schedulers = [\"hadoop\", { label = \"D3\", scheduler = \"delay3\" }]",
            &format!("schedulers = {schedulers}\n[grid]\norders = {orders}"),
        );
        parse(&t).and_then(|s| s.schedulers().map_err(|e| e.to_string()))
    };
    let s = grid(
            r#"[{ label = "D3", scheduler = "delay3" }, "dyndl-on", { label = "EAS", scheduler = "eas", grid = false }]"#,
            r#"["fifo", "fair"]"#,
        )
        .unwrap();
    let labels: Vec<&str> = s.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "D3/fifo",
            "D3/fair",
            "dyndl-on(W=3s,g=0s*(1+1n),one-remote)/fifo",
            "dyndl-on(W=3s,g=0s*(1+1n),one-remote)/fair",
            "EAS"
        ]
    );
    assert_eq!(s[0].config.label(), "delay3(fifo)");
    assert_eq!(s[1].config.label(), "delay3");
    assert_eq!(
        s[3].config.label(),
        "dyndl-on(W=3s,g=0s*(1+1n),one-remote,fair)"
    );
    assert_eq!(
        s[1].grid,
        Some(GridCell {
            placement: "D3".into(),
            order: JobOrder::Fair
        })
    );
    assert_eq!(
        (s[4].grid.as_ref(), s[4].config.label().as_str()),
        (None, "eas")
    );
    // A policy without a job order, an order twice, no order, an unknown one.
    let e = grid(r#"["delay3", "lsap"]"#, r#"["fifo"]"#).unwrap_err();
    assert!(
        e.contains("schedulers[1]") && e.contains("lsap: takes no job order"),
        "{e}"
    );
    let e = grid(r#"["delay3"]"#, r#"["fifo", "fifo"]"#).unwrap_err();
    assert!(e.contains("grid.orders") && e.contains("fifo twice"), "{e}");
    let e = grid(r#"["delay3"]"#, "[]").unwrap_err();
    assert!(e.contains("grid.orders"), "{e}");
    let e = grid(r#"["delay3"]"#, r#"["lifo"]"#).unwrap_err();
    assert!(e.contains("lifo"), "{e}");
}

/// A `[trace]` spec: the sample's jobs and files make the point, the
/// keys the trace gives are refused beside it, and a missing file or
/// an empty hour is named.
#[test]
fn a_trace_spec_takes_its_jobs_and_files_from_the_trace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let at = root.join("experiments/t.toml");
    let text = |extra: &str, trace: &str| {
        format!(
            r#"
name = "t"
schedulers = ["hadoop"]
[cluster]
workers = 3
slots = 2
replication = 2
[data]
block_size = "1MiB"
{extra}
[jobs]
count = 20
[trace]
file = "../traces/swim/FB-2010_samples_24_times_1hr_withInputPaths_0.tsv"
{trace}
"#
        )
    };
    let s = Spec::parse(&text("", "hour = 10\nbytes_scale = 1e-5"), &at).unwrap();
    let p = s.points().unwrap();
    assert_eq!(p[0].jobs, 20);
    let plan = s.trace_plan(p[0].block_bytes).unwrap().unwrap();
    assert_eq!(plan.jobs.len(), 20);
    assert_eq!(p[0].files as usize, plan.files.len());
    // Some of hour 10's first 20 jobs share an input path.
    assert!(plan.files.len() < 20, "{plan:?}");
    let e = Spec::parse(&text("files = 2", "hour = 10\nbytes_scale = 1e-5"), &at)
        .unwrap_err()
        .to_string();
    assert!(e.contains("data.files") && e.contains("[trace]"), "{e}");
    let e = Spec::parse(
        &text("", "hour = 10\nbytes_scale = 18446744073709551615e-5"),
        &at,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("trace.bytes_scale") && e.contains("1 TiB"),
        "{e}"
    );
    let e = Spec::parse(&text("", "hour = 40\nbytes_scale = 1e-5"), &at)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("trace.hour") && e.contains("hours 0..=24"),
        "{e}"
    );
    let e = Spec::parse(
        &text("", "hour = 1\nbytes_scale = 1e-5").replace("FB-2010", "FB-2099"),
        &at,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("trace.file") && e.contains("FB-2099"), "{e}");
}
