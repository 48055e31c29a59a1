//! The text forms of `[scheduler]`: names, presets, key lists, labels and
//! the errors that name a bad parameter.

use super::delay::DelayParams;
use super::dyndl_on::DyndlOnParams;
use super::hadoop::HadoopParams;
use super::opportunity::{DsParams, GccParams};
use super::planned::{BarParams, DyndlOffParams};
use super::rand_sched::RandParams;
use super::*;

#[test]
fn names_presets_and_parameters() {
    assert_eq!("hadoop".parse(), Ok(SchedulerConfig::hadoop()));
    assert_eq!(
        "policy = \"hadoop\", pick = \"oldest\"".parse(),
        Ok(SchedulerConfig::Hadoop(HadoopParams {
            pick: RemotePick::Oldest,
            order: JobOrder::Fifo,
        }))
    );
    assert_eq!("delay6".parse(), Ok(SchedulerConfig::delay(6.0)));
    assert_eq!(
        "delay6".parse::<SchedulerConfig>(),
        Ok(SchedulerConfig::Delay(DelayParams::new(6.0)))
    );
    assert_eq!(
        "ds0.25".parse(),
        Ok(SchedulerConfig::Ds(DsParams::new(0.25)))
    );
    assert_eq!("gcc".parse(), Ok(SchedulerConfig::Gcc(GccParams::new(0.9))));
    assert_eq!(
        "dyndl-off".parse(),
        Ok(SchedulerConfig::DyndlOff(DyndlOffParams {
            theta: 1.0,
            replan: false
        }))
    );
    assert_eq!(
        "policy = 'bar', q = 0.5, replan = true".parse(),
        Ok(SchedulerConfig::Bar(BarParams {
            q: 0.5,
            replan: true
        }))
    );
    let e = "policy = 'ds', fraction = 2"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("ds") && e.contains("[0, 1]"), "{e}");
    assert_eq!(
        "policy = \"rand\", randomness = 0.3".parse(),
        Ok(SchedulerConfig::Rand(RandParams {
            randomness: 0.3,
            order: JobOrder::Fifo,
        }))
    );
    let d: SchedulerConfig = "dyndl-on".parse().unwrap();
    assert_eq!(
        d,
        SchedulerConfig::DyndlOn(DyndlOnParams {
            w_s: 3.0,
            remote_s: 0.0,
            theta: 1.0,
            one_remote: true,
            pick: RemotePick::Random,
            wait: WaitClock::Worker,
            order: JobOrder::Fifo,
        })
    );
    assert_eq!(d.label(), "dyndl-on(W=3s,g=0s*(1+1n),one-remote)");
    let d: SchedulerConfig = "policy = 'dyndl-on', wait = 'core', order = 'fair'"
        .parse()
        .unwrap();
    assert_eq!(
        d.label(),
        "dyndl-on(W=3s,g=0s*(1+1n),one-remote,per-core,fair)"
    );
    let d: SchedulerConfig = "policy = 'delay', threshold_s = 3, order = 'fifo'"
        .parse()
        .unwrap();
    assert_eq!(d.label(), "delay3(fifo)");
    let d: SchedulerConfig = "policy = 'delay', threshold_s = 3, wait_from = 'last-launch'"
        .parse()
        .unwrap();
    assert_eq!(d.label(), "delay3(last-launch)");
    let d: SchedulerConfig =
        "policy = 'delay', threshold_s = 1.5, wait_from = 'skipped-heartbeats'"
            .parse()
            .unwrap();
    assert_eq!(d.label(), "delay1.5(skipped-heartbeats)");
    let e = "policy = 'delay', threshold_s = 3, wait_from = 'heartbeats'"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("heartbeats"), "{e}");
    let d: SchedulerConfig = "policy = 'strict', order = 'fair', head_only = true"
        .parse()
        .unwrap();
    assert_eq!(d.label(), "hfs-s(head)");
    let e = "policy = 'dyndl-on', wait = 'node'"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("node"), "{e}");
    assert_eq!(
        "delay10".parse::<SchedulerConfig>().unwrap().label(),
        "delay10"
    );
}

#[test]
fn bad_parameters_are_named() {
    let e = "policy = \"rand\", randomness = 1.5"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("randomness") && e.contains("1.5"), "{e}");
    let e = "policy = \"delay\"".parse::<SchedulerConfig>().unwrap_err();
    assert!(e.contains("threshold_s"), "{e}");
    let e = "policy = \"delay\", threshold_s = 3, x = 1"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains('x'), "{e}");
    let f: SchedulerConfig = "policy = \"fair\", weights = { a = 2, b = 1 }"
        .parse()
        .unwrap();
    assert_eq!(f.label(), "fair(delay=0s)");
    let e = "policy = \"fair\", weights = { a = 0 }"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("\"a\""), "{e}");
    let e = "fifo".parse::<SchedulerConfig>().unwrap_err();
    assert!(e.contains("fifo"), "{e}");
}

#[test]
fn strict_still_reads_its_old_fair_key() {
    // Specs recorded in results before `order` existed say `fair = ...`.
    for (old, new) in [
        (
            "policy = 'strict', fair = false, head_only = true",
            "policy = 'strict', order = 'fifo', head_only = true",
        ),
        (
            "policy = 'strict', fair = true",
            "policy = 'strict', order = 'fair'",
        ),
    ] {
        assert_eq!(
            old.parse::<SchedulerConfig>(),
            new.parse::<SchedulerConfig>()
        );
    }
    let e = "policy = 'strict', fair = true, order = 'fair'"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("old spelling"), "{e}");
    let e = "policy = 'strict', fairness = true"
        .parse::<SchedulerConfig>()
        .unwrap_err();
    assert!(e.contains("fairness"), "{e}");
}
