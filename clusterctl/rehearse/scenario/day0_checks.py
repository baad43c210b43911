"""The day0 scenario's checks (docs/rehearse.md, "The day0 scenario"), each a function of the booted rehearsal that
returns what it found (problems: an empty list passes), so the scenario's steps and the broken-render tests
(tests/e2e/test_lab_ha.py) run the same code:

- :func:`wait_addressed`: a node whose eth0 had no address answers SSH at its planned address;
- :func:`kea_command`: a command to a controller's Kea DHCPv4 server through its control socket (the path read
  from the rendered ``kea-dhcp4.conf`` on the node): ``lease4-get`` (the lease names the node's inventory MAC),
  ``status-get`` (the HA relationship: :func:`ha_problems`);
- :func:`dns_problems`: every planned name (``plan.site_records``) resolves forward and back through one
  controller's DNS server, queried with ``dig`` from a node;
- :func:`time_sources` / :func:`time_problems`: ``chronyc -n sources`` on a node and what it must list.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from clusterctl.rehearse.node.command import run_command
from clusterctl.rehearse.node.ssh import ssh, ssh_command, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.observe import wait_for

KEA_CONF = "/etc/kea/kea-dhcp4.conf"
"""where the dhcp_server role writes Kea's DHCPv4 configuration (Debian's path)"""
DIG_BATCH = "/tmp/clusterctl-day0.dig"
DIG_WAIT_S = 1
"""dig's wait for each try (two tries): a server that does not answer costs 4 s per name, forward and back"""
COMMAND_TIMEOUT_S = 30.0

# Runs on a controller (python3 of the node image, standard library): sends one command to Kea's DHCPv4 control
# socket, whose path it reads from the configuration file (argv[1]); argv[2] is the command as JSON.
KEA_COMMAND_SCRIPT = r"""
import json, re, socket, sys
text = open(sys.argv[1], encoding="utf-8").read()
found = re.search(r'"socket-name"\s*:\s*"([^"]+)"', text)
if not found:
    sys.exit("no control-socket socket-name in " + sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(found.group(1))
s.sendall(sys.argv[2].encode())
reply = b""
while True:
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        break
    if not chunk:
        break
    reply += chunk
    try:
        json.loads(reply)
        break
    except ValueError:
        continue
print(reply.decode())
"""


def _eth0_holds(state: State, host: str, address: str) -> str | None:
    """None when ``host`` does not answer SSH; '' when its eth0 holds ``address``; else what it holds. (The lease
    itself is asked of Kea: host_network's ``KeepConfiguration=yes`` makes networkd keep a DHCP address with an
    infinite lifetime, so ``ip addr`` does not mark it ``dynamic``.)"""
    r = ssh(state, host, "ip -j -4 addr show dev eth0", timeout=10)
    if r.returncode != 0:
        return None
    try:
        held = [a.get("local") for link in json.loads(r.stdout) for a in link.get("addr_info", [])]
    except ValueError:
        return f"ip -j addr: not JSON: {r.stdout[:200]!r}"
    return "" if address in held else f"eth0 holds {held}, not {address}"


def wait_addressed(state: State, host: str, address: str, timeout: float) -> tuple[str, float]:
    """Wait until ``host`` answers SSH at ``address`` on eth0 (which had no address at its power-on): ('' or why
    not, seconds)."""
    last: list[str | None] = [None]

    def holds() -> bool:
        last[0] = _eth0_holds(state, host, address)
        return last[0] == ""

    done, took = wait_for(holds, timeout)
    if done:
        return "", took
    if last[0] is None:
        return f"{host} did not answer SSH at {address} within {timeout:.0f} s of its power-on", took
    return last[0], took


