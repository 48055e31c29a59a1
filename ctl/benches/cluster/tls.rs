//! Section 10: what TLS costs (`[tls] enabled = true`), each figure beside
//! plain HTTP measured in the same run: the remote fetch into a worker
//! whose emulated NIC is capped at C, and a 1 GiB sort on 2 workers x 1
//! slot (unlimited NICs, where the encryption's CPU shows most), plain and
//! TLS clusters run in turn. The netns variant over HTTPS (10c) is
//! `nic_netns_bench(true)` beside section 1b.

use super::{
    load, support, up_bench_netns, upload_nic_blocks, worker_fetch_rounds, NIC_MBPS, TOKEN,
};
use common::bench::record;
use common::wire::JobSubmit;
use ctl::ops::loader::{Generator, Source};
use std::time::Instant;
use workloads::Workload;

/// Remote fetch over HTTPS into a worker capped at C, 1, 2 and 4 readers.
pub async fn tls_nic_bench() {
    let cap = common::config::mbps_to_bytes(NIC_MBPS);
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_tls_cluster(dir.path(), TOKEN, 4, &[Some(cap), None], 100).await;
    let ws = &cl.workers;
    upload_nic_blocks(&ws[0].exec.peers.http, &ws[1].url()).await;
    println!(
        "10a. remote fetch over HTTPS (TLS 1.3) into a worker with an emulated NIC C = {NIC_MBPS} Mbit/s"
    );
    assert!(ws[1].url().starts_with("https://"));
    worker_fetch_rounds(
        &cl,
        "tls.nic",
        "remote fetch over TLS, emulated NIC C = 400 Mbit/s",
    )
    .await;
}

/// One 1 GiB sort (16 x 64 MiB records, `reduces` reduces) on `cl`: seconds.
async fn sort_once(cl: &support::LocalCluster, run: usize, reduces: u32) -> f64 {
    sort_with(&cl.client, run, reduces).await
}

/// [`sort_once`] through `client`.
async fn sort_with(client: &ctl::ops::client::MasterClient, run: usize, reduces: u32) -> f64 {
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(reduces);
    job.output = Some(format!("recs-sorted-{run}"));
    let t = Instant::now();
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
    client
        .delete_file(&format!("recs-sorted-{run}"))
        .await
        .unwrap();
    secs
}

/// `runs` 1 GiB sorts on a cluster of `make cluster`'s shape in network
/// namespaces (links shaped by tc at 400 Mbit/s), TLS on or off, driven
/// from the master's namespace: the median's seconds; None where the
/// namespaces cannot be made (not root).
async fn netns_sorts(tls: bool, runs: usize) -> Option<f64> {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!(
        "[cluster]\ntoken = \"{TOKEN}\"\nreplication = 2\ndata_dir = \"data\"\n\
         [master]\nlisten = \"127.0.0.1:7410\"\n[workers]\nslots = 4\nnic_mbps = 400\n\
         [tls]\nenabled = {tls}\n"
    );
    for i in 1..=4 {
        text += &format!(
            "[[worker]]\nname = \"w{i}\"\nlisten = \"127.0.0.1:{}\"\n",
            7410 + i
        );
    }
    let path = dir.path().join("cluster.toml");
    std::fs::write(&path, text).unwrap();
    let prefix = "mrtbsort-";
    let cfg = up_bench_netns(&path, prefix, "10e.").await?;
    let derived =
        common::config::ClusterConfig::load(ctl::ops::local::netns_config_path(&cfg)).unwrap();
    let ns = ctl::ops::netns::Layout::plan(prefix, &cfg)
        .unwrap()
        .master
        .ns
        .clone();
    let secs = tokio::task::spawn_blocking(move || {
        ctl::ops::netns::in_ns(&ns, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let client = ctl::ops::client::MasterClient::for_cluster(
                    &derived,
                    common::credentials::Role::Client,
                )
                .unwrap();
                let spec = ctl::ops::loader::LoadSpec {
                    name: "recs".into(),
                    source: Source::Generate {
                        kind: Generator::Records,
                        blocks: 16,
                    },
                    block_size: 64 << 20,
                    replication: 2,
                    seed: 9,
                    placement: Default::default(),
                };
                ctl::ops::loader::load(&client, &spec).await.unwrap();
                let mut v = Vec::new();
                for run in 0..runs {
                    v.push(sort_with(&client, run, 4).await);
                }
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
        })
    })
    .await
    .unwrap();
    let _ = ctl::ops::local::down(&ctl::ops::local::run_dir(&cfg));
    let _ = ctl::ops::netns::teardown(prefix);
    secs.ok()
}

