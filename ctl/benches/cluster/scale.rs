//! The benches of job sequences and of cost against size (1 to 10 GiB),
//! with the helpers they share with the others.

use super::*;

/// Section 9: a job's time in sequences of mixed jobs, 2 workers x 1 slot,
/// 64 MiB blocks at replication 2: 1 GiB of gensort-shaped lines and 1 GiB
/// of dictionary words loaded, then the sequence (3 sorts, then 3
/// wordcounts), an alternating one (sort, wordcount, 3 times), both back
/// to back with every output kept, as a user would run them (no sync
/// between them), and a spaced one (sort, wordcount, twice, each after a
/// pause longer than the buffer pool's idle trim). All of it four times,
/// on fresh clusters: workers with no buffers faulted in and no block
/// cache (`workers.pretouch_mb = 0`, `workers.block_cache_mb = 0`), then
/// with the default's buffers (`"auto"`: 1 GiB each where the machine has
/// the memory), then with both defaults (the cache holds each worker's
/// 2 GiB of input here), then the same with output written once instead
/// of twice. Prints each
/// job's time with the dirty pages, pooled buffers and share of its input
/// in the page cache it started with, and what the disk read during it;
/// per workload and cluster, slowest / fastest (target <= 1.25) and what
/// the slowest job found in the page cache and read from the disk.
pub(super) async fn sequence_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let lines_path = dir.path().join("seq.lines");
    lines::write_file(&lines_path, Keys::Uniform, 1 << 30, 23).unwrap();
    let words_path = dir.path().join("seq.words");
    lines::write_words_file(&words_path, 1 << 30, 29).unwrap();
    // Written back before the first cluster starts: the bench's own 2 GiB
    // of dirty pages would otherwise be flushed during its first jobs.
    for p in [&lines_path, &words_path] {
        std::fs::File::open(p).unwrap().sync_all().unwrap();
    }
    let pause = std::time::Duration::from_secs(
        std::env::var("BENCH_SEQUENCE_PAUSE_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(35),
    );
    let probe = super::host::HostProbe::new(dir.path().to_owned());
    let auto = auto_pretouch();
    let cache = auto_block_cache();
    println!(
        "9. sequences of jobs on 2 workers x 1 slot (1 GiB of gensort-shaped lines, 1 GiB of dictionary words, both made outside the testbed; 2 reduces each, every output kept, no sync between jobs): the issue's (3 sorts, then 3 wordcounts), alternating (sort, wordcount, 3 times), then spaced (sort, wordcount, twice, each after {} s idle; the pool trims buffers idle 30 s); on a fresh cluster with neither of the defaults' memory settings, with the buffers faulted in (`workers.pretouch_mb = \"auto\"`, {} MB a worker here), with those and the block cache (`workers.block_cache_mb = \"auto\"`, {} MB a worker here: the defaults), then the defaults with output replication 1 instead of 2",
        pause.as_secs(),
        auto / 1_000_000,
        cache / 1_000_000
    );
    // (id, pretouch_mb, block_cache_mb, output replication): the last
    // shows how much of what varies is the output's writes to the disk.
    let mut up = Vec::new();
    // `BENCH_SEQUENCE_CLUSTERS=cacheauto.rep2,...` runs those only;
    // `BENCH_SYNC_OUTPUT=1` syncs job output before its task ends
    // (`workers.sync_output = true`), to set beside the default.
    let only = std::env::var("BENCH_SEQUENCE_CLUSTERS").ok();
    let sync_output = std::env::var("BENCH_SYNC_OUTPUT").is_ok_and(|v| v == "1");
    for (name, pretouch, cached, output_replication) in [
        ("pretouch0", "0", "0", 2),
        ("pretouchauto", "auto", "0", 2),
        ("cacheauto", "auto", "auto", 2),
        ("cacheauto", "auto", "auto", 1),
    ] {
        let id = format!("{name}.rep{output_replication}");
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|c| c == id))
        {
            continue;
        }
        // Each worker's share as the two processes of a real cluster would
        // size it (these two share one process and its pool).
        let bytes = if pretouch == "auto" { auto } else { 0 };
        let cache_bytes = if cached == "auto" { cache } else { 0 };
        // Each cluster starts with the pool as a fresh process has it.
        let limit = workloads::pool::limit();
        workloads::pool::set_limit(0);
        workloads::pool::set_limit(limit);
        let store = tempfile::tempdir_in(dir.path()).unwrap();
        let t = Instant::now();
        let cl = support::start_cluster_tuned(
            store.path(),
            TOKEN,
            1,
            &[None, None],
            &[common::config::Role::Both; 2],
            100,
            |m| m.replication = output_replication,
            |o| {
                o.pretouch_bytes = bytes;
                o.block_cache_bytes = cache_bytes;
                o.sync_output = sync_output;
            },
        )
        .await;
        let secs = t.elapsed().as_secs_f64();
        println!(
            "   pretouch_mb = {pretouch} ({} MB a worker), block_cache_mb = {cached} ({} MB a worker), output replication {output_replication}: workers up in {secs:.2} s",
            bytes / 1_000_000,
            cache_bytes / 1_000_000
        );
        up.push(secs);
        for (name, path) in [("seq-lines", &lines_path), ("seq-words", &words_path)] {
            load(&cl, name, Source::File(path.clone()), 64 << 20, 2).await;
        }
        let id = format!("sequence.{name}.rep{output_replication}");
        let what = format!(
            "sequences of jobs, pretouch_mb = {pretouch}, block_cache_mb = {cached}, output replication {output_replication}"
        );
        run_sequences(&cl, (pause, &probe), (&id, &what)).await;
        if cache_bytes > 0 {
            let held: Vec<String> = cl
                .workers
                .iter()
                .map(|w| {
                    let c = w.store.cache_stats();
                    format!(
                        "{} {} MB held, {} MB of it locked, {} blocks let go",
                        w.name,
                        c.bytes / 1_000_000,
                        c.locked_bytes / 1_000_000,
                        c.evictions
                    )
                })
                .collect();
            println!("     the block cache at the end: {}", held.join("; "));
        }
        drop(cl);
    }
    if only.is_some() {
        // The start-up costs compare the first two clusters.
        return;
    }
    // What the default costs at start: its faults, against a start without.
    println!(
        "   the default's start-up cost: {:.2} s against {:.2} s without, for two workers faulting {} MB each",
        up[1],
        up[0],
        auto / 1_000_000
    );
    record(
        "sequence.pretouchauto.startup_s",
        "sequences of jobs: two workers up with pretouch_mb = auto, s",
        up[1],
        "s",
        "",
    );
    record(
        "sequence.pretouch0.startup_s",
        "sequences of jobs: two workers up with pretouch_mb = 0, s",
        up[0],
        "s",
        "",
    );
}

