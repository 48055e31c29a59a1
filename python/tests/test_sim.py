"""The package against the testbed's own simulator: a Python policy run in
process makes the built-in's launches, one for one."""

import glob
import importlib.util
import json
import os
import time

import pytest

import mrtb.sim

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPEC = os.path.join(ROOT, "experiments", "swim-hour.toml")


def calibration():
    found = sorted(glob.glob(os.path.join(ROOT, "results", "swim-hour", "*", "calibration", "meta.json")))
    assert found, "a calibrated swim-hour folder is shipped"
    return os.path.dirname(found[0])


def example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "python", "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_python_delay_example_makes_the_built_in_launches():
    Delay = example("delay").Delay

    class Delay15(Delay):
        threshold_ms = 1500

    built_in = 'policy = "delay", threshold_s = 1.5, pick = "oldest"'
    runs, tasks = mrtb.sim.simulate_trace(
        SPEC, calibration(), [built_in, Delay15], workers=10, tasks=True
    )
    assert len(runs) == 6, runs.attrs["table"]
    labels = list(dict.fromkeys(runs["scheduler"]))
    assert labels[0] == "delay1.5(oldest)"
    assert labels[1].startswith("external(inproc:Delay15-")
    ext = runs[runs["scheduler"] == labels[1]]
    # Every offer answered, nothing refused, nothing left to the fallback.
    assert (ext["policy_calls"] == ext["policy_replies"]).all()
    assert (ext["policy_refused"] == 0).all() and (ext["policy_fallback_offers"] == 0).all()
    assert (ext["policy_calls"] > 1000).all()
    cols = ["seed", "job", "task", "reduce", "worker", "source", "start_ms", "end_ms"]
    a = tasks[tasks["scheduler"] == labels[0]][cols].reset_index(drop=True)
    b = tasks[tasks["scheduler"] == labels[1]][cols].reset_index(drop=True)
    assert len(a) > 700 * 3
    assert a.equals(b)
    # Both of delay's branches were taken: some maps read remotely.
    assert (runs.groupby("scheduler")["remote"].min() > 0).all()


def test_a_policy_that_raises_fails_loudly_unless_lenient():
    class Broken:
        def offer(self, view):
            raise RuntimeError("no idea")

    # By default: an error with the reason, the built-in's rows kept.
    with pytest.raises(mrtb.sim.PolicyError, match="RuntimeError: no idea") as failed:
        mrtb.sim.simulate_trace(SPEC, calibration(), ["hadoop", Broken], workers=10)
    runs = failed.value.runs
    assert set(runs["scheduler"]) >= {"hadoop"} and len(runs) == 6, runs
    # Lenient: the fallback decides and the rows say so.
    runs, _ = mrtb.sim.simulate_trace(SPEC, calibration(), [Broken], workers=10, lenient=True)
    assert (runs["policy_replies"] == 0).all()
    assert (runs["policy_fallback_offers"] > 0).all()
    assert "the policy said: RuntimeError: no idea" in runs.attrs["table"]


@pytest.mark.parametrize(
    "reply, why",
    [
        (lambda view: [], "not one launch"),
        (lambda view: [{"job": 999999, "task": 0, "source": view["worker"]}], "was refused"),
    ],
)
def test_a_policy_that_never_launches_or_is_refused_stops_at_once(reply, why):
    class Stuck:
        def offer(self, view):
            return reply(view)

    t0 = time.monotonic()
    with pytest.raises(mrtb.sim.PolicyError, match=why) as failed:
        mrtb.sim.simulate_trace(SPEC, calibration(), ["hadoop", Stuck], workers=10)
    # Stopped long before the spec's timeout (120 s of simulated waiting,
    # minutes of calls), the built-in's rows kept.
    assert time.monotonic() - t0 < 60
    runs = failed.value.runs
    assert len(runs[runs["scheduler"] == "hadoop"]) == 3 and runs["error"].notna().sum() == 3


def test_a_class_without_offer_is_refused_at_once():
    class NoOffer:
        def decide(self, view):
            return []

    with pytest.raises(TypeError, match="has no offer"):
        mrtb.sim.simulate_trace(SPEC, calibration(), [NoOffer], workers=10)


