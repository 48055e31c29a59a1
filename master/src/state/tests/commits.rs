//! Output commits (`Master::commit`): only a reduce's current attempt, on a
//! worker this master hears in its own incarnation, of a job not ended.

use super::*;
use crate::state::commit::CommitRefusal;
use common::wire::CommitRequest;

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