/// Section 10e: the 1 GiB sort of `make cluster`'s shape in network
/// namespaces, plain HTTP then TLS, `runs` each (root only).
pub async fn tls_netns_sort_bench(runs: usize) {
    if !nix::unistd::Uid::effective().is_root() {
        println!("10e. netns sort skipped: needs root");
        return;
    }
    let (Some(mp), Some(mt)) = (
        netns_sorts(false, runs).await,
        netns_sorts(true, runs).await,
    ) else {
        return;
    };
    println!(
        "10e. 1 GiB sort in network namespaces (4 workers x 4 slots, tc at 400 Mbit/s, 4 reduces), {runs} runs each: plain HTTP median {mp:.2} s, TLS {mt:.2} s, TLS / plain {:.3} (target <= 1.10)",
        mt / mp
    );
    let what = format!("1 GiB sort in network namespaces (4 workers x 4 slots, tc at 400 Mbit/s, 4 reduces), median of {runs}");
    record(
        "tls.sort_netns.plain_s",
        &format!("{what}: plain HTTP"),
        mp,
        "s",
        "",
    );
    record("tls.sort_netns.tls_s", &format!("{what}: TLS"), mt, "s", "");
    record(
        "tls.sort_netns.ratio",
        &format!("{what}: TLS / plain HTTP"),
        mt / mp,
        "x",
        "<= 1.1",
    );
}

/// The shape a sort runs on: its workers' slots and NIC, and reduces.
pub struct Shape {
    pub id: &'static str,
    pub what: &'static str,
    pub slots: u32,
    pub workers: usize,
    pub nic_mbps: Option<f64>,
    pub reduces: u32,
}

/// 2 workers x 1 slot, unlimited NICs: CPU-bound, where encryption shows.
pub const TIGHT: Shape = Shape {
    id: "tls.sort",
    what: "1 GiB sort on 2 workers x 1 slot, unlimited NICs, 2 reduces",
    slots: 1,
    workers: 2,
    nic_mbps: None,
    reduces: 2,
};

/// `make cluster`'s shape (section 6).
pub const DEFAULT: Shape = Shape {
    id: "tls.sort_default",
    what: "1 GiB sort on `make cluster`'s shape (4 workers x 4 slots, NICs 400 Mbit/s, 4 reduces)",
    slots: 4,
    workers: 4,
    nic_mbps: Some(400.0),
    reduces: 4,
};

