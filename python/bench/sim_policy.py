"""`make bench`: the simulator with a Python policy in process against the
built-in it reimplements, side by side in one run: the shipped SWIM hour
(experiments/swim-hour.toml with its calibration) on 30 workers x 2 slots,
three seeds, under `policy = "delay", threshold_s = 1.5, pick = "oldest"`
and under python/examples/delay.py run in process through mrtb.sim. Prints
each one's simulation time, the offers the Python policy was asked, its
cost per offer beyond the built-in's, its offers per second and the
simulation's time against the built-in's.
Needs the package installed (scripts/test-deps python-package)."""

import glob
import importlib.util
import os

import mrtb.sim

root = os.path.join(os.path.dirname(__file__), "..", "..")
spec = os.path.join(root, "experiments", "swim-hour.toml")
cal = os.path.dirname(sorted(glob.glob(os.path.join(root, "results/swim-hour/*/calibration/meta.json")))[0])
m = importlib.util.spec_from_file_location("delay", os.path.join(root, "python", "examples", "delay.py"))
delay = importlib.util.module_from_spec(m)
m.loader.exec_module(delay)


class Delay15(delay.Delay):
    threshold_ms = 1500


built_in = 'policy = "delay", threshold_s = 1.5, pick = "oldest"'
runs, _ = mrtb.sim.simulate_trace(spec, cal, [built_in, Delay15], workers=30)
labels = list(dict.fromkeys(runs["scheduler"]))
base = runs[runs["scheduler"] == labels[0]]
py = runs[runs["scheduler"] == labels[1]]
assert list(base["mean_jct_s"]) == list(py["mean_jct_s"]), "the same launches, so the same JCTs"
offers = int(py["policy_calls"].sum())
b, p = base["wall_s"].sum(), py["wall_s"].sum()
print(
    f"python policy in process: SWIM hour on 30 workers x 2 slots, {len(base)} seeds: "
    f"built-in {b:.3f} s, python/examples/delay.py {p:.3f} s for {offers} offers with a pending map: "
    f"{(p - b) / offers * 1e6:.1f} us more per offer, {offers / p:.0f} offers/s; "
    f"the simulation takes {p / b:.1f}x the built-in's time"
)


def record(fid, what, value, unit, target=""):
    """One figure for the results folder (base::bench's format) when
    BENCH_RESULTS names one."""
    folder = os.environ.get("BENCH_RESULTS")
    if not folder:
        return
    import csv

    path = os.path.join(folder, "figures.csv")
    fresh = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if fresh:
            w.writerow(["id", "what", "value", "unit", "target"])
        w.writerow([fid, what, repr(float(value)), unit, target])


what = "python/examples/delay.py in process, SWIM hour on 30 workers x 2 slots"
record("python.us_per_offer", f"{what}: us more per offer than the built-in", (p - b) / offers * 1e6, "us")
record("python.slowdown", f"{what}: simulation time / the built-in's", p / b, "x")
