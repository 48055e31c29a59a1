//! Map and reduce end to end on loopback: wordcount and sort jobs on real
//! workers (contended emulated NICs, replicated output), their output checked
//! against tools nobody here wrote: `tr -s '[:space:]' '\n' | LC_ALL=C sort |
//! uniq -c` for wordcount and `LC_ALL=C sort` for sort and sort-lines, on
//! the same input; a synthetic job's bytes against its ratios.

use common::wire::{JobReport, JobState, JobSubmit, TaskKind};
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::{files, verify};
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
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
}

/// A file's contents, block by block in index order, read from the workers.
async fn read_file(c: &support::LocalCluster, name: &str) -> Vec<u8> {
    files::read_file(&c.client, name).await.unwrap()
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
    // w0 keeps no map output in memory (all of it goes to its disk), the
    // others keep all of theirs: reduces read both kinds, locally and over
    // HTTP. Sort reduces hold 20 KB of fetched runs (w1: none), so each
    // merges what it fetched to spill files and merges those at the end.
    let c = support::start_cluster_with(dir.path(), TOKEN, 2, &[nic, nic, nic], 50, |o| {
        if o.name == "w0" {
            o.shuffle_memory_bytes = 0;
        }
        o.reduce_memory_bytes = if o.name == "w1" { 0 } else { 20_000 };
    })
    .await;

    // wordcount, 3 reduces, against tr | sort | uniq -c.
    load(&c, "text", Generator::Text, 6, 150_000).await;
    let r = run(&c, Workload::Wordcount, "text", 3, "counts").await;
    assert!(r.shuffle_bytes > 0);
    let input = read_file(&c, "text").await;
    let ours = read_file(&c, "counts").await;
    let got = verify::wordcount_pairs(&ours).unwrap();
    let want = verify::wordcount_reference(&input).unwrap();
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
    let reference = verify::sort_reference(&input).unwrap();
    assert_eq!(ours.len(), reference.len());
    assert!(ours == reference, "sort output differs from LC_ALL=C sort");
    // Every partition got some of the records (the splits came from samples).
    let f = c.client.file("sorted").await.unwrap();
    assert_eq!(f.blocks, 4);
    // Every reduce took about 75 KB, more than its budget: all of it that
    // was fetched (not read in place from map output kept here) went
    // through spill files, which are gone now.
    let spilled: u64 = c
        .workers
        .iter()
        .map(|w| w.exec.shuffle.reduce_spilled())
        .sum();
    assert!(spilled >= 2 * 60_000, "{spilled} bytes spilled");
    sort_lines_matches_coreutils(&c, dir.path()).await;
    synthetic_moves_the_bytes_its_ratios_say(&c).await;
    output_replication_is_per_job(&c).await;
    for i in 0..3 {
        let spill_dir = dir.path().join(format!("w{i}")).join("spill");
        assert_eq!(std::fs::read_dir(&spill_dir).unwrap().count(), 0);
    }
}

