"""DHCP target: Kea's DHCPv4 server configuration (``dhcp/kea-dhcp4.conf``) from :mod:`clusterctl.plan.dhcp`.

Kea 2.2 (Debian 12's kea-dhcp4-server) is the target version; every key below is in its Administrator Reference
Manual (ARM), section named after the key:

- ``interfaces-config``: left empty here; the dhcp_server role binds the interface that carries the controller's
  planned address (ARM "Interface Configuration", the ``eth0/10.10.0.1`` form), found from its facts by address.
- ``subnet4`` with ``id``, ``subnet``, no ``pools`` and ``reservations`` of ``hw-address``, ``ip-address`` and
  ``hostname`` (ARM "Host Reservations in DHCPv4"); ``host-reservation-identifiers: [hw-address]`` (the inventory
  has MACs, nothing else); ``reservations-out-of-pool: true`` (ARM "Fine-Tuning DHCPv4 Host Reservation": every
  reservation is outside any pool, so Kea need not check pools for it); ``reservations-global: false``.
- ``option-data`` (ARM "DHCPv4 Standard Options"): ``domain-name-servers`` and ``ntp-servers`` (the controllers'
  in-band addresses: they run the DNS and chrony), ``domain-name`` and ``domain-search`` (the cluster's zone).
  ``routers`` is not sent: the plan has no gateway for these pools (the in-band, BMC and management networks are
  one L2 segment each, or routed by a relay the site configures; docs/network.md, "DHCP").
- ``client-classes`` when the blueprint names ``site.provisioner`` (ARM "Client Classification", "Setting Fixed
  Fields in Classification": ``next-server``, ``boot-file-name``): iPXE (``option[77].hex == 'iPXE'``, user class)
  first, then UEFI HTTP boot (``substring(option[60].hex,0,10) == 'HTTPClient'``, answered with the same vendor
  class, RFC 4578's option 93 architecture 16), then UEFI PXE (architecture 7 or 9) and BIOS PXE (architecture
  0). The tests exclude each other, so no two classes set the same field.
- ``hooks-libraries`` with two controllers or more (ARM "libdhcp_ha.so: High Availability Outage Resilience for Kea
  Servers"): ``libdhcp_lease_cmds.so`` (the HA hook needs it) and ``libdhcp_ha.so`` in ``hot-standby`` mode, the
  first controller ``primary``, the second ``standby``, others ``backup``; the peers talk over the hook's own HTTP
  listener (the HA entry's own ``multi-threading`` map with ``http-dedicated-listener``, the server's with
  ``enable-multi-threading``: ARM "Multi-Threaded Configuration (HA+MT)"), so no kea-ctrl-agent is needed. ``this-server-name`` is the primary here; the role sets
  each controller's own name when it installs the file. Library paths are Debian's on x86-64; the role writes the
  host's own hooks directory.

The first line is a ``#`` comment (Kea's parser takes ``#`` comments); the rest is JSON, which the role reads.
"""

from __future__ import annotations

import json
import re

from clusterctl.plan.dhcp import BootSettings, DhcpSubnet, boot_server_refusal, boot_settings, dhcp_servers, \
    dhcp_subnets, inband_addresses
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.site_records import dns_domain
from clusterctl.targets import RenderError
from clusterctl.targets.common import header

CONFIG = "dhcp/kea-dhcp4.conf"
HOOKS_DIR = "/usr/lib/x86_64-linux-gnu/kea/hooks"
"""Debian 12's hooks directory on amd64 (``dpkg -L kea-dhcp4-server``); the role puts the host's own"""
HA_PORT = 8001
"""the HA hook's dedicated HTTP listener, on each controller's in-band address"""
LEASE_FILE = "/var/lib/kea/kea-leases4.csv"
CONTROL_SOCKET = "/run/kea/kea4-ctrl-socket"
"""Debian's packaged kea-dhcp4.conf paths (the lease file the package's AppArmor profile and kea-lfc expect)"""
VALID_LIFETIME = 86400
"""a day: every address is reserved, so a lease only says the node is alive; renew at half, rebind at 7/8"""
HA_TIMERS = {"heartbeat-delay": 10000, "max-response-delay": 60000, "max-ack-delay": 5000, "max-unacked-clients": 5}
"""the ARM's hot-standby example values (ms): the standby takes over a minute after the primary stops answering
both it and five clients"""


def _options(plan: ClusterPlan, servers: list[str]) -> list[dict]:
    domain = dns_domain(plan)
    out = []
    if servers:
        out.append({"name": "domain-name-servers", "data": ", ".join(servers)})
    out += [{"name": "domain-name", "data": domain}, {"name": "domain-search", "data": domain}]
    if servers:
        out.append({"name": "ntp-servers", "data": ", ".join(servers)})
    return out


def _subnet(s: DhcpSubnet) -> dict:
    return {"id": s.id, "subnet": s.cidr,
            "comment": f"pool {s.pool} ({s.role}): {len(s.reservations)} reservation(s); {s.unreserved} planned "
                       f"address(es) without a MAC in the inventory get none ({s.unreserved_devices} of them "
                       "management devices'; rule INVENTORY002; docs/network.md, \"DHCP\")",
            "pools": [],
            "reservations": [{"hw-address": r.mac, "ip-address": r.address, "hostname": r.name}
                             for r in s.reservations]}


