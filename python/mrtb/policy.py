"""External scheduling policies for the testbed, in Python.

A policy is a class with ``offer(view) -> list of launches``. ``view`` is
the protocol's OfferMessage as a dict (see docs/schedulers.md, "External
policies"): ``now_ms``, ``worker`` and ``free_slots`` (the offer), ``workers``
and ``jobs`` (every active job in submission order, with ``running``,
``pending``, its oldest pending maps in ``tasks`` and the maps with a replica
on the offered worker in ``local``). A launch is a dict ``{"job": j, "task":
t, "source": w}`` (the worker to read the input from), optionally with
``rule``, ``waited_ms`` and ``threshold_ms`` for the decision record; it
takes one of the offered worker's free slots.

``serve(factory, address)`` serves such policies to a master or to
``master sim trace`` (``policy = "external", address = "..."``): one policy
object per session (one run), made by ``factory()``.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import ssl
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Union

#: The protocol's OfferMessage as a dict (docs/python.md lists its fields).
View = Dict[str, Any]
#: One launch: ``{"job", "task", "source"}``, optionally ``rule``,
#: ``waited_ms``, ``threshold_ms``.
Launch = Dict[str, Any]


class Policy(Protocol):
    """What a policy object offers: its launches for one offer."""

    def offer(self, view: View) -> Sequence[Launch]: ...


#: Makes one policy object per session (a class with no arguments is one).
Factory = Callable[[], Policy]

PROTOCOL_VERSION = 1

# Sessions kept at once; the oldest beyond this are forgotten.
SESSIONS_KEPT = 64


class Sessions:
    """One policy object per session, made by ``factory``."""

    def __init__(self, factory: Factory) -> None:
        self.factory = factory
        self.runs: Dict[str, Policy] = {}
        self.lock = threading.Lock()

    def answer(self, line: str) -> str:
        """A request line's reply line (without the newline)."""
        try:
            msg = json.loads(line)
            if msg.get("version") != PROTOCOL_VERSION:
                raise ValueError(
                    f"this policy speaks protocol version {PROTOCOL_VERSION}, "
                    f"the offer {msg.get('version')}"
                )
            with self.lock:
                policy = self.runs.get(msg["session"])
                if policy is None:
                    if len(self.runs) >= SESSIONS_KEPT:
                        del self.runs[next(iter(self.runs))]
                    policy = self.runs[msg["session"]] = self.factory()
                launches = policy.offer(msg)
            reply: Dict[str, Any] = {"version": PROTOCOL_VERSION, "launches": list(launches)}
        except Exception as e:  # the master shows the reason and falls back
            reply = {"version": PROTOCOL_VERSION, "error": f"{type(e).__name__}: {e}"}
        return json.dumps(reply, separators=(",", ":"))


class _Served(Protocol):
    sessions: Sessions


Server = Union[socketserver.ThreadingUnixStreamServer, socketserver.ThreadingTCPServer]


class _TLSServer(socketserver.ThreadingTCPServer):
    """TCP whose connections speak TLS; each handshake runs on the
    connection's own thread, so a silent client holds up no other."""

    context: ssl.SSLContext

    def get_request(self) -> Any:
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr


def bind(address: str, cert: Optional[str] = None, key: Optional[str] = None) -> Server:
    """A listening server for ``unix:<path>``, ``tcp:<host>:<port>`` or
    ``tls:<host>:<port>`` (TLS with ``cert`` and ``key``, PEM files of a
    certificate the cluster's authority signed: ``master policy-server
    --listen tls:...`` makes ``policy.pem`` and ``policy.key`` in the
    cluster's ``[tls] dir``)."""

    class Handler(socketserver.StreamRequestHandler):
        def setup(self) -> None:
            if isinstance(self.request, ssl.SSLSocket):
                self.request.settimeout(10)
                self.request.do_handshake()
                self.request.settimeout(None)
            super().setup()

        def handle(self) -> None:
            served: _Served = self.server  # type: ignore[assignment]
            for line in self.rfile:
                out = served.sessions.answer(line.decode())
                self.wfile.write(out.encode() + b"\n")
                self.wfile.flush()

    if address.startswith("unix:"):
        path = address[len("unix:"):]
        if os.path.exists(path):
            os.unlink(path)
        server: Server = socketserver.ThreadingUnixStreamServer(path, Handler)
    elif address.startswith("tcp:") or address.startswith("tls:"):
        host, _, port = address[len("tcp:"):].rpartition(":")
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        if address.startswith("tls:"):
            if cert is None or key is None:
                raise ValueError(f"{address}: a TLS policy needs cert= and key= (PEM files)")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(cert, key)
            _TLSServer.allow_reuse_address = True
            tls = _TLSServer((host, int(port)), Handler)
            tls.context = context
            server = tls
        else:
            server = socketserver.ThreadingTCPServer((host, int(port)), Handler)
        server.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    else:
        raise ValueError(
            f"{address!r} is neither unix:<path> nor tcp:<host>:<port> nor tls:<host>:<port>"
        )
    server.daemon_threads = True
    return server


def address_of(server: Server) -> str:
    """The address clients use (``tcp:`` with the port bound)."""
    a: Any = server.server_address
    if isinstance(a, (str, bytes)):
        return f"unix:{a if isinstance(a, str) else a.decode()}"
    scheme = "tls" if isinstance(server, _TLSServer) else "tcp"
    return f"{scheme}:{a[0]}:{a[1]}"


def serve(factory: Factory, address: str, cert: Optional[str] = None, key: Optional[str] = None) -> None:
    """Serves ``factory()`` policies at ``address`` until interrupted
    (``tls:`` with ``cert`` and ``key``)."""
    server = bind(address, cert, key)
    server.sessions = Sessions(factory)  # type: ignore[union-attr]
    print(f"serving {getattr(factory, '__name__', factory)} at {address_of(server)}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def main_serve(factory: Factory, argv: Optional[List[str]] = None) -> None:
    """``python policy.py --listen ADDRESS [--cert PEM --key PEM]``: serves
    ``factory`` (``tls:<host>:<port>`` needs ``--cert`` and ``--key``)."""
    argv = sys.argv[1:] if argv is None else argv
    usage = (
        f"usage: {sys.argv[0]} --listen unix:<path>|tcp:<host>:<port>|tls:<host>:<port>"
        " [--cert PEM --key PEM]"
    )
    if len(argv) < 2 or argv[0] != "--listen" or len(argv) % 2:
        sys.exit(usage)
    opts = dict(zip(argv[2::2], argv[3::2]))
    if set(opts) - {"--cert", "--key"}:
        sys.exit(usage)
    try:
        serve(factory, argv[1], opts.get("--cert"), opts.get("--key"))
    except (ValueError, OSError) as e:
        sys.exit(f"{argv[1]}: {e}")
