"""The wheel `make wheel` builds, installed as a user would: in a fresh
virtual environment, from the file alone (no index, no build), with no Rust
toolchain on the path; the installed `mrtb` is the wheel's and runs the
simulator with a Python policy."""

import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SCRIPT = textwrap.dedent(
    """
    import glob, os, sys
    import mrtb, mrtb.sim
    venv = sys.argv[1]
    assert os.path.realpath(mrtb.__file__).startswith(os.path.realpath(venv)), mrtb.__file__

    class Oldest:
        def offer(self, view):
            return []  # never launches: the simulator must say so at once

    root = sys.argv[2]
    spec = os.path.join(root, "experiments", "swim-hour.toml")
    cal = os.path.dirname(sorted(glob.glob(os.path.join(root, "results", "swim-hour", "*", "calibration", "meta.json")))[0])
    runs, _ = mrtb.sim.simulate_trace(spec, cal, ["hadoop"], workers=6, seed=11)
    assert len(runs) == 1 and runs["maps"].iloc[0] > 400 and not runs["error"].iloc[0], runs
    try:
        mrtb.sim.simulate_trace(spec, cal, ["hadoop", Oldest], workers=6, seed=11)
    except mrtb.sim.PolicyError as e:
        print("refused:", str(e).splitlines()[0])
    else:
        raise SystemExit("a policy that never launches did not fail")
    print("ok", len(runs))
    """
)


def wheel():
    found = sorted(glob.glob(os.path.join(ROOT, "target", "wheels", "mrtb-*.whl")), key=os.path.getmtime)
    if not found:
        if os.environ.get("CI"):
            pytest.fail("no wheel in target/wheels: `make test` builds one (scripts/test-deps python-package)")
        pytest.skip("no wheel in target/wheels (make wheel)")
    return found[-1]


def test_the_wheel_installs_and_runs_without_a_rust_toolchain(tmp_path):
    whl = wheel()
    venv = tmp_path / "venv"
    # The system's site packages give pandas; the wheel itself shadows any
    # mrtb installed there, which the script checks.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    path = os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])
    env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    assert shutil.which("cargo", path=path) is None, "a cargo on /usr/bin would hide what this proves"
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--ignore-installed", whl],
        check=True,
        env=env,
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SCRIPT, str(venv), ROOT],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "refused:" in out.stdout and out.stdout.strip().endswith("ok 1"), out.stdout
