"""Experiments on a real cluster from Python: ``run_experiment`` runs a
spec with the testbed's ``master`` binary (``master experiment``: fresh
local processes, network namespaces or containers per run) and
``read_results`` reads a results folder into pandas DataFrames."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any, Dict, Optional, Union

import pandas

PathLike = Union[str, "os.PathLike[str]"]


def find_master(bin_dir: Optional[PathLike] = None) -> str:
    """The ``master`` binary: in ``bin_dir``, else ``$MRTB_BIN``, else on
    ``PATH``."""
    for d in [bin_dir, os.environ.get("MRTB_BIN")]:
        if d:
            p = os.path.join(os.fspath(d), "master")
            if os.access(p, os.X_OK):
                return p
            raise FileNotFoundError(f"{p} is not an executable master binary")
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "master")
        if os.access(p, os.X_OK):
            return p
    raise FileNotFoundError(
        "no master binary: pass bin_dir, set MRTB_BIN, or put the testbed's target/release on PATH"
    )


def run_experiment(
    spec: PathLike,
    results: PathLike = "results",
    work: PathLike = "run/experiment",
    deployment: str = "processes",
    bin_dir: Optional[PathLike] = None,
) -> str:
    """Runs ``spec`` once per scheduler and seed; returns the results
    folder's path. Raises ``RuntimeError`` with the runner's error if it
    fails."""
    master = find_master(bin_dir)
    out = subprocess.run(
        [master, "experiment", str(spec), "--results", str(results), "--work", str(work),
         "--deployment", deployment],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"master experiment {spec} failed: {out.stderr.strip()[-2000:]}")
    m = re.search(r"results in (\S+)", out.stdout + out.stderr)
    if not m:
        raise RuntimeError(f"master experiment {spec} said nowhere where its results are: {out.stdout[-500:]}")
    return m.group(1)


def read_results(folder: PathLike) -> Dict[str, Any]:
    """A results folder's tables: ``runs`` (one row per run), ``tasks`` (one
    per attempt), ``jobs`` (one per job, where kept) and ``meta`` (its
    meta.json, as a dict)."""
    def csv(name: str) -> Optional[pandas.DataFrame]:
        p = os.path.join(folder, name)
        return pandas.read_csv(p) if os.path.exists(p) else None

    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    return {"runs": csv("runs.csv"), "tasks": csv("tasks.csv"), "jobs": csv("jobs.csv"), "meta": meta}
