//! Generators (proptest strategies) of every wire type, valid by
//! construction, for property tests in the crates that encode and decode
//! them: this crate's JSON round trips, the master's journal, the
//! workers' block metadata. Numbers cover their whole range (floats stay
//! finite: JSON has no NaN), strings include any Unicode, and ids are the
//! ones their validators accept.

use crate::ids::{AttemptId, BlockId, JobId, TaskRef, WorkerId};
use crate::wire::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use workloads::{MapSummary, ReduceSummary, Workload};

/// Any Unicode text up to 24 characters.
pub fn text() -> impl Strategy<Value = String> {
    ".{0,24}"
}

/// A name a worker or a file may have.
pub fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,11}"
}

pub fn block_id() -> impl Strategy<Value = BlockId> {
    "[A-Za-z0-9_-][A-Za-z0-9._-]{0,40}".prop_map(|s| BlockId::new(s).expect("valid by pattern"))
}

pub fn worker_id() -> impl Strategy<Value = WorkerId> {
    any::<u32>().prop_map(WorkerId)
}

pub fn job_id() -> impl Strategy<Value = JobId> {
    any::<u32>().prop_map(JobId)
}

pub fn attempt_id() -> impl Strategy<Value = AttemptId> {
    (job_id(), any::<u32>(), any::<u32>()).prop_map(|(job, index, attempt)| AttemptId {
        task: TaskRef { job, index },
        attempt,
    })
}

pub fn workload() -> impl Strategy<Value = Workload> {
    prop_oneof![
        Just(Workload::InputSink),
        Just(Workload::Wordcount),
        Just(Workload::Sort),
        Just(Workload::SortLines),
        Just(Workload::Synthetic)
    ]
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        -1e6..1e6f64
    ]
}

pub fn block_info() -> impl Strategy<Value = BlockInfo> {
    (
        block_id(),
        name(),
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(id, file, index, file_blocks, len, generation)| BlockInfo {
                id,
                file,
                index,
                file_blocks,
                len,
                generation,
            },
        )
}

pub fn register_request() -> impl Strategy<Value = RegisterRequest> {
    (
        name(),
        text(),
        any::<u32>(),
        vec(block_info(), 0..4),
        any::<bool>(),
        vec(attempt_id(), 0..4),
        vec(attempt_id(), 0..4),
    )
        .prop_map(
            |(name, addr, slots, blocks, out_of_band_heartbeat, running, map_outputs)| {
                RegisterRequest {
                    name,
                    addr,
                    slots,
                    protocol: crate::wire::PROTOCOL,
                    blocks,
                    out_of_band_heartbeat,
                    running,
                    map_outputs,
                }
            },
        )
}

pub fn map_summary() -> impl Strategy<Value = MapSummary> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        vec(vec(any::<u8>(), 0..12), 0..4),
    )
        .prop_map(|(input_bytes, records, output_bytes, sample)| MapSummary {
            input_bytes,
            records,
            output_bytes,
            sample,
        })
}

pub fn reduce_summary() -> impl Strategy<Value = ReduceSummary> {
    (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()).prop_map(
        |(input_bytes, records, output_bytes, spilled_bytes)| ReduceSummary {
            input_bytes,
            records,
            output_bytes,
            spilled_bytes,
        },
    )
}

pub fn task_outcome() -> impl Strategy<Value = TaskOutcome> {
    let lost =
        (any::<u32>(), any::<u32>(), worker_id()).prop_map(|(map, attempt, worker)| LostOutput {
            map,
            attempt,
            worker,
        });
    prop_oneof![
        map_summary().prop_map(|summary| TaskOutcome::Succeeded { summary }),
        reduce_summary().prop_map(|summary| TaskOutcome::Reduced { summary }),
        text().prop_map(|error| TaskOutcome::Failed { error }),
        text().prop_map(|reason| TaskOutcome::Rejected { reason }),
        (vec(lost, 0..3), text())
            .prop_map(|(lost, error)| TaskOutcome::FetchFailed { lost, error }),
        text().prop_map(|error| TaskOutcome::NoSpace { error }),
    ]
}

