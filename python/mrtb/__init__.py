"""The mini-MapReduce locality testbed from Python.

- ``mrtb.policy``: write a scheduling policy as a class with
  ``offer(view) -> launches`` and serve it to a real master
  (``policy = "external"``) over a Unix or TCP socket;
- ``mrtb.sim``: run the testbed's simulator on a trace spec with built-in
  or Python policies, results as pandas DataFrames;
- ``mrtb.cluster``: run an experiment spec on a real cluster and read its
  results folder.
"""

from .policy import PROTOCOL_VERSION, serve

__all__ = ["PROTOCOL_VERSION", "serve"]
