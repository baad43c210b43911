"""The BMC network of a rehearsal, on this machine: the nodes' planned BMC addresses on one interface
(``rb-<rehearsal id>``: a bridge without ports, since this kernel has no dummy driver) of the machine's own network namespace, so a Redfish emulator per node
(:mod:`clusterctl.rehearse.fake.redfish`) can listen at each, and the rendered BMC play, run from this machine as
from a site's control node, reaches them (docs/rehearse.md, "The day0 scenario").

Each address is a /32: the machine gains local addresses and no route (a route would overlap another rehearsal's
network check). The state records the interface before it is made; :func:`remove` (called by ``down``) deletes it
with its addresses. A second rehearsal wanting an address the machine already has is refused.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.command import run_command
from clusterctl.rehearse.node.state import State, save

COMMAND_TIMEOUT_S = 30.0


def interface_name(rid: str) -> str:
    """The BMC interface of rehearsal ``rid`` (9 characters: within the kernel's 15)."""
    return f"rb-{rid}"


def _ip(*args: str) -> str:
    r = run_command(["ip", *args], timeout=COMMAND_TIMEOUT_S)
    if r.returncode != 0:
        raise RehearsalError(f"`ip {' '.join(args)}` failed: {(r.stderr or r.stdout).strip()}",
                             "`clusterctl rehearse --down DIR` removes what was created")
    return r.stdout


def machine_addresses() -> set[str]:
    """Every IPv4 address of this machine's own network namespace."""
    found = set()
    for link in json.loads(_ip("-j", "-4", "addr", "show") or "[]"):
        found |= {a["local"] for a in link.get("addr_info", []) if "local" in a}
    return found


def add(state: State, addresses: Sequence[str]) -> str:
    """Put ``addresses`` (IPv4, one per BMC) on the rehearsal's BMC interface, made now; returns its name."""
    wanted = [str(ipaddress.IPv4Address(a)) for a in addresses]
    taken = sorted(set(wanted) & machine_addresses())
    if taken:
        raise RehearsalError(f"BMC address(es) {', '.join(taken)} are already on this machine (another "
                             "rehearsal's BMC network?)", "tear the other rehearsal down: clusterctl rehearse --down DIR")
    name = interface_name(state.id)
    state.bmc_interface = name
    save(state)
    if not Path(f"/sys/class/net/{name}").exists():
        _ip("link", "add", name, "type", "bridge")  # a bridge with no port: this kernel has no dummy driver
    for a in wanted:
        _ip("addr", "replace", f"{a}/32", "dev", name)
    _ip("link", "set", name, "up")
    return name


def remove(state: State) -> list[str]:
    """Delete the rehearsal's BMC interface, if it made one (idempotent); the problems, if any."""
    name = state.bmc_interface
    if not name or not Path(f"/sys/class/net/{name}").exists():
        return []
    r = run_command(["ip", "link", "del", name], timeout=COMMAND_TIMEOUT_S)
    return [] if r.returncode == 0 else [f"cannot delete the BMC interface {name}: {r.stderr.strip()}"]
