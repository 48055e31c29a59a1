//! `mrtb._native`: the testbed's simulator for the `mrtb` Python package.
//!
//! - `register_policy(name, handler)`: a Python policy the simulator
//!   reaches as `policy = "external", address = "inproc:<name>"`; `handler`
//!   takes one request line of the external protocol and returns the reply
//!   line (`mrtb.policy.Sessions.answer` makes one of a policy class), so a
//!   Python policy runs through the same `sched::policy::external` code as
//!   one served on a socket to a real master.
//! - `simulate_trace(spec, calibration, schedulers, ...)`: `master sim
//!   trace`, returning its table, one dict per run and, if asked, one dict
//!   per task run;
//! - `generate_instance(path, ...)` and `simulate_instance(path,
//!   schedulers, ...)`: a planning instance (`master sim gen`) and the
//!   online policies on it in the discrete-event simulator.
//!
//! Other addresses (`unix:`, `tcp:`) go through `common::policy_socket`.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sched::policy::external::{CallError, Connect, PolicyCall};
use sched::policy::SchedulerConfig;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// One dict per row.
type Rows<'py> = Vec<Bound<'py, PyDict>>;

/// Python handlers by name.
fn registry() -> &'static Mutex<HashMap<String, Arc<Py<PyAny>>>> {
    static R: OnceLock<Mutex<HashMap<String, Arc<Py<PyAny>>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// `inproc:` names to the registered handlers, sockets to
/// `common::policy_socket`.
struct Connector;

impl Connect for Connector {
    fn connect(&self, address: &str, timeout_ms: u64) -> Box<dyn PolicyCall> {
        match address.strip_prefix("inproc:") {
            Some(name) => Box::new(InProcess {
                name: name.to_owned(),
            }),
            None => common::policy_socket::SocketConnector.connect(address, timeout_ms),
        }
    }
}

struct InProcess {
    name: String,
}

impl PolicyCall for InProcess {
    fn call(&mut self, request: &str) -> Result<String, CallError> {
        let handler = registry()
            .lock()
            .expect("registry lock")
            .get(&self.name)
            .cloned()
            .ok_or_else(|| {
                CallError::Unreachable(format!(
                    "no Python policy registered as {:?} (mrtb._native.register_policy)",
                    self.name
                ))
            })?;
        Python::attach(|py| {
            let out = handler.call1(py, (request,)).map_err(|e| {
                CallError::Unreachable(format!("the Python policy {:?} raised {e}", self.name))
            })?;
            out.extract::<String>(py).map_err(|e| {
                CallError::Unreachable(format!(
                    "the Python policy {:?} returned no reply line: {e}",
                    self.name
                ))
            })
        })
    }
}

/// Registers `handler` (a callable from a request line to a reply line) as
/// `inproc:<name>`; a later one of the same name replaces it.
#[pyfunction]
fn register_policy(name: &str, handler: Py<PyAny>) -> PyResult<()> {
    if name.is_empty() {
        return Err(PyValueError::new_err("a policy's name must not be empty"));
    }
    registry()
        .lock()
        .expect("registry lock")
        .insert(name.to_owned(), Arc::new(handler));
    Ok(())
}

