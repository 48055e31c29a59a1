"""A Gymnasium environment over the testbed's simulator.

Each step decides one free map slot of one offer: the observation lists up
to ``max_tasks`` candidate pending maps for the offered worker, the action
picks one of them (``0 .. max_tasks - 1``) or leaves the slot free
(``max_tasks``); an offer with no pending map is no step. The reward is minus the active jobs times the simulated
seconds since the previous decision, and the step that ends the episode
with minus the jobs' time after the last decision (until each job's last
task ends), so the time the last decisions leave is counted too. ``reset(seed=s)`` runs the spec's jobs with
seed ``s`` (data placement, arrivals and task times drawn from it).

The observation is :func:`observe` of the protocol's offer message, and
:class:`AgentPolicy` turns an agent (``act(observation, mask) -> action``)
into a policy class, so an agent trained here is served to a real master
unchanged: ``mrtb.policy.serve(AgentPolicy.of(agent), "unix:/tmp/p.sock")``.

Candidates: first the maps with a replica on the offered worker (the
``local`` lists, jobs in submission order, oldest first), then each job's
oldest map; a map appears once. Features per candidate (float32): data
local (1/0), the job's running maps, its pending maps, seconds since the
job's submission, seconds since its last launch (or submission), input MB.
``info["mask"]`` marks the real candidates, ``info["view"]`` is the offer
(without its protocol session, so that a seed gives the same infos).

Registered as ``mrtb/Trace-v0``: ``gymnasium.make("mrtb/Trace-v0",
spec=..., calibration=..., workers=10)``.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, SupportsFloat, Tuple, Union

import gymnasium
import numpy as np
import pandas
from gymnasium import spaces
from numpy.typing import NDArray

from . import sim
from .policy import Launch, View

Obs = NDArray[np.float32]
Mask = NDArray[np.bool_]
#: A candidate map: (its job's view, task index, the source to read from, data-local).
Candidate = Tuple[Dict[str, Any], int, str, bool]


class Agent(Protocol):
    """What ``AgentPolicy`` asks: an action for one free slot."""

    def act(self, obs: Obs, mask: Mask) -> int: ...

FEATURES = 6
# The observation's bound: finite, as Gymnasium's checker asks (every
# feature is a count, a flag, seconds or MB, far below it).
HIGH = float(np.finfo(np.float32).max)


def candidates(view: View, taken: Iterable[Tuple[int, int]], max_tasks: int) -> List[Candidate]:
    """The offer's candidate maps: (job, task index, source, local)."""
    worker: str = view["worker"]
    out: List[Candidate] = []
    seen = set(taken)
    for j in view["jobs"]:
        for t in j["local"]:
            if (j["id"], t) not in seen and len(out) < max_tasks:
                out.append((j, t, worker, True))
                seen.add((j["id"], t))
    for j in view["jobs"]:
        for t in j["tasks"]:
            if (j["id"], t["index"]) in seen or not t["replicas"]:
                continue
            if len(out) < max_tasks:
                src = worker if worker in t["replicas"] else t["replicas"][0]
                out.append((j, t["index"], src, src == worker))
                seen.add((j["id"], t["index"]))
            break
    return out


def observe(
    view: View, taken: Sequence[Tuple[int, int]] = (), max_tasks: int = 16
) -> Tuple[Obs, Mask, List[Candidate]]:
    """(observation, mask, candidates) for one free slot of ``view``, the
    maps in ``taken`` (job, task) already launched in this offer."""
    cands = candidates(view, taken, max_tasks)
    obs = np.zeros((max_tasks, FEATURES), dtype=np.float32)
    mask = np.zeros(max_tasks + 1, dtype=bool)
    mask[max_tasks] = True  # leaving the slot free is always allowed
    now = view["now_ms"]
    sizes: Dict[Tuple[int, int], int] = {}
    for j in view["jobs"]:
        for t in j["tasks"]:
            sizes[(j["id"], t["index"])] = t["bytes"]
    for i, (j, task, _src, local) in enumerate(cands):
        last = j.get("last_launch_ms", j["submitted_ms"])
        obs[i] = [
            1.0 if local else 0.0,
            j["running"],
            j["pending"],
            (now - j["submitted_ms"]) / 1000.0,
            (now - last) / 1000.0,
            sizes.get((j["id"], task), 0) / 1e6,
        ]
        mask[i] = True
    return obs, mask, cands


def decide(view: View, max_tasks: int, choose: Callable[[Obs, Mask, List[Candidate]], int]) -> List[Launch]:
    """The launches for one offer: for each free slot, ``choose(obs, mask,
    cands)`` gives a candidate's index or more (the slot stays free, and so
    do the rest); an offer with no candidate left asks nothing more."""
    taken: List[Tuple[int, int]] = []
    launches: List[Launch] = []
    for _ in range(view["free_slots"]):
        obs, mask, cands = observe(view, taken, max_tasks)
        if not cands:
            break
        a = int(choose(obs, mask, cands))
        if a >= len(cands):
            break
        j, task, src, _ = cands[a]
        taken.append((j["id"], task))
        launches.append({"job": j["id"], "task": task, "source": src})
    return launches