def kea_command(state: State, server: str, command: str, arguments: Mapping | None = None) -> dict:
    """The first answer of ``server``'s Kea DHCPv4 server to ``command`` (its control socket); {} when none."""
    message = json.dumps({"command": command, **({"arguments": dict(arguments)} if arguments else {})})
    argv = ssh_command(state, server, f"python3 - {shlex.quote(KEA_CONF)} {shlex.quote(message)}")
    r = run_command(argv, timeout=COMMAND_TIMEOUT_S, input=KEA_COMMAND_SCRIPT)
    if r.returncode != 0:
        return {"result": -1, "text": (r.stderr or r.stdout).strip()[-300:]}
    try:
        reply = json.loads(r.stdout)
    except ValueError:
        return {"result": -1, "text": f"not JSON: {r.stdout[:200]!r}"}
    return reply[0] if isinstance(reply, list) and reply else reply if isinstance(reply, dict) else {}


def lease_problems(state: State, server: str, address: str, mac: str, since: float = 0.0) -> list[str]:
    """``lease4-get`` on ``server``: the lease of ``address`` must name ``mac`` and have been given or renewed at
    ``since`` (a time of this machine's clock, which the nodes share) or later."""
    reply = kea_command(state, server, "lease4-get", {"ip-address": address})
    lease = reply.get("arguments") or {}
    if reply.get("result") != 0:
        return [f"{server}: lease4-get {address}: {reply.get('text', reply)}"]
    if str(lease.get("hw-address", "")).lower() != mac:
        return [f"{server}: the lease of {address} names {lease.get('hw-address')!r}, not {mac}"]
    if lease.get("cltt", 0) < int(since):
        return [f"{server}: the lease of {address} was last given at {lease.get('cltt')}, before the power-on "
                f"({int(since)})"]
    return []


def ha_summary(reply: dict) -> dict:
    """What ``status-get`` says of the HA relationship: mode, local role and state, partner role, state and
    whether the local server is in touch with it."""
    ha = ((reply.get("arguments") or {}).get("high-availability") or [{}])[0]
    servers = ha.get("ha-servers") or {}
    local, remote = servers.get("local") or {}, servers.get("remote") or {}
    return {"mode": ha.get("ha-mode"), "role": local.get("role"), "state": local.get("state"),
            "partner_role": remote.get("role"), "partner_state": remote.get("last-state"),
            "in_touch": remote.get("in-touch")}


def ha_problems(server: str, summary: Mapping) -> list[str]:
    """A server of an HA pair is in the mode's normal state (hot-standby: ``hot-standby``) and in touch with its
    partner, which is in that state too."""
    mode = summary.get("mode")
    if not mode:
        return [f"{server}: Kea reports no high-availability relationship"]
    wrong = [f"{key} {summary.get(key)!r}" for key in ("state", "partner_state") if summary.get(key) != mode]
    if not summary.get("in_touch"):
        wrong.append("not in touch with its partner")
    return [f"{server}: {mode}: " + ", ".join(wrong)] if wrong else []


@dataclass(frozen=True)
class Name:
    """One planned name to resolve: its fully qualified name and its address."""

    fqdn: str
    address: str


def dig_batch(server: str, names: Sequence[Name]) -> str:
    """``dig -f`` lines: each name forward (A or AAAA) and each address back (PTR), asked of ``server`` only."""
    lines = []
    for n in names:
        kind = "AAAA" if ":" in n.address else "A"
        lines.append(f"@{server} +noall +answer +time={DIG_WAIT_S} +tries=2 {n.fqdn}. {kind}")
        lines.append(f"@{server} +noall +answer +time={DIG_WAIT_S} +tries=2 -x {n.address}")
    return "\n".join(lines) + "\n"


