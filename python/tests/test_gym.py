"""The Gymnasium environment: seeded, every decision applied, an episode's
rewards minus the jobs' time in the system, and an agent served unchanged
as a policy."""

import glob
import os

import gymnasium
import numpy as np

import mrtb.sim
from mrtb.gym import AgentPolicy, TraceEnv, observe

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPEC = os.path.join(ROOT, "experiments", "swim-hour.toml")


def calibration():
    found = sorted(glob.glob(os.path.join(ROOT, "results", "swim-hour", "*", "calibration", "meta.json")))
    return os.path.dirname(found[0])


class FirstLocal:
    """Takes the first candidate (a data-local one when there is one)."""

    def act(self, obs, mask):
        real = np.flatnonzero(mask[:-1])
        return int(real[0]) if len(real) else len(mask) - 1


def play(env, agent, seed):
    obs, info = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    steps, total, launched = 0, 0.0, 0
    while True:
        a = agent.act(obs, info["mask"])
        launched += a < env.max_tasks
        obs, reward, terminated, truncated, info = env.step(a)
        assert reward <= 0.0
        steps, total = steps + 1, total + reward
        if terminated:
            return steps, total, launched, info["runs"]


def test_an_episode_is_seeded_and_its_rewards_are_minus_the_time_jobs_spend():
    env = TraceEnv(SPEC, calibration(), workers=10)
    assert isinstance(env.action_space, gymnasium.spaces.Discrete)
    a = play(env, FirstLocal(), seed=3)
    b = play(env, FirstLocal(), seed=3)
    assert a[:3] == b[:3], "the same seed, the same episode"
    steps, total, launched, runs = a
    assert len(runs) == 1 and runs["policy_refused"][0] == 0
    # Every map was launched by the agent (none by the fallback).
    assert launched == runs["maps"][0] and runs["policy_fallback_offers"][0] == 0
    assert total < 0 and steps == launched, "each step a launch: it never leaves a slot free"
    c = play(env, FirstLocal(), seed=4)
    assert c[1] != a[1], "another seed, another episode"
    env.close()


def test_the_ending_step_counts_the_time_after_the_last_decision():
    # The same agent and seed as a policy: the same run, so the same jobs'
    # last tasks; the ending step is minus their time after the last
    # decision.
    env = TraceEnv(SPEC, calibration(), workers=10)
    obs, info = env.reset(seed=3)
    agent = FirstLocal()
    while True:
        obs, reward, terminated, _, info = env.step(agent.act(obs, info["mask"]))
        if terminated:
            break
    env.close()
    _, tasks = mrtb.sim.simulate_trace(
        SPEC, calibration(), [AgentPolicy.of(FirstLocal())], workers=10, tasks=True, seed=3
    )
    last = info["last_decision_ms"]
    tail = sum(max(0.0, f - last) for f in tasks.groupby("job")["end_ms"].max()) / 1000.0
    assert tail > 0, "the reduces and maps still running at the last decision"
    assert abs(reward + tail) < 1e-9, (reward, tail)


def test_gymnasiums_checker_passes_and_gym_make_builds_it():
    from gymnasium.utils.env_checker import check_env

    env = TraceEnv(SPEC, calibration(), workers=10)
    check_env(env, skip_render_check=True)
    env.close()
    env = gymnasium.make("mrtb/Trace-v0", spec=SPEC, calibration=calibration(), workers=10)
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and info["mask"].any()
    assert "session" not in info["view"], "a seed gives the same infos"
    env.close()


def test_an_agent_is_served_as_a_policy_unchanged():
    # The same agent through the environment and as a policy class in the
    # simulator: the same mean JCT.
    env = TraceEnv(SPEC, calibration(), workers=10)
    *_, runs = play(env, FirstLocal(), seed=5)
    env.close()
    served, _ = mrtb.sim.simulate_trace(SPEC, calibration(), [AgentPolicy.of(FirstLocal())], workers=10, seed=5)
    assert served["mean_jct_s"][0] == runs["mean_jct_s"][0]
    assert served["remote"][0] == runs["remote"][0]


def test_a_reset_mid_episode_abandons_it():
    env = TraceEnv(SPEC, calibration(), workers=10)
    obs, info = env.reset(seed=1)
    for _ in range(5):
        obs, *_ = env.step(env.max_tasks)
    obs, info = env.reset(seed=1)
    assert info["mask"].any()
    env.close()


def test_observe_lists_local_maps_first_and_each_jobs_oldest():
    view = {
        "now_ms": 5000, "worker": 2, "free_slots": 1,
        "jobs": [
            {"id": 1, "submitted_ms": 1000, "running": 1, "pending": 2,
             "tasks": [{"index": 0, "bytes": 2e6, "replicas": [0]}, {"index": 1, "bytes": 1e6, "replicas": [2]}],
             "local": [1]},
            {"id": 2, "submitted_ms": 3000, "running": 0, "pending": 1, "last_launch_ms": 4000,
             "tasks": [{"index": 0, "bytes": 3e6, "replicas": [1, 2]}], "local": [0]},
        ],
    }
    obs, mask, cands = observe(view, max_tasks=4)
    assert [(c[0]["id"], c[1], c[2]) for c in cands] == [(1, 1, 2), (2, 0, 2), (1, 0, 0)]
    assert list(mask) == [True, True, True, False, True]
    assert list(obs[2]) == [0.0, 1.0, 2.0, 4.0, 4.0, 2.0]
    assert obs[1][4] == 1.0, "since the last launch"
    _, _, cands = observe(view, taken=[(1, 1)], max_tasks=4)
    assert [(c[0]["id"], c[1]) for c in cands] == [(2, 0), (1, 0)]
