"""The ``fabric`` scenario: a slice of each routed Ethernet/RoCE fabric of the blueprint (two leaves, two spines,
a host under each leaf) booted as nodes, cabled as the plan cables them; the switches run FRR from the rendered
configuration, the hosts' rails are addressed by the rendered netplan; then every claim of the routed fabric is
checked on real routing daemons and the kernel's forwarding (docs/rehearse.md, "The fabric scenario";
:mod:`.fabric_checks`). It boots no Slurm cluster and runs no site.yml: it runs alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from clusterctl.rehearse.fabric_plan import fabric_slices, role_interfaces, routed_fabrics_unmet
from clusterctl.rehearse.fabric_slice import FabricSlice
from clusterctl.rehearse.mirror.packages import FABRIC_HOST, FABRIC_SWITCH
from clusterctl.rehearse.node.lifecycle import NodeSpec, fallback_specs
from clusterctl.rehearse.node.links import Link
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import Build, Need, Scenario
from clusterctl.rehearse.scenario.deploy import run_playbook
from clusterctl.rehearse.scenario.fabric_checks import (
    check_ecmp,
    check_mtu,
    check_reach,
    measure_reroute,
    wait_converged,
)
from clusterctl.rehearse.scenario.fabric_setup import apply_netplan, apply_switch
from clusterctl.rehearse.select import NODE_INIT
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

INSTALL_TIMEOUT_S = 300.0
RAILS_PLAYBOOK = "rehearsal-fabric.yml"
RAILS_HEADER = """\
# clusterctl rehearsal, fabric scenario: the roce_network role's preflight and configure tasks on the hosts of
# the fabric slices with RoCE rails (what writes each rail's netplan), the host_network role's configure tasks on
# the hosts with storage ports on a converged fabric (what writes their netplan); roce_network's QoS needs NIC
# firmware tools and is not run, and the rehearsal applies netplan itself (netplan generate + systemd-networkd:
# docs/rehearse.md, "The fabric scenario")
"""
RAILS_PLAY = """\
- name: RoCE rails of the fabric slices' hosts
  hosts: {hosts}
  gather_facts: false
  roles:
    - role: roce_network
"""
STORAGE_PLAY = """\
- name: Storage ports of the fabric slices' hosts (L3 to the host on a converged fabric)
  hosts: {hosts}
  gather_facts: false
  pre_tasks:
    # only the storage ports are cabled in the fabric scenario (the in-band bond's ports are L2, not booted); the
    # interface names preflight looks RDMA devices up in sysfs, which a node has none of: the cables' ends carry
    # the plan's names instead, and the rails step checks every named port got its address
    - name: The storage interfaces alone
      ansible.builtin.set_fact:
        host_network_interfaces: "{{{{ host_network_interfaces | selectattr('role', 'equalto', 'storage') | list }}}}"
        host_network_rdma_cm_tos: []
        host_network_preflight_ports: []
      tags: [always]
  roles:
    - role: host_network
"""
RAILS_TAGS = ("preflight", "configure")


def rails_playbook(slices: list[FabricSlice]) -> str:
    """The playbook that writes the slices' hosts' netplan: one play per role that has hosts (host names are
    checked at load: plain YAML scalars)."""
    text = RAILS_HEADER
    for template, role in ((RAILS_PLAY, "compute"), (STORAGE_PLAY, "storage")):
        hosts = sorted({h for sl in slices for h in sl.hosts_of(role)})
        if hosts:
            text += template.format(hosts=",".join(hosts))
    return text


def _each(slices: list[FabricSlice], one) -> list:
    """``one(slice)`` for every slice at once (their nodes are apart), in order."""
    with ThreadPoolExecutor(max_workers=len(slices) or 1) as pool:
        return list(pool.map(one, slices))


def _parallel(nodes, one) -> dict[str, object]:
    names = list(nodes)
    with ThreadPoolExecutor(max_workers=min(8, len(names) or 1)) as pool:
        return dict(zip(names, pool.map(one, names)))


@dataclass
class FabricInstall:
    """Step ``install``: FRR on the switches, netplan on the hosts, from the site mirror."""

    slices: list[FabricSlice]
    name: str = "install"

    def run(self, state: State, record: Record) -> None:
        switches = {s.name for sl in self.slices for s in sl.switches}
        hosts = {h for sl in self.slices for h in sl.hosts}

        def one(node: str) -> HostOutcome:
            t0 = time.monotonic()
            pkgs = " ".join(FABRIC_SWITCH if node in switches else FABRIC_HOST)
            r = ssh(state, node, f"DEBIAN_FRONTEND=noninteractive apt-get install -q -y --no-install-recommends {pkgs}",
                    timeout=INSTALL_TIMEOUT_S)
            return HostOutcome(OK if r.returncode == 0 else FAILED, time.monotonic() - t0,
                               pkgs if r.returncode == 0 else r.stderr.strip()[-400:])
        _record_all(record, _parallel(sorted(switches | hosts), one), "install")


def _record_all(record: Record, outcomes: dict, what: str) -> None:
    for node, outcome in outcomes.items():
        record(node, outcome)
    failed = [n for n, o in outcomes.items() if o.status != OK]
    if failed:
        raise StepFailed(f"{what} failed on {', '.join(failed)}")


@dataclass
class FabricSwitches:
    """Step ``switches``: each switch's rendered FRR configuration (FRR's own parser first) and interfaces file,
    FRR restarted under the node's systemd."""

    slices: list[FabricSlice]
    name: str = "switches"

    def run(self, state: State, record: Record) -> None:
        switches = {s.name: s for sl in self.slices for s in sl.switches}

        def one(name: str) -> HostOutcome:
            t0 = time.monotonic()
            err, ignored = apply_switch(state, switches[name])
            detail = err or f"AS {switches[name].asn}, FRR running" + (f"; not applied: {', '.join(ignored)}" if ignored else "")
            return HostOutcome(FAILED if err else OK, time.monotonic() - t0, detail)
        _record_all(record, _parallel(sorted(switches), one), "switch configuration")


