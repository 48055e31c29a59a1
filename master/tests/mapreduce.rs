//! Map and reduce end to end on loopback: wordcount and sort jobs on real
//! workers (contended emulated NICs, replicated output), their output checked
//! against tools nobody here wrote: `tr -s '[:space:]' '\n' | LC_ALL=C sort |
//! uniq -c` for wordcount and `LC_ALL=C sort` for sort, on the same input.

use common::wire::{JobReport, JobState, JobSubmit, TaskKind};
use master::ops::loader::{self, Generator, LoadSpec, Source};
use std::io::Write;
use std::process::{Command, Stdio};
use workloads::Workload;

const TOKEN: &str = "mr-token";

mod support;

async fn load(c: &support::LocalCluster, name: &str, kind: Generator, blocks: u32, size: u64) {
    loader::load(
        &c.client,
        &LoadSpec {
            name: name.into(),
            source: Source::Generate { kind, blocks },
            block_size: size,
            replication: 2,
            seed: 21,
        },
    )
    .await
    .unwrap();
}

/// A file's contents, block by block in index order, read from the workers.
async fn read_file(c: &support::LocalCluster, name: &str) -> Vec<u8> {
    let f = c.client.file(name).await.unwrap();
    assert!(f.complete, "{f:?}");
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    for (i, reps) in f.replicas.iter().enumerate() {
        let w = c
            .workers
            .iter()
            .find(|w| w.ctx.name == reps[0])
            .expect("replica on a known worker");
        let id = common::BlockId::for_file(name, i as u32).unwrap();
        let body = http
            .get(format!("{}/blocks/{id}", w.url()))
            .header("authorization", format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        out.extend_from_slice(&body);
    }
    out
}

fn pipe(cmd: &str, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{cmd} failed");
    out.stdout
}

async fn run(
    c: &support::LocalCluster,
    workload: Workload,
    input: &str,
    reduces: u32,
    output: &str,
) -> JobReport {
    let mut job = JobSubmit::new(workload, input);
    job.reduces = Some(reduces);
    job.output = Some(output.into());
    let id = c.client.submit(&job).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!((r.reduces, r.reduces_done), (reduces, reduces));
    assert_eq!(r.output.as_deref(), Some(output));
    let reduce_ok = r
        .attempts
        .iter()
        .filter(|a| a.ok && a.kind == TaskKind::Reduce)
        .count();
    assert_eq!(reduce_ok, reduces as usize);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wordcount_and_sort_match_coreutils() {
    let dir = tempfile::tempdir().unwrap();
    let nic = Some(common::config::mbps_to_bytes(400.0));
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[nic, nic, nic], 50).await;

    // wordcount, 3 reduces, against tr | sort | uniq -c.
    load(&c, "text", Generator::Text, 6, 150_000).await;
    let r = run(&c, Workload::Wordcount, "text", 3, "counts").await;
    assert!(r.shuffle_bytes > 0);
    let input = read_file(&c, "text").await;
    let ours = read_file(&c, "counts").await;
    let mut got: Vec<(Vec<u8>, u64)> = ours
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let tab = l.iter().position(|&b| b == b'\t').expect("word\\tcount");
            let n = std::str::from_utf8(&l[tab + 1..]).unwrap().parse().unwrap();
            (l[..tab].to_vec(), n)
        })
        .collect();
    got.sort();
    let reference = pipe("tr -s '[:space:]' '\\n' | sort | uniq -c", &input);
    let want: Vec<(Vec<u8>, u64)> = reference
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let s = l.iter().position(|&b| b != b' ')?;
            let sp = s + l[s..].iter().position(|&b| b == b' ')?;
            let n = std::str::from_utf8(&l[s..sp]).unwrap().parse().unwrap();
            let w = l[sp + 1..].to_vec();
            // tr leaves an empty "word" when the input starts with space.
            (!w.is_empty()).then_some((w, n))
        })
        .collect();
    assert!(want.len() > 100, "the text has a real vocabulary");
    assert_eq!(got, want);

    // The output is a replicated file, usable as another job's input.
    let f = c.client.file("counts").await.unwrap();
    assert_eq!(f.blocks, 3);
    assert!(f.replicas.iter().all(|r| r.len() == 2), "{f:?}");
    let id = c
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "counts"))
        .await
        .unwrap();
    assert_eq!(
        c.client.wait_job(id).await.unwrap().state,
        JobState::Succeeded
    );

    // sort, 4 reduces, against LC_ALL=C sort, byte for byte.
    load(&c, "recs", Generator::Records, 5, 60_000).await;
    let r = run(&c, Workload::Sort, "recs", 4, "sorted").await;
    assert_eq!(r.shuffle_bytes, 5 * 60_000);
    let input = read_file(&c, "recs").await;
    let ours = read_file(&c, "sorted").await;
    let reference = pipe("sort", &input);
    assert_eq!(ours.len(), reference.len());
    assert!(ours == reference, "sort output differs from LC_ALL=C sort");
    // Every partition got some of the records (the splits came from samples).
    let f = c.client.file("sorted").await.unwrap();
    assert_eq!(f.blocks, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reduce_requests_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 50).await;
    // 10,050-byte blocks: not whole 100-byte records.
    load(&c, "t", Generator::Text, 2, 10_050).await;
    let try_submit = |w: Workload, reduces: Option<u32>, output: Option<&str>| {
        let mut j = JobSubmit::new(w, "t");
        j.reduces = reduces;
        j.output = output.map(str::to_owned);
        let client = c.client.clone();
        async move { client.submit(&j).await.map_err(|e| e.to_string()) }
    };
    let e = try_submit(Workload::InputSink, Some(2), None)
        .await
        .unwrap_err();
    assert!(e.contains("map-only") && e.contains("400"), "{e}");
    let e = try_submit(Workload::Wordcount, Some(0), None)
        .await
        .unwrap_err();
    assert!(e.contains("reduces"), "{e}");
    let e = try_submit(Workload::Wordcount, None, Some("t"))
        .await
        .unwrap_err();
    assert!(e.contains("already exists"), "{e}");
    let e = try_submit(Workload::Wordcount, None, Some("../x"))
        .await
        .unwrap_err();
    assert!(e.contains("output file name"), "{e}");
    // Sort input that is not whole 100-byte records fails with a clear error.
    let id = try_submit(Workload::Sort, None, None).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Failed);
    assert!(
        r.error
            .as_deref()
            .unwrap_or("")
            .contains("100-byte records"),
        "{r:?}"
    );
}
