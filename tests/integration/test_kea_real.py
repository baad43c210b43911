"""The rendered Kea configuration served for real: kea-dhcp4 (Kea 2.2, Debian 12) in a network namespace of its own,
on one end of a veth pair carrying the controller's planned in-band address, answers a DHCPDISCOVER sent from the
other end with lab-ha's inventory MAC of gpu01 by offering gpu01's planned address and the planned options; a MAC
the inventory does not hold gets no offer (no dynamic pool). The HA hook is left out here (a lone hot-standby
primary waits a minute for its partner); the day0 rehearsal runs the pair."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from clusterctl.targets.dhcp import CONFIG, render
from tests.conftest import require_root, require_tool
from tests.helpers import plan_of, shipped

CLIENT = r'''
import json, socket, struct, sys
iface, mac_text, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
mac = bytes.fromhex(mac_text.replace(":", ""))
xid = 0x28c0ffee
bootp = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(4), bytes(4), bytes(4),
                    bytes(4), mac + bytes(10), bytes(64), bytes(128))
options = b"\x63\x82\x53\x63" + bytes([53, 1, 1, 55, 5, 1, 3, 6, 15, 42, 255])
payload = bootp + options
udp = struct.pack("!HHHH", 68, 67, 8 + len(payload), 0) + payload
header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes(4), b"\xff" * 4)
total = sum(struct.unpack("!10H", header))
total = (total & 0xFFFF) + (total >> 16)
header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((iface, 0))
s.settimeout(wait)
s.send(b"\xff" * 6 + mac + b"\x08\x00" + header + udp)
try:
    while True:
        frame = s.recv(4096)
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17 or struct.unpack("!H", ip[ihl + 2:ihl + 4])[0] != 68:
            continue
        b = ip[ihl + 8:]
        if b[0] != 2 or struct.unpack("!I", b[4:8])[0] != xid:
            continue
        opts, i, raw = {}, 240, b
        while i < len(raw) and raw[i] != 255:
            if raw[i] == 0:
                i += 1
                continue
            opts[raw[i]] = raw[i + 2:i + 2 + raw[i + 1]].hex()
            i += 2 + raw[i + 1]
        print(json.dumps({"yiaddr": socket.inet_ntoa(b[16:20]), "options": opts}))
        break
except socket.timeout:
    print(json.dumps(None))
'''


def _run(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def kea_netns(tmp_path):
    """A namespace with veth kea0 (10.10.0.19/24, head01's planned address) and its peer cl0; kea-dhcp4 on kea0
    with lab-ha's rendered configuration (HA hook removed, files under tmp_path)."""
    require_root("a network namespace and raw sockets")
    ip, kea = require_tool("ip"), require_tool("kea-dhcp4")
    ns = f"c28kea{os.getpid()}"
    conf = json.loads(render(plan_of(shipped("lab-ha")))[CONFIG].split("\n", 1)[1])
    d = conf["Dhcp4"]
    for key in ("hooks-libraries", "multi-threading"):
        d.pop(key, None)
    d["interfaces-config"]["interfaces"] = ["kea0/10.10.0.19"]
    d["lease-database"]["name"] = str(tmp_path / "leases4.csv")
    d["control-socket"]["socket-name"] = str(tmp_path / "kea4.sock")
    d["loggers"] = [{"name": "kea-dhcp4", "output_options": [{"output": "stdout"}], "severity": "INFO"}]
    (tmp_path / "kea.conf").write_text(json.dumps(conf))
    assert _run(ip, "netns", "add", ns).returncode == 0
    try:
        for argv in (("link", "add", "kea0", "type", "veth", "peer", "name", "cl0"),
                     ("link", "set", "cl0", "address", "02:00:0a:0a:00:01"),
                     ("addr", "add", "10.10.0.19/24", "dev", "kea0"), ("link", "set", "kea0", "up"),
                     ("link", "set", "cl0", "up"), ("link", "set", "lo", "up")):
            done = _run(ip, "-n", ns, *argv)
            assert done.returncode == 0, done.stderr
        env = {**os.environ, "KEA_PIDFILE_DIR": str(tmp_path), "KEA_LOCKFILE_DIR": str(tmp_path)}
        server = subprocess.Popen([ip, "netns", "exec", ns, kea, "-c", str(tmp_path / "kea.conf")], env=env,
                                  stdout=open(tmp_path / "kea.log", "w"), stderr=subprocess.STDOUT)
        try:
            yield ns, tmp_path / "kea.log"
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        _run(ip, "netns", "del", ns)


def _discover(ns: str, mac: str, wait: float) -> dict | None:
    done = _run(require_tool("ip"), "netns", "exec", ns, sys.executable, "-c", CLIENT, "cl0", mac, str(wait))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_kea_offers_the_planned_address_to_the_inventory_mac_and_nothing_to_a_stranger(kea_netns):
    ns, log = kea_netns
    offer = None
    for _ in range(20):  # Kea opens its socket a moment after it starts: each try waits up to half a second
        offer = _discover(ns, "02:00:0a:0a:00:01", 0.5)
        if offer is not None:
            break
    assert offer is not None, log.read_text()
    assert offer["yiaddr"] == "10.10.0.17"  # gpu01's planned in-band address
    options = offer["options"]
    assert options["53"] == "02"  # DHCPOFFER
    assert options["6"] == "0a0a00130a0a0014"  # DNS: 10.10.0.19, 10.10.0.20 (the controllers)
    assert options["42"] == "0a0a00130a0a0014"  # NTP: the same
    assert bytes.fromhex(options["15"]).rstrip(b"\0") == b"lab-ha.internal"
    assert "3" not in options  # no router: the plan has no gateway
    assert _discover(ns, "02:00:0a:0a:00:99", 1.0) is None  # not in the inventory: no offer