@dataclass
class FabricRails:
    """Step ``rails``: the hosts' rails (and converged fabrics' storage ports) addressed by the rendered netplan:
    the roce_network role (host_network for storage ports) writes it
    (``netplans`` None), or the given files are written (the node layer's own tests); then netplan compiles it
    and systemd-networkd applies it."""

    slices: list[FabricSlice]
    netplans: dict[str, dict[str, str]] | None = None
    """host -> path -> netplan text, instead of the role"""
    interfaces: list[str] | None = None
    """``roce_network_interfaces`` for the role: the plan's names (``fabric_plan.role_interfaces``)"""
    name: str = "rails"

    def run(self, state: State, record: Record) -> None:
        netdevs: dict[str, tuple[str, ...]] = {}
        for sl in self.slices:
            for r in sl.rails:
                netdevs[r.host] = netdevs.get(r.host, ()) + (r.netdev,)
        if not netdevs:
            record("-", HostOutcome(OK, 0.0, "no host rail is addressed on these fabrics: the leaves' loopbacks "
                                              "stand for them"))
            return
        if self.netplans is None:
            extra = ["--tags", ",".join(RAILS_TAGS), "-e",
                     json.dumps({"roce_network_apply": False, "host_network_apply": False})]
            if self.interfaces:
                extra += ["-e", json.dumps({"roce_network_interfaces": self.interfaces})]
            outcome = run_playbook(state, sorted(netdevs), ident="fabric-rails", playbook=RAILS_PLAYBOOK,
                                   extra_args=extra, skip_tags=())
            if outcome.rc != 0:
                for host, failures in outcome.failed.items():
                    record(host, HostOutcome(FAILED, outcome.seconds, "; ".join(failures)[:600]))
                raise StepFailed(f"the roce_network/host_network roles exited {outcome.rc}")
        else:
            for host, files in self.netplans.items():
                for path, text in files.items():
                    write_file(state, host, path, text, mode="0600")

        def one(host: str) -> HostOutcome:
            t0 = time.monotonic()
            err = apply_netplan(state, host, netdevs[host])
            return HostOutcome(FAILED if err else OK, time.monotonic() - t0, err or ", ".join(netdevs[host]))
        _record_all(record, _parallel(sorted(netdevs), one), "netplan")


@dataclass
class FabricCheck:
    """One claim, checked on every slice: ``check(state, slice)`` returns what is wrong."""

    name: str
    check: Callable[[State, FabricSlice], list[str]]
    slices: list[FabricSlice]
    wait: bool = False
    """wait for the routes first (the first check after the switches start)"""

    def run(self, state: State, record: Record) -> None:
        def one(sl: FabricSlice) -> tuple[float, list[str]]:  # the slices are apart: checked at once
            t0 = time.monotonic()
            problems = (wait_converged(state, sl) if self.wait else []) or self.check(state, sl)
            return time.monotonic() - t0, problems
        failed = []
        for sl, (seconds, problems) in zip(self.slices, _each(self.slices, one)):
            record(sl.fabric, HostOutcome(FAILED if problems else OK, seconds,
                                          "; ".join(problems)[:900] or self.ok_detail(sl)))
            failed += problems
        if failed:
            raise StepFailed(f"{len(failed)} problem(s): {failed[0]}")

    def ok_detail(self, sl: FabricSlice) -> str:
        return f"{len(sl.leaves)} leaves, {len(sl.spines)} spines, {len(sl.hosts)} hosts"


