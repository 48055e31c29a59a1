"""The testbed's simulator from Python: a trace spec (``experiments/*.toml``
with its calibration folder) run under built-in policies or Python ones,
results as pandas DataFrames.

A Python policy is a class with ``offer(view) -> launches`` (see
``mrtb.policy``); the simulator reaches it through the external policy
protocol's code (``sched::policy::external``), in process, so it decides
exactly as it would served on a socket to a real master.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas

from . import _native
from .policy import Factory, Sessions

#: A scheduler: a built-in name or TOML (as ``master sim trace --scheduler``
#: takes it) or a Python policy class (``offer(view) -> launches``).
Scheduler = Union[str, type]
#: ``(runs, task_runs)``; ``task_runs`` is None unless asked for.
Frames = Tuple[pandas.DataFrame, Optional[pandas.DataFrame]]
PathLike = Union[str, "os.PathLike[str]"]
_Rows = List[Dict[str, Any]]
_Named = Union[str, Tuple[type, str]]

_names = itertools.count(1)


class PolicyError(RuntimeError):
    """A Python policy failed in the simulator: it raised (or its reply
    could not be read), so the fallback decided offers for it, or the
    simulator refused launches it made. The message gives the first
    reasons; ``runs`` holds every scheduler's rows (the failed ones
    included), as ``simulate_trace`` would have returned them."""

    def __init__(self, message: str, runs: pandas.DataFrame) -> None:
        super().__init__(message)
        self.runs = runs


# The counters of an external policy's run that say it failed.
_FAILURES = ("bad_replies", "unreachable", "timeouts", "fallback_offers", "refused")


def _check_policies(runs: pandas.DataFrame, table: str) -> None:
    """Raises PolicyError if a Python policy's run stopped or has a failure
    counted."""
    failed = []
    for _, row in runs.iterrows():
        if "inproc:" not in str(row["scheduler"]):
            continue
        if isinstance(row.get("error"), str):
            failed.append(f"{row['scheduler']} (seed {row['seed']}) stopped: {row['error']}")
            continue
        counts = {k: int(row.get(f"policy_{k}", 0) or 0) for k in _FAILURES}
        if any(counts.values()):
            said = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v)
            failed.append(f"{row['scheduler']} (seed {row['seed']}): {said}")
    if failed:
        reasons = [
            line.strip("- ").strip()
            for line in table.splitlines()
            if "refused launches, first:" in line or ("fallback" in line and "decided" in line)
        ]
        raise PolicyError(
            "a Python policy failed in the simulator: "
            + "; ".join(failed)
            + (". First reasons: " + " | ".join(reasons[:3]) if reasons else "")
            + ". (lenient=True lets the fallback decide and returns the rows.)",
            runs,
        )


def _policy_class(policy_class: type) -> type:
    """``policy_class``, or TypeError if it has no callable ``offer``."""
    if not callable(getattr(policy_class, "offer", None)):
        raise TypeError(
            f"{getattr(policy_class, '__name__', policy_class)!r} has no offer(view) method: "
            "a policy is a class with offer(view) -> list of launches (see mrtb.policy)"
        )
    return policy_class


def policy_config(policy_class: type, fallback: str = "hadoop", strict: bool = True, name: Optional[str] = None) -> str:
    """The scheduler configuration that runs ``policy_class`` in this
    process's simulator (one object per run). A class without a callable
    ``offer`` is refused at once. ``strict``: the simulator stops the run
    at the policy's first failure (a raised exception, a refused launch,
    500 replies with work pending and no launch); else the fallback
    decides for it. ``name``: the name it is registered under in this
    process (default: the class's name and a counter)."""
    _policy_class(policy_class)
    name = name or f"{policy_class.__name__}-{next(_names)}"
    factory: Factory = policy_class
    _native.register_policy(name, Sessions(factory).answer)
    return (
        f'policy = "external", address = "inproc:{name}", '
        f'fallback = "{fallback}", timeout_ms = 600000, strict = {"true" if strict else "false"}'
    )


def simulate_trace(
    spec: PathLike,
    calibration: PathLike,
    schedulers: Sequence[Scheduler] = (),
    workers: Optional[int] = None,
    slots: Optional[int] = None,
    tasks: bool = False,
    seed: Optional[int] = None,
    lenient: bool = False,
    client: Any = None,
    shuffle: str = "auto",
) -> Frames:
    """Runs ``spec`` (a trace or job-mix spec) with its ``calibration``
    under each of ``schedulers`` (built-in names or TOML as ``master sim
    trace --scheduler`` takes them, or Python policy classes; empty: the
    spec's), once per seed of the spec (once, with ``seed``, if given).

    Returns ``(runs, task_runs)``: DataFrames with one row per run
    (scheduler, seed, mean_jct_s, makespan_s, remote, maps, wall_s, events
    (heartbeats, task ends and reads ending the simulation took) and, for
    external policies, ``policy_*`` counts) and, if ``tasks``, one row per
    task run (job, task, worker, source, start_ms, end_ms); the markdown
    table is ``runs.attrs["table"]``.

    A Python policy that raises in ``offer``, has a launch refused, or
    answers 500 offers with work pending without a launch stops its run
    there (the other runs go on; its row's ``error`` says why), and this
    raises ``PolicyError`` with the reasons and every row once the runs
    are done; ``lenient=True`` lets the fallback decide instead and
    returns the rows (the ``policy_*`` counts and the table's notes say
    what the fallback decided).

    ``client``: a Dask ``distributed.Client``; each seed's runs are then one
    Dask task (on whatever machines the client's scheduler has, which must
    see ``spec`` and ``calibration`` at the same paths and have this
    package), gathered into the same rows, in the same order, as in
    process (``wall_s`` aside: it is each run's own time).
    ``runs.attrs["table"]`` is then each seed's table in turn, headed by
    its seed.

    ``shuffle``: how a reduce is timed, as ``master sim trace`` does:
    ``"auto"`` (the shuffle over the spec's NICs where the spec and the
    calibration allow it, else the fitted term, the table's notes saying
    why), ``"network"`` (``--network-shuffle``: refused where it cannot be)
    or ``"fitted"`` (``--fitted-reduce``).
    """
    return sweep(
        [dict(spec=spec, calibration=calibration, workers=workers, slots=slots, seed=seed, shuffle=shuffle)],
        schedulers,
        tasks=tasks,
        lenient=lenient,
        client=client,
        label=False,
    )


def _simulate(
    spec: str,
    calibration: str,
    schedulers: Sequence[_Named],
    workers: Optional[int],
    slots: Optional[int],
    tasks: bool,
    seed: Optional[int],
    lenient: bool,
    shuffle: str = "auto",
) -> Tuple[str, _Rows, _Rows]:
    """One call of the simulator: (table, runs, task rows) as lists of
    dicts, no failure raised (the caller checks). Runs where it is called:
    in this process or on a Dask worker, which registers the Python
    policies it is given in its own process."""
    configs = [s if isinstance(s, str) else policy_config(s[0], strict=not lenient, name=s[1]) for s in schedulers]
    table, runs, task_rows = _native.simulate_trace(
        str(spec), str(calibration), configs, workers, slots, tasks, seed, shuffle
    )
    return table, list(runs), list(task_rows) if tasks else []


def spec_seeds(spec: PathLike) -> List[int]:
    """The seeds a spec's runs use: ``seed`` (default 1) plus each
    repetition (default 1), as the runner and the simulator take them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef, import-not-found, unused-ignore]
    with open(spec, "rb") as f:
        text = tomllib.load(f)
    first, reps = int(text.get("seed", 1)), int(text.get("repetitions", 1))
    return [first + r for r in range(reps)]


def sweep(
    settings: Sequence[Mapping[str, Any]],
    schedulers: Sequence[Scheduler] = (),
    tasks: bool = False,
    lenient: bool = False,
    client: Any = None,
    label: bool = True,
) -> Frames:
    """Runs every setting under every one of ``schedulers`` (as
    ``simulate_trace`` takes them; empty: each spec's own) and gathers
    the rows into one DataFrame pair ``(runs, task_runs)``.

    ``settings``: dicts with ``spec`` and ``calibration`` and optionally
    ``workers``, ``slots``, ``seed`` (absent: each of the spec's
    seeds) and ``shuffle`` (as ``simulate_trace`` takes it), e.g. every SWIM hour's spec at every cluster size. Each
    (setting, seed) is one simulation task: run here one after another,
    or, with a Dask ``client``, as Dask tasks on its workers, the rows
    gathered in the same order either way. With ``label``, the rows carry
    the setting's ``spec``, ``workers`` and ``slots``. A Python policy's
    failure raises ``PolicyError`` once every task is done, every row
    kept (``lenient=True``: the fallback decides, as in
    ``simulate_trace``)."""
    # A Python policy gets one name for the whole sweep, wherever its runs
    # go, so its rows carry one scheduler label.
    named: List[_Named] = [
        s if isinstance(s, str) else (_policy_class(s), f"{s.__name__}-{next(_names)}") for s in schedulers
    ]
    for i, st in enumerate(settings):
        unknown = set(st) - {"spec", "calibration", "workers", "slots", "seed", "shuffle"}
        if unknown or "spec" not in st or "calibration" not in st:
            raise ValueError(
                f"setting {i}: needs spec and calibration, may have workers, slots, seed and shuffle; "
                f"got {sorted(st)}"
            )
        if st.get("shuffle", "auto") not in ("auto", "fitted", "network"):
            raise ValueError(f"setting {i}: shuffle {st['shuffle']!r}: expected 'auto', 'fitted' or 'network'")

    def args(st: Mapping[str, Any], seed: Optional[int]) -> Tuple[Any, ...]:
        return (
            os.fspath(st["spec"]), os.fspath(st["calibration"]), named,
            st.get("workers"), st.get("slots"), tasks, seed, lenient, st.get("shuffle", "auto"),
        )

    if client is None:
        # One call a setting, every seed in it, as `master sim trace` runs it.
        results: List[Tuple[int, Optional[int], Tuple[str, _Rows, _Rows]]] = [
            (i, None, _simulate(*args(st, st.get("seed")))) for i, st in enumerate(settings)
        ]
    else:
        jobs = [
            (i, seed)
            for i, st in enumerate(settings)
            for seed in ([st["seed"]] if st.get("seed") is not None else spec_seeds(st["spec"]))
        ]
        futures = [client.submit(_simulate, *args(settings[i], seed), pure=False) for i, seed in jobs]
        results = [(i, seed, r) for (i, seed), r in zip(jobs, client.gather(futures))]
    return _gathered(settings, results, tasks, lenient, label)


def _gathered(
    settings: Sequence[Mapping[str, Any]],
    results: Iterable[Tuple[int, Optional[int], Tuple[str, _Rows, _Rows]]],
    tasks: bool,
    lenient: bool,
    label: bool,
) -> Frames:
    """The runs and task runs of every (setting, seed) in the in-process
    order: setting, point, scheduler, seed."""
    rows: _Rows = []
    task_rows: _Rows = []
    tables: List[str] = []
    results = list(results)
    for i, seed, (table, r, t) in results:
        extra: Dict[str, Any] = {}
        if label:
            st = settings[i]
            extra = {"spec": os.fspath(st["spec"]), "workers": st.get("workers"), "slots": st.get("slots")}
        rows += [dict(row, _setting=i, **extra) for row in r]
        task_rows += [dict(row, _setting=i, **extra) for row in t]
        head = [f"setting {i}"] if len(settings) > 1 else []
        head += [f"seed {seed}"] if seed is not None and len(results) > 1 else []
        tables.append(f"{', '.join(head)}:\n\n{table}" if head else table)
    runs = _in_order(pandas.DataFrame(rows))
    task_runs = _in_order(pandas.DataFrame(task_rows)) if tasks else None
    all_tables = "\n\n".join(tables)
    runs.attrs["table"] = all_tables
    if not lenient:
        _check_policies(runs, all_tables)
    return runs, task_runs


def _in_order(df: pandas.DataFrame) -> pandas.DataFrame:
    """Rows sorted as the simulator writes them for one call (point, then
    scheduler, each in order of first appearance, then seed), settings in
    turn; the order within a run kept."""
    if df.empty:
        return df.drop(columns=["_setting"], errors="ignore")
    keys: Dict[str, pandas.Series] = {}
    for col in ("point", "scheduler"):
        if col in df:
            order = {v: k for k, v in enumerate(dict.fromkeys(df[col]))}
            keys[col] = df[col].map(order)
    df = df.assign(**{f"_{c}": k for c, k in keys.items()}, _row=range(len(df)))
    by = ["_setting"] + [f"_{c}" for c in keys] + (["seed"] if "seed" in df else []) + ["_row"]
    df = df.sort_values(by, kind="stable")
    return df.drop(columns=[c for c in by if c.startswith("_")]).reset_index(drop=True)


def generate_instance(
    path: PathLike,
    servers: int,
    cores: int,
    tasks: int,
    replication: int = 3,
    beta: float = 1000.0,
    theta: float = 1.0,
    seed: int = 1,
) -> None:
    """Writes a planning instance (DynDL's generator, as ``master sim gen``)
    to ``path``: ``servers`` x ``cores``, ``tasks`` tasks of one job with
    ``replication`` replicas each, initial core loads drawn up to ``beta``,
    DynDL's remote cost with ``theta``."""
    _native.generate_instance(str(path), servers, cores, tasks, replication, beta, theta, seed)


def simulate_instance(
    path: PathLike, schedulers: Sequence[Scheduler], tick: float = 1.0, seed: int = 1
) -> Tuple[pandas.DataFrame, pandas.DataFrame]:
    """Runs each of ``schedulers`` (built-in names or TOML, or Python policy
    classes) on the instance file at ``path`` in the discrete-event
    simulator. Returns ``(runs, placements)`` DataFrames: one row per
    scheduler (makespan, remote tasks), one per task placed."""
    configs = [s if isinstance(s, str) else policy_config(s) for s in schedulers]
    runs, placements = _native.simulate_instance(str(path), configs, tick, seed)
    return pandas.DataFrame(runs), pandas.DataFrame(placements)
