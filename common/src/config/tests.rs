use super::*;

const GOOD: &str = r#"
[cluster]
token = "t"
replication = 2
[master]
listen = "127.0.0.1:7070"
[workers]
slots = 3
nic_mbps = 400
[[worker]]
name = "w1"
listen = "127.0.0.1:7101"
[[worker]]
name = "w2"
listen = "127.0.0.1:7102"
slots = 1
nic_mbps = 100
"#;

fn parse(t: &str) -> Result<ClusterConfig, String> {
    ClusterConfig::parse(t, Path::new("conf/cluster.toml")).map_err(|e| e.to_string())
}

#[test]
fn racks_default_to_hadoops_and_bad_ones_are_named() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.racks(), [DEFAULT_RACK]);
    let t = GOOD.replace("name = \"w2\"", "name = \"w2\"\nrack = \"/dc1/r2\"");
    let c = parse(&t).unwrap();
    assert_eq!(c.racks(), [DEFAULT_RACK, "/dc1/r2"]);
    assert_eq!(c.worker_settings()[1].rack, "/dc1/r2");
    for bad in ["\"r2\"", "\"/\"", "\"/a b\""] {
        let t = GOOD.replace("name = \"w2\"", &format!("name = \"w2\"\nrack = {bad}"));
        let e = parse(&t).unwrap_err();
        assert!(e.contains("worker[1].rack"), "{bad}: {e}");
    }
    let t = GOOD.replace("replication = 2", "replication = 2\nrack_link_mbps = 0");
    assert!(parse(&t).unwrap_err().contains("cluster.rack_link_mbps"));
}

/// A property test of the loader: thousands of seeded mutations of a
/// good file (bytes flipped, dropped, duplicated, numbers replaced by
/// extremes) are each taken or refused with an error naming the file;
/// none panics.
#[test]
fn mutated_files_are_refused_never_a_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let extremes = [
        "0",
        "-1",
        "4294967296",
        "1e308",
        "nan",
        "inf",
        "\"\"",
        "[]",
        "{}",
    ];
    let (mut taken, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut t: Vec<u8> = GOOD.as_bytes().to_vec();
        for _ in 0..1 + next(3) {
            let at = next(t.len());
            match next(4) {
                0 => t[at] = b" =[]{}\"\n0a.,"[next(12)],
                1 => {
                    t.remove(at);
                }
                2 => {
                    let b = t[at];
                    t.insert(at, b);
                }
                _ => {
                    // Replace the number that starts here, if any.
                    let text = String::from_utf8_lossy(&t).into_owned();
                    if let Some(p) = text[at.min(text.len())..].find(|c: char| c.is_ascii_digit()) {
                        let start = at + p;
                        let end = start
                            + text[start..]
                                .find(|c: char| !c.is_ascii_digit())
                                .unwrap_or(text.len() - start);
                        let mut s = text.clone();
                        s.replace_range(start..end, extremes[next(extremes.len())]);
                        t = s.into_bytes();
                    }
                }
            }
        }
        let text = String::from_utf8_lossy(&t);
        match parse(&text) {
            Ok(_) => taken += 1,
            Err(e) => {
                assert!(e.starts_with("conf/cluster.toml"), "{e}");
                refused += 1;
            }
        }
    }
    assert!(taken > 0 && refused > 0, "{taken} taken, {refused} refused");
}

#[test]
fn counts_and_rates_are_bounded() {
    let e = parse(&GOOD.replace("slots = 1", "slots = 100000")).unwrap_err();
    assert!(
        e.contains("worker[1].slots") && e.contains("1..=1024"),
        "{e}"
    );
    let e = parse(&GOOD.replace("slots = 3", "slots = 0")).unwrap_err();
    assert!(e.contains("workers.slots"), "{e}");
    for bad in ["1e-9", "1e12", "nan"] {
        let t = GOOD.replace("nic_mbps = 400", &format!("nic_mbps = {bad}"));
        if let Err(e) = parse(&t) {
            assert!(
                e.contains("workers.nic_mbps") && e.contains("[0.01, 1000000]"),
                "{e}"
            );
        } else {
            panic!("nic_mbps = {bad} accepted");
        }
    }
    let t = GOOD.replace("slots = 3", "slots = 3\nslot_rate_mbs = 0.000001");
    let e = parse(&t).unwrap_err();
    assert!(e.contains("workers.slot_rate_mbs"), "{e}");
    let t = GOOD.replace(
        "listen = \"127.0.0.1:7070\"",
        "listen = \"127.0.0.1:7070\"\ndecisions_max = 0",
    );
    let e = parse(&t).unwrap_err();
    assert!(
        e.contains("master.decisions_max") && e.contains("at least 1"),
        "{e}"
    );
    assert_eq!(parse(GOOD).unwrap().master.decisions_max, 1_000_000);
}