pub fn task_result() -> impl Strategy<Value = TaskResult> {
    (
        attempt_id(),
        any::<u32>(),
        task_outcome(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(
                attempt,
                slot,
                outcome,
                started_unix_ms,
                finished_unix_ms,
                local_bytes,
                remote_bytes,
            )| {
                TaskResult {
                    attempt,
                    slot,
                    outcome,
                    started_unix_ms,
                    finished_unix_ms,
                    local_bytes,
                    remote_bytes,
                }
            },
        )
}

pub fn heartbeat() -> impl Strategy<Value = Heartbeat> {
    let busy =
        (any::<u64>(), option::of(any::<u64>())).prop_map(|(elapsed_ms, remaining_ms)| SlotBusy {
            elapsed_ms,
            remaining_ms,
        });
    let progress = (
        attempt_id(),
        any::<u64>(),
        any::<u32>(),
        option::of(any::<u32>()),
    )
        .prop_map(|(attempt, units, slot, done_ppm)| AttemptProgress {
            attempt,
            units,
            slot,
            done_ppm,
        });
    (
        (worker_id(), any::<u32>(), vec(attempt_id(), 0..4)),
        option::of(vec(block_info(), 0..3)),
        vec(task_result(), 0..3),
        vec(busy, 0..3),
        option::of(any::<u64>()),
        vec(progress, 0..3),
        (any::<u64>(), any::<u64>(), any::<u64>()),
        vec(
            (block_id(), "[a-z:/.0-9]{1,20}").prop_map(|(block, to)| CopyOrder { block, to }),
            0..2,
        ),
    )
        .prop_map(
            |(
                (worker, free_slots, running),
                blocks,
                results,
                busy,
                disk_free_bytes,
                progress,
                (rx, tx, incarnation),
                copies_failed,
            )| {
                Heartbeat {
                    worker,
                    free_slots,
                    running,
                    blocks,
                    results,
                    busy,
                    disk_free_bytes,
                    progress,
                    nic_rx_bytes: rx,
                    nic_tx_bytes: tx,
                    incarnation,
                    copies_failed,
                }
            },
        )
}

fn replica_addr() -> impl Strategy<Value = ReplicaAddr> {
    (worker_id(), text()).prop_map(|(worker, addr)| ReplicaAddr { worker, addr })
}

pub fn launch() -> impl Strategy<Value = Launch> {
    let source = prop_oneof![
        Just(ReplicaSource::Local),
        (worker_id(), text()).prop_map(|(worker, addr)| ReplicaSource::Remote { worker, addr }),
    ];
    let map = (
        block_id(),
        any::<u64>(),
        source,
        any::<u32>(),
        vec(replica_addr(), 0..3),
        any::<u64>(),
    )
        .prop_map(
            |(block, len, source, reduces, alternates, compute_ms)| LaunchTask::Map {
                block,
                len,
                source,
                reduces,
                alternates,
                compute_ms,
            },
        );
    let input = (any::<u32>(), any::<u32>(), worker_id(), text()).prop_map(
        |(map, attempt, worker, addr)| ShuffleInput {
            map,
            attempt,
            worker,
            addr,
        },
    );
    let range = option::of(
        (
            option::of(vec(any::<u8>(), 0..10)),
            option::of(vec(any::<u8>(), 0..10)),
        )
            .prop_map(|(lo, hi)| KeyRange { lo, hi }),
    );
    let output = (
        block_id(),
        name(),
        any::<u32>(),
        any::<u32>(),
        vec(text(), 0..3),
        any::<u64>(),
    )
        .prop_map(
            |(block, file, index, file_blocks, replicas, generation)| OutputTarget {
                block,
                file,
                index,
                file_blocks,
                replicas,
                generation,
            },
        );
    let reduce = (any::<u32>(), vec(input, 0..3), range, output).prop_map(
        |(partition, inputs, range, output)| {
            LaunchTask::Reduce(ReduceLaunch {
                partition,
                inputs,
                range,
                output,
            })
        },
    );
    (
        attempt_id(),
        workload(),
        prop_oneof![map, reduce],
        option::of(ratios()),
    )
        .prop_map(|(attempt, workload, task, ratios)| Launch {
            attempt,
            workload,
            task,
            ratios,
        })
}

pub fn ratios() -> impl Strategy<Value = workloads::Ratios> {
    (finite(), finite()).prop_map(|(shuffle, output)| workloads::Ratios { shuffle, output })
}

pub fn heartbeat_reply() -> impl Strategy<Value = HeartbeatReply> {
    let copy = (block_id(), text()).prop_map(|(block, to)| CopyOrder { block, to });
    let refused = (attempt_id(), text()).prop_map(|(attempt, reason)| Refused { attempt, reason });
    let stale = (block_id(), any::<u64>())
        .prop_map(|(block, generation)| StaleReplica { block, generation });
    (
        (vec(launch(), 0..3), vec(job_id(), 0..3), any::<bool>()),
        (vec(copy, 0..3), vec(block_id(), 0..3), vec(stale, 0..3)),
        (vec(attempt_id(), 0..3), any::<bool>(), vec(refused, 0..3)),
    )
        .prop_map(
            |(
                (launches, forget_jobs, reregister),
                (copy_blocks, drop_blocks, drop_stale),
                (kill, lost, refused),
            )| HeartbeatReply {
                launches,
                forget_jobs,
                reregister,
                copy_blocks,
                drop_blocks,
                drop_stale,
                kill,
                lost,
                refused,
            },
        )
}

pub fn job_submit() -> impl Strategy<Value = JobSubmit> {
    let compute =
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(min_ms, max_ms, seed)| TaskCompute {
            min_ms,
            max_ms,
            seed,
        });
    (
        workload(),
        name(),
        option::of(text()),
        option::of(text()),
        option::of(any::<u32>()),
        option::of(name()),
        option::of(compute),
        option::of(finite()),
        option::of(finite()),
        option::of(ratios()),
        option::of(any::<u32>()),
    )
        .prop_map(
            |(
                workload,
                input,
                name,
                group,
                reduces,
                output,
                compute,
                deadline_s,
                budget,
                ratios,
                output_replication,
            )| {
                JobSubmit {
                    workload,
                    input,
                    name,
                    group,
                    reduces,
                    output,
                    compute,
                    deadline_s,
                    budget,
                    ratios,
                    output_replication,
                }
            },
        )
}