/// `master sim trace SPEC --calibration CALIBRATION` with `schedulers`
/// (each as `--scheduler` takes it; empty: the spec's), `workers` and
/// `slots` instead of the spec's, one run of each with `seed` instead of
/// the spec's repetitions if given, reduces timed as `shuffle` says
/// ("auto", "network" or "fitted"). Returns (the table, one dict per run,
/// one dict per task run when `tasks`).
#[pyfunction]
#[pyo3(signature = (spec, calibration, schedulers, workers=None, slots=None, tasks=false, seed=None, shuffle="auto"))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments
fn simulate_trace<'py>(
    py: Python<'py>,
    spec: PathBuf,
    calibration: PathBuf,
    schedulers: Vec<String>,
    workers: Option<u32>,
    slots: Option<u32>,
    tasks: bool,
    seed: Option<u64>,
    shuffle: &str,
) -> PyResult<(String, Rows<'py>, Rows<'py>)> {
    let shuffle = shuffle
        .parse::<ctl::simulation::trace::ShuffleModel>()
        .map_err(PyValueError::new_err)?;
    let configs = schedulers
        .iter()
        .map(|s| {
            s.parse::<SchedulerConfig>()
                .map_err(|e| PyValueError::new_err(format!("scheduler {s:?}: {e}")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let opts = ctl::simulation::trace::TraceOptions {
        schedulers: configs,
        keep_outcomes: tasks,
        seed,
        shuffle,
        ..ctl::simulation::trace::TraceOptions::at(workers, slots)
    };
    // The simulation runs without the interpreter; a Python policy's call
    // attaches again.
    let (table, runs) = py
        .detach(|| ctl::simulation::trace::run(&spec, &calibration, &opts))
        .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))?;
    let mut rows = Vec::new();
    let mut task_rows = Vec::new();
    for r in &runs {
        let d = PyDict::new(py);
        d.set_item("point", &r.point)?;
        d.set_item("scheduler", &r.scheduler)?;
        d.set_item("seed", r.seed)?;
        d.set_item("mean_jct_s", r.mean_jct_s)?;
        d.set_item("makespan_s", r.makespan_s)?;
        d.set_item("remote", r.remote)?;
        d.set_item("maps", r.maps)?;
        d.set_item("backups", r.backups)?;
        d.set_item("backups_won", r.backups_won)?;
        d.set_item("wall_s", r.wall_s)?;
        d.set_item("events", r.events)?;
        d.set_item("error", r.error.as_deref())?;
        for (name, v) in &r.counters {
            d.set_item(format!("policy_{name}"), v)?;
        }
        rows.push(d);
        if let Some(o) = &r.outcome {
            for t in &o.runs {
                let d = PyDict::new(py);
                d.set_item("point", &r.point)?;
                d.set_item("scheduler", &r.scheduler)?;
                d.set_item("seed", r.seed)?;
                d.set_item("job", t.task.job.0)?;
                d.set_item("task", t.task.index)?;
                d.set_item("reduce", t.reduce)?;
                d.set_item("worker", t.worker.0)?;
                d.set_item("source", t.source.0)?;
                d.set_item("start_ms", t.start_ms)?;
                d.set_item("end_ms", t.end_ms)?;
                task_rows.push(d);
            }
        }
    }
    Ok((table, rows, task_rows))
}

/// Writes a generated planning instance (DynDL's generator, as `master
/// sim gen`): `servers` x `cores`, `tasks` tasks of one job with
/// `replication` replicas each, initial loads up to `beta`, DynDL's remote
/// cost with `theta`.
#[pyfunction]
#[pyo3(signature = (path, servers, cores, tasks, replication=3, beta=1000.0, theta=1.0, seed=1))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments
fn generate_instance(
    path: PathBuf,
    servers: u32,
    cores: u32,
    tasks: u32,
    replication: u32,
    beta: f64,
    theta: f64,
    seed: u64,
) -> PyResult<()> {
    let params = ctl::simulation::GenParams {
        servers,
        cores,
        tasks,
        replication,
        alpha: 0.0,
        beta,
        cost: ctl::simulation::Cost::Dyndl { theta },
        idle: None,
        racks: None,
        placement: Default::default(),
    };
    params
        .validate()
        .map_err(|e| PyValueError::new_err(format!("instance parameters: {e}")))?;
    ctl::simulation::write_instance(&params.generate(seed), &path)
        .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))
}

/// Runs each of `schedulers` on the instance file at `path` in the
/// discrete-event simulator (`master sim run`'s online part: every task of
/// the instance's one job, offers every `tick` time units). Returns (one
/// dict per scheduler: makespan, remote tasks; one dict per task placed).
#[pyfunction]
#[pyo3(signature = (path, schedulers, tick=1.0, seed=1))]
fn simulate_instance<'py>(
    py: Python<'py>,
    path: PathBuf,
    schedulers: Vec<String>,
    tick: f64,
    seed: u64,
) -> PyResult<(Rows<'py>, Rows<'py>)> {
    let inst = ctl::simulation::read_instance(&path)
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    let mut rows = Vec::new();
    let mut placements = Vec::new();
    for text in &schedulers {
        let config: SchedulerConfig = text
            .parse()
            .map_err(|e| PyValueError::new_err(format!("scheduler {text:?}: {e}")))?;
        config
            .validate()
            .map_err(|e| PyValueError::new_err(format!("scheduler {text:?}: {e}")))?;
        let label = config.label();
        let (out, counters) = py.detach(|| {
            let mut s = sched::build(&config, seed);
            let out = lab::sim::simulate(s.as_mut(), &inst, tick, 1e9);
            (out, s.counters())
        });
        let out = out.map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let d = PyDict::new(py);
        d.set_item("scheduler", &label)?;
        d.set_item("makespan", out.makespan)?;
        d.set_item("remote", out.remote_tasks())?;
        d.set_item("tasks", out.placements.len())?;
        for (name, v) in &counters {
            d.set_item(format!("policy_{name}"), v)?;
        }
        rows.push(d);
        for p in &out.placements {
            let d = PyDict::new(py);
            d.set_item("scheduler", &label)?;
            d.set_item("task", p.task)?;
            d.set_item("server", p.server)?;
            d.set_item("remote", p.remote)?;
            d.set_item("start", p.start)?;
            d.set_item("end", p.end)?;
            placements.push(d);
        }
    }
    Ok((rows, placements))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    sched::policy::external::install_connector(Box::new(Connector));
    m.add_function(wrap_pyfunction!(register_policy, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_trace, m)?)?;
    m.add_function(wrap_pyfunction!(generate_instance, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_instance, m)?)?;
    m.add(
        "PROTOCOL_VERSION",
        sched::policy::external::PROTOCOL_VERSION,
    )?;
    Ok(())
}
