//! The external policy against scripted transports: what it sends, how it
//! checks what comes back, and when its fallback decides.

use super::*;
use crate::view::{offer, PendingTask};
use std::sync::{Arc, Mutex};

fn w(i: u32) -> WorkerId {
    WorkerId(i)
}

fn task(job: u32, index: u32, replicas: &[u32]) -> PendingTask {
    PendingTask {
        task: TaskRef {
            job: JobId(job),
            index,
        },
        len: 100 + u64::from(index),
        replicas: replicas.iter().map(|&r| w(r)).collect(),
    }
}

/// Two workers of two slots; job 1 with tasks on w1 (0, 2) and w0 (1).
fn view() -> ClusterView {
    let mut v = ClusterView::new();
    v.upsert_worker(w(0), 2);
    v.upsert_worker(w(1), 2);
    v.add_job(
        JobId(1),
        5,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[0, 1]), task(1, 2, &[1])],
    );
    v
}

/// A transport answering each request with the next scripted result, and
/// keeping the requests.
#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<Vec<Result<String, CallError>>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl PolicyCall for Script {
    fn call(&mut self, request: &str) -> Result<String, CallError> {
        self.requests.lock().unwrap().push(request.to_owned());
        let mut r = self.replies.lock().unwrap();
        if r.is_empty() {
            Err(CallError::Unreachable("script over".into()))
        } else {
            r.remove(0)
        }
    }
}

fn external(script: &Script, params: &str) -> External {
    let p: ExternalParams = toml::from_str(&format!("address = \"unix:/x\"\n{params}")).unwrap();
    let fallback = p.fallback_config().unwrap().build(1);
    External::new(p, Box::new(script.clone()), fallback)
}

