//! The shuffle over the network ([`ReplayCluster::shuffle_net`]).

use super::tests::{cluster, job, run, run_with};
use super::*;

/// Links of 1,000 bytes per ms each way, `extra_copies` of a reduce's
/// output beyond its own.
fn links(extra_copies: u32) -> Option<ShuffleNet> {
    Some(ShuffleNet {
        link_bpms: 1_000.0,
        extra_copies,
    })
}

/// Job 1: maps of 1 s on workers 0 and 1, then one reduce on worker 2
/// (the only reduce worker) fetching 2 MB, half from each, lasting
/// `own_ms` of its own and writing 1 MB of output.
fn fetching(own_ms: u64, net: Option<ShuffleNet>) -> (u64, u64) {
    let mut j = job(1, 0, &[(0, 1_000), (1, 1_000)]);
    j.reduces = vec![ReplayTask {
        index: 2,
        replicas: Vec::new(),
        local_ms: own_ms,
        bytes: 1_000_000,
    }];
    j.reduce_load = 2_000_000;
    let mut c = cluster(&[1, 1, 1], 100, true);
    c.runs_maps = vec![true, true, false];
    c.runs_reduces = vec![false, false, true];
    c.shuffle_net = net;
    let o = run(&c, &[j], &[], RemoteCost::default());
    let r = o.runs.iter().find(|r| r.reduce).expect("the reduce ran");
    assert_eq!(o.jobs[0].2, r.end_ms, "the job ends with its reduce");
    (r.start_ms, r.end_ms)
}

#[test]
fn a_reduce_over_the_network_ends_after_its_fetch_and_its_output_copies_or_its_own_time() {
    // Links of 1,000 bytes per ms, one copy of the output beyond its own.
    let net = links(1);
    // Without the network: its own 500 ms.
    let (start, end) = fetching(500, None);
    assert_eq!(end - start, 500);
    // Over the network: the two 1 MB parts share the reducer's receive
    // link (1 s alone each, 2 s together), then 1 MB of output through its
    // transmit link (1 s); its own 500 ms run beside them.
    let (start, end) = fetching(500, net);
    assert_eq!(end - start, 3_000);
    // Its own time, where longer, is its length (the pacing floor).
    let (start, end) = fetching(5_000, net);
    assert_eq!(end - start, 5_000);
    // No output copies: the fetch alone.
    let (start, end) = fetching(500, links(0));
    assert_eq!(end - start, 2_000);
}

/// One map of 1 s on worker 0, the only worker that holds data, then its
/// job's two reduces on workers 1 and 2 (reduces only), each fetching
/// `load` bytes from worker 0 and writing `output` bytes, over links of
/// 1,000 bytes per ms with one copy beyond a reduce's own: each reduce's
/// length, once checked that they ran on two workers from one instant.
fn two_reduces(load: u64, output: u64) -> Vec<u64> {
    let mut j = job(1, 0, &[(0, 1_000)]);
    j.reduces = (1..3)
        .map(|index| ReplayTask {
            index,
            replicas: Vec::new(),
            local_ms: 100,
            bytes: output,
        })
        .collect();
    j.reduce_load = load;
    let mut c = cluster(&[1, 1, 1], 100, true);
    c.runs_maps = vec![true, false, false];
    c.runs_reduces = vec![false, true, true];
    c.shuffle_net = links(1);
    let o = run(&c, &[j], &[], RemoteCost::default());
    let reduces: Vec<&TaskRun> = o.runs.iter().filter(|r| r.reduce).collect();
    assert_eq!(reduces.len(), 2);
    assert_ne!(reduces[0].worker, reduces[1].worker, "{reduces:?}");
    assert_eq!(reduces[0].start_ms, reduces[1].start_ms, "{reduces:?}");
    reduces.iter().map(|r| r.end_ms - r.start_ms).collect()
}

#[test]
fn two_reduces_fetching_from_one_worker_share_its_transmit_link() {
    // Each fetches 1 MB from worker 0 and writes nothing: its transmit
    // link carries both (2 s).
    assert_eq!(two_reduces(1_000_000, 0), [2_000, 2_000]);
}

/// Job 1 from t = 0: one map of `map_ms` on worker 0, then one reduce of
/// `own_ms` of its own fetching `load` bytes and writing `output`.
fn map_then_reduce(map_ms: u64, own_ms: u64, load: u64, output: u64) -> ReplayJob {
    let mut j = job(1, 0, &[(0, map_ms)]);
    j.reduces = vec![ReplayTask {
        index: 1,
        replicas: Vec::new(),
        local_ms: own_ms,
        bytes: output,
    }];
    j.reduce_load = load;
    j
}

#[test]
fn a_reduce_whose_maps_ran_on_its_worker_still_sends_its_output_copies() {
    // One map of 1 s on worker 0 and the reduce there too (reduces only
    // there): nothing to fetch over a link, 1 MB of output through its
    // transmit link to worker 1, which holds data (1 s).
    let j = map_then_reduce(1_000, 200, 1_000_000, 1_000_000);
    let mut c = cluster(&[2, 1], 100, true);
    c.runs_reduces = vec![true, false];
    let len = |c: &ReplayCluster| {
        let o = run(c, std::slice::from_ref(&j), &[], RemoteCost::default());
        let r = o.runs.iter().find(|r| r.reduce).expect("the reduce ran");
        assert_eq!(r.worker, WorkerId(0));
        r.end_ms - r.start_ms
    };
    assert_eq!(len(&c), 200);
    c.shuffle_net = links(1);
    assert_eq!(len(&c), 1_000);
    // No other worker holds data (worker 1 runs no maps): no copy goes
    // out, as the master sends none, and the reduce lasts its own time.
    c.runs_maps = vec![true, false];
    assert_eq!(len(&c), 200);
}

