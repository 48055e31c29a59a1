"""The Gymnasium loop over the testbed's simulator, 1,000 steps, training
nothing: a random agent that takes a data-local candidate when there is
one. Run from the repository's root after ``pip install ./python``:
``python3 python/examples/gym_loop.py``."""

import glob
import os
import sys

import numpy as np

from mrtb.gym import TraceEnv

root = os.path.join(os.path.dirname(__file__), "..", "..")
spec = os.path.join(root, "experiments", "swim-hour.toml")
cal = os.path.dirname(sorted(glob.glob(os.path.join(root, "results/swim-hour/*/calibration/meta.json")))[0])
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000

env = TraceEnv(spec, cal, workers=10)
rng = np.random.default_rng(1)
obs, info = env.reset(seed=1)
episodes, total, local, remote = 0, 0.0, 0, 0
for _ in range(steps):
    real = np.flatnonzero(info["mask"][:-1])
    here = [i for i in real if obs[i][0] == 1.0]
    action = int(rng.choice(here)) if here else int(rng.choice(real)) if len(real) else env.max_tasks
    if action < env.max_tasks:
        local, remote = (local + 1, remote) if obs[action][0] == 1.0 else (local, remote + 1)
    obs, reward, terminated, truncated, info = env.step(action)
    total += reward
    if terminated or truncated:
        episodes += 1
        print(f"episode {episodes}: mean JCT {info['runs']['mean_jct_s'][0]:.2f} s")
        obs, info = env.reset(seed=episodes + 1)
env.close()
print(f"{steps} steps, {episodes} episodes ended, {local} local and {remote} remote launches, reward {total:.1f}")