fn reply(launches: &[(u32, u32, u32)]) -> Result<String, CallError> {
    let l: Vec<String> = launches
        .iter()
        .map(|(j, t, s)| format!(r#"{{"job":{j},"task":{t},"source":{s}}}"#))
        .collect();
    Ok(format!(r#"{{"version":1,"launches":[{}]}}"#, l.join(",")))
}

#[test]
fn the_offer_message_holds_the_view_and_the_reply_launches() {
    let mut v = view();
    let s = Script::default();
    s.replies
        .lock()
        .unwrap()
        .push(Ok(r#"{"version":1,"launches":[{"job":1,"task":1,"source":0,"rule":"data-local"},{"job":1,"task":0,"source":1,"worker":0,"rule":"wait-over","waited_ms":3000,"threshold_ms":3000}]}"#.into()));
    let mut e = external(&s, "");
    v.record_decisions(true);
    let a = offer(&mut e, 1_000, w(0), &mut v);
    assert_eq!(a.len(), 2);
    assert_eq!((a[0].task.index, a[0].source), (1, w(0)));
    assert_eq!((a[1].task.index, a[1].source), (0, w(1)));
    let msg: OfferMessage = serde_json::from_str(&s.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(msg.version, PROTOCOL_VERSION);
    assert_eq!((msg.now_ms, msg.worker, msg.free_slots), (1_000, w(0), 2));
    assert_eq!(msg.workers.len(), 2);
    assert_eq!((msg.workers[1].id, msg.workers[1].free), (w(1), 2));
    let j = &msg.jobs[0];
    assert_eq!(
        (j.id, j.submitted_ms, j.running, j.pending),
        (JobId(1), 5, 0, 3)
    );
    assert_eq!(j.tasks.len(), 3);
    assert_eq!(
        (
            j.tasks[1].index,
            j.tasks[1].bytes,
            j.tasks[1].replicas.clone()
        ),
        (1, 101, vec![w(0), w(1)])
    );
    assert_eq!(j.local, vec![1], "the tasks with a replica on w0");
    assert_eq!(j.last_launch_ms, None);
    // The reasons reach the decision record.
    let rows = v.take_decisions();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].rule, Rule::WaitOver);
    assert_eq!(rows[1].waited_ms, Some(3000));
    assert_eq!(e.stats().launches, 2);
    assert_eq!(e.stats().refused, 0);
    // The next message shows the launches.
    s.replies.lock().unwrap().push(reply(&[]));
    offer(&mut e, 2_000, w(1), &mut v);
    let msg: OfferMessage = serde_json::from_str(&s.requests.lock().unwrap()[1]).unwrap();
    let j = &msg.jobs[0];
    assert_eq!(
        (j.running, j.pending, j.last_launch_ms),
        (2, 1, Some(1_000))
    );
    assert_eq!(j.local, vec![2]);
}

#[test]
fn launches_that_break_the_rules_are_refused_with_a_reason_and_counted() {
    let mut v = view();
    let s = Script::default();
    s.replies.lock().unwrap().push(Ok(concat!(
        r#"{"version":1,"launches":["#,
        r#"{"job":1,"task":9,"source":0},"#,
        r#"{"job":1,"task":0,"source":0},"#,
        r#"{"job":1,"task":0,"source":1,"worker":1},"#,
        r#"{"job":7,"task":0,"source":1},"#,
        r#"{"job":1,"task":1,"source":0},"#,
        r#"{"job":1,"task":0,"source":1},"#,
        r#"{"job":1,"task":2,"source":1}"#,
        "]}"
    )
    .into()));
    let mut e = external(&s, "");
    let a = offer(&mut e, 0, w(0), &mut v);
    assert_eq!(a.len(), 2, "two slots: tasks 1 and 0");
    let st = e.stats();
    assert_eq!((st.launches, st.refused), (2, 5));
    let r = &st.refusals;
    assert!(
        r[0].contains("job-1/t9") && r[0].contains("not pending"),
        "{r:?}"
    );
    assert!(r[1].contains("holds no replica"), "{r:?}");
    assert!(r[2].contains("the offer was worker"), "{r:?}");
    assert!(r[3].contains("job-7/t0"), "{r:?}");
    assert!(r[4].contains("no free slot"), "{r:?}");
    assert!(
        e.notes()[0].contains("5 launches refused"),
        "{:?}",
        e.notes()
    );
    assert_eq!(st.fallback_offers, 0);
}

#[test]
fn a_failed_call_goes_to_the_fallback_and_three_in_a_row_pause_the_policy() {
    let s = Script::default();
    {
        let mut r = s.replies.lock().unwrap();
        r.push(Err(CallError::Timeout(100)));
        r.push(Ok("not json".into()));
        r.push(Ok(r#"{"version":2,"launches":[]}"#.into()));
        // After the pause.
        r.push(reply(&[]));
    }
    let mut e = external(&s, "fallback = \"hadoop\"\nretry_s = 5");
    let mut v = view();
    // Each failed offer is decided by hadoop, which launches at once.
    for t in [0, 10, 20] {
        v.set_free(w(0), 1);
        assert_eq!(offer(&mut e, t, w(0), &mut v).len(), 1, "at {t}");
    }
    let st = e.stats().clone();
    assert_eq!(
        (st.calls, st.timeouts, st.bad_replies, st.fallback_offers),
        (3, 1, 2, 3)
    );
    assert!(
        st.last_failure.as_deref().unwrap().contains("version 2"),
        "{st:?}"
    );
    // Paused for 5 s: no call, the fallback decides.
    v.add_job(
        JobId(2),
        30,
        "default",
        vec![task(2, 0, &[0]), task(2, 1, &[1])],
    );
    v.set_free(w(0), 1);
    assert_eq!(offer(&mut e, 4_000, w(0), &mut v).len(), 1);
    assert_eq!(e.stats().calls, 3);
    assert_eq!(e.stats().fallback_offers, 4);
    // Then it is asked again; it launches nothing.
    v.set_free(w(0), 1);
    assert_eq!(offer(&mut e, 5_020, w(0), &mut v).len(), 0);
    assert_eq!((e.stats().calls, e.stats().replies), (4, 1));
    let notes = e.notes().join("\n");
    assert!(
        notes.contains("fallback hadoop decided 4 offers"),
        "{notes}"
    );
    assert!(notes.contains("1 timed out (100 ms)"), "{notes}");
}

#[test]
fn with_nothing_pending_the_policy_is_not_asked() {
    let s = Script::default();
    let mut e = external(&s, "");
    let mut v = ClusterView::new();
    v.upsert_worker(w(0), 1);
    assert!(offer(&mut e, 0, w(0), &mut v).is_empty());
    assert_eq!((e.stats().calls, e.stats().fallback_offers), (0, 0));
    assert!(s.requests.lock().unwrap().is_empty());
}

#[test]
fn without_a_connector_every_offer_goes_to_the_fallback_and_the_report_says_why() {
    let c: SchedulerConfig =
        "policy = \"external\", address = \"unix:/nonexistent.sock\", fallback = \"delay3\""
            .parse()
            .unwrap();
    c.validate().unwrap();
    let mut s = c.build(1);
    assert_eq!(s.name(), "external(unix:/nonexistent.sock)");
    let mut v = view();
    offer(s.as_mut(), 0, w(1), &mut v);
    let c = s.counters();
    let count = |name: &str| c.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!((count("unreachable"), count("fallback_offers")), (1, 1));
    let notes = s.notes().join("\n");
    assert!(
        notes.contains("fallback delay3 decided 1 offers"),
        "{notes}"
    );
    assert!(notes.contains("no connector installed"), "{notes}");
}

#[test]
fn bad_settings_are_refused_with_what_is_wrong() {
    for (text, want) in [
        (
            "address = \"/tmp/x.sock\"",
            "neither unix:<path> nor tcp:<host>:<port>",
        ),
        ("address = \"unix:\"", "names no socket path"),
        ("address = \"inproc:\"", "names no policy"),
        ("address = \"tcp:127.0.0.1\"", "is not tcp:<host>:<port>"),
        (
            "address = \"tcp:127.0.0.1:99999\"",
            "is not tcp:<host>:<port>",
        ),
        (
            "address = \"unix:/x\"\ntimeout_ms = 0",
            "timeout_ms must be at least 1",
        ),
        ("address = \"unix:/x\"\nretry_s = -1.0", "retry_s must be"),
        (
            "address = \"unix:/x\"\nmax_tasks_per_job = 0",
            "max_tasks_per_job",
        ),
        (
            "address = \"unix:/x\"\nfallback = \"nosuch\"",
            "fallback \"nosuch\"",
        ),
        (
            "address = \"unix:/x\"\nfallback = 'policy = \"external\", address = \"unix:/y\"'",
            "must be a built-in policy",
        ),
    ] {
        let p: ExternalParams = toml::from_str(text).unwrap();
        let e = p.validate().unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
    assert_eq!(
        parse_address("inproc:Delay-1"),
        Ok(Address::InProcess("Delay-1".into()))
    );
    assert_eq!(
        parse_address("tls:policy.lab:7500"),
        Ok(Address::Tls("policy.lab:7500".into()))
    );
    assert_eq!(
        parse_address("tcp:127.0.0.1:7500"),
        Ok(Address::Tcp("127.0.0.1:7500".into()))
    );
    let e = parse_address("tls:7500").unwrap_err();
    assert!(e.contains("is not tls:<host>:<port>"), "{e}");
    let e = toml::from_str::<ExternalParams>("address = \"unix:/x\"\ntimeout = 5").unwrap_err();
    assert!(e.to_string().contains("unknown field `timeout`"), "{e}");
}

#[test]
fn a_reply_names_its_fields_or_is_refused() {
    let e = serde_json::from_str::<Reply>(r#"{"version":1,"launch":[]}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `launch`"), "{e}");
    let e = serde_json::from_str::<Reply>(
        r#"{"version":1,"launches":[{"job":1,"task":0,"source":0,"rule":"nosuch"}]}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown variant `nosuch`"), "{e}");
    let r: Reply = serde_json::from_str(
        r#"{"version":1,"declined":{"rule":"waiting","job":3,"waited_ms":5,"threshold_ms":3000}}"#,
    )
    .unwrap();
    assert!(r.launches.is_empty());
    assert_eq!(r.declined.unwrap().why().rule, Rule::Waiting);
}

/// A `strict` policy says why it cannot go on at its first failed call,
/// at its first refused launch, and after `STRICT_IDLE_REPLIES` replies
/// with work pending and no launch; without `strict`, never.
#[test]
fn a_strict_policy_fails_at_its_first_failure_and_a_lenient_one_never() {
    let failing = |strict: bool, replies: Vec<Result<String, CallError>>, offers: u64| {
        let s = Script::default();
        *s.replies.lock().unwrap() = replies;
        let mut e = external(&s, &format!("strict = {strict}"));
        for t in 0..offers {
            let mut v = view();
            offer(&mut e, t, w(0), &mut v);
        }
        e.failure()
    };
    let why = failing(true, vec![Err(CallError::Timeout(100))], 1).unwrap();
    assert!(why.contains("(strict): its call failed at 0 ms"), "{why}");
    assert_eq!(failing(false, vec![Err(CallError::Timeout(100))], 1), None);
    let why = failing(true, vec![reply(&[(7, 0, 1)])], 1).unwrap();
    assert!(
        why.contains("was refused") && why.contains("job-7/t0"),
        "{why}"
    );
    let idle = || {
        (0..STRICT_IDLE_REPLIES)
            .map(|_| reply(&[]))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        failing(true, idle(), STRICT_IDLE_REPLIES - 1),
        None,
        "not yet"
    );
    let why = failing(true, idle(), STRICT_IDLE_REPLIES).unwrap();
    assert!(why.contains("not one launch"), "{why}");
    assert_eq!(failing(false, idle(), STRICT_IDLE_REPLIES), None);
}

#[test]
fn the_published_schema_is_the_protocols_and_documents_every_field() {
    let schema = protocol_schema();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/policy-protocol-v1.schema.json"
    );
    let published = std::fs::read_to_string(path).unwrap();
    let want = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    assert!(
        published == want,
        "{path} is not the protocol's schema: `master policy-schema > docs/policy-protocol-v1.schema.json`"
    );
    let defs = schema["$defs"].as_object().unwrap();
    for name in ["OfferMessage", "Reply", "LaunchMessage", "JobMessage"] {
        assert!(defs.contains_key(name), "{name} in $defs");
    }
    for (name, def) in defs {
        let Some(props) = def["properties"].as_object() else {
            continue;
        };
        assert_eq!(def["additionalProperties"], false, "{name} is closed");
        for (field, p) in props {
            let said = p.get("description").is_some()
                || p["oneOf"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x.get("description").is_some()));
            assert!(said, "{name}.{field} has no description");
        }
    }
}

#[test]
fn launches_are_counted_per_job_by_who_decided_them() {
    let mut v = view();
    let s = Script::default();
    // The policy launches two maps; its next call fails and the fallback
    // (hadoop) launches the third.
    s.replies
        .lock()
        .unwrap()
        .push(reply(&[(1, 1, 0), (1, 0, 1)]));
    let mut e = external(&s, "fallback = \"hadoop\"");
    assert_eq!(offer(&mut e, 1_000, w(0), &mut v).len(), 2);
    assert_eq!(
        offer(&mut e, 2_000, w(1), &mut v).len(),
        1,
        "the fallback took the last map"
    );
    let by = e.launched_by(JobId(1)).unwrap();
    assert_eq!((by.policy, by.fallback), (2, 1));
    assert!(by.fallback_name.starts_with("hadoop"), "{by:?}");
    assert_eq!(
        e.launched_by(JobId(9)).map(|b| (b.policy, b.fallback)),
        Some((0, 0))
    );
}
