"""Bringing a fabric slice up on its nodes from the rendered files (docs/rehearse.md, "The fabric scenario").

Switches: Debian's ``frr`` from the site mirror, run by its own ``frr.service`` under the node's systemd, with
the rendered ``frr.conf`` (checked first by ``vtysh --dryrun``, FRR's own parser) and the daemons it uses
enabled in ``/etc/frr/daemons``; what FRR does not set (port MTU and addresses) comes from the rendered
interfaces file (ifupdown2's ``iface`` stanzas, as Cumulus Linux keeps them in /etc/network/interfaces), applied
with ``ip``: ifupdown2 is not what the image runs, and only ``mtu`` and ``address`` are read (any other key is
reported, not silently dropped). A switch forwards (``net.ipv4.conf.all.forwarding=1``, as a Cumulus switch
does), which a fresh network namespace does not.

Hosts: the rendered netplan is compiled by netplan itself (``netplan generate``) and applied by
systemd-networkd, the backend netplan writes for (``systemctl restart systemd-networkd``): that is what
``netplan apply`` does, less its udev steps (``udevadm`` renames and triggers), which a node without udev cannot
run (tried: ``netplan apply`` stops at ``udevadm test-builtin net_setup_link``).
"""

from __future__ import annotations

import re
import shlex

from clusterctl.rehearse.fabric_slice import SliceSwitch
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State

FRR_CONF = "/etc/frr/frr.conf"
FRR_DAEMONS = "/etc/frr/daemons"
APPLY_TIMEOUT_S = 60.0
IFACE_KEYS = ("mtu", "address")
"""the interfaces-file keys the rehearsal applies; others are reported (``ignored``)"""
DAEMONS = {"bgpd": re.compile(r"^router bgp ", re.M), "bfdd": re.compile(r"^\s*(bfd\b|neighbor \S+ bfd)", re.M)}
"""FRR daemons a configuration needs, by what it configures (zebra, mgmtd and staticd always run)"""


def parse_interfaces(text: str) -> dict[str, dict[str, list[str]]]:
    """``iface NAME`` stanzas of an ifupdown2 interfaces file: name -> key -> values, in file order."""
    out: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        words = line.split()
        if not raw[0].isspace():
            current = out.setdefault(words[1], {}) if words[0] == "iface" and len(words) > 1 else None
        elif current is not None and len(words) > 1:
            current.setdefault(words[0], []).extend(words[1:])
    return out


def interface_commands(text: str, present: set[str]) -> tuple[list[str], list[str]]:
    """The ``ip`` commands that give the ports present on the node their MTU and addresses from the rendered
    interfaces file ``text``; and what is ignored (keys the rehearsal does not apply)."""
    commands, ignored = [], []
    for name, keys in parse_interfaces(text).items():
        if name not in present:
            continue
        for key in sorted(set(keys) - set(IFACE_KEYS)):
            ignored.append(f"{name}: {key}")
        dev = shlex.quote(name)
        for mtu in keys.get("mtu", [])[-1:]:
            commands.append(f"ip link set dev {dev} mtu {shlex.quote(mtu)}")
        for address in keys.get("address", []):
            commands.append(f"ip addr replace {shlex.quote(address)} dev {dev}")
        if name != "lo":
            commands.append(f"ip link set dev {dev} up")
    return commands, ignored


def daemons_script(conf: str) -> str:
    """Shell lines enabling in /etc/frr/daemons the FRR daemons ``conf`` needs."""
    return "; ".join(f"sed -i 's/^{d}=no/{d}=yes/' {FRR_DAEMONS}" for d, used in DAEMONS.items()
                     if used.search(conf))


def run(state: State, node: str, command: str, timeout: float = APPLY_TIMEOUT_S) -> str:
    """Run ``command`` on ``node``; '' when it exits 0, else what it said."""
    r = ssh(state, node, command, timeout=timeout)
    return "" if r.returncode == 0 else f"{node}: `{command[:120]}` exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}"


def present_ports(state: State, node: str) -> set[str]:
    r = ssh(state, node, "ls /sys/class/net")
    return set(r.stdout.split())


def apply_switch(state: State, switch: SliceSwitch) -> tuple[str, list[str]]:
    """Configure ``switch`` from its rendered files: the interfaces file's MTU and addresses, then FRR
    (re)started with the configuration, unless it already runs this very one. Returns (error or '', the
    interfaces-file keys not applied)."""
    running = read_file(state, switch.name, FRR_CONF) == switch.frr_conf
    if not running:
        write_file(state, switch.name, FRR_CONF, switch.frr_conf, mode="0640", owner="frr:frr")
        err = run(state, switch.name, f"vtysh --dryrun -f {FRR_CONF}")
        if err:
            return f"FRR refuses the rendered {switch.source or FRR_CONF}: {err}", []
    commands, ignored = interface_commands(switch.interfaces, present_ports(state, switch.name))
    script = ["sysctl -q -w net.ipv4.conf.all.forwarding=1 net.ipv6.conf.all.forwarding=1", *commands]
    enable = daemons_script(switch.frr_conf)
    if enable:
        script.append(enable)
    # reset-failed: a switch reconfigured several times (the tests that break a rendered file) would otherwise
    # reach frr.service's start limit
    start = "{ systemctl reset-failed frr.service; systemctl restart frr; }"
    script.append(f"{{ systemctl is-active --quiet frr || {start}; }}" if running else start)
    script.append("systemctl is-active --quiet frr")
    return run(state, switch.name, " && ".join(script)), ignored


def apply_netplan(state: State, host: str, netdevs: tuple[str, ...]) -> str:
    """Compile the host's netplan files with netplan and apply them with systemd-networkd, the rails starting as
    at boot (no IPv4 address, route or networkd rule left from an earlier file: networkd keeps a route a file no
    longer has); wait until the rails are configured. Returns '' or the error."""
    fresh = "; ".join(f"ip -4 addr flush dev {shlex.quote(n)}; ip -4 route flush table all dev {shlex.quote(n)}"
                      for n in netdevs)
    wait = " ".join(f"-i {shlex.quote(n)}" for n in netdevs)
    return run(state, host, f"{fresh}; ip -4 rule flush protocol static; netplan generate && "
                            "systemctl restart systemd-networkd && "
                            f"/lib/systemd/systemd-networkd-wait-online {wait} --timeout=30 && "
                            "for f in /etc/sysctl.d/*clusterctl*.conf; do [ -e \"$f\" ] && sysctl -q -p \"$f\"; done; true")


def read_file(state: State, node: str, path: str) -> str:
    r = ssh(state, node, f"cat {shlex.quote(path)}")
    return r.stdout if r.returncode == 0 else ""
