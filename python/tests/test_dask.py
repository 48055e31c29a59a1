"""A sweep of the simulator as Dask tasks on a 2-worker LocalCluster (two
worker processes) gives the rows of the same sweep run in process."""

import re

import pandas
import pytest

import mrtb.sim

from test_sim import SPEC, calibration, example

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed (scripts/test-deps setup)")


def without_names(df):
    """The rows with each Python policy's registered name (its counter)
    and the wall time (each run's own) left out."""
    df = df.drop(columns=["wall_s"], errors="ignore").copy()
    df["scheduler"] = df["scheduler"].map(lambda s: re.sub(r"(inproc:\w+)-\d+", r"\1", s))
    return df


def test_a_sweep_on_a_two_worker_dask_cluster_equals_the_sweep_in_process():
    Delay = example("delay").Delay

    class Delay15(Delay):
        threshold_ms = 1500

    settings = [dict(spec=SPEC, calibration=calibration(), workers=w) for w in (6, 10)]
    schedulers = ['policy = "delay", threshold_s = 1.5, pick = "oldest"', Delay15]
    here, here_tasks = mrtb.sim.sweep(settings, schedulers, tasks=True)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            there, there_tasks = mrtb.sim.sweep(settings, schedulers, tasks=True, client=client)
        ran_on = {t["worker"] for t in stream.data}
    # 2 settings x 3 seeds, each a task; both worker processes took some.
    assert len(stream.data) == 6 and len(ran_on) == 2, ran_on
    # 2 settings x 2 schedulers x 3 seeds, in the same order.
    assert len(here) == 12 and list(here["workers"]) == [6] * 6 + [10] * 6
    pandas.testing.assert_frame_equal(without_names(here), without_names(there))
    pandas.testing.assert_frame_equal(without_names(here_tasks), without_names(there_tasks))
    # The Python policy made the built-in's launches on the workers too.
    labels = list(dict.fromkeys(there["scheduler"]))
    cols = ["workers", "seed", "job", "task", "worker", "source", "start_ms", "end_ms"]
    a = there_tasks[there_tasks["scheduler"] == labels[0]][cols].reset_index(drop=True)
    b = there_tasks[there_tasks["scheduler"] == labels[1]][cols].reset_index(drop=True)
    assert len(a) > 1000 and a.equals(b)


def test_a_failing_policy_fails_the_dask_sweep_with_every_row():
    class Broken:
        def offer(self, view):
            raise RuntimeError("no idea")

    settings = [dict(spec=SPEC, calibration=calibration(), workers=6, seed=11)]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with pytest.raises(mrtb.sim.PolicyError) as e:
            mrtb.sim.sweep(settings, ["hadoop", Broken], client=client)
    assert "no idea" in str(e.value) or "stopped" in str(e.value), str(e.value)
    assert len(e.value.runs) == 2 and e.value.runs["mean_jct_s"].notna().sum() == 1


def test_a_bad_setting_is_named():
    with pytest.raises(ValueError, match="setting 0: needs spec and calibration"):
        mrtb.sim.sweep([dict(spec=SPEC, worker=3)])
