"""Delay scheduling (Zaharia et al., EuroSys 2010) as an external policy.

Makes the launches of the built-in ``policy = "delay", threshold_s = 3,
pick = "oldest"``, one for one. Serve it with
``python3 python/examples/delay.py --listen unix:/tmp/delay.sock``.
"""

import os
import sys

try:
    from mrtb.policy import main_serve
except ImportError:  # not installed: the package beside this file
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from mrtb.policy import main_serve

THRESHOLD_MS = int(float(os.environ.get("DELAY_THRESHOLD_S", "3")) * 1000)


class Delay:
    threshold_ms = THRESHOLD_MS

    def __init__(self):
        self.since = {}  # job -> when its wait started (its first skip)

    def offer(self, view):
        now, worker, launches = view["now_ms"], view["worker"], []
        jobs = [dict(j, pos=i, taken=set()) for i, j in enumerate(view["jobs"])]
        for _ in range(view["free_slots"]):
            # Fair order: fewest running maps first, then submission.
            order = sorted((j for j in jobs if j["pending"] > len(j["taken"])),
                           key=lambda j: (j["running"], j["pos"]))
            pick = None
            for j in order:
                local = [t for t in j["local"] if t not in j["taken"]]
                if local:  # data-local: launch the oldest, clear the wait
                    self.since.pop(j["id"], None)
                    pick = (j, local[0], worker)
                    break
                if now - self.since.setdefault(j["id"], now) < self.threshold_ms:
                    continue  # skipped: still waiting
                oldest = next(t for t in j["tasks"] if t["index"] not in j["taken"])
                if oldest["replicas"]:
                    src = worker if worker in oldest["replicas"] else oldest["replicas"][0]
                    pick = (j, oldest["index"], src)
                    break
            if pick is None:
                break
            j, task, src = pick
            j["running"] += 1
            j["taken"].add(task)
            launches.append({"job": j["id"], "task": task, "source": src})
        live = {j["id"] for j in view["jobs"]}
        self.since = {k: v for k, v in self.since.items() if k in live}
        return launches


if __name__ == "__main__":
    main_serve(Delay)