/// A sort at `output_replication` 1 (TeraSort's default) on a cluster at
/// replication 2: each output block is written once, on its reducer, and
/// kept at one replica after the grace (re-replication does not raise it
/// to the cluster's factor); the output is still `LC_ALL=C sort`'s. A
/// factor above the workers that hold data, 0, or one on a job without
/// output is refused, naming the field.
async fn output_replication_is_per_job(c: &support::LocalCluster) {
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(3);
    job.output = Some("sorted-once".into());
    job.output_replication = Some(1);
    let r = c
        .client
        .wait_job(c.client.submit(&job).await.unwrap())
        .await
        .unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!(
        r.output_replication,
        Some(1),
        "the report says the job's factor"
    );
    let text = ctl::ops::report::job_report(&r);
    assert!(
        text.contains("output file sorted-once (1 replica)"),
        "{text}"
    );
    let reference = verify::sort_reference(&read_file(c, "recs").await).unwrap();
    assert!(read_file(c, "sorted-once").await == reference);
    let held = |i: u32| {
        let block = common::BlockId::for_file("sorted-once", i).unwrap();
        c.workers
            .iter()
            .filter(|w| w.store.get(&block).is_ok())
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
    };
    // Past the output's grace, with heartbeats (and plans of replication)
    // every 50 ms.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let f = c.client.file("sorted-once").await.unwrap();
    assert_eq!(f.blocks, 3);
    for (i, r) in f.replicas.iter().enumerate() {
        assert_eq!(r.len(), 1, "block {i}: {f:?}");
        assert_eq!(
            held(i as u32),
            *r,
            "block {i}: the stores hold what the master says"
        );
    }
    for (workload, factor, want) in [
        (Workload::Sort, 4, "`output_replication` must be 1..=3"),
        (Workload::Sort, 0, "`output_replication` must be at least 1"),
        (Workload::InputSink, 1, "drop `output_replication`"),
    ] {
        let mut job = JobSubmit::new(workload, "recs");
        job.output_replication = Some(factor);
        let e = c.client.submit(&job).await.unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

/// sort-lines of real prose (this repository's documents: lines of a few
/// bytes to kilobytes, empty lines, tabs), a line longer than a block and
/// no final newline, loaded from a local file: byte for byte `LC_ALL=C
/// sort`'s output.
async fn sort_lines_matches_coreutils(c: &support::LocalCluster, dir: &std::path::Path) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = Vec::new();
    for f in [
        "README.md",
        "docs/guide.md",
        "docs/api.md",
        "docs/experiments/dyndl.md",
    ] {
        text.extend(std::fs::read(root.join(f)).unwrap());
    }
    text.extend(b"a line longer than a block: ");
    text.extend(b"xy\t".repeat(20_000));
    text.extend(b"\n\n\nthe last line, without a newline");
    let path = dir.join("prose.txt");
    std::fs::write(&path, &text).unwrap();
    let spec = LoadSpec {
        name: "prose".into(),
        source: Source::File(path),
        block_size: 40_000,
        replication: 2,
        seed: 21,
        placement: Default::default(),
    };
    let f = loader::load(&c.client, &spec).await.unwrap();
    assert!(f.blocks >= 5, "{f:?}");
    run(c, Workload::SortLines, "prose", 3, "prose.sorted").await;
    let ours = read_file(c, "prose.sorted").await;
    let reference = verify::sort_reference(&text).unwrap();
    assert_eq!(ours.len(), reference.len());
    assert!(
        ours == reference,
        "sort-lines output differs from LC_ALL=C sort"
    );
}

/// A synthetic job (a trace replay's): every map writes round(0.4 x its
/// input) bytes of map output, all of which its reduces fetch, locally and
/// over HTTP, from memory and from w0's disk, and every reduce writes
/// round(0.25 x what it fetched) bytes of 100-byte lines (one cut line at
/// most per reduce) into the replicated output file.
async fn synthetic_moves_the_bytes_its_ratios_say(c: &support::LocalCluster) {
    let mut job = JobSubmit::new(Workload::Synthetic, "text");
    job.reduces = Some(3);
    job.output = Some("synthetic.out".into());
    job.ratios = Some(workloads::Ratios {
        shuffle: 0.4,
        output: 0.25,
    });
    let id = c.client.submit(&job).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    let ok = |k: TaskKind| -> Vec<u64> {
        r.attempts
            .iter()
            .filter(|a| a.ok && a.kind == k)
            .map(|a| a.input_bytes)
            .collect()
    };
    let (maps, reduces) = (ok(TaskKind::Map), ok(TaskKind::Reduce));
    assert_eq!((maps.len(), reduces.len()), (6, 3), "{r:?}");
    let scaled = |ratio: f64, b: &u64| (ratio * *b as f64).round() as u64;
    let shuffle: u64 = maps.iter().map(|b| scaled(0.4, b)).sum();
    assert!(shuffle > 300_000, "{maps:?}");
    assert_eq!(r.shuffle_bytes, shuffle);
    assert_eq!(reduces.iter().sum::<u64>(), shuffle);
    let out = read_file(c, "synthetic.out").await;
    assert_eq!(
        out.len() as u64,
        reduces.iter().map(|b| scaled(0.25, b)).sum::<u64>()
    );
    let lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
    assert!(lines.iter().all(|l| l.ends_with(b"\n")));
    assert!(lines.iter().filter(|l| l.len() != 100).count() <= 3);
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
    // Ratios are a synthetic job's, and only numbers that make sense.
    let ratios = |shuffle: f64| workloads::Ratios {
        shuffle,
        output: 1.0,
    };
    for (w, r, want) in [
        (Workload::Wordcount, ratios(1.0), "synthetic workload only"),
        (Workload::Synthetic, ratios(-0.5), "ratios.shuffle"),
    ] {
        let mut j = JobSubmit::new(w, "t");
        j.ratios = Some(r);
        let e = c.client.submit(&j).await.unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("400"), "{e}");
    }
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

/// Runs the `master` binary against cluster `c` (its token from a
/// cluster.toml in `dir`); its exit status, stdout and stderr.
fn cli(c: &support::LocalCluster, dir: &std::path::Path, args: &[&str]) -> (bool, Vec<u8>, String) {
    let out = support::run_cli(env!("CARGO_BIN_EXE_master"), c, dir, TOKEN, args);
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `master cat`, `master get -o` and `master rm` against a real cluster:
/// the wordcount output read back through the CLI equals the coreutils
/// pipeline's; a read with every replica of a block damaged fails and
/// leaves no file; a file in use is not deleted; a deleted file is gone
/// from the catalog and from every worker's disk, and a new file of the
/// same name is not mixed with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_read_back_and_deleted_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[None, None, None], 50).await;
    load(&c, "text", Generator::Text, 4, 100_000).await;
    run(&c, Workload::Wordcount, "text", 2, "counts").await;
    let input = read_file(&c, "text").await;

    // cat: what `master cat counts | sort -k2,2nr -k1,1 | head` shows is
    // the coreutils pipeline's top ten.
    let (ok, out, err) = cli(&c, dir.path(), &["cat", "counts"]);
    assert!(ok, "{err}");
    assert!(
        !err.contains('\u{1b}'),
        "no colour codes off a terminal: {err}"
    );
    let top = |text: &[u8]| verify::pipe("sort -k2,2nr -k1,1 | head -10", text).unwrap();
    let reference = verify::pipe(
        "tr -s '[:space:]' '\\n' | grep -v '^$' | sort | uniq -c | awk '{print $2 \"\\t\" $1}'",
        &input,
    )
    .unwrap();
    assert_eq!(top(&out), top(&reference));
    assert_eq!(
        verify::wordcount_pairs(&out).unwrap(),
        verify::wordcount_reference(&input).unwrap()
    );

    // get -o: the same bytes, in a file.
    let path = dir.path().join("text.copy");
    let (ok, _, err) = cli(
        &c,
        dir.path(),
        &["get", "text", "-o", path.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), input);

    // Every replica of block 1 damaged: the read fails naming the block,
    // and no file is left under the name.
    let f = c.client.file("text").await.unwrap();
    let id = common::BlockId::for_file("text", 1).unwrap();
    for w in &f.replicas[1] {
        let blk = dir.path().join(w).join("blocks").join(format!("{id}.blk"));
        let mut data = std::fs::read(&blk).unwrap();
        data[10] ^= 1;
        std::fs::write(&blk, data).unwrap();
    }
    let bad = dir.path().join("text.bad");
    let (ok, _, err) = cli(
        &c,
        dir.path(),
        &["get", "text", "-o", bad.to_str().unwrap()],
    );
    assert!(!ok);
    assert!(err.contains("block 1"), "{err}");
    assert!(!bad.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".master-get"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // rm of a file a running job reads: refused, the file stays.
    load(&c, "big", Generator::Text, 4, 100_000).await;
    let mut slow = JobSubmit::new(Workload::InputSink, "big");
    slow.compute = Some(common::wire::TaskCompute {
        min_ms: 1500,
        max_ms: 1500,
        seed: 1,
    });
    let id = c.client.submit(&slow).await.unwrap();
    let (ok, _, err) = cli(&c, dir.path(), &["rm", "big"]);
    assert!(!ok && err.contains("in use"), "{err}");
    assert!(c.client.file("big").await.is_ok());
    assert_eq!(
        c.client.wait_job(id).await.unwrap().state,
        JobState::Succeeded
    );

    // rm once it ended: gone from the catalog and from every disk.
    let (ok, out, err) = cli(&c, dir.path(), &["rm", "big"]);
    assert!(ok, "{err}");
    assert!(String::from_utf8_lossy(&out).contains("4 blocks, 8 replicas"));
    assert!(c.client.file("big").await.is_err());
    for w in ["w0", "w1", "w2"] {
        let blocks = dir.path().join(w).join("blocks");
        let left: Vec<_> = std::fs::read_dir(&blocks)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("big."))
            .collect();
        assert!(left.is_empty(), "{w}: {left:?}");
    }
    // A new file under the name is itself only.
    load(&c, "big", Generator::Records, 2, 10_000).await;
    let f = c.client.file("big").await.unwrap();
    assert_eq!((f.blocks, f.bytes), (2, 20_000));
    assert_eq!(read_file(&c, "big").await.len(), 20_000);
    // rm of a file that is not there: an error that says so.
    let (ok, _, err) = cli(&c, dir.path(), &["rm", "nothing"]);
    assert!(!ok && err.contains("no file named"), "{err}");
}

/// Sort on lines made outside the testbed (gensort's shape) with 8
/// distinct keys and with Zipf-skewed keys, loaded from a file: the output
/// equals `LC_ALL=C sort`'s, and each of 3 reduces takes a third of the
/// records within 10% (split on sampled whole records, equal keys are
/// divided between adjacent reduces by the rest of their lines; split on
/// keys, 8 equally common keys go 3, 3 and 2 to a reduce: 12.5% over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sort_balances_reduces_on_few_and_skewed_keys() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[None, None, None], 50).await;
    for keys in [Keys::FewDistinct, Keys::Zipf] {
        let path = dir.path().join(format!("{}.lines", keys.name()));
        lines::write_file(&path, keys, 4 << 20, 5).unwrap();
        let name = keys.name();
        loader::load(
            &c.client,
            &LoadSpec {
                name: name.into(),
                source: Source::File(path.clone()),
                block_size: 512 << 10,
                replication: 2,
                seed: 21,
                placement: Default::default(),
            },
        )
        .await
        .unwrap();
        let out = format!("{name}-sorted");
        let r = run(&c, Workload::Sort, name, 3, &out).await;
        let input = std::fs::read(&path).unwrap();
        let ours = read_file(&c, &out).await;
        assert!(
            ours == verify::sort_reference(&input).unwrap(),
            "{name}: sort output differs from LC_ALL=C sort"
        );
        let sizes: Vec<u64> = r
            .attempts
            .iter()
            .filter(|a| a.ok && a.kind == TaskKind::Reduce)
            .map(|a| a.input_bytes)
            .collect();
        let share = input.len() as f64 / 3.0;
        for s in &sizes {
            assert!(
                (*s as f64 - share).abs() <= 0.1 * share,
                "{name}: reduce inputs {sizes:?} are not within 10% of {share}"
            );
        }
    }
}