/// Section 5: 1 GiB on 2 workers x 1 slot (both map and reduce), output
/// and its replica written, the workers with the shipped defaults' memory
/// (`workers.pretouch_mb` and `workers.block_cache_mb` at `"auto"`).
pub(super) async fn gib_bench() {
    let dir = tempfile::tempdir().unwrap();
    let pretouch = auto_pretouch();
    let cache = auto_block_cache();
    let cl = support::start_cluster_tuned(
        dir.path(),
        TOKEN,
        1,
        &[None, None],
        &[common::config::Role::Both; 2],
        100,
        |_| {},
        |o| {
            o.pretouch_bytes = pretouch;
            o.block_cache_bytes = cache;
        },
    )
    .await;
    println!(
        "5. 1 GiB (16 x 64 MiB blocks) on 2 workers x 1 slot with the defaults' memory ({} MB of buffers faulted in, a block cache of {} MB, each), unlimited NICs, 2 reduces, output and its replica written; five runs of each job on one cluster",
        pretouch / 1_000_000,
        cache / 1_000_000
    );
    // Five runs each: the steadiness on one cluster, and its best.
    versus_coreutils("gib", &cl, dir.path(), 16, 64 << 20, 2, 5, 2).await;
}

/// What `workers.pretouch_mb = "auto"` faults in for each of two workers
/// on this machine, in bytes.
pub(super) fn auto_pretouch() -> u64 {
    common::config::MbOrAuto::Auto.pretouch_bytes(common::config::available_memory(), 2)
}

