//! `mrosa` and `coshic` on small hand-worked instances: which maps go
//! public, which instance type is picked, when a job is refused, and what
//! the budget changes.
//!
//! One private worker w0 with 2 slots paced at 1 MB/s and a 10 MB/s link;
//! one job of four 1 MB maps, all with a replica on w0, no reduces. A
//! private map takes 1 s, so Algorithm I ends maps 0 and 1 at 1 s and maps
//! 2 and 3 at 2 s. Three instance types (no data prices):
//! - `cheap`: 1 slot, speed 1, 1 MB/s link, 0.5 s start, 1/s: a map takes
//!   1 + 1 = 2 s (cost 2), done 2.5 s after the request;
//! - `mid`: 1 slot, speed 1, 10 MB/s, 0.2 s start, 3/s: 1 + 0.1 = 1.1 s
//!   (cost 3.3), done at 1.3 s;
//! - `fast`: 2 slots, speed 2, 10 MB/s, 0.2 s start, 10/s: 0.5 + 0.1 =
//!   0.6 s (cost 6), done at 0.8 s.

use crate::hybrid::{InstanceRequest, WorkerProfile};
use crate::policy::SchedulerConfig;
use crate::view::*;
use base::public::PublicType;
use base::{JobId, TaskRef, WorkerId};

const MB: u64 = 1_000_000;

fn ty(name: &str, slots: u32, speed: f64, link_mbs: f64, start_s: f64, price: f64) -> PublicType {
    PublicType {
        name: name.into(),
        provider: String::new(),
        slots,
        speed,
        nic_mbps: link_mbs * 8.0,
        start_s,
        price_per_s: price,
        storage_per_gb: 0.0,
        transfer_in_per_gb: 0.0,
        transfer_out_per_gb: 0.0,
    }
}

fn setup(deadline_ms: Option<u64>, budget: Option<f64>) -> ClusterView {
    setup_n(4, deadline_ms, budget)
}

fn setup_n(maps: u32, deadline_ms: Option<u64>, budget: Option<f64>) -> ClusterView {
    let mut v = ClusterView::new();
    v.upsert_worker(WorkerId(0), 2);
    let h = v.hybrid_mut();
    h.set_types(
        vec![
            ty("cheap", 1, 1.0, 1.0, 0.5, 1.0),
            ty("mid", 1, 1.0, 10.0, 0.2, 3.0),
            ty("fast", 2, 2.0, 10.0, 0.2, 10.0),
        ],
        8,
    );
    h.set_profile(
        WorkerId(0),
        WorkerProfile {
            slot_rate: Some(1e6),
            nic: Some(10e6),
            speed: 1.0,
        },
    );
    let tasks = (0..maps)
        .map(|i| PendingTask {
            task: TaskRef {
                job: JobId(1),
                index: i,
            },
            len: MB,
            replicas: vec![WorkerId(0)],
        })
        .collect();
    v.add_job(JobId(1), 0, "default", tasks);
    v.set_job_qos(
        JobId(1),
        JobQos {
            deadline: deadline_ms,
            budget,
            input_bytes: maps as u64 * MB,
            reduces: 0,
        },
    );
    v
}

type Outcome = (Vec<Assignment>, Vec<InstanceRequest>, Vec<String>);

fn run(policy: &str, v: &mut ClusterView) -> Outcome {
    run_with(&mut build(policy), v)
}

fn build(policy: &str) -> Box<dyn Scheduler> {
    let cfg: SchedulerConfig = policy.parse().unwrap();
    crate::policy::build(&cfg, 1)
}

fn run_with(s: &mut Box<dyn Scheduler>, v: &mut ClusterView) -> Outcome {
    let a = offer(s.as_mut(), 0, WorkerId(0), v);
    let req = v.hybrid_mut().take_requests();
    let refused = v
        .hybrid_mut()
        .take_refusals()
        .into_iter()
        .map(|(_, why)| why)
        .collect();
    (a, req, refused)
}

fn type_names(v: &ClusterView, req: &[InstanceRequest]) -> Vec<String> {
    req.iter()
        .map(|r| v.hybrid().types[r.ty].name.clone())
        .collect()
}

#[test]
fn mrosa_keeps_a_job_private_when_its_deadline_allows() {
    let mut v = setup(Some(2_500), None);
    let (a, req, refused) = run("mrosa", &mut v);
    assert!(req.is_empty() && refused.is_empty());
    assert_eq!(a.len(), 2, "both slots take a map");
    assert!(a.iter().all(Assignment::is_local));
}

#[test]
fn mrosa_sends_the_late_maps_to_the_cheapest_type_that_meets_the_deadline() {
    // Deadline 1.5 s: maps 2 and 3 would end at 2 s privately. `cheap`
    // would end at 2.5 s; `mid` (3.3) is cheaper than `fast` (6) and ends
    // at 1.3 s. A second map on the same `mid` would end at 2.4 s, so
    // each gets its own.
    let mut v = setup(Some(1_500), None);
    let mut s = build("mrosa");
    let (a, req, refused) = run_with(&mut s, &mut v);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(type_names(&v, &req), ["mid", "mid"]);
    assert_eq!(a.len(), 2);
    let private: Vec<u32> = a.iter().map(|x| x.task.index).collect();
    assert_eq!(private, [0, 1], "maps 0 and 1 stay private");
    // The first instance registers as worker 5 and takes a public map.
    v.upsert_worker(WorkerId(5), 1);
    v.hybrid_mut().instance_up(req[0].id, WorkerId(5));
    let b = offer(s.as_mut(), 200, WorkerId(5), &mut v);
    assert_eq!(b.len(), 1);
    assert_eq!(
        b[0].source,
        WorkerId(0),
        "it reads the replica over its link"
    );
}