/// PUTs `data` as replica `block` of `file` (1 block) at `generation` to
/// the worker at `addr`, as a reduce's upload does; the answer's status.
async fn put_replica(
    addr: &str,
    block: &common::BlockId,
    file: &str,
    generation: u64,
    data: &[u8],
) -> u16 {
    let mut h = common::checksum::ChunkHasher::new();
    h.update(data);
    reqwest::Client::new()
        .put(format!("{addr}/blocks/{block}"))
        .bearer_auth(TOKEN)
        .header("x-block-digest", h.finish().block_digest_hex())
        .header("x-block-file", file)
        .header("x-block-index", "0")
        .header("x-block-file-blocks", "1")
        .header("x-block-generation", generation.to_string())
        .body(data.to_vec())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The fencing window after an output commit is granted: a reduce attempt
/// cut off from the master right after its grant still sends its replicas
/// their digest, and they land after another attempt's result was taken.
/// Here such a late replica (other bytes, another attempt's generation) is
/// uploaded to a worker that holds none: the worker stores it (it cannot
/// know), the master never names it a holder, the worker deletes it at
/// that generation within a few heartbeats, and the output reads back as
/// the taken attempt wrote it. A holder of the taken generation refuses an
/// older one outright.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_of_an_attempt_whose_result_was_not_taken_is_never_served_and_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[None, None, None], 50).await;
    load(&c, "text", Generator::Text, 3, 40_000).await;
    let r = run(&c, Workload::Wordcount, "text", 1, "counts").await;
    let before = read_file(&c, "counts").await;
    let holders = c.client.file("counts").await.unwrap().replicas[0].clone();
    assert_eq!(holders.len(), 2, "output replication 2 of 3 workers");
    let block = common::BlockId::for_file("counts", 0).unwrap();
    let holder = c
        .workers
        .iter()
        .find(|w| holders.contains(&w.name))
        .unwrap();
    let taken = holder.store.get(&block).unwrap().info.generation;
    let winner = r
        .attempts
        .iter()
        .find(|a| a.ok && a.kind == TaskKind::Reduce)
        .unwrap();
    assert_eq!(
        taken,
        common::wire::output_generation(r.job, winner.attempt)
    );
    let outsider = c
        .workers
        .iter()
        .find(|w| !holders.contains(&w.name))
        .unwrap();
    let stale = common::wire::output_generation(r.job, winner.attempt + 3);
    assert_eq!(
        put_replica(
            &outsider.advertise,
            &block,
            "counts",
            stale,
            b"not the output"
        )
        .await,
        201
    );
    // (It may be gone already: the upload wakes the worker's heartbeat.)
    let t0 = std::time::Instant::now();
    while outsider.store.get(&block).is_ok() {
        let now = c.client.file("counts").await.unwrap().replicas[0].clone();
        assert_eq!(now, holders, "a stale replica is never a holder");
        assert!(
            t0.elapsed().as_secs() < 20,
            "the stale replica was never deleted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(read_file(&c, "counts").await, before);
    assert_eq!(
        put_replica(&holder.advertise, &block, "counts", taken - 1, b"older").await,
        409
    );
    assert_eq!(holder.store.get(&block).unwrap().info.generation, taken);
    assert_eq!(c.client.file("counts").await.unwrap().replicas[0], holders);
}