#[test]
fn good_config_applies_defaults() {
    let c = parse(GOOD).unwrap();
    let ws = c.worker_settings();
    assert_eq!(ws[0].slots, 3);
    assert_eq!(ws[0].nic_bytes_per_sec, Some(50e6));
    assert_eq!(ws[1].slots, 1);
    assert_eq!(ws[1].nic_bytes_per_sec, Some(12.5e6));
    assert_eq!(c.cluster.heartbeat_ms, 100);
    assert_eq!(c.scheduler, SchedulerConfig::hadoop());
    assert_eq!(c.worker_data_dir("w1"), PathBuf::from("conf/run/data/w1"));
}

#[test]
fn public_types_are_read_and_checked() {
    let ty = "\n[[public_type]]\nname = \"ec2-2\"\nslots = 2\nnic_mbps = 10\nstart_s = 5\nprice_per_s = 27e-6\n";
    let c = parse(&format!("{GOOD}{ty}")).unwrap();
    let t = c.public_type("ec2-2").unwrap();
    assert_eq!((t.slots, t.speed, t.nic_bytes_per_sec()), (2, 1.0, 1.25e6));
    let s = c.instance_settings(7, "ec2-2-1", 2, t);
    assert_eq!(s.role, Role::Compute);
    assert_eq!(s.listen.port(), 7303, "[public] listen's port 7301 + 2");
    for (bad, key) in [
        ("speed = 2\n", "public_type[0].speed"),
        ("storage_per_gb = -1\n", "public_type[0].storage_per_gb"),
    ] {
        let e = parse(&format!("{GOOD}{ty}{bad}")).unwrap_err();
        assert!(e.contains(key), "{e}");
    }
    let e = parse(&format!(
        "{GOOD}{ty}{}",
        ty.replace("slots = 2", "slots = 4")
    ))
    .unwrap_err();
    assert!(
        e.contains("public_type[1].name") && e.contains("two types"),
        "{e}"
    );
    let e = parse(&format!("{GOOD}{ty}pirce = 1\n")).unwrap_err();
    assert!(e.contains("pirce"), "{e}");
    let e = parse(&format!("{GOOD}\n[public]\nidle_stop_s = 3\n")).unwrap_err();
    assert!(e.contains("public_type"), "{e}");
}

#[test]
fn roles_are_validated() {
    let all_reduce = GOOD.replace("[[worker]]\n", "[[worker]]\nrole = \"reduce\"\n");
    let e = parse(&all_reduce).unwrap_err();
    assert!(e.contains("worker.role") && e.contains("hold data"), "{e}");
    let all_compute = GOOD.replace("[[worker]]\n", "[[worker]]\nrole = \"compute\"\n");
    let e = parse(&all_compute).unwrap_err();
    assert!(e.contains("worker.role") && e.contains("hold data"), "{e}");
    // Replication counts only the workers that hold data.
    let one_map = GOOD.replacen("[[worker]]\n", "[[worker]]\nrole = \"reduce\"\n", 1);
    let e = parse(&one_map).unwrap_err();
    assert!(
        e.contains("cluster.replication") && e.contains("hold data"),
        "{e}"
    );
    let e = parse(&GOOD.replace("[[worker]]\n", "[[worker]]\nrole = \"mapper\"\n")).unwrap_err();
    assert!(e.contains("mapper"), "{e}");
}

#[test]
fn speculation_is_off_by_default_and_its_keys_are_checked() {
    assert!(!parse(GOOD).unwrap().speculation.enabled);
    let on = format!("{GOOD}\n[speculation]\nenabled = true\nslow_task_threshold = 2\n");
    let c = parse(&on).unwrap();
    assert!(c.speculation.enabled);
    assert_eq!(c.speculation.slow_task_threshold, 2.0);
    let e = parse(&on.replace("slow_task_threshold = 2", "slow_task_threshold = -1")).unwrap_err();
    assert!(
        e.contains("speculation.slow_task_threshold") && e.contains(">= 0"),
        "{e}"
    );
    let e = parse(&on.replace("slow_task_threshold = 2", "cap = 1")).unwrap_err();
    assert!(e.contains("cap"), "{e}");
}