/// A 1 GiB sort on a plain and a TLS cluster of `shape`, `runs` runs each
/// in turn: the medians and TLS / plain.
pub async fn tls_sort_bench(part: &str, shape: &Shape, runs: usize) {
    let s_per_byte = aes_gcm_s_per_byte();
    let dir = tempfile::tempdir().unwrap();
    let (pd, td) = (dir.path().join("plain"), dir.path().join("tls"));
    let nic = vec![shape.nic_mbps.map(common::config::mbps_to_bytes); shape.workers];
    let plain = support::start_cluster(&pd, TOKEN, shape.slots, &nic, 100).await;
    let tls = support::start_tls_cluster(&td, TOKEN, shape.slots, &nic, 100).await;
    for cl in [&plain, &tls] {
        let recs = Source::Generate {
            kind: Generator::Records,
            blocks: 16,
        };
        load(cl, "recs", recs, 64 << 20, 2).await;
    }
    // `TLS_SORT_SIDE=plain|tls` sorts on one cluster only (to profile
    // each side apart); figures are then not recorded.
    let side = std::env::var("TLS_SORT_SIDE").ok();
    if let Some(side) = side.as_deref() {
        let cl = if side == "tls" { &tls } else { &plain };
        for run in 0..runs {
            let s = sort_once(cl, run, shape.reduces).await;
            println!("{part} {side} sort {run}: {s:.2} s");
        }
        return;
    }
    let (mut p, mut t) = (Vec::new(), Vec::new());
    let (mut cpu_p, mut cpu_t, mut sent) = (Vec::new(), Vec::new(), 0u64);
    for run in 0..runs {
        let c = cpu_s();
        p.push(sort_once(&plain, run, shape.reduces).await);
        cpu_p.push(cpu_s() - c);
        let (c, b) = (cpu_s(), sent_bytes(&tls));
        t.push(sort_once(&tls, run, shape.reduces).await);
        cpu_t.push(cpu_s() - c);
        sent += sent_bytes(&tls) - b;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("{part} runs: plain {p:.2?} tls {t:.2?}");
    let (mp, mt) = (median(&mut p), median(&mut t));
    let cpu = (median(&mut cpu_p), median(&mut cpu_t));
    cipher_figures(part, shape, runs, sent, s_per_byte, cpu);
    println!(
        "{part} {}, {runs} runs each in turn: plain HTTP median {mp:.2} s, TLS {mt:.2} s, TLS / plain {:.3} (target <= 1.10)",
        shape.what,
        mt / mp
    );
    let what = format!("{}, median of {runs}", shape.what);
    let id = shape.id;
    record(
        &format!("{id}.plain_s"),
        &format!("{what}: plain HTTP"),
        mp,
        "s",
        "",
    );
    record(&format!("{id}.tls_s"), &format!("{what}: TLS"), mt, "s", "");
    record(
        &format!("{id}.ratio"),
        &format!("{what}: TLS / plain HTTP"),
        mt / mp,
        "x",
        "<= 1.1",
    );
}

/// CPU seconds this process has used so far, user and system, every thread:
/// the in-process clusters' master and workers and the client together.
fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is handed.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF always exists.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Bytes the cluster's workers have sent to one another so far (their
/// NICs' transmit counters: blocks served, shuffle fetches, output copies).
fn sent_bytes(cl: &support::LocalCluster) -> u64 {
    cl.workers.iter().map(|w| w.nic.tx.bytes()).sum()
}

/// One core's seconds to seal and then open one byte with AES-128-GCM
/// (the suite the clusters negotiate) in TLS 1.3's largest records, 16
/// KiB, through aws-lc-rs, the provider their rustls runs on: the fastest of
/// 5 passes over 64 MiB (taken before the clusters start; the least
/// disturbed by anything else on the machine).
fn aes_gcm_s_per_byte() -> f64 {
    use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, NONCE_LEN};
    const RECORD: usize = 16 << 10;
    const RECORDS: u64 = 4 << 10;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &[7; 16]).unwrap());
    let nonce = |i: u64| {
        let mut n = [0u8; NONCE_LEN];
        n[4..].copy_from_slice(&i.to_be_bytes());
        Nonce::assume_unique_for_key(n)
    };
    let mut rec = Vec::with_capacity(RECORD + AES_128_GCM.tag_len());
    rec.resize(RECORD, 0x5a);
    let mut best = f64::INFINITY;
    for pass in 0..5u64 {
        let t = Instant::now();
        for i in 0..RECORDS {
            let n = pass * RECORDS + i;
            let tag = key
                .seal_in_place_separate_tag(nonce(n), Aad::empty(), &mut rec)
                .unwrap();
            rec.extend_from_slice(tag.as_ref());
            let plain = key.open_in_place(nonce(n), Aad::empty(), &mut rec).unwrap();
            assert_eq!(plain.len(), RECORD);
            rec.truncate(RECORD);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best / (RECORDS as f64 * RECORD as f64)
}

/// What the cipher alone costs a TLS sort, set beside what TLS added:
/// the bytes the TLS cluster's workers sent per sort, sealed once by the
/// sender and opened once by the receiver at this machine's AES-GCM speed,
/// as a share of the plain sort's CPU seconds (median per sort), and TLS's
/// CPU seconds over plain HTTP's. Where the sort keeps every core busy,
/// the cipher's share is about the least TLS can add to its time.
fn cipher_figures(
    part: &str,
    shape: &Shape,
    runs: usize,
    sent: u64,
    s_per_byte: f64,
    (cpu_p, cpu_t): (f64, f64),
) {
    let per_sort = sent as f64 / runs as f64;
    let cipher = per_sort * s_per_byte;
    println!(
        "{part} CPU per sort: plain {cpu_p:.2} s, TLS {cpu_t:.2} s; {:.0} MB sent per TLS sort; \
         AES-128-GCM seal + open {:.2} GB/s on one core: {cipher:.2} s of CPU, {:.3} of the plain sort's",
        per_sort / 1e6,
        1e-9 / s_per_byte,
        cipher / cpu_p
    );
    let (id, what) = (shape.id, shape.what);
    record(
        &format!("{id}.cpu_ratio"),
        &format!("{what}, median of {runs}: CPU seconds, TLS / plain HTTP"),
        cpu_t / cpu_p,
        "x",
        "",
    );
    record(
        &format!("{id}.cipher_share"),
        &format!(
            "{what}: AES-128-GCM sealing and opening the {:.0} MB sent per sort, over the plain sort's CPU seconds",
            per_sort / 1e6
        ),
        cipher / cpu_p,
        "x",
        "",
    );
}
