use super::*;
use crate::replay::{
    replay, BackgroundRun, RemoteModel, ReplayCluster, ReplayJob, ReplayOutcome, ReplayTask,
};
use base::{JobId, WorkerId};

const SEED: u64 = 11;

/// Six jobs on five workers of two slots: maps whose blocks sit on one or
/// two workers (so some policies read remotely), reduces in every other
/// job, background processes, jittered heartbeats: every kind of input.
fn outcome(config: &SchedulerConfig, placement: ReducePlacement) -> ReplayOutcome {
    let n = 5u32;
    let jobs: Vec<ReplayJob> = (0..6u32)
        .map(|j| ReplayJob {
            id: JobId(j + 1),
            arrival_ms: u64::from(j) * 700,
            tasks: (0..(4 + j % 3 * 3))
                .map(|i| ReplayTask {
                    index: i,
                    replicas: if i % 2 == 0 {
                        vec![WorkerId((j + i) % 2)]
                    } else {
                        vec![WorkerId((j + i) % n), WorkerId((j + 2 * i + 1) % n)]
                    },
                    local_ms: 600 + u64::from((i * 7 + j * 3) % 5) * 150,
                    bytes: 1 << 20,
                })
                .collect(),
            reduces: (0..(j % 2 * 2))
                .map(|i| ReplayTask {
                    index: 100 + i,
                    replicas: Vec::new(),
                    local_ms: 900,
                    bytes: 0,
                })
                .collect(),
            reduce_load: 4 << 20,
        })
        .collect();
    let background = [
        BackgroundRun {
            worker: WorkerId(0),
            start_ms: 0,
            end_ms: 1_800,
        },
        BackgroundRun {
            worker: WorkerId(3),
            start_ms: 1_200,
            end_ms: 2_500,
        },
    ];
    let cluster = ReplayCluster {
        slots: vec![2; n as usize],
        heartbeat_ms: 300,
        phase_ms: (0..u64::from(n)).map(|i| i * 53).collect(),
        period_ms: Vec::new(),
        out_of_band: true,
        runs_maps: Vec::new(),
        runs_reduces: Vec::new(),
        jitter_ms: 40,
        jitter_seed: 5,
        record_decisions: true,
        host_ms_per_start: 0.0,
        slowdown: Vec::new(),
        speculation: Default::default(),
        recorded_beats: Vec::new(),
        measured_ms: Default::default(),
        disk: None,
        shuffle_net: None,
    };
    let mut policy = sched::build(config, SEED);
    let mut placer = ReducePlacer::new(placement, config);
    replay(
        policy.as_mut(),
        &mut placer,
        &cluster,
        &jobs,
        &background,
        RemoteModel::FairShare {
            transfer_ms: 400.0,
            ref_bytes: 1 << 20,
        },
        120_000,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", config.label()))
}

fn record<'a>(config: &'a SchedulerConfig, o: &'a ReplayOutcome) -> Record<'a> {
    Record {
        scheduler: config,
        seed: SEED,
        reduce_placement: ReducePlacement::Policy,
        inputs: &o.inputs,
        decisions: &o.decisions,
    }
}

#[test]
fn every_policy_decides_the_same_again_row_for_row() {
    for config in SchedulerConfig::examples().into_iter().map(|(_, s)| {
        s.parse::<SchedulerConfig>()
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }) {
        let o = outcome(&config, ReducePlacement::Policy);
        let label = config.label();
        assert!(!o.decisions.is_empty(), "{label}: no decision recorded");
        assert!(
            o.decisions
                .iter()
                .any(|d| d.kind == sched::decision::Kind::Map),
            "{label}: no map launched"
        );
        let done = recheck(record(&config, &o)).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(done.decisions, o.decisions.len(), "{label}");
        let offers = o.inputs.iter().filter(|i| i.is_offer()).count();
        assert_eq!(done.offers, offers, "{label}");
    }
}

#[test]
fn every_reduce_placement_decides_the_same_again() {
    let config: SchedulerConfig = "fair".parse().unwrap();
    for placement in [
        ReducePlacement::FirstFree,
        ReducePlacement::Spread,
        ReducePlacement::LeastLoaded,
        ReducePlacement::MostOutput,
    ] {
        let o = outcome(&config, placement);
        assert!(
            o.decisions
                .iter()
                .any(|d| d.kind == sched::decision::Kind::Reduce),
            "{placement:?}"
        );
        let r = Record {
            reduce_placement: placement,
            ..record(&config, &o)
        };
        recheck(r).unwrap_or_else(|e| panic!("{placement:?}: {e}"));
    }
}

#[test]
fn a_record_read_back_from_json_decides_the_same() {
    let config: SchedulerConfig = "policy = 'delay', threshold_s = 0.5".parse().unwrap();
    let o = outcome(&config, ReducePlacement::Policy);
    let inputs: Vec<Input> =
        serde_json::from_str(&serde_json::to_string(&o.inputs).unwrap()).unwrap();
    assert_eq!(inputs, o.inputs);
    let decisions: Vec<Decision> =
        serde_json::from_str(&serde_json::to_string(&o.decisions).unwrap()).unwrap();
    recheck(Record {
        inputs: &inputs,
        decisions: &decisions,
        ..record(&config, &o)
    })
    .unwrap();
}

#[test]
fn a_changed_decision_is_found_at_its_row() {
    let config: SchedulerConfig = "hadoop".parse().unwrap();
    let o = outcome(&config, ReducePlacement::Policy);
    let row = o
        .decisions
        .iter()
        .position(|d| d.kind == sched::decision::Kind::Map && d.worker == d.source)
        .unwrap();
    let mut changed = o.decisions.clone();
    changed[row].source = Some(WorkerId(4));
    let e = recheck(Record {
        decisions: &changed,
        ..record(&config, &o)
    })
    .unwrap_err();
    assert_eq!(e.row, row);
    assert_eq!(e.recorded.as_deref(), Some(&changed[row]));
    assert_eq!(e.again.as_deref(), Some(&o.decisions[row]));
    assert!(e.to_string().contains(&format!("row {row}")), "{e}");
    // A row the policy never made again.
    let mut extra = o.decisions.clone();
    extra.push(o.decisions[0].clone());
    let e = recheck(Record {
        decisions: &extra,
        ..record(&config, &o)
    })
    .unwrap_err();
    assert_eq!((e.row, e.input, e.again), (o.decisions.len(), None, None));
}

#[test]
fn a_missing_input_changes_what_follows() {
    // Without its second job the policy launches other tasks from then on.
    let config: SchedulerConfig = "hadoop".parse().unwrap();
    let o = outcome(&config, ReducePlacement::Policy);
    let ended = o
        .inputs
        .iter()
        .position(|i| matches!(i, Input::Job { job, .. } if *job == JobId(2)))
        .unwrap();
    let mut inputs = o.inputs.clone();
    inputs.remove(ended);
    let e = recheck(Record {
        inputs: &inputs,
        ..record(&config, &o)
    })
    .unwrap_err();
    assert!(e.input.is_some_and(|i| i >= ended), "{e}");
    // A different seed is a different policy for one that draws.
    let rand: SchedulerConfig = "policy = 'rand', randomness = 0.5".parse().unwrap();
    let o = outcome(&rand, ReducePlacement::Policy);
    recheck(record(&rand, &o)).unwrap();
    assert!(recheck(Record {
        seed: SEED + 1,
        ..record(&rand, &o)
    })
    .is_err());
}