/// What `workers.block_cache_mb = "auto"` gives each of two workers on
/// this machine now, in bytes.
pub(super) fn auto_block_cache() -> u64 {
    common::config::MbOrAuto::Auto.block_cache_bytes(common::config::available_memory(), 2)
}

/// One job of a sequence: its workload, seconds, the share of its input
/// cached at its start, what the disk read, the host's probe before it and
/// its maps' mean seconds.
type Run = (Workload, f64, f64, Option<u64>, super::host::Reading, f64);

/// Section 9's sequences on `cl` (see [`sequence_bench`]).
pub(super) async fn run_sequences(
    cl: &support::LocalCluster,
    (pause, probe): (std::time::Duration, &super::host::HostProbe),
    (id, what): (&str, &str),
) {
    let grouped = [Workload::Sort; 3]
        .into_iter()
        .chain([Workload::Wordcount; 3]);
    let alternating = [Workload::Sort, Workload::Wordcount]
        .into_iter()
        .cycle()
        .take(6);
    let spaced = [Workload::Sort, Workload::Wordcount]
        .into_iter()
        .cycle()
        .take(4);
    let mut times: Vec<Run> = Vec::new();
    let mut outputs = Vec::new();
    for (sequence, jobs, gap) in [
        (
            "3 sorts, 3 wordcounts",
            grouped.collect::<Vec<_>>(),
            std::time::Duration::ZERO,
        ),
        (
            "alternating",
            alternating.collect(),
            std::time::Duration::ZERO,
        ),
        ("spaced", spaced.collect(), pause),
    ] {
        let mut line = Vec::new();
        for workload in jobs {
            tokio::time::sleep(gap).await;
            let input = match workload {
                Workload::Sort => "seq-lines",
                _ => "seq-words",
            };
            let out = format!("{input}-out{}", outputs.len());
            let mut job = JobSubmit::new(workload, input);
            job.reduces = Some(2);
            job.output = Some(out.clone());
            // What the node carries into the job: dirty and in-writeback
            // pages, free pooled buffers.
            let host = probe.read();
            let (dirty, pooled) = (dirty_bytes(), workloads::pool::held());
            // How much of its input's replicas the page cache holds, and
            // what the store's disk reads while it runs.
            let watch = InputWatch::start(cl, input).await;
            let cpu = cpu_ticks();
            let t = Instant::now();
            let id = cl.client.submit(&job).await.unwrap();
            let r = cl.client.wait_job(id).await.unwrap();
            assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
            let secs = t.elapsed().as_secs_f64();
            let (busy, steal) = cpu_ticks().since(cpu);
            let read = watch.read();
            outputs.push(out);
            let of =
                |k: common::wire::TaskKind| r.attempts.iter().filter(move |a| a.ok && a.kind == k);
            let maps_done = of(common::wire::TaskKind::Map).map(|a| a.end_ms).max();
            let map_ms: Vec<u64> = of(common::wire::TaskKind::Map)
                .map(|a| a.end_ms - a.start_ms)
                .collect();
            let map_s = map_ms.iter().sum::<u64>() as f64 / map_ms.len().max(1) as f64 / 1e3;
            times.push((workload, secs, watch.cached, read, host, map_s));
            let reduce_ms = of(common::wire::TaskKind::Reduce)
                .map(|a| a.end_ms - a.start_ms)
                .max();
            line.push(format!(
                "{workload} {secs:.2} s [maps done {:.2} s, a map {:.2} s on average; longest reduce {:.2} s; CPU busy {:.0}%, stolen {:.1}%; dirty {:.0} MB, pooled {:.0} MB, input {:.0}% in the page cache at its start; {} read from the disk; the host's probe before it: cores {:.0} ms, disk {}]",
                maps_done.unwrap_or(0) as f64 / 1e3,
                map_s,
                reduce_ms.unwrap_or(0) as f64 / 1e3,
                busy * 100.0,
                steal * 100.0,
                dirty as f64 / 1e6,
                pooled as f64 / 1e6,
                watch.cached * 100.0,
                read.map_or("nothing known".into(), |b| format!("{:.0} MB", b as f64 / 1e6)),
                host.cpu_s * 1e3,
                host.disk_s
                    .map_or("not probed".into(), |s| format!("{:.0} ms", s * 1e3))
            ));
        }
        println!("     {sequence}:\n       {}", line.join("\n       "));
    }
    for out in &outputs {
        cl.client.delete_file(out).await.unwrap();
    }
    report_sequences(&times, (id, what));
}

