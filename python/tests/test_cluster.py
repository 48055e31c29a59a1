"""A spec run on a real local cluster from Python, with a Python policy
served to its master over a Unix socket, and its results read back."""

import importlib.util
import os
import threading

import mrtb.cluster
from mrtb.policy import Sessions, address_of, bind
from schema_check import check_all, recording

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def bin_dir():
    for profile in ["release", "debug"]:
        d = os.path.join(ROOT, "target", profile)
        if os.access(os.path.join(d, "master"), os.X_OK) and os.access(os.path.join(d, "worker"), os.X_OK):
            return d
    raise AssertionError("build the binaries first (cargo build --release --bins; make test does)")


def test_a_spec_runs_on_a_real_cluster_with_a_python_policy(tmp_path):
    spec = importlib.util.spec_from_file_location("delay", os.path.join(ROOT, "python", "examples", "delay.py"))
    delay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(delay)
    server = bind(f"unix:{tmp_path / 'py.sock'}")
    seen = []
    server.sessions = Sessions(recording(delay.Delay, seen))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "spec.toml").write_text(f"""
name = "python-policy"
description = "A Python policy served to a real master, beside the built-in it reimplements."
seed = 3
repetitions = 1
timeout_s = 60
schedulers = [
    {{ label = "delay3-oldest", scheduler = "policy = 'delay', threshold_s = 3, pick = 'oldest'" }},
    {{ label = "python", scheduler = "policy = 'external', address = '{address_of(server)}', timeout_ms = 1000" }},
]
[cluster]
workers = 3
slots = 2
replication = 2
heartbeat_ms = 50
[data]
kind = "text"
files = 2
blocks = 4
block_size = "1MiB"
[jobs]
count = 4
workload = "input-sink"
arrival_s = [0, 0.5]
""")
    folder = mrtb.cluster.run_experiment(
        tmp_path / "spec.toml", results=tmp_path / "results", work=tmp_path / "work", bin_dir=bin_dir()
    )
    server.shutdown()
    r = mrtb.cluster.read_results(folder)
    runs = r["runs"]
    assert list(runs["scheduler"]) == ["delay3-oldest", "python"]
    assert (runs["status"] == "ok").all(), runs[["scheduler", "error"]].to_string()
    assert (runs["data_local"] + runs["data_remote"] == 16).all()
    notes = runs.set_index("scheduler")["scheduler_notes"]["python"]
    assert "0 launches refused" in notes and "fallback" not in notes, notes
    assert len(r["tasks"]) >= 32
    assert r["meta"]["spec"]["name"] == "python-policy" or "python-policy" in str(r["meta"])
    # Every offer the real master sent meets the published schema.
    assert check_all(seen) >= 4


def test_a_missing_binary_is_named():
    try:
        mrtb.cluster.find_master("/nonexistent")
    except FileNotFoundError as e:
        assert "/nonexistent/master" in str(e)
    else:
        raise AssertionError("no error")