def _classes(boot: BootSettings) -> list[dict]:
    ipxe = "option[77].hex == 'iPXE'"
    http = "substring(option[60].hex,0,10) == 'HTTPClient'"
    out = []
    if boot.ipxe_script_url:
        out.append({"name": "ipxe", "test": ipxe, "boot-file-name": boot.ipxe_script_url})
    not_ipxe = f"not ({ipxe})" if boot.ipxe_script_url else ""
    if boot.http_boot_url:
        test = f"{not_ipxe} and {http}" if not_ipxe else http
        out.append({"name": "uefi-http", "test": test, "boot-file-name": boot.http_boot_url,
                    "option-data": [{"name": "vendor-class-identifier", "data": "HTTPClient"}]})
    guard = " and ".join(t for t in (not_ipxe, f"not ({http})" if boot.http_boot_url else "") if t)
    uefi = "(option[93].hex == 0x0007 or option[93].hex == 0x0009)"
    bios = "option[93].hex == 0x0000"
    out.append({"name": "uefi-pxe", "test": f"{guard} and {uefi}" if guard else uefi,
                "next-server": boot.next_server, "boot-file-name": boot.uefi_boot_file})
    out.append({"name": "bios-pxe", "test": f"{guard} and {bios}" if guard else bios,
                "next-server": boot.next_server, "boot-file-name": boot.bios_boot_file})
    return out


def _ha(controllers: tuple[str, ...], addresses: dict[str, str]) -> tuple[list[dict], dict]:
    """(hooks-libraries, multi-threading) of a high-availability pair."""
    roles = ["primary", "standby"] + ["backup"] * (len(controllers) - 2)
    peers = [{"name": c, "url": f"http://{addresses[c]}:{HA_PORT}/", "role": role, "auto-failover": role != "backup"}
             for c, role in zip(controllers, roles)]
    ha = {"this-server-name": controllers[0], "mode": "hot-standby", **HA_TIMERS,
          "multi-threading": {"enable-multi-threading": True, "http-dedicated-listener": True,
                              "http-listener-threads": 2, "http-client-threads": 2},
          "peers": peers}
    hooks = [{"library": f"{HOOKS_DIR}/libdhcp_lease_cmds.so"},
             {"library": f"{HOOKS_DIR}/libdhcp_ha.so", "parameters": {"high-availability": [ha]}}]
    threads = {"enable-multi-threading": True, "thread-pool-size": 4, "packet-queue-size": 64}
    return hooks, threads


def kea_config(plan: ClusterPlan) -> dict | None:
    """Kea's ``Dhcp4`` configuration (module docstring); None when nothing is served."""
    subnets = dhcp_subnets(plan)
    if not subnets:
        return None
    refusal = boot_server_refusal(plan)
    if refusal is not None:
        err = RenderError(refusal)
        err.hint = "name a host of the blueprint or write the boot server's IPv4 address"
        err.path = ("site", "provisioner", "server")
        raise err
    controllers = dhcp_servers(plan)
    addresses = inband_addresses(plan, controllers)
    servers = [addresses[c] for c in controllers if c in addresses]
    conf: dict = {
        "interfaces-config": {"interfaces": []},
        "control-socket": {"socket-type": "unix", "socket-name": CONTROL_SOCKET},
        "lease-database": {"type": "memfile", "persist": True, "name": LEASE_FILE, "lfc-interval": 3600},
        "valid-lifetime": VALID_LIFETIME, "renew-timer": VALID_LIFETIME // 2, "rebind-timer": VALID_LIFETIME * 7 // 8,
        "host-reservation-identifiers": ["hw-address"],
        "reservations-global": False, "reservations-in-subnet": True, "reservations-out-of-pool": True,
        "option-data": _options(plan, servers),
    }
    boot = boot_settings(plan)
    if boot is not None:
        conf["client-classes"] = _classes(boot)
    if len(controllers) > 1 and all(c in addresses for c in controllers):
        conf["hooks-libraries"], conf["multi-threading"] = _ha(controllers, addresses)
    conf["subnet4"] = [_subnet(s) for s in subnets]
    conf["loggers"] = [{"name": "kea-dhcp4", "output_options": [{"output": "syslog"}], "severity": "INFO"}]
    return {"Dhcp4": conf}


def kea_text(conf: dict) -> str:
    """``conf`` as JSON, indented, with one reservation a line (a 100,000-GPU inventory is ~27,000 of them)."""
    rows: list[str] = []
    subnets = []
    for subnet in conf["Dhcp4"]["subnet4"]:
        marks = []
        for r in subnet["reservations"]:
            rows.append(json.dumps(r, ensure_ascii=True))
            marks.append(f"\x00{len(rows) - 1}\x00")
        subnets.append({**subnet, "reservations": marks})
    conf = {"Dhcp4": {**conf["Dhcp4"], "subnet4": subnets}}
    text = json.dumps(conf, indent=1, ensure_ascii=True)
    if not rows:
        return text
    # the placeholders are JSON strings holding NUL, which json.dumps writes as \u0000: nothing else can match
    return RESERVATION_MARK.sub(lambda m: rows[int(m.group(1))], text)


RESERVATION_MARK = re.compile(r'"\\u0000(\d+)\\u0000"')


def render(plan: ClusterPlan) -> dict[str, str]:
    conf = kea_config(plan)
    if conf is None:
        return {}
    return {CONFIG: header(plan) + kea_text(conf) + "\n"}