/// Per workload of `times`: slowest / fastest, the fastest, median and
/// slowest job, a map's mean time, and how they followed the host's probe.
fn report_sequences(times: &[Run], (id, what): (&str, &str)) {
    for w in [Workload::Sort, Workload::Wordcount] {
        let ts: Vec<_> = times.iter().filter(|j| j.0 == w).collect();
        let lo = ts.iter().map(|j| j.1).fold(f64::MAX, f64::min);
        let slowest = ts.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let hi = slowest.1;
        println!(
            "     {w}: slowest / fastest of {} runs {:.2} (target <= 1.25); the slowest had {:.0}% of its input in the page cache and read {:.0} MB from the disk",
            ts.len(),
            hi / lo,
            slowest.2 * 100.0,
            slowest.3.unwrap_or(0) as f64 / 1e6
        );
        record(
            &format!("{id}.{w}.slowest_cached"),
            &format!("{what}: {w}, the slowest run's input in the page cache at its start"),
            slowest.2,
            "share",
            "",
        );
        if let Some(read) = slowest.3 {
            record(
                &format!("{id}.{w}.slowest_read_mb"),
                &format!("{what}: {w}, what the disk read during the slowest run"),
                read as f64 / 1e6,
                "MB",
                "",
            );
        }
        record(
            &format!("{id}.{w}.spread"),
            &format!("{what}: {w}, slowest / fastest of {} runs", ts.len()),
            hi / lo,
            "x",
            "<= 1.25",
        );
        let mut secs: Vec<f64> = ts.iter().map(|j| j.1).collect();
        secs.sort_by(f64::total_cmp);
        for (k, v, of) in [
            ("fastest_s", lo, "fastest"),
            ("median_s", secs[secs.len() / 2], "median"),
            ("slowest_s", hi, "slowest"),
        ] {
            record(
                &format!("{id}.{w}.{k}"),
                &format!("{what}: {w}, the {of} of {} runs", ts.len()),
                v,
                "s",
                "",
            );
        }
        // A map's mean time over every run: its 64 MiB block's MB/s per
        // core follows from it (each worker's one slot runs one at a time).
        record(
            &format!("{id}.{w}.map_s"),
            &format!("{what}: {w}, a map's mean time over the runs"),
            ts.iter().map(|j| j.5).sum::<f64>() / ts.len() as f64,
            "s",
            "",
        );
        report_probe(&ts, (id, what, w));
    }
}

