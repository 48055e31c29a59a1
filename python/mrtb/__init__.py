"""The mini-MapReduce locality testbed from Python: external scheduling
policies (``mrtb.policy``)."""

from .policy import PROTOCOL_VERSION, serve

__all__ = ["PROTOCOL_VERSION", "serve"]
