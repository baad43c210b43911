"""The rendered DNS of lab-ha served by a real unbound (Debian 12's 1.17) on this machine and queried with dig: the
forward and reverse answers of hosts, BMCs, switches and PDUs, NXDOMAIN inside the cluster's zones, REFUSED outside
them (no upstream resolvers). unbound runs in the foreground from a temporary directory on 127.0.0.77 and a free port:
the only changes to the rendered unbound.conf are where it listens and where the zone files are (printed below)."""

from __future__ import annotations

import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterctl.targets import dns as target
from tests.conftest import require_tool
from tests.helpers import plan_of, shipped

ADDRESS = "127.0.0.77"
START_TIMEOUT_S = 20


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((ADDRESS, 0))
        return s.getsockname()[1]


def _local_conf(rendered: str, zones: Path, port: int) -> str:
    """The rendered unbound.conf with this test's listening address and zone directory."""
    conf = rendered.replace(target.NODE_ZONE_DIR, str(zones))
    conf = conf.replace("    interface: 0.0.0.0\n    interface: 127.0.0.1\n",
                        f"    interface: {ADDRESS}\n    port: {port}\n")
    assert f"interface: {ADDRESS}" in conf
    return conf + (f'\nserver:\n    chroot: ""\n    username: ""\n    directory: "{zones}"\n    pidfile: ""\n'
                   "    use-syslog: no\n    verbosity: 1\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, int]]:
    unbound = require_tool("unbound", hint="apt-get install -y --no-install-recommends unbound")
    dig = require_tool("dig", hint="apt-get install -y --no-install-recommends bind9-dnsutils")
    base = tmp_path_factory.mktemp("unbound")
    files = target.render(plan_of(shipped("lab-ha")))
    for path, text in files.items():
        if path.endswith(".zone"):
            (base / path.rsplit("/", 1)[1]).write_text(text)
    port = _free_port()
    (base / "unbound.conf").write_text(_local_conf(files["dns/unbound.conf"], base, port))
    proc = subprocess.Popen([unbound, "-d", "-c", str(base / "unbound.conf")], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        seen = []
        while not any("start of service" in line for line in seen):  # unbound -d says so once it answers
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stderr], [], [], max(left, 0))
            line = proc.stderr.readline() if ready else ""
            if not line:
                raise AssertionError(f"unbound did not start within {START_TIMEOUT_S} s:\n{''.join(seen)}")
            seen.append(line)
        yield dig, port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def query(server: tuple[str, int], *args: str) -> tuple[str, list[str]]:
    dig, port = server
    done = subprocess.run([dig, f"@{ADDRESS}", "-p", str(port), "+tries=1", "+time=5", *args],
                          capture_output=True, text=True, timeout=30, check=True)
    status = next(line.split("status: ")[1].split(",")[0] for line in done.stdout.splitlines() if "status: " in line)
    answers = [line.split()[-1] for line in done.stdout.split(";; ANSWER SECTION:\n", 1)[-1].split("\n\n")[0]
               .splitlines()] if ";; ANSWER SECTION:" in done.stdout else []
    return status, answers


@pytest.mark.parametrize("name,address", [("gpu01.lab-ha.internal", "10.10.0.17"),
                                          ("head02-bmc.lab-ha.internal", "10.11.0.20"),
                                          ("mgmt-leaf01.lab-ha.internal", "10.12.0.18"),
                                          ("lab01-pdu2.lab-ha.internal", "10.12.0.20")])
def test_forward_and_reverse(server, name, address):
    assert query(server, name, "A") == ("NOERROR", [address])
    assert query(server, "-x", address) == ("NOERROR", [name + "."])


def test_zone_apex_names_both_controllers(server):
    status, servers = query(server, "lab-ha.internal", "NS")
    assert (status, sorted(servers)) == ("NOERROR", ["head01.lab-ha.internal.", "head02.lab-ha.internal."])


def test_unknown_names_inside_and_outside_the_cluster(server):
    assert query(server, "gpu99.lab-ha.internal", "A") == ("NXDOMAIN", [])
    assert query(server, "-x", "10.10.0.200") == ("NXDOMAIN", [])
    assert query(server, "example.com", "A") == ("REFUSED", [])  # no site.dns_servers: nothing else is answered