class AgentPolicy:
    """A policy class (for ``mrtb.policy.serve`` or ``mrtb.sim``) that asks
    ``self.agent.act(observation, mask)`` for each free slot."""

    agent: Optional[Agent] = None
    max_tasks = 16

    @classmethod
    def of(cls, agent: Agent, max_tasks: int = 16) -> type:
        return type("AgentPolicy", (cls,), {"agent": agent, "max_tasks": max_tasks})

    def offer(self, view: View) -> List[Launch]:
        agent = self.agent
        if agent is None:
            raise TypeError("AgentPolicy has no agent: make the class with AgentPolicy.of(agent)")
        return decide(view, self.max_tasks, lambda obs, mask, _: agent.act(obs, mask))


_DONE = object()


class TraceEnv(gymnasium.Env[Obs, int]):
    """The simulator on ``spec`` (with its ``calibration``) as an
    environment; see the module documentation."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        spec: sim.PathLike,
        calibration: sim.PathLike,
        workers: Optional[int] = None,
        slots: Optional[int] = None,
        max_tasks: int = 16,
    ) -> None:
        # Not `self.spec`: Gymnasium keeps the registration's EnvSpec there.
        self.spec_path, self.calibration = str(spec), str(calibration)
        self.workers, self.slots, self.max_tasks = workers, slots, max_tasks
        self.action_space = spaces.Discrete(max_tasks + 1)  # type: ignore[assignment]  # its int64 is an int
        self.observation_space = spaces.Box(0.0, HIGH, (max_tasks, FEATURES), np.float32)
        self._thread: Optional[threading.Thread] = None
        self._abandon = threading.Event()
        self.runs: Union[pandas.DataFrame, Exception, None] = None
        self._obs: queue.Queue[Any] = queue.Queue()
        self._act: queue.Queue[Any] = queue.Queue()
        self._last_ms = 0
        self._rewarded = 0.0
        self._finish: List[float] = []

    # The simulation runs on its own thread; its policy hands each decision
    # over to step() through these queues.
    def _offer(self, view: View) -> List[Launch]:
        def choose(obs: Obs, mask: Mask, _cands: List[Candidate]) -> int:
            if self._abandon.is_set():
                raise RuntimeError("the episode was reset")
            dt = (view["now_ms"] - self._last_ms) / 1000.0
            self._last_ms = view["now_ms"]
            reward = -len(view["jobs"]) * dt
            self._rewarded += reward
            shown = {k: v for k, v in view.items() if k != "session"}
            self._obs.put((obs, reward, {"mask": mask, "view": shown}))
            a = self._act.get()
            if a is _DONE:
                raise RuntimeError("the episode was reset")
            return int(a)

        return decide(view, self.max_tasks, choose)

    def _run(self, seed: int) -> None:
        env = self

        class Served:
            def offer(self, view: View) -> List[Launch]:
                return env._offer(view)

        try:
            self.runs, tasks = sim.simulate_trace(
                self.spec_path, self.calibration, [Served], self.workers, self.slots, tasks=True, seed=seed
            )
            # When each job's last task (map or reduce) ends, ms.
            ends: Iterable[Any] = tasks.groupby("job")["end_ms"].max() if tasks is not None and len(tasks) else []
            self._finish = [float(v) for v in ends]
        except Exception as e:  # shown by the step that ends the episode
            self.runs = e
        self._obs.put(_DONE)

    def _stop(self) -> None:
        if self._thread is not None:
            self._abandon.set()
            self._act.put(_DONE)
            self._thread.join()
            self._thread = None

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[Obs, Dict[str, Any]]:
        super().reset(seed=seed)
        self._stop()
        self._abandon = threading.Event()
        self._obs, self._act = queue.Queue(), queue.Queue()
        self._last_ms = 0
        self._rewarded, self._finish = 0.0, []
        seed = int(self.np_random.integers(1 << 31)) if seed is None else seed
        self._thread = threading.Thread(target=self._run, args=(seed,), daemon=True)
        self._thread.start()
        item = self._obs.get()
        if item is _DONE:
            raise RuntimeError(f"the simulation made no decision: {self.runs}")
        obs, _, info = item
        return obs, info

    def step(self, action: int) -> Tuple[Obs, SupportsFloat, bool, bool, Dict[str, Any]]:
        self._act.put(int(action))
        item = self._obs.get()
        if item is _DONE:
            if self._thread is not None:
                self._thread.join()
            self._thread = None
            if isinstance(self.runs, Exception):
                raise self.runs
            obs = np.zeros((self.max_tasks, FEATURES), dtype=np.float32)
            # The jobs' time after the last decision, until each one's last
            # task ends.
            tail = sum(max(0.0, f - self._last_ms) for f in self._finish) / 1000.0
            info = {"runs": self.runs, "last_decision_ms": self._last_ms}
            return obs, -tail, True, False, info
        obs, reward, info = item
        return obs, reward, False, False, info

    def close(self) -> None:
        self._stop()


if "mrtb/Trace-v0" not in gymnasium.registry:
    gymnasium.register(id="mrtb/Trace-v0", entry_point="mrtb.gym:TraceEnv")