def calibration_before_the_typical_term(tmp_path):
    """The shipped calibration as a folder stored before its models kept the
    typical reduce term (`reduce_typical_ms_per_mb`) that the shuffle over
    the links needs."""
    with open(os.path.join(calibration(), "meta.json")) as f:
        meta = json.load(f)
    for m in meta["models"]:
        m.pop("reduce_typical_ms_per_mb", None)
    old = tmp_path / "old-calibration"
    old.mkdir()
    (old / "meta.json").write_text(json.dumps(meta))
    return str(old)


def test_bad_input_gets_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="scheduler \"nosuch\""):
        mrtb.sim.simulate_trace(SPEC, calibration(), ["nosuch"])
    with pytest.raises(RuntimeError, match="nothing.toml"):
        mrtb.sim.simulate_trace(os.path.join(ROOT, "nothing.toml"), calibration(), ["hadoop"])
    with pytest.raises(ValueError, match="shuffle 'links'"):
        mrtb.sim.simulate_trace(SPEC, calibration(), ["hadoop"], shuffle="links")
    # A calibration stored before the typical reduce term: the shuffle
    # over the links is refused with the reason, and the default falls
    # back to the fitted term, saying so. The shipped one has the term.
    old = calibration_before_the_typical_term(tmp_path)
    with pytest.raises(RuntimeError, match="no typical reduce term"):
        mrtb.sim.simulate_trace(SPEC, old, ["hadoop"], workers=6, seed=11, shuffle="network")
    runs, _ = mrtb.sim.simulate_trace(SPEC, old, ["hadoop"], workers=6, seed=11)
    assert "took the calibration's fitted term" in runs.attrs["table"]
    runs, _ = mrtb.sim.simulate_trace(SPEC, calibration(), ["hadoop"], workers=6, seed=11)
    assert "took the calibration's fitted term" not in runs.attrs["table"]


def test_an_instance_runs_under_built_in_and_python_policies(tmp_path):
    path = tmp_path / "inst.json"
    mrtb.sim.generate_instance(path, servers=20, cores=4, tasks=300, beta=50.0, seed=2)
    Delay = example("delay").Delay
    runs, placements = mrtb.sim.simulate_instance(
        path, ['policy = "delay", threshold_s = 3, pick = "oldest"', Delay, "hadoop"]
    )
    assert list(runs["tasks"]) == [300, 300, 300]
    assert (runs["makespan"] > 0).all()
    labels = list(runs["scheduler"])
    # The 40-line Python delay places every task where and when DELAY3
    # (oldest) does.
    cols = ["task", "server", "remote", "start", "end"]
    a = placements[placements["scheduler"] == labels[0]][cols].reset_index(drop=True)
    b = placements[placements["scheduler"] == labels[1]][cols].reset_index(drop=True)
    assert a.equals(b)
    with pytest.raises(ValueError, match="instance parameters"):
        mrtb.sim.generate_instance(tmp_path / "bad.json", servers=0, cores=4, tasks=10)
    with pytest.raises(ValueError, match="nothing.json"):
        mrtb.sim.simulate_instance(tmp_path / "nothing.json", ["hadoop"])


def test_the_python_delay_example_at_its_default_makes_delay3s_launches():
    # The example's default threshold is DELAY3's, 3 s.
    Delay = example("delay").Delay
    assert Delay.threshold_ms == 3000
    runs, tasks = mrtb.sim.simulate_trace(
        SPEC, calibration(), ['policy = "delay", threshold_s = 3, pick = "oldest"', Delay],
        workers=10, tasks=True,
    )
    labels = list(dict.fromkeys(runs["scheduler"]))
    assert labels[0] == "delay3(oldest)"
    cols = ["seed", "job", "task", "worker", "source", "start_ms", "end_ms"]
    a = tasks[tasks["scheduler"] == labels[0]][cols].reset_index(drop=True)
    b = tasks[tasks["scheduler"] == labels[1]][cols].reset_index(drop=True)
    assert len(a) > 2000 and a.equals(b)


def test_every_offer_the_simulator_sends_meets_the_published_schema():
    from schema_check import check_all, recording

    seen = []
    Delay = example("delay").Delay
    runs, _ = mrtb.sim.simulate_trace(SPEC, calibration(), [recording(Delay, seen)], workers=6, seed=11)
    assert len(runs) == 1
    assert check_all(seen) > 100
