"""The testbed's simulator from Python: a trace spec (``experiments/*.toml``
with its calibration folder) run under built-in policies or Python ones,
results as pandas DataFrames.

A Python policy is a class with ``offer(view) -> launches`` (see
``mrtb.policy``); the simulator reaches it through the external policy
protocol's code (``sched::policy::external``), in process, so it decides
exactly as it would served on a socket to a real master.
"""

import itertools

import pandas

from . import _native
from .policy import Sessions

_names = itertools.count(1)


class PolicyError(RuntimeError):
    """A Python policy failed in the simulator: it raised (or its reply
    could not be read), so the fallback decided offers for it, or the
    simulator refused launches it made. The message gives the first
    reasons; ``runs`` holds every scheduler's rows (the failed ones
    included), as ``simulate_trace`` would have returned them."""

    def __init__(self, message, runs):
        super().__init__(message)
        self.runs = runs


# The counters of an external policy's run that say it failed.
_FAILURES = ("bad_replies", "unreachable", "timeouts", "fallback_offers", "refused")


def _check_policies(runs, table):
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


def policy_config(policy_class, fallback="hadoop", strict=True):
    """The scheduler configuration that runs ``policy_class`` in this
    process's simulator (one object per run). A class without a callable
    ``offer`` is refused at once. ``strict``: the simulator stops the run
    at the policy's first failure (a raised exception, a refused launch,
    500 replies with work pending and no launch); else the fallback
    decides for it."""
    if not callable(getattr(policy_class, "offer", None)):
        raise TypeError(
            f"{getattr(policy_class, '__name__', policy_class)!r} has no offer(view) method: "
            "a policy is a class with offer(view) -> list of launches (see mrtb.policy)"
        )
    name = f"{policy_class.__name__}-{next(_names)}"
    _native.register_policy(name, Sessions(policy_class).answer)
    return (
        f'policy = "external", address = "inproc:{name}", '
        f'fallback = "{fallback}", timeout_ms = 600000, strict = {"true" if strict else "false"}'
    )


def simulate_trace(
    spec, calibration, schedulers=(), workers=None, slots=None, tasks=False, seed=None, lenient=False
):
    """Runs ``spec`` (a trace or job-mix spec) with its ``calibration``
    under each of ``schedulers`` (built-in names or TOML as ``master sim
    trace --scheduler`` takes them, or Python policy classes; empty: the
    spec's), once per seed of the spec (once, with ``seed``, if given).

    Returns ``(runs, task_runs)``: DataFrames with one row per run
    (scheduler, seed, mean_jct_s, makespan_s, remote, maps, wall_s and, for
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
    """
    configs = [s if isinstance(s, str) else policy_config(s, strict=not lenient) for s in schedulers]
    table, runs, task_rows = _native.simulate_trace(
        str(spec), str(calibration), configs, workers, slots, tasks, seed
    )
    runs = pandas.DataFrame(runs)
    runs.attrs["table"] = table
    if not lenient:
        _check_policies(runs, table)
    return runs, pandas.DataFrame(task_rows) if tasks else None


def generate_instance(path, servers, cores, tasks, replication=3, beta=1000.0, theta=1.0, seed=1):
    """Writes a planning instance (DynDL's generator, as ``master sim gen``)
    to ``path``: ``servers`` x ``cores``, ``tasks`` tasks of one job with
    ``replication`` replicas each, initial core loads drawn up to ``beta``,
    DynDL's remote cost with ``theta``."""
    _native.generate_instance(str(path), servers, cores, tasks, replication, beta, theta, seed)


def simulate_instance(path, schedulers, tick=1.0, seed=1):
    """Runs each of ``schedulers`` (built-in names or TOML, or Python policy
    classes) on the instance file at ``path`` in the discrete-event
    simulator. Returns ``(runs, placements)`` DataFrames: one row per
    scheduler (makespan, remote tasks), one per task placed."""
    configs = [s if isinstance(s, str) else policy_config(s) for s in schedulers]
    runs, placements = _native.simulate_instance(str(path), configs, tick, seed)
    return pandas.DataFrame(runs), pandas.DataFrame(placements)