#[test]
fn mrosa_refuses_a_job_no_type_can_finish_in_time() {
    // Deadline 0.7 s: no private slot ends a map by then, and the fastest
    // type needs 0.2 s + 0.6 s.
    let mut v = setup(Some(700), None);
    let (a, req, refused) = run("mrosa", &mut v);
    assert!(
        a.is_empty() && req.is_empty(),
        "nothing runs, nothing is rented"
    );
    assert_eq!(refused.len(), 1);
    assert!(refused[0].contains("fast"), "{}", refused[0]);
}

#[test]
fn mrosa_picks_the_faster_type_when_only_it_meets_the_deadline() {
    // Deadline 1 s: maps 0 and 1 end at 1 s privately; `mid` would end at
    // 1.3 s, so 2 and 3 go to one `fast` (two slots, both end at 0.8 s).
    let mut v = setup(Some(1_000), None);
    let (_, req, refused) = run("mrosa", &mut v);
    assert!(refused.is_empty());
    assert_eq!(type_names(&v, &req), ["fast"]);
}

#[test]
fn mrosa_keeps_maps_private_beyond_the_budget() {
    // A `mid` map costs 3.3 plus 0.6 of billed start-up: a budget of 5
    // pays for one instance; the other late map stays private.
    let mut v = setup(Some(1_500), Some(5.0));
    let (_, req, _) = run("mrosa", &mut v);
    assert_eq!(type_names(&v, &req), ["mid"]);
}

#[test]
fn mrosa_without_public_types_never_refuses() {
    let mut v = setup(Some(700), None);
    v.hybrid_mut().set_types(Vec::new(), 0);
    let (a, req, refused) = run("mrosa", &mut v);
    assert!(req.is_empty() && refused.is_empty());
    assert_eq!(a.len(), 2);
}

#[test]
fn coshic_moves_the_whole_job_to_the_cheapest_set_of_one_type() {
    // Privately the maps end at 2 s > 1.5 s: the whole job goes out.
    // `mid` needs 4 instances for one wave (4 x 3 x 1.3 = 15.6); `fast`
    // does two waves on one instance in 0.2 + 1.2 s (10 x 1.4 = 14).
    let mut v = setup(Some(1_500), None);
    let (a, req, refused) = run("coshic", &mut v);
    assert!(refused.is_empty());
    assert_eq!(type_names(&v, &req), ["fast"]);
    assert!(a.is_empty(), "no map of an outsourced job runs privately");
}

#[test]
fn maps_planned_for_an_instance_that_is_lost_run_privately() {
    // COSHIC sends the whole job to one `fast`; it is lost (or never
    // registers): nothing else would take its maps, so the private
    // worker does, late but done.
    for policy in ["coshic", "mrosa"] {
        let mut s = build(policy);
        let mut v = setup(Some(1_500), None);
        let (a, req, _) = run_with(&mut s, &mut v);
        assert!(!req.is_empty(), "{policy}");
        let before = a.len();
        for r in &req {
            v.hybrid_mut().instance_gone(r.id);
        }
        let (a, req, _) = run_with(&mut s, &mut v);
        assert!(req.is_empty(), "{policy}: {req:?}");
        assert_eq!(
            before + a.len(),
            2,
            "{policy}: both slots of w0 busy: {a:?}"
        );
        assert!(a.iter().all(|x| x.worker == WorkerId(0)));
    }
}

#[test]
fn coshic_runs_privately_what_meets_its_deadline_and_refuses_the_impossible() {
    let mut v = setup(Some(2_500), None);
    let (a, req, _) = run("coshic", &mut v);
    assert!(req.is_empty());
    assert_eq!(a.len(), 2);
    let mut v = setup(Some(700), None);
    let (_, req, refused) = run("coshic", &mut v);
    assert!(req.is_empty());
    assert_eq!(refused.len(), 1, "{refused:?}");
}

#[test]
fn coshic_over_budget_stays_private() {
    let mut v = setup(Some(1_500), Some(10.0));
    let (a, req, _) = run("coshic", &mut v);
    assert!(req.is_empty());
    assert_eq!(a.len(), 2);
}

#[test]
fn an_instances_slots_share_its_link() {
    // Ten maps, deadline 3.5 s: privately six end by 3 s, four go out. The
    // only type, `wide`, has 4 slots (1 s of compute) behind a 1 MB/s link
    // (1 s per map): after its 0.2 s start the link moves one map a second,
    // so maps end at 2.2 and 3.2 s and a third would end at 4.2 s. Two
    // instances, not the one that four slots would suggest.
    let mut v = setup_n(10, Some(3_500), None);
    v.hybrid_mut()
        .set_types(vec![ty("wide", 4, 1.0, 1.0, 0.2, 1.0)], 8);
    let (_, req, refused) = run("mrosa", &mut v);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(type_names(&v, &req), ["wide", "wide"]);
    // COSHIC sends all ten: an instance ends its maps at 2.2, 3.2, 4.2 s,
    // ..., so at most two each: five instances.
    let mut v = setup_n(10, Some(3_500), None);
    v.hybrid_mut()
        .set_types(vec![ty("wide", 4, 1.0, 1.0, 0.2, 1.0)], 8);
    let (_, req, _) = run("coshic", &mut v);
    assert_eq!(req.len(), 5);
}