fn task_kind() -> impl Strategy<Value = TaskKind> {
    prop_oneof![Just(TaskKind::Map), Just(TaskKind::Reduce)]
}

fn locality() -> impl Strategy<Value = Locality> {
    prop_oneof![Just(Locality::DataLocal), Just(Locality::DataRemote)]
}

pub fn task_record() -> impl Strategy<Value = TaskRecord> {
    (
        (
            any::<u32>(),
            task_kind(),
            any::<u32>(),
            name(),
            any::<u32>(),
        ),
        (locality(), name(), block_id()),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (any::<bool>(), option::of(text())),
    )
        .prop_map(
            |(
                (task, kind, attempt, worker, slot),
                (locality, source, block),
                (start_ms, end_ms, input_bytes, local_bytes, remote_bytes),
                (ok, error),
            )| TaskRecord {
                task,
                kind,
                attempt,
                worker,
                slot,
                locality,
                source,
                block,
                start_ms,
                end_ms,
                input_bytes,
                local_bytes,
                remote_bytes,
                ok,
                error,
            },
        )
}

fn job_state() -> impl Strategy<Value = JobState> {
    prop_oneof![
        Just(JobState::Pending),
        Just(JobState::Running),
        Just(JobState::Succeeded),
        Just(JobState::Failed)
    ]
}

pub fn job_report() -> impl Strategy<Value = JobReport> {
    let running = (
        any::<u32>(),
        task_kind(),
        any::<u32>(),
        name(),
        option::of(any::<u32>()),
        locality(),
        name(),
        any::<u64>(),
    )
        .prop_map(
            |(task, kind, attempt, worker, slot, locality, source, start_ms)| RunningRecord {
                task,
                kind,
                attempt,
                worker,
                slot,
                locality,
                source,
                start_ms,
            },
        );
    (
        (
            job_id(),
            name(),
            workload(),
            name(),
            name(),
            name(),
            job_state(),
        ),
        (
            option::of(text()),
            any::<u64>(),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
        ),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
        ),
        (
            option::of(name()),
            option::of(1..=5u32),
            vec(task_record(), 0..3),
            vec(running, 0..2),
        ),
        (
            option::of(any::<u64>()),
            option::of(any::<bool>()),
            option::of(finite()),
            any::<u32>(),
            any::<u32>(),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            option::of((any::<u32>(), any::<u32>(), name())),
        ),
    )
        .prop_map(
            |(
                (job, name, workload, input, group, scheduler, state),
                (error, submit_unix_ms, start_ms, finish_ms, jct_ms),
                (tasks, tasks_done, data_local, data_remote),
                (bytes_local, bytes_remote, reduces, reduces_done, shuffle_bytes),
                (output, output_replication, attempts, running),
                (deadline_ms, deadline_met, budget, master_restarts, restart_reruns),
                (backups, backups_won, decided_by),
            )| JobReport {
                job,
                name,
                workload,
                input,
                group,
                scheduler,
                state,
                error,
                submit_unix_ms,
                start_ms,
                finish_ms,
                jct_ms,
                tasks,
                tasks_done,
                data_local,
                data_remote,
                bytes_local,
                bytes_remote,
                reduces,
                reduces_done,
                shuffle_bytes,
                output,
                output_replication,
                attempts,
                running,
                deadline_ms,
                deadline_met,
                budget,
                public_cost: None,
                master_restarts,
                restart_reruns,
                backups,
                backups_won,
                decided_by: decided_by.map(|(policy, fallback, fallback_name)| {
                    crate::wire::DecidedBy {
                        policy,
                        fallback,
                        fallback_name,
                    }
                }),
            },
        )
}

