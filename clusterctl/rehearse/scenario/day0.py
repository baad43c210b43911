"""``day0``: the cluster's own Day-0 services, rendered from the blueprint, bring a node up from nothing
(docs/rehearse.md, "The day0 scenario"; issue 28 item 8). After deploy on the same boot:

1. ``services``: chrony runs on the controllers and the chosen compute node as a rehearsal may run it (``chronyd
   -x``: it never steps or slews the clock the nodes share with this machine); the DHCP and DNS servers the roles
   started answer; ``dig`` (``mirror/packages.COMMON``) is installed on the compute node from the site mirror;
2. ``bmc``: one Redfish emulator per node at its planned BMC address on this machine (:mod:`..node.bmc_net`,
   :mod:`..fake.redfish`); the rendered ``ansible/bmc.yml`` runs from this machine with its credentials from an
   ansible-vault file the rehearsal writes (0600, its password in a 0600 file: never on a command line), reads
   every BMC's power state, sets a one-time PXE boot and power-cycles the first compute node, whose rehearsal node
   restarts with eth0 unaddressed, and reads its power state back;
3. ``dhcp``: that node gets its planned address from the rendered Kea by its inventory MAC (SSH answers there; the
   lease, asked of both controllers' Kea, names the MAC) and both controllers' Kea report their HA relationship;
4. ``dns``: from that node, every planned name (``plan.site_records``) resolves forward and back through each
   controller's DNS server, and ``getent`` resolves a BMC name through the node's resolv.conf;
5. ``time``: the node's chrony lists both controllers and selects one; each controller has the other as a peer
   and the site's time servers as its servers.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from clusterctl.plan.host_identity import host_identities
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.site_records import dns_domain, site_records
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import BACKUP_CONTROLLER, SLURM_AND_COMPUTE, Build, Need, Scenario
from clusterctl.rehearse.scenario.day0_bmc import BmcCycle, PowerLog
from clusterctl.rehearse.scenario.day0_checks import (
    Name,
    dns_problems,
    ha_problems,
    ha_summary,
    kea_command,
    lease_problems,
    time_problems,
    time_sources,
    wait_addressed,
)
from clusterctl.rehearse.scenario.deploy import run_playbook
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import wait_for
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed
from clusterctl.targets.ansible.chrony import CHRONY_CONF, site_time_servers

DHCP_TIMEOUT_S = 60.0
"""how long the power-cycled node may take to boot and get its address by DHCP"""
TIME_TIMEOUT_S = 45.0
"""how long the node's chrony may take to select a controller (the role's ``iburst``: a few 2 s polls)"""
CHRONY_DROPIN = "/etc/systemd/system/chrony.service.d/clusterctl-rehearsal.conf"
CHRONY_REHEARSAL = """\
# clusterctl rehearsal (day0 scenario): every node shares this machine's clock, so chronyd runs with -x (it never
# steps or slews the clock: it measures its sources and serves time) and without the unit's CAP_SYS_TIME
# condition (a rehearsal node has no CAP_SYS_TIME). Not rendered: a rehearsal change (docs/rehearse.md).
[Unit]
ConditionCapability=

[Service]
ExecStart=
ExecStart=!/usr/sbin/chronyd $DAEMON_OPTS -x
"""
INBAND_DHCP_PLAYBOOK = "rehearsal-day0.yml"
INBAND_DHCP_PLAY = """\
# clusterctl rehearsal, day0 scenario: the host_network role's in-band DHCP client tasks alone on the node the BMC
# play power-cycles (the rest of host_network is a hardware role the rehearsal skips: a node has no RDMA ports).
# They write the systemd-networkd file matched by the inventory's MAC and enable networkd: it applies at the next
# boot (docs/network.md, "DHCP"; docs/rehearse.md, "The day0 scenario")
- name: The in-band DHCP client (host_network, inband_dhcp tasks)
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: Write the in-band DHCP client and enable systemd-networkd
      ansible.builtin.include_role:
        name: host_network
        tasks_from: inband_dhcp
"""
INBAND_DHCP_FILE = "/etc/systemd/network/40-clusterctl-inband.network"
"""where host_network writes it (its default host_network_dhcp_network_path)"""
DAY0_SERVICES = {"kea-dhcp4-server": "controllers", "unbound": "controllers"}
"""the Day-0 services the roles start on the controllers (dhcp_server, dns_server roles)"""


def _inventory_macs(plan: ClusterPlan) -> str:
    ids = host_identities(plan)
    compute = [h for g in plan.groups if g.role == "compute" for h in g.hosts[:1]]
    missing = [h for h in compute if ids.get(h) is None or not ids[h].inband_mac]
    if not ids:
        return "the blueprint names no inventory (hosts' MACs)"
    return f"no in-band MAC in the inventory for {', '.join(missing)}" if missing else ""


INVENTORY_MACS = Need("an inventory with the compute hosts' in-band MACs", _inventory_macs,
                      "clusterctl inventory template BLUEPRINT, fill in the MACs and name the file in the blueprint")


@dataclass(frozen=True)
class Day0Hosts:
    """Who is who in the scenario: the controllers (DHCP, DNS and time servers) and the node it power-cycles."""

    controllers: tuple[str, ...]
    target: str
    mac: str
    names: tuple[Name, ...]
    """every planned name, fully qualified, with its address"""
    time_servers: tuple[str, ...]
    """site.time_servers: the controllers' upstream"""