def parse_answers(text: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(name -> addresses, address -> names) from dig's answer lines (names without the final dot)."""
    forward: dict[str, set[str]] = {}
    reverse: dict[str, set[str]] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 5 or line.startswith(";"):
            continue
        name, kind, value = f[0].rstrip(".").lower(), f[3], f[4].rstrip(".").lower()
        if kind in ("A", "AAAA"):
            forward.setdefault(name, set()).add(str(ipaddress.ip_address(value)))
        elif kind == "PTR":
            reverse.setdefault(str(ipaddress.ip_address(_unreverse(name))), set()).add(value)
    return forward, reverse


def _unreverse(name: str) -> str:
    """The address of an in-addr.arpa / ip6.arpa name."""
    labels = name.split(".")
    if name.endswith(".in-addr.arpa"):
        return ".".join(reversed(labels[:-2]))
    nibbles = "".join(reversed(labels[:-2]))
    return ":".join(nibbles[i:i + 4] for i in range(0, 32, 4))


def answer_problems(names: Iterable[Name], forward: Mapping[str, set[str]],
                    reverse: Mapping[str, set[str]], server: str) -> list[str]:
    """Each name's address and each address's name (any of the names planned at that address) as answered."""
    names = list(names)
    at: dict[str, set[str]] = {}
    for n in names:
        at.setdefault(str(ipaddress.ip_address(n.address)), set()).add(n.fqdn.lower())
    problems = []
    for n in names:
        got = forward.get(n.fqdn.lower(), set())
        if str(ipaddress.ip_address(n.address)) not in got:
            problems.append(f"{server}: {n.fqdn} -> {sorted(got) or 'no answer'}, planned {n.address}")
    for address, planned in at.items():
        got = reverse.get(address, set())
        if not got & planned:
            problems.append(f"{server}: {address} -> {sorted(got) or 'no PTR'}, planned {sorted(planned)[0]}")
    return problems


def dns_problems(state: State, client: str, server: str, names: Sequence[Name]) -> list[str]:
    """Ask ``server`` (an address) for every name forward and back with ``dig`` on ``client``: the problems."""
    write_file(state, client, DIG_BATCH, dig_batch(server, names), mode="0644")
    r = ssh(state, client, f"dig -f {DIG_BATCH}", timeout=COMMAND_TIMEOUT_S + 4 * DIG_WAIT_S * len(names))
    if r.returncode != 0 and not r.stdout:
        return [f"{client}: dig -f: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}"]
    forward, reverse = parse_answers(r.stdout)
    return answer_problems(names, forward, reverse, server)


@dataclass(frozen=True)
class TimeSource:
    """One line of ``chronyc -n sources``: mode (``^`` server, ``=`` peer), state (``*`` selected, ``+``
    combined, ``-``, ``?``, ``x``, ``~``) and the address."""

    mode: str
    state: str
    address: str


SOURCE_LINE = re.compile(r"^([\^=#])([*+\-?x~])\s+(\S+)")


def parse_sources(text: str) -> list[TimeSource]:
    return [TimeSource(*m.groups()) for m in map(SOURCE_LINE.match, text.splitlines()) if m]


def time_sources(state: State, host: str) -> list[TimeSource]:
    r = ssh(state, host, "chronyc -n sources", timeout=10)
    return parse_sources(r.stdout) if r.returncode == 0 else []


def time_problems(host: str, sources: Sequence[TimeSource], *, servers: Sequence[str] = (),
                  peers: Sequence[str] = (), selected_from: Sequence[str] = ()) -> list[str]:
    """``host``'s sources must hold each of ``servers`` as a server (``^``) and each of ``peers`` as a peer
    (``=``), nothing else, and (with ``selected_from``) have selected (``*``) one of those."""
    have = {(s.mode, s.address) for s in sources}
    want = {("^", a) for a in servers} | {("=", a) for a in peers}
    problems = [f"{host}: no {'peer' if m == '=' else 'server'} {a} in chronyc sources" for m, a in sorted(want - have)]
    extra = sorted(have - want)
    if extra:
        problems.append(f"{host}: sources not planned: {', '.join(m + a for m, a in extra)}")
    if selected_from and not any(s.state == "*" and s.address in selected_from for s in sources):
        problems.append(f"{host}: has selected none of {', '.join(selected_from)} "
                        f"({' '.join(s.mode + s.state + s.address for s in sources) or 'no sources'})")
    return problems
