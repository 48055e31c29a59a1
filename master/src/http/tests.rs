use super::*;

/// A request that waits for the master's lock steps at the time it
/// takes the lock, not at the time it arrived: otherwise a heartbeat
/// that arrived just before a submission, and took the lock just after
/// it, launched the new job's task before the job was submitted (its
/// report's start then went below zero).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_see_the_time_they_take_the_lock_at() {
    let settings = crate::state::tests::settings(1, 1);
    let m = start("127.0.0.1:0".parse().unwrap(), "t", settings)
        .await
        .unwrap();
    let state = m.state.clone();
    let held = state.master.lock().unwrap();
    let waiter = {
        let state = state.clone();
        std::thread::spawn(move || state.with(|_, now| now))
    };
    std::thread::sleep(Duration::from_millis(50));
    let released = state.now();
    drop(held);
    let stepped = waiter.join().unwrap();
    assert!(
        stepped >= released,
        "the waiting step saw {stepped} ms, the lock was released at {released} ms"
    );
    m.abort();
}

/// While the journal cannot be written (a directory where its file
/// should be: every append fails, as on a full disk), its entries are
/// held, a job is refused with 507 naming the cause, and once it can
/// be written the held entries go out and jobs are taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_cannot_be_written_holds_its_entries_and_refuses_new_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let mut settings = crate::state::tests::settings(1, 1);
    settings.journal = Some(path.clone());
    let m = start("127.0.0.1:0".parse().unwrap(), "t", settings)
        .await
        .unwrap();
    assert_eq!(journal::read(&path).unwrap().len(), 1, "its incarnation");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let held = journal::JournalEntry::Replication {
        file: "f".into(),
        replication: 2,
    };
    m.state.with(|m, _| m.requeue_journal(vec![held]));
    let submit = || async {
        common::http_client::plain()
            .post(format!("{}/v1/jobs", m.url()))
            .bearer_auth("t")
            .json(&common::wire::JobSubmit::new(
                workloads::Workload::InputSink,
                "nofile",
            ))
            .send()
            .await
            .unwrap()
    };
    let r = submit().await;
    assert_eq!(r.status(), StatusCode::INSUFFICIENT_STORAGE);
    let body = r.text().await.unwrap();
    assert!(body.contains("the job journal cannot be written"), "{body}");
    std::fs::remove_dir(&path).unwrap();
    // Writable again: the job is taken (and refused for its input).
    assert_eq!(submit().await.status(), StatusCode::NOT_FOUND);
    let back = journal::read(&path).unwrap();
    assert!(
        matches!(&back[..], [journal::JournalEntry::Replication { file, .. }] if file == "f"),
        "{back:?}"
    );
    m.abort();
}
