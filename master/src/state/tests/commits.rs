//! Output commits (`Master::commit`): only a reduce's current attempt, on a
//! worker this master hears in its own incarnation, of a job not ended.

use super::*;
use crate::state::commit::CommitRefusal;
use common::wire::{CommitRequest, OutputTarget, StaleReplica};

fn ask(m: &mut Master, w: u32, l: &Launch) -> Result<(), CommitRefusal> {
    let incarnation = m.incarnation();
    m.commit(&CommitRequest {
        worker: WorkerId(w),
        incarnation,
        attempt: l.attempt,
    })
}

/// The current attempt may commit, any number of times; an attempt of
/// another worker, another incarnation's request and a worker the master
/// has not heard of are answered "not now" or refused with the reason. A
/// worker declared lost is refused for good, as is its reduce once the
/// replacement ended the job, and each refusal is counted with the
/// refused results.
#[test]
fn only_the_current_reduce_attempt_of_a_live_job_may_commit() {
    let mut m = cluster(2, 2, 4);
    // Every block on both workers, so the job outlives either.
    for w in 0..2 {
        let mut beat = hb(w, 2, vec![], vec![]);
        beat.blocks = Some((0..4).map(|i| block("f", i, 4)).collect());
        m.heartbeat(5, beat);
    }
    let id = wordcount(&mut m, 1);
    let red = drive_maps(&mut m, 2, 10, vec![]);
    let (rw, red) = red.into_iter().next().unwrap();
    let other = 1 - rw;
    assert_eq!(ask(&mut m, rw, &red), Ok(()));
    assert_eq!(ask(&mut m, rw, &red), Ok(()), "asking twice is harmless");
    // On another worker than the one it was sent to: stale.
    match ask(&mut m, other, &red) {
        Err(CommitRefusal::Stale(why)) => assert!(why.contains("not on"), "{why}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(m.results_refused(), 1);
    // Another incarnation: register again, then ask.
    let before = m.results_refused();
    let wrong = CommitRequest {
        worker: WorkerId(rw),
        incarnation: m.incarnation() + 1,
        attempt: red.attempt,
    };
    assert!(matches!(m.commit(&wrong), Err(CommitRefusal::NotNow(_))));
    let unknown = CommitRequest {
        worker: WorkerId(7),
        incarnation: m.incarnation(),
        attempt: red.attempt,
    };
    assert!(matches!(m.commit(&unknown), Err(CommitRefusal::NotNow(_))));
    assert_eq!(
        m.results_refused(),
        before,
        "not-now answers are not refusals"
    );
    // The reduce's worker goes silent and is declared lost: its attempt is
    // refused for good, and the reduce runs on the other worker.
    m.heartbeat(900, hb(other, 2, vec![], vec![]));
    m.check_workers(1200);
    match ask(&mut m, rw, &red) {
        Err(CommitRefusal::Stale(why)) => assert!(why.contains("lost"), "{why}"),
        r => panic!("{r:?}"),
    }
    let mut again = None;
    let mut owed: Vec<TaskResult> = Vec::new();
    for t in 1201..1300 {
        let running: Vec<AttemptId> = again.iter().map(|l: &Launch| l.attempt).collect();
        let reply = m.heartbeat(t, hb(other, 2, running, std::mem::take(&mut owed)));
        for l in reply.launches {
            match l.task {
                LaunchTask::Reduce(_) => again = Some(l),
                // Maps whose output was on the lost worker run again.
                LaunchTask::Map { .. } => owed.push(ok(&l, 0)),
            }
        }
        if again.is_some() {
            break;
        }
    }
    let again = again.unwrap_or_else(|| {
        panic!(
            "the reduce ran again on the live worker: {:?}",
            m.report(id)
        )
    });
    assert_eq!(ask(&mut m, other, &again), Ok(()));
    m.heartbeat(1400, hb(other, 2, vec![], vec![reduced(&again)]));
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
    // The job ended: even its last attempt may commit no more.
    match ask(&mut m, other, &again) {
        Err(CommitRefusal::Stale(why)) => assert!(why.contains("ended"), "{why}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(m.results_refused(), before + 2, "lost and ended");
}

fn output_of(l: &Launch) -> OutputTarget {
    match &l.task {
        LaunchTask::Reduce(r) => r.output.clone(),
        LaunchTask::Map { .. } => panic!("expected a reduce launch: {l:?}"),
    }
}

/// `w`'s heartbeat reporting `blocks` as all it stores.
fn report(m: &mut Master, now: u64, w: u32, blocks: Vec<BlockInfo>) -> Vec<StaleReplica> {
    let mut beat = hb(w, 2, vec![], vec![]);
    let mut held: Vec<BlockInfo> = (0..4).map(|i| block("f", i, 4)).collect();
    held.extend(blocks);
    beat.blocks = Some(held);
    m.heartbeat(now, beat).drop_stale
}

/// The fencing window between a commit grant and the replicas' commit: a
/// reduce attempt is granted its commit and then cut off; its worker is
/// declared lost, and another attempt writes the output again and is
/// taken. Replicas the first attempt landed anyway (before the second's
/// result, or after) are neither counted nor served, and their holders
/// are told to delete them at that generation; a master restarted on the
/// journal keeps the settled generation.
#[test]
fn replicas_a_fenced_attempt_landed_after_its_grant_are_left_out_and_deleted() {
    let mut m = cluster(3, 2, 4);
    for w in 0..3 {
        report(&mut m, 5, w, vec![]);
    }
    let id = wordcount(&mut m, 1);
    let (rw, first) = drive_maps(&mut m, 3, 10, vec![])
        .into_iter()
        .next()
        .unwrap();
    assert_eq!(ask(&mut m, rw, &first), Ok(()));
    let out = output_of(&first);
    let replica = |generation: u64| BlockInfo {
        id: out.block.clone(),
        file: out.file.clone(),
        index: out.index,
        file_blocks: out.file_blocks,
        len: 77,
        generation,
    };
    // The granted attempt's worker goes silent; the other two live on, and
    // one of them (`early`) stores the first attempt's replica meanwhile.
    let live: Vec<u32> = (0..3).filter(|&w| w != rw).collect();
    let (early, late) = (live[0], live[1]);
    assert!(report(&mut m, 900, early, vec![replica(out.generation)]).is_empty());
    report(&mut m, 900, late, vec![]);
    m.check_workers(1200);
    let mut again = None;
    let mut owed: Vec<(u32, Launch)> = Vec::new();
    for t in 1201..1300 {
        for &w in &live {
            let running: Vec<AttemptId> = again
                .iter()
                .filter(|(aw, _)| *aw == w)
                .map(|(_, l): &(u32, Launch)| l.attempt)
                .collect();
            let results = owed
                .iter()
                .filter(|(ow, _)| *ow == w)
                .map(|(_, l)| ok(l, 0))
                .collect();
            owed.retain(|(ow, _)| *ow != w);
            for l in m.heartbeat(t, hb(w, 2, running, results)).launches {
                match l.task {
                    LaunchTask::Reduce(_) => again = Some((w, l)),
                    LaunchTask::Map { .. } => owed.push((w, l)),
                }
            }
        }
        if again.is_some() {
            break;
        }
    }
    let (aw, again) = again.expect("the reduce runs again on a live worker");
    let second = output_of(&again);
    assert_eq!(second.block, out.block);
    assert!(
        second.generation > out.generation,
        "a later attempt writes a newer generation"
    );
    assert_eq!(ask(&mut m, aw, &again), Ok(()));
    let mut done = hb(aw, 2, vec![], vec![reduced(&again)]);
    let mut held: Vec<BlockInfo> = (0..4).map(|i| block("f", i, 4)).collect();
    held.push(replica(second.generation));
    done.blocks = Some(held);
    let reply = m.heartbeat(1400, done);
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
    let stale = StaleReplica {
        block: out.block.clone(),
        generation: out.generation,
    };
    let holders = |m: &Master| m.file(&out.file).unwrap().replicas[0].clone();
    if aw == early {
        // The second attempt's own store replaced the first's there.
        assert!(reply.drop_stale.is_empty());
    } else {
        // Settling left `early`'s replica out; it is told at its next beat.
        assert_eq!(
            m.heartbeat(1401, hb(early, 2, vec![], vec![])).drop_stale,
            std::slice::from_ref(&stale)
        );
    }
    assert_eq!(holders(&m), [format!("w{aw}")]);
    // A replica of the first attempt that lands after the result was taken
    // is refused at once.
    let other = if aw == early { late } else { early };
    assert_eq!(
        report(&mut m, 1402, other, vec![replica(out.generation)]),
        std::slice::from_ref(&stale)
    );
    assert_eq!(holders(&m), [format!("w{aw}")]);
    // Of the settled generation, it counts.
    assert!(report(&mut m, 1403, other, vec![replica(second.generation)]).is_empty());
    assert_eq!(holders(&m).len(), 2);
    // A master restarted on the journal knows the settled generation
    // before any report.
    let journal = m.take_journal();
    assert!(journal.iter().any(|e| matches!(e,
        journal::JournalEntry::Settled { generation, .. } if *generation == second.generation)));
    let mut r = Master::new(settings(3, 2));
    r.restore(journal, 1_005_000);
    register_all(&mut r, 3, 2, |_| Vec::new());
    assert_eq!(
        report(&mut r, 5, other, vec![replica(out.generation)]),
        [stale]
    );
    assert!(report(&mut r, 6, aw, vec![replica(second.generation)]).is_empty());
    assert_eq!(holders(&r), [format!("w{aw}")]);
}