/// How the host's probe moved across `runs` of one workload, and how the
/// jobs' times followed it.
fn report_probe(runs: &[&Run], (id, what, w): (&str, &str, Workload)) {
    use super::host::{correlation, spread};
    let secs: Vec<f64> = runs.iter().map(|r| r.1).collect();
    let cpu: Vec<f64> = runs.iter().map(|r| r.4.cpu_s).collect();
    let disk: Vec<f64> = runs.iter().filter_map(|r| r.4.disk_s).collect();
    let (c, d) = (spread(&cpu), spread(&disk));
    let (rc, rd) = (correlation(&cpu, &secs), correlation(&disk, &secs));
    println!(
        "     {w}: the host's probe before those runs, slowest / fastest: both cores' fixed sort {c:.2}, the disk's 128 MiB write {d:.2}; the jobs' times correlate with the cores' {rc:.2} and the disk's {rd:.2}"
    );
    let figures = [
        (
            "probe_cpu_spread",
            "the cores' probe, slowest / fastest",
            c,
            "x",
        ),
        (
            "probe_disk_spread",
            "the disk's probe, slowest / fastest",
            d,
            "x",
        ),
        (
            "probe_cpu_corr",
            "correlation of job time and the cores' probe",
            rc,
            "",
        ),
        (
            "probe_disk_corr",
            "correlation of job time and the disk's probe",
            rd,
            "",
        ),
    ];
    for (k, said, v, unit) in figures {
        record(
            &format!("{id}.{w}.{k}"),
            &format!("{what}: {w}, {said}"),
            v,
            unit,
            "",
        );
    }
}

/// A job's input as the job found it: the share of its replicas' bytes in
/// the page cache at its start, and the counters of the disk holding them
/// then (None where the kernel has none), to tell what the disk read since.
pub(super) struct InputWatch {
    pub cached: f64,
    stat: Option<std::path::PathBuf>,
    before: Option<super::disk::Counters>,
}

impl InputWatch {
    pub(super) async fn start(cl: &support::LocalCluster, name: &str) -> InputWatch {
        let f = cl.client.file(name).await.unwrap();
        let (mut cached, mut total, mut stat) = (0u64, 0u64, None);
        for (i, reps) in f.replicas.iter().enumerate() {
            let id = BlockId::for_file(name, i as u32).unwrap();
            for w in cl.workers.iter().filter(|w| reps.contains(&w.name)) {
                let path = w.store.data_path(&id);
                stat = stat.or_else(|| path.parent().and_then(super::disk::device));
                cached += super::disk::cached_bytes(&path);
                total += std::fs::metadata(&path).map_or(0, |m| m.len());
            }
        }
        let before = stat.as_deref().and_then(super::disk::counters);
        InputWatch {
            cached: cached as f64 / total.max(1) as f64,
            stat,
            before,
        }
    }

    /// Bytes the disk read since the start.
    pub(super) fn read(&self) -> Option<u64> {
        let now = self.stat.as_deref().and_then(super::disk::counters)?;
        Some(now.since(&self.before?).read)
    }
}

/// The machine's CPU time so far, in clock ticks of all CPUs together
/// (/proc/stat's `cpu` line).
#[derive(Clone, Copy)]
pub(super) struct CpuTicks {
    total: u64,
    idle: u64,
    steal: u64,
}

impl CpuTicks {
    /// The shares of the CPUs' time since `then` that were busy (neither
    /// idle nor waiting for IO) and stolen by the hypervisor.
    fn since(self, then: CpuTicks) -> (f64, f64) {
        let total = self.total.saturating_sub(then.total).max(1) as f64;
        let idle = self.idle.saturating_sub(then.idle) as f64;
        let steal = self.steal.saturating_sub(then.steal) as f64;
        (1.0 - idle / total - steal / total, steal / total)
    }
}

pub(super) fn cpu_ticks() -> CpuTicks {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("cpu "))
        .expect("/proc/stat starts with the cpu line")
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice
    // (guest time is also counted in user).
    CpuTicks {
        total: f.iter().take(8).sum(),
        idle: f[3] + f[4],
        steal: f.get(7).copied().unwrap_or(0),
    }
}

/// The machine's dirty and in-writeback page-cache bytes (/proc/meminfo).
pub(super) fn dirty_bytes() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == "Dirty" || k == "Writeback")
                .then(|| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .flatten()
        })
        .sum::<u64>()
        * 1024
}

/// Memory each worker holds for the shuffle in section 10: map output kept
/// (`workers.shuffle_memory_mb`) and a sort reduce's fetched runs
/// (`workers.reduce_memory_mb`), each this many MB.
pub(super) const SCALE_BUDGET_MB: u64 = 256;

