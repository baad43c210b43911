"""Serve the site mirror read-only over HTTP on the rehearsal bridge's host address, for the nodes only.

Python's ``http.server`` (the interpreter running clusterctl) bound to ``state.host_address`` (no other address of
this machine), started detached with its PID and start time recorded in ``state.services`` before anything waits
on it, so ``lifecycle.down`` stops it with the nodes. It serves the frozen repository directory of the cache; a
GET cannot change it.
"""

from __future__ import annotations

import socket
import sys
import time

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.mirror.build import Mirror
from clusterctl.rehearse.node.command import start_detached
from clusterctl.rehearse.node.state import State, alive, proc_of, save, state_dir

PORT = 8080
"""the mirror's TCP port on the bridge address (each rehearsal has its own address: no clash between them)"""
LISTEN_TIMEOUT_S = 15.0


def mirror_url(state: State) -> str:
    """``http://HOST:PORT``: the mirror as the nodes reach it."""
    return f"http://{state.host_address.split('/')[0]}:{PORT}"


def _listening(address: str) -> bool:
    try:
        with socket.create_connection((address, PORT), timeout=1.0):
            return True
    except OSError:
        return False


def serve(state: State, mirror: Mirror) -> str:
    """Start the mirror's HTTP server for ``state``'s nodes (once) and return its URL when it answers."""
    address = state.host_address.split("/")[0]
    if any(alive(p) for p in state.services) and _listening(address):
        return mirror_url(state)
    pid = start_detached([sys.executable, "-m", "http.server", "--bind", address, str(PORT),
                          "--directory", str(mirror.repo)], log=state_dir(state.dir) / "mirror-http.log")
    proc = proc_of(pid)
    if proc is not None:
        state.services.append(proc)
        save(state)
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while not _listening(address):
        if time.monotonic() > deadline or not alive(proc):
            raise RehearsalError(f"the site mirror's HTTP server did not listen on {address}:{PORT}",
                                 f"see {state_dir(state.dir) / 'mirror-http.log'}")
        time.sleep(0.05)
    return mirror_url(state)