@dataclass
class FabricReroute:
    """Step ``reroute``: a spine falls silent; every leaf routes around it within the rendered hold time."""

    slices: list[FabricSlice]
    name: str = "reroute"

    def run(self, state: State, record: Record) -> None:
        failed = []
        for sl, r in zip(self.slices, _each(self.slices, lambda sl: measure_reroute(state, sl))):
            detail = "; ".join(r.problems)[:900] or (
                f"{r.spine} silent: rerouted in {r.seconds:.1f} s (hold time {r.hold_s} s); "
                f"both spines back in {r.recovered_s:.1f} s")
            record(sl.fabric, HostOutcome(FAILED if r.problems else OK, r.seconds or 0.0, detail,
                                          {"reroute_ms": round((r.seconds or 0) * 1000), "hold_ms": r.hold_s * 1000}))
            failed += r.problems
        if failed:
            raise StepFailed(failed[0])


def fabric_steps(slices: list[FabricSlice], netplans: dict[str, dict[str, str]] | None = None,
                 interfaces: list[str] | None = None) -> list:
    """The scenario's steps after the site mirror: bring the slices up, then check each claim."""
    return [FabricInstall(slices), FabricSwitches(slices), FabricRails(slices, netplans, interfaces),
            FabricCheck("ecmp", check_ecmp, slices, wait=True), FabricCheck("reach", check_reach, slices),
            FabricCheck("mtu", check_mtu, slices), FabricReroute(slices)]


def slice_nodes(slices: list[FabricSlice], rid: str) -> list[NodeSpec]:
    """One node per switch and host of the slices, on the rehearsal's management range (eth0 is a switch's
    management port and a host's SSH path; the fabric is the cables)."""
    names = list(dict.fromkeys(n for sl in slices for n in (*(s.name for s in sl.switches), *sl.hosts)))
    return [NodeSpec(s.name, s.address, init=NODE_INIT) for s in fallback_specs(names, rid)]


ROUTED_FABRIC = Need("a routed Ethernet/RoCE fabric (two tiers or more) with hosts", routed_fabrics_unmet,
                     "rehearse blueprints/hgx-h200-roce-1024.yaml or gb200-nvl72-8rack.yaml")


class FabricScenario(Scenario):
    """Runs alone: it boots switches and the hosts under them, not the Slurm cluster."""

    name = "fabric"
    proves = ("the rendered switch and host network configuration forwards: every rail reaches the same rail of "
              "every other host through the spines at the fabric MTU, leaves spread routes over both spines, a "
              "silent spine is routed around within the BGP hold time, and MTU + 1 with DF is refused")
    needs = (ROUTED_FABRIC,)
    runs_alone = "it boots the fabric's switches and hosts, not the Slurm cluster"
    needs_checked_when_named = True
    converged_first = False
    installs_slurm = False
    packages = FABRIC_SWITCH + FABRIC_HOST

    def __init__(self) -> None:
        self._sliced: list[FabricSlice] | None = None

    def _slices(self, build: Build) -> list[FabricSlice]:
        """The slices of the blueprint as rehearsed, from its rendered files (worked out once per build)."""
        if self._sliced is None:
            self._sliced = fabric_slices(build.base, build.files)
        return self._sliced

    def files(self, build: Build) -> dict[str, str]:
        self._slices(build)  # a blueprint the scenario cannot slice is refused before anything is written
        return {f"ansible/{RAILS_PLAYBOOK}": rails_playbook(self._slices(build))}

    def nodes(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        return slice_nodes(self._slices(build), build.rid)

    def links(self, build: Build) -> list[Link]:
        return [link for sl in self._slices(build) for link in sl.links]

    def steps(self, build: Build) -> list:
        slices = self._slices(build)
        build.info["fabric"] = {sl.fabric: {"leaves": list(sl.leaves), "spines": list(sl.spines),
                                            "hosts": list(sl.hosts), "mtu": sl.mtu, "hold_s": sl.hold_time(),
                                            "cables": len(sl.links)} for sl in slices}
        interfaces = next((i for sl in slices if (i := role_interfaces(build.base, sl))), None)
        if interfaces:
            build.info["fabric_interfaces"] = {"rehearsed": interfaces, "why": (
                "roce_network_interfaces: the plan's names, given to the role because its lookup of each RDMA "
                "device's interface in sysfs finds nothing in a node without RDMA devices")}
        return fabric_steps(slices, interfaces=interfaces)