#[test]
fn two_output_copies_both_cross_the_reducers_transmit_link() {
    // The job of `fetching`, its output kept three times: after the 2 s
    // fetch, the two copies of 1 MB go to workers 0 and 1 at once and
    // share the reducer's transmit link (2 s), as the real reducer sends
    // each target its own stream.
    let (start, end) = fetching(500, links(2));
    assert_eq!(end - start, 4_000);
}

#[test]
fn output_copies_into_one_worker_share_its_receive_link() {
    // The reduces fetch nothing and write 1 MB each. Both copies go to
    // worker 0, the only worker that holds data, as the master sends
    // them, and share its receive link: 2 s each, where a copy's fixed
    // time alone would be 1 s.
    assert_eq!(two_reduces(0, 1_000_000), [2_000, 2_000]);
}

/// Job 1: a map of 100 ms on worker 0, then its reduce on worker 2 (the
/// only reduce worker) fetching 1 MB from worker 0 and writing nothing.
/// Job 2, from the same instant: one map of `map_ms` whose 1 MB block is
/// held by `holder` only; worker 0's one slot is taken, so with `holder` 0 it
/// runs on worker 1 reading from worker 0. Links of 1,000 bytes per ms.
/// The reduce's start and length, and job 2's map's worker and length.
fn fetch_beside_a_block(holder: u32, map_ms: u64) -> (u64, u64, WorkerId, u64) {
    let j1 = map_then_reduce(100, 100, 1_000_000, 0);
    let mut j2 = job(2, 0, &[(holder, map_ms)]);
    j2.tasks[0].bytes = 1_000_000;
    let mut c = cluster(&[1, 1, 1], 100, true);
    c.runs_maps = vec![true, true, false];
    c.runs_reduces = vec![false, false, true];
    c.shuffle_net = links(0);
    let o = run(&c, &[j1, j2], &[], RemoteCost::default());
    let r = o.runs.iter().find(|r| r.reduce).expect("the reduce ran");
    let m = o
        .runs
        .iter()
        .find(|r| r.task.job == JobId(2))
        .expect("job 2's map ran");
    (
        r.start_ms,
        r.end_ms - r.start_ms,
        m.worker,
        m.end_ms - m.start_ms,
    )
}

#[test]
fn a_remote_maps_block_loads_the_links_the_shuffle_crosses() {
    // Job 2's block is read where it is: the fetch has worker 0's
    // transmit link to itself (1 s).
    let (start, len, at, map) = fetch_beside_a_block(1, 3_000);
    assert_eq!((start, len, at, map), (100, 1_000, WorkerId(1), 3_000));
    // Read from worker 0 by worker 1 from t = 0: its 1 MB (1 s alone) has
    // 900 ms left when the fetch starts at 100 ms; the two share worker
    // 0's transmit link (half each) until the block is through at 1.9 s,
    // the fetch's last 100 ms alone: 1.9 s. The map lasts its fixed
    // model's time (here no extra), the block through before it.
    let (start, len, at, map) = fetch_beside_a_block(0, 3_000);
    assert_eq!((start, len, at, map), (100, 1_900, WorkerId(1), 3_000));
}

#[test]
fn a_remote_map_ends_no_sooner_than_its_block_has_crossed() {
    // As above with a map of 1 s by its model: its block, slowed by the
    // fetch beside it, is through at 1.9 s, and the map ends then.
    let (start, len, at, map) = fetch_beside_a_block(0, 1_000);
    assert_eq!((start, len, at, map), (100, 1_900, WorkerId(1), 1_900));
}

#[test]
fn a_fair_share_read_counts_once_on_the_links_it_loads() {
    // One map of 1 s on worker 1 whose 1 MB block only worker 0 holds
    // (worker 0 runs no maps), under the fair-share model (200 ms alone).
    // Over the network its bytes load the links as a transfer of their
    // own (1 s at 1,000 bytes per ms); its model's transfer is not counted
    // again beside it, so alone it still takes its 200 ms, then its 1 s.
    let mut j = job(1, 0, &[(0, 1_000)]);
    j.tasks[0].bytes = 1_000_000;
    let mut c = cluster(&[1, 1], 100, true);
    c.runs_maps = vec![false, true];
    let fair = RemoteModel::FairShare {
        transfer_ms: 200.0,
        ref_bytes: 0,
    };
    let len = |c: &ReplayCluster| {
        let o = run_with(c, &[j.clone()], &[], fair);
        let m = o.runs[0];
        assert_eq!((m.worker, m.source), (WorkerId(1), WorkerId(0)));
        m.end_ms - m.start_ms
    };
    assert_eq!(len(&c), 1_200);
    c.shuffle_net = links(0);
    assert_eq!(len(&c), 1_200);
}