/// Section 10: linear cost. Sort (gensort-shaped lines, uniform keys) and
/// wordcount (lines of 10 words from a 74,585-word dictionary), both made
/// outside the testbed, at 1, 4 and 10 GiB (`BENCH_SCALE_GIB=1,4,10`) on 2
/// workers x 1 slot, 64 MiB blocks, 2 reduces, each worker's shuffle
/// memory held to [`SCALE_BUDGET_MB`] for kept map output and as much for
/// each reduce's fetched runs (the rest goes to disk). Replication 2 at
/// every size, or 1 at every size if the disk is short for the largest
/// (it says which). Each size prints the
/// job's time per GiB, the bytes spilled, the process's peak RSS during
/// the job (the master and both workers), and for sort `LC_ALL=C sort -o`
/// on the same file; then, per workload, the time per GiB at the largest
/// size over that at the smallest (target <= 1.2).
pub(super) async fn linear_cost_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let budget = SCALE_BUDGET_MB * 1_000_000;
    let cl = support::start_cluster_with(dir.path(), TOKEN, 1, &[None, None], 100, |o| {
        o.shuffle_memory_bytes = budget;
        o.reduce_memory_bytes = budget;
    })
    .await;
    let sizes: Vec<u64> = std::env::var("BENCH_SCALE_GIB")
        .unwrap_or_else(|_| "1,4,10".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("BENCH_SCALE_GIB: GiB numbers, e.g. 1,4,10")
        })
        .collect();
    println!(
        "10. linear cost: sort and wordcount at {} GiB, 2 workers x 1 slot, 64 MiB blocks, 2 reduces; per worker {SCALE_BUDGET_MB} MB of kept map output and {SCALE_BUDGET_MB} MB of fetched runs per reduce, the rest spilled to disk",
        sizes.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", ")
    );
    // One replication for every size, so the sizes differ in nothing
    // else: 2 if the largest sort fits, else 1. At its peak the sort holds
    // GNU sort's output, the loaded input, the map output on disk, the
    // spill files and its output: 2 + 2r times the input.
    let largest = sizes.iter().max().copied().unwrap_or(0) << 30;
    let free = free_bytes(dir.path());
    let margin = 4u64 << 30;
    let Some(replication) = [2u64, 1]
        .into_iter()
        .find(|r| free >= (2 + 2 * r) * largest + margin)
    else {
        println!(
            "   skipped: {:.1} GB free on the bench's disk, {:.1} GB needed at replication 1",
            free as f64 / 1e9,
            (4 * largest + margin) as f64 / 1e9
        );
        return;
    };
    let replication = replication as u32;
    println!(
        "   replication {replication} at every size ({:.1} GB free on the bench's disk; replication 2 needs {:.1} GB)",
        free as f64 / 1e9,
        (6 * largest + margin) as f64 / 1e9
    );
    let mut per_gib: Vec<(Workload, u64, f64)> = Vec::new();
    for &gib in &sizes {
        let bytes = gib << 30;
        // Sort: GNU sort first, on the file the cluster then loads.
        let input = dir.path().join(format!("scale-{gib}.lines"));
        lines::write_file(&input, Keys::Uniform, bytes, 31).unwrap();
        let reference = input.with_extension("gnu");
        let theirs = gnu_sort(&input, &reference);
        let name = format!("scale-{gib}-lines");
        load_file(&cl, &name, &input, replication).await;
        let (secs, spilled, peak) =
            timed_job(&cl, Workload::Sort, &name, &format!("{name}-sorted")).await;
        cl.client.delete_file(&name).await.unwrap();
        let same = output_equals(&cl, &format!("{name}-sorted"), &reference).await;
        let _ = std::fs::remove_file(&reference);
        cl.client
            .delete_file(&format!("{name}-sorted"))
            .await
            .unwrap();
        println!(
            "   sort      {gib:>2} GiB: job {secs:.1} s, {:.2} s/GiB; spilled {:.2} GB; peak RSS {:.2} GB; `LC_ALL=C sort -o` {theirs:.1} s, {:.2} s/GiB (ratio {:.2}); output {}",
            secs / gib as f64,
            spilled as f64 / 1e9,
            peak as f64 / 1e9,
            theirs / gib as f64,
            theirs / secs,
            if same { "equal to GNU sort's" } else { "DIFFERS from GNU sort's" }
        );
        record_all(
            &format!("scale.sort.{gib}gib"),
            &format!("linear cost, sort of {gib} GiB of lines, replication {replication}"),
            &[
                ("s_per_gib", "job s/GiB", secs / gib as f64, "s/GiB", ""),
                (
                    "gnu_ratio",
                    "GNU sort's time / the job's",
                    theirs / secs,
                    "x",
                    "",
                ),
                (
                    "peak_rss_gb",
                    "peak RSS of master and workers",
                    peak as f64 / 1e9,
                    "GB",
                    "",
                ),
            ],
        );
        assert!(same, "the {gib} GiB sort differs from GNU sort's");
        per_gib.push((Workload::Sort, gib, secs / gib as f64));
        // Wordcount.
        let input = dir.path().join(format!("scale-{gib}.words"));
        let words = lines::write_words_file(&input, bytes, 37).unwrap();
        let name = format!("scale-{gib}-words");
        load_file(&cl, &name, &input, replication).await;
        let out = format!("{name}-counts");
        let (secs, _, peak) = timed_job(&cl, Workload::Wordcount, &name, &out).await;
        let counts = ctl::ops::verify::wordcount_pairs(
            &ctl::ops::files::read_file(&cl.client, &out).await.unwrap(),
        )
        .unwrap();
        let counted: u64 = counts.iter().map(|(_, c)| c).sum();
        cl.client.delete_file(&name).await.unwrap();
        cl.client.delete_file(&out).await.unwrap();
        println!(
            "   wordcount {gib:>2} GiB: job {secs:.1} s, {:.2} s/GiB; peak RSS {:.2} GB; {counted} words counted of {words} written, {} distinct",
            secs / gib as f64,
            peak as f64 / 1e9,
            counts.len()
        );
        record_all(
            &format!("scale.wordcount.{gib}gib"),
            &format!("linear cost, wordcount of {gib} GiB of words, replication {replication}"),
            &[
                ("s_per_gib", "job s/GiB", secs / gib as f64, "s/GiB", ""),
                (
                    "peak_rss_gb",
                    "peak RSS of master and workers",
                    peak as f64 / 1e9,
                    "GB",
                    "",
                ),
            ],
        );
        assert_eq!(counted, words, "wordcount lost or invented words");
        per_gib.push((Workload::Wordcount, gib, secs / gib as f64));
    }
    report_linearity(&per_gib);
}