def day0_hosts(plan: ClusterPlan, compute: Sequence[str]) -> Day0Hosts:
    ids = host_identities(plan)
    target = compute[0]
    domain = dns_domain(plan)
    names = tuple(Name(f"{r.name}.{domain}", r.address) for r in site_records(plan))
    return Day0Hosts(tuple(slurm_roles(plan).controllers), target, ids[target].inband_mac, names,
                     tuple(site_time_servers(plan)))


def address_of(state: State, host: str) -> str:
    return state.node(host).address


@dataclass
class Services:
    """chrony with ``-x`` on the controllers and the target; the controllers' Kea and DNS server running; dig on
    the target."""

    hosts: Day0Hosts
    name: str = "services"

    def run(self, state: State, record: Record) -> None:
        h = self.hosts
        for host in (*h.controllers, h.target):
            t0 = time.monotonic()
            write_file(state, host, CHRONY_DROPIN, CHRONY_REHEARSAL, mode="0644")
            r = ssh(state, host, "systemctl daemon-reload && systemctl enable chrony -q && systemctl restart chrony "
                                 "&& systemctl is-active chrony", timeout=60)
            problems = [] if r.returncode == 0 else [f"chrony: {(r.stderr or r.stdout).strip()[-300:]}"]
            if host in h.controllers:
                for unit in DAY0_SERVICES:
                    active = ssh(state, host, f"systemctl is-active {unit}").stdout.strip()
                    if active != "active":
                        problems.append(f"{unit} is {active or 'unknown'}")
            else:
                problems += self._target(state, host)
            record(host, HostOutcome(FAILED if problems else OK, time.monotonic() - t0,
                                     "; ".join(problems) or "chronyd -x running" +
                                     ("" if host in h.controllers else ", host_network's in-band DHCP client for the next boot, dig")))

    def _target(self, state: State, host: str) -> list[str]:
        """The rendered in-band DHCP client (host_network's inband_dhcp tasks: written, networkd enabled, applied
        at the next boot: the node keeps its address until the power cycle) and dig from the site mirror."""
        run = run_playbook(state, [host], ident="day0-inband-dhcp", playbook=INBAND_DHCP_PLAYBOOK, skip_tags=())
        if run.rc != 0:
            return [f"host_network inband_dhcp: {'; '.join(run.failed.get(host, [])) or f'exit {run.rc}'}"]
        r = ssh(state, host, f"grep -qix 'MACAddress={self.hosts.mac}' {INBAND_DHCP_FILE} && systemctl is-enabled "
                             "-q systemd-networkd && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
                             "--no-install-recommends bind9-dnsutils", timeout=300)
        return [] if r.returncode == 0 else [f"{INBAND_DHCP_FILE} with {self.hosts.mac}, networkd enabled, dig: "
                                             f"{(r.stderr or r.stdout).strip()[-300:] or 'no'}"]


@dataclass
class Dhcp:
    """The power-cycled node comes back by DHCP alone; the lease names its MAC; both Kea servers are in HA."""

    hosts: Day0Hosts
    power: PowerLog
    timeout_s: float = DHCP_TIMEOUT_S
    name: str = "dhcp"

    def run(self, state: State, record: Record) -> None:
        h = self.hosts
        if not self.power.wait(h.target, self.timeout_s):
            raise StepFailed(f"{h.target} was not power-cycled by its BMC: {self.power.describe()}")
        address = address_of(state, h.target)
        why, took = wait_addressed(state, h.target, address, self.timeout_s)
        problems = [why] if why else []
        if not why:
            for server in h.controllers:
                problems += lease_problems(state, server, address, h.mac, self.power.powered_on[h.target])
        record(h.target, HostOutcome(FAILED if problems else OK, took, "; ".join(problems) or
                                     f"{address} by DHCP for {h.mac} {took:.1f} s after power-on, leased by "
                                     f"{' and '.join(h.controllers)}", {"dhcp_seconds": round(took, 1)}))
        for server in h.controllers:
            summary = ha_summary(kea_command(state, server, "status-get"))
            wrong = ha_problems(server, summary)
            record(server, HostOutcome(FAILED if wrong else OK, 0.0, "; ".join(wrong) or
                                       f"{summary['mode']}: {summary['role']} {summary['state']}, partner "
                                       f"{summary['partner_role']} {summary['partner_state']}, in touch"))