#[test]
fn output_replication_is_checked_and_defaults_to_replication() {
    let c =
        parse(&GOOD.replace("replication = 2", "replication = 2\noutput_replication = 1")).unwrap();
    assert_eq!(c.cluster.output_replication, Some(1));
    assert_eq!(parse(GOOD).unwrap().cluster.output_replication, None);
    let e = parse(&GOOD.replace("replication = 2", "replication = 2\noutput_replication = 0"))
        .unwrap_err();
    assert!(e.contains("cluster.output_replication"), "{e}");
}

#[test]
fn errors_name_file_and_key() {
    let e = parse(&GOOD.replace("slots = 1", "slotz = 1")).unwrap_err();
    assert!(
        e.contains("conf/cluster.toml") && e.contains("slotz"),
        "{e}"
    );
    let e = parse(&GOOD.replace("slots = 1", "slots = \"one\"")).unwrap_err();
    assert!(
        e.contains("conf/cluster.toml") && e.contains("slots"),
        "{e}"
    );
    let e = parse(&GOOD.replace("slots = 1", "slots = 0")).unwrap_err();
    assert!(
        e.contains("worker[1].slots") && e.contains("1..=1024 (got 0)"),
        "{e}"
    );
    let e = parse(&GOOD.replace("replication = 2", "replication = 3")).unwrap_err();
    assert!(
        e.contains("cluster.replication") && e.contains("1..=2"),
        "{e}"
    );
    let e = parse(&GOOD.replace("token = \"t\"\n", "")).unwrap_err();
    assert!(e.contains("token"), "{e}");
    let e = parse(&GOOD.replace("nic_mbps = 100", "nic_mbps = -1")).unwrap_err();
    assert!(e.contains("worker[1].nic_mbps"), "{e}");
    let e = parse(&GOOD.replace("\"w2\"", "\"w1\"")).unwrap_err();
    assert!(e.contains("worker[1].name"), "{e}");
    let e = parse(&GOOD.replace("\"w2\"", "\"../w2\"")).unwrap_err();
    assert!(e.contains("worker[1].name"), "{e}");
    let e = parse(&format!("{GOOD}\n[scheduler]\npolicy = \"nope\"\n")).unwrap_err();
    assert!(e.contains("nope"), "{e}");
    let e = parse(&format!(
        "{GOOD}\n[scheduler]\npolicy = \"hadoop\"\nx = 1\n"
    ))
    .unwrap_err();
    assert!(e.contains('x'), "{e}");
    let e = ClusterConfig::load("/nonexistent/cluster.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/cluster.toml"), "{e}");
}

#[test]
fn scheduler_from_cli_string() {
    assert_eq!(
        "hadoop".parse::<SchedulerConfig>(),
        Ok(SchedulerConfig::hadoop())
    );
    assert_eq!(
        "policy = \"hadoop\"".parse::<SchedulerConfig>(),
        Ok(SchedulerConfig::hadoop())
    );
    let e = "fifo".parse::<SchedulerConfig>().unwrap_err();
    assert!(e.contains("fifo"), "{e}");
}

#[test]
fn tls_is_off_by_default_and_on_by_one_setting_with_https_urls() {
    let c = parse(GOOD).unwrap();
    assert!(!c.tls.enabled);
    assert_eq!(c.master_url(), "http://127.0.0.1:7070");
    let on = format!("{GOOD}\n[tls]\nenabled = true\n");
    let c = parse(&on).unwrap();
    assert_eq!(c.master_url(), "https://127.0.0.1:7070");
    assert_eq!(c.resolve(&c.tls.dir), Path::new("conf/run/tls"));
    // Written back (the derived deployments' configs) it stays on.
    let again = parse(&toml::to_string(&c).unwrap()).unwrap();
    assert!(again.tls.enabled);
    // A worker named like another node's files, and unknown keys.
    let e = parse(&on.replace("name = \"w2\"", "name = \"master\"")).unwrap_err();
    assert!(
        e.contains("worker[1].name") && e.contains("master.pem"),
        "{e}"
    );
    let e = parse(&format!("{GOOD}\n[tls]\nenable = true\n")).unwrap_err();
    assert!(e.contains("enable"), "{e}");
}

#[test]
fn job_output_is_written_back_unless_synced_and_a_bad_value_is_named() {
    assert!(!parse(GOOD).unwrap().workers.sync_output);
    let t = GOOD.replace("slots = 3", "slots = 3\nsync_output = true");
    assert!(parse(&t).unwrap().workers.sync_output);
    let t = GOOD.replace("slots = 3", "slots = 3\nsync_output = \"yes\"");
    let e = parse(&t).unwrap_err();
    assert!(e.contains("sync_output") && e.contains("bool"), "{e}");
}