/// Prints and records each workload's time per GiB at the largest size
/// against the smallest.
fn report_linearity(per_gib: &[(Workload, u64, f64)]) {
    for w in [Workload::Sort, Workload::Wordcount] {
        let runs: Vec<&(Workload, u64, f64)> = per_gib.iter().filter(|r| r.0 == w).collect();
        if let (Some(small), Some(large)) = (runs.first(), runs.last()) {
            if small.1 != large.1 {
                println!(
                    "   {w}: time per GiB at {} GiB / at {} GiB = {:.2} (target <= 1.2)",
                    large.1,
                    small.1,
                    large.2 / small.2
                );
                record(
                    &format!("scale.{w}.linearity"),
                    &format!(
                        "linear cost, {w}: time per GiB at {} GiB / at {} GiB",
                        large.1, small.1
                    ),
                    large.2 / small.2,
                    "x",
                    "<= 1.2",
                );
            }
        }
    }
}

/// Records figures `<prefix>.<name>` for the results folder, each said as
/// `<what>: <said>`.
fn record_all(prefix: &str, what: &str, figures: &[(&str, &str, f64, &str, &str)]) {
    for (name, said, value, unit, target) in figures {
        record(
            &format!("{prefix}.{name}"),
            &format!("{what}: {said}"),
            *value,
            unit,
            target,
        );
    }
}