@dataclass
class Dns:
    """From the power-cycled node, every planned name forward and back through each controller's DNS server."""

    hosts: Day0Hosts
    name: str = "dns"

    def run(self, state: State, record: Record) -> None:
        h = self.hosts
        for server in h.controllers:
            t0 = time.monotonic()
            problems = dns_problems(state, h.target, address_of(state, server), h.names)
            record(server, HostOutcome(FAILED if problems else OK, time.monotonic() - t0,
                                       "; ".join(problems[:5]) or f"{len(h.names)} names forward and back from "
                                       f"{h.target}", {"names": len(h.names), "wrong": len(problems)}))
        bmc = next(n for n in h.names if n.fqdn.startswith(f"{h.target}-bmc."))
        r = ssh(state, h.target, f"getent hosts {bmc.fqdn}")
        got = r.stdout.split()[:1]
        record(h.target, HostOutcome(OK if got == [bmc.address] else FAILED, r.elapsed,
                                     f"getent hosts {bmc.fqdn}: {' '.join(got) or 'not found'}"))


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def controller_time_problems(state: State, h: Day0Hosts, host: str) -> list[str]:
    """A controller's chrony sources: the other controllers as peers, the site's servers given as addresses as
    servers. A site server given by name cannot be a source in a rehearsal (nothing resolves or reaches it: the
    cluster's DNS refuses names outside its zones): it must be a ``server`` line of the controller's chrony.conf."""
    peers = [address_of(state, c) for c in h.controllers if c != host]
    literal = [s for s in h.time_servers if _is_address(s)]
    problems = time_problems(host, time_sources(state, host), servers=literal, peers=peers)
    named = [s for s in h.time_servers if not _is_address(s)]
    if named:
        conf = ssh(state, host, f"cat {CHRONY_CONF}").stdout
        problems += [f"{host}: {CHRONY_CONF} names no server {n}" for n in named
                     if not re.search(rf"(?m)^server {re.escape(n)}(\s|$)", conf)]
    return problems


def target_time_problems(state: State, h: Day0Hosts) -> list[str]:
    servers = [address_of(state, c) for c in h.controllers]
    return time_problems(h.target, time_sources(state, h.target), servers=servers, selected_from=servers)


@dataclass
class Time:
    """The node follows the controllers and selects one; the controllers peer each other."""

    hosts: Day0Hosts
    timeout_s: float = TIME_TIMEOUT_S
    name: str = "time"

    def run(self, state: State, record: Record) -> None:
        h = self.hosts
        last: list[list[str]] = [[]]

        def synced() -> bool:
            last[0] = target_time_problems(state, h)
            return not last[0]

        done, took = wait_for(synced, self.timeout_s, every_s=2.0)
        record(h.target, HostOutcome(OK if done else FAILED, took, "; ".join(last[0]) or
                                     f"selected a controller {took:.0f} s after the check began",
                                     {"select_seconds": round(took, 1)}))
        for host in h.controllers:
            problems = controller_time_problems(state, h, host)
            named = [s for s in h.time_servers if not _is_address(s)]
            record(host, HostOutcome(FAILED if problems else OK, 0.0, "; ".join(problems) or
                                     "peers " + ", ".join(c for c in h.controllers if c != host) +
                                     (f"; site server(s) {', '.join(named)} in chrony.conf (unreachable from a "
                                      "rehearsal)" if named else "")))


class Day0Scenario(Scenario):
    name = "day0"
    proves = ("a node whose eth0 has no address gets its planned address from the rendered Kea (HA on both "
              "controllers) by its inventory MAC after the rendered BMC play power-cycles it through a Redfish "
              "emulator, resolves every planned name forward and back through each controller's DNS, and follows "
              "the controllers' time, which peer each other")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE, BACKUP_CONTROLLER, INVENTORY_MACS)
    needs_checked_when_named = True

    def files(self, build: Build) -> dict[str, str]:
        return {f"ansible/{INBAND_DHCP_PLAYBOOK}": INBAND_DHCP_PLAY}

    def nodes(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """Every node with an in-band MAC in the inventory boots with it (Kea's reservations are by MAC)."""
        ids = host_identities(build.base)
        return [replace(s, mac=ids[s.name].inband_mac) if s.name in ids and ids[s.name].inband_mac else s
                for s in specs]

    def steps(self, build: Build) -> list:
        hosts = day0_hosts(build.base, build.cluster.compute)
        power = PowerLog()
        return [build.label(step, self.name) for step in (
            Services(hosts), BmcCycle(build.base, hosts.target, power), Dhcp(hosts, power), Dns(hosts), Time(hosts))]