pub fn file_info() -> impl Strategy<Value = FileInfo> {
    (
        name(),
        any::<u32>(),
        any::<u64>(),
        any::<bool>(),
        vec(vec(name(), 0..3), 0..4),
        option::of(any::<u32>()),
    )
        .prop_map(
            |(name, blocks, bytes, complete, replicas, replication)| FileInfo {
                name,
                blocks,
                bytes,
                complete,
                replicas,
                replication,
            },
        )
}

/// Generated-input tests of the JSON encoding: every message type round
/// trips, and decoding damaged or arbitrary bytes gives a value or an
/// error, never a panic (`ctl/tests/fuzz.rs` sends such bytes to the
/// real servers; these cover the decoders on their own, many more times).
#[cfg(test)]
mod props {
    use crate::strategies as st;
    use crate::wire::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::sample::Index;
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    /// `x` encodes, decodes and encodes to the same JSON again.
    fn round_trips<T: Serialize + DeserializeOwned>(x: &T) -> Result<(), TestCaseError> {
        let a = serde_json::to_string(x).expect("every wire value encodes");
        let back: T =
            serde_json::from_str(&a).map_err(|e| TestCaseError::fail(format!("{e}: {a}")))?;
        prop_assert_eq!(serde_json::to_string(&back).unwrap(), a);
        Ok(())
    }

    /// Every decoder the servers run on a body, on `bytes`.
    fn decode_all(bytes: &[u8]) {
        let _ = serde_json::from_slice::<RegisterRequest>(bytes);
        let _ = serde_json::from_slice::<Heartbeat>(bytes);
        let _ = serde_json::from_slice::<HeartbeatReply>(bytes);
        let _ = serde_json::from_slice::<JobSubmit>(bytes);
        let _ = serde_json::from_slice::<JobReport>(bytes);
        let _ = serde_json::from_slice::<FileInfo>(bytes);
        let _ = serde_json::from_slice::<FileReplication>(bytes);
        let _ = serde_json::from_slice::<Launch>(bytes);
        let _ = serde_json::from_slice::<TaskResult>(bytes);
        let _ = serde_json::from_slice::<ErrorBody>(bytes);
    }

    /// `bytes` cut at `cut` with `flips` applied.
    fn damage(mut bytes: Vec<u8>, cut: Index, flips: &[(Index, u8)]) -> Vec<u8> {
        if !bytes.is_empty() {
            for (i, b) in flips {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn registrations_round_trip(x in st::register_request()) { round_trips(&x)?; }

        #[test]
        fn heartbeats_round_trip(x in st::heartbeat()) { round_trips(&x)?; }

        #[test]
        fn heartbeat_replies_round_trip(x in st::heartbeat_reply()) { round_trips(&x)?; }

        #[test]
        fn submissions_round_trip(x in st::job_submit()) { round_trips(&x)?; }

        #[test]
        fn job_reports_round_trip(x in st::job_report()) { round_trips(&x)?; }

        #[test]
        fn file_infos_round_trip(x in st::file_info()) { round_trips(&x)?; }

        #[test]
        fn decoders_never_panic_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..600)) {
            decode_all(&bytes);
        }

        #[test]
        fn decoders_never_panic_on_damaged_messages(
            hb in st::heartbeat(),
            reply in st::heartbeat_reply(),
            report in st::job_report(),
            cut in any::<Index>(),
            flips in vec((any::<Index>(), any::<u8>()), 0..4),
        ) {
            for bytes in [
                serde_json::to_vec(&hb).unwrap(),
                serde_json::to_vec(&reply).unwrap(),
                serde_json::to_vec(&report).unwrap(),
            ] {
                decode_all(&damage(bytes, cut, &flips));
            }
        }

        /// A block id inside a message is checked as it decodes: one that
        /// breaks the rule is refused with an error naming it.
        #[test]
        fn a_bad_block_id_in_a_message_is_refused_by_name(bad in "[A-Za-z0-9]{0,8}[/ :\\\\]") {
            let body = format!(
                r#"{{"id":{},"file":"f","index":0,"file_blocks":1,"len":1}}"#,
                serde_json::to_string(&bad).unwrap()
            );
            let e = serde_json::from_str::<BlockInfo>(&body).map(|_| ()).unwrap_err().to_string();
            prop_assert!(e.contains("block id"), "{}", e);
        }
    }
}