/// Runs one job of `workload` on `input` (2 reduces) into `output`, from
/// clean disks; returns its seconds, the bytes its reduces spilled, and the
/// process's peak resident memory while it ran.
pub(super) async fn timed_job(
    cl: &support::LocalCluster,
    workload: Workload,
    input: &str,
    output: &str,
) -> (f64, u64, u64) {
    let spilled = || -> u64 {
        cl.workers
            .iter()
            .map(|w| w.exec.shuffle.reduce_spilled())
            .sum()
    };
    sync_disks();
    let before = spilled();
    // The peak from here on (Linux: 5 resets VmHWM to the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let mut job = JobSubmit::new(workload, input);
    job.reduces = Some(2);
    job.output = Some(output.into());
    let t = Instant::now();
    let id = cl.client.submit(&job).await.unwrap();
    let r = cl.client.wait_job(id).await.unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
    (secs, spilled() - before, peak_rss())
}

/// Seconds `LC_ALL=C sort -o reference input` takes, from clean disks.
pub(super) fn gnu_sort(input: &std::path::Path, reference: &std::path::Path) -> f64 {
    // Its last output removed first: `sort -o` truncating it would trim
    // the device inside the timing on a file system mounted with `discard`
    // (the cluster's deletions are waited for as well).
    let _ = std::fs::remove_file(reference);
    sync_disks();
    let t = Instant::now();
    let st = std::process::Command::new("sort")
        .arg("-o")
        .arg(reference)
        .arg(input)
        .env("LC_ALL", "C")
        .status()
        .unwrap();
    assert!(st.success(), "GNU sort failed");
    t.elapsed().as_secs_f64()
}

/// Loads the file at `path` as `name` in 64 MiB blocks, then deletes the file.
pub(super) async fn load_file(
    cl: &support::LocalCluster,
    name: &str,
    path: &std::path::Path,
    replication: u32,
) {
    load(cl, name, Source::File(path.into()), 64 << 20, replication).await;
    let _ = std::fs::remove_file(path);
}

/// This process's peak resident memory (VmHWM), in bytes.
pub(super) fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

/// Bytes free for an unprivileged user on the file system holding `path`.
pub(super) fn free_bytes(path: &std::path::Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(path).unwrap();
    s.blocks_available() as u64 * s.fragment_size() as u64
}

/// Whether a loaded file's blocks, in order (each read from the worker
/// holding its first replica, 8 MiB at a time), are `reference`'s bytes.
pub(super) async fn output_equals(
    cl: &support::LocalCluster,
    name: &str,
    reference: &std::path::Path,
) -> bool {
    use std::io::Read;
    let f = cl.client.file(name).await.unwrap();
    let mut theirs = std::fs::File::open(reference).unwrap();
    let (mut a, mut b) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    let mut total = 0u64;
    for (i, reps) in f.replicas.iter().enumerate() {
        let w = cl.workers.iter().find(|w| w.name == reps[0]).unwrap();
        let id = BlockId::for_file(name, i as u32).unwrap();
        let mut ours = std::fs::File::open(w.store.data_path(&id)).unwrap();
        loop {
            let n = ours.read(&mut a).unwrap();
            if n == 0 {
                break;
            }
            if theirs.read_exact(&mut b[..n]).is_err() || a[..n] != b[..n] {
                return false;
            }
            total += n as u64;
        }
    }
    total == theirs.metadata().unwrap().len()
}

/// Writes every dirty page of the machine to disk (`sync`).
pub(super) fn sync_disks() {
    let st = std::process::Command::new("sync").status().unwrap();
    assert!(st.success(), "sync failed");
}

/// Whether two files hold the same bytes (read in 8 MiB pieces).
pub(super) fn files_equal(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::io::Read;
    let (mut fa, mut fb) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    if fa.metadata().unwrap().len() != fb.metadata().unwrap().len() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let n = fa.read(&mut ba).unwrap();
        if n == 0 {
            return true;
        }
        fb.read_exact(&mut bb[..n]).unwrap();
        if ba[..n] != bb[..n] {
            return false;
        }
    }
}
