"""The privilege-bearing positions of a render, read back by parsing the rendered files, and the meaning checks.

A *position* is a value in a rendered file that root acts on: a host name (where the MUNGE key, slurmctld
traffic and the compute roles go), a path (where a file system is mounted, a directory is created or handed to
a daemon, an apt source is trusted), an address range (who may mount an export or ask chrony), a storage or
database host (where a mount or the slurmdbd password goes), a repository key URL (who signs the packages).

Positions, file by file (each read with a parser of the format, never by searching the text):

=========================================  ===================================================================
``hosts/hosts``                            every name (host names) and address (planned addresses)
``ansible/inventory.yml``                  group names under ``all.children``; host names (ranges expanded)
``ansible/group_vars/*.yml``               ``*_host``/``*_hosts``/``*controllers``
                                           values (names); ``path``, ``*_dir(s)``, ``*_mounts``, ``*_location``,
                                           ``*_spool`` values and the path of an NFS ``src`` (paths); the host of
                                           ``src`` and ``host`` (storage hosts); ``clients``, ``*_allow``,
                                           ``*cidr(s)`` (ranges); ``*_key``, ``*_key_url`` (key URLs); QOS names
``slurm/slurm.conf``                       ``SlurmctldHost``, ``AccountingStorage[Backup]Host``, ``NodeName``,
                                           ``PartitionName`` (names; node lists expanded); ``StateSaveLocation``,
                                           ``SlurmdSpoolDir`` (paths)
``slurm/job_container.conf``               ``BasePath`` (path)
``slurm/slurmdbd.conf.j2``                 ``DbdHost``, ``DbdBackupHost`` (names); ``StorageHost`` (storage host)
``pulumi/cluster.json``, ``Pulumi.yaml``   ``admin_cidr`` / ``*Cidr`` settings (ranges; the admin CIDR may be
                                           public, not wider than a /8 or IPv6 /16); host and group names
every rendered file                        its path (case-insensitive collisions), raw reader-hiding characters
=========================================  ===================================================================

A value that the unmodified blueprint's render already has in the same position is never a finding (``/etc/...``
files the roles own, ``StorageHost=localhost``): :func:`violations` compares with that baseline.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import yaml

from tests.security.payloads import READER_HIDING

DENY_EXACT = frozenset({"/", "/tmp", "/var", "/var/tmp", "/var/spool", "/var/lib"})
"""directories no tier, state or spool directory may be exactly (a mount there hides the system's own)"""

DENY_TREES = ("/etc", "/usr", "/root", "/boot", "/proc", "/sys", "/dev", "/lib", "/lib32", "/lib64", "/bin",
              "/sbin", "/run", "/var/run", "/var/spool/cron", "/var/lib/dpkg", "/var/lib/apt")
"""directories nothing of the blueprint may be at or under (system configuration, binaries, kernel interfaces)"""

RESERVED = frozenset({"localhost", "localhost4", "localhost6", "ip6-localhost", "ip6-loopback", "ip6-localnet",
                      "ip6-mcastprefix", "ip6-allnodes", "ip6-allrouters", "all", "ungrouped", "default"})
"""names that already mean something: loopback in every distribution's /etc/hosts, Slurm's ALL and DEFAULT,
Ansible's all and ungrouped (compared case-insensitively; ``localhost.*`` and ``*.localhost`` too)"""


def numeric_address(name: str) -> str | None:
    """The address ``name`` is, in any form getaddrinfo accepts without asking a resolver; None for a name."""
    try:
        info = socket.getaddrinfo(name, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return str(ipaddress.ip_address(info[0][4][0].split("%")[0]))


def bad_name(name: str) -> str | None:
    """Why ``name`` is not a name (an address, or reserved), or None."""
    if numeric_address(name):
        return f"address {numeric_address(name)}"
    low = name.lower()
    if low in RESERVED or low.startswith("localhost.") or low.endswith(".localhost"):
        return "reserved"
    return None


def privileged_path(path: str) -> bool:
    norm = posixpath.normpath("/" + path.lstrip("/")) if path.startswith("/") else path
    norm = "/" if norm == "//" else norm
    return norm in DENY_EXACT or any(norm == t or norm.startswith(t + "/") for t in DENY_TREES)


def world_range(text: str, public_ok: bool = False) -> bool:
    """A range that reaches beyond private space (or a wildcard): ``0.0.0.0/1``, ``::/0``, ``8.8.8.0/24``, ``*``.
    ``public_ok`` (the admin CIDR, which is where SSH comes from: an office's public range): only a range wider
    than an IPv4 /8 or an IPv6 /16 is the world."""
    if "*" in text:
        return True
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    if public_ok:
        return net.prefixlen < (8 if net.version == 4 else 16)
    return net.prefixlen == 0 or not (net.is_private or net.is_loopback or net.is_link_local)


# --- reading the positions --------------------------------------------------------------------------------

@dataclass
class Positions:
    names: dict[str, set[str]] = field(default_factory=dict)  # namespace -> names (host, group, partition, ...)
    where: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> first file
    paths: set[tuple[str, str]] = field(default_factory=set)  # (file:key, path)
    storage_hosts: set[tuple[str, str]] = field(default_factory=set)  # (file:key, host)
    ranges: set[tuple[str, str]] = field(default_factory=set)  # (file:key, range)
    key_urls: set[tuple[str, str]] = field(default_factory=set)  # (file:key, url)
    addresses: set[str] = field(default_factory=set)  # planned host addresses (/etc/hosts)
    hiding: set[tuple[str, str]] = field(default_factory=set)  # (file, character name)
    named: set[tuple[str, str]] = field(default_factory=set)  # (file:key, name) of every name

    def name(self, namespace: str, value: str, where: str) -> None:
        self.names.setdefault(namespace, set()).add(value)
        self.where.setdefault((namespace, value), where)
        self.named.add((where, value))

    def values(self) -> Iterator[tuple[str, str]]:
        """Every (where, value) of every position, for the syntax payloads' check."""
        yield from self.named
        yield from self.paths
        yield from self.storage_hosts
        yield from self.ranges
        yield from self.key_urls


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def expand_hosts(text: str) -> list[str]:
    """A Slurm (``gpu[01-02,05]``) or Ansible (``gpu[01:02]``) host range as names; other text as itself."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m or "[" in m.group(3):
            out.append(part)
            continue
        for item in m.group(2).split(","):
            lo, _, hi = item.replace(":", "-").partition("-")
            if lo.isdigit() and (hi or lo).isdigit() and int(hi or lo) - int(lo) < 100_000:
                out += [f"{m.group(1)}{n:0{len(lo)}d}{m.group(3)}" for n in range(int(lo), int(hi or lo) + 1)]
            else:
                out.append(part)
    return out


_PATH_KEY = re.compile(r"(^|_)(path|paths|dir|dirs|mount|mounts|location|spool)$")
_NAME_KEY = re.compile(r"(^|_)(host|hosts|controllers)$")
_RANGE_KEY = re.compile(r"(^|_)(clients|allow|cidr|cidrs)$", re.IGNORECASE)
_KEY_KEY = re.compile(r"(^|_)(key|key_url|keys)$")


def _group_vars(p: Positions, file: str, data: object, key: str = "") -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            _group_vars(p, file, v, str(k))
        return
    if isinstance(data, list):
        for item in data:
            if key.endswith("_qos") and isinstance(item, dict) and isinstance(item.get("name"), str):
                p.name("qos", item["name"], f"{file}:{key}")
            _group_vars(p, file, item, key)
        return
    if not isinstance(data, str):
        return
    where = f"{file}:{key}"
    if key == "src":
        host, sep, rest = data.partition(":")
        if sep:
            p.storage_hosts.add((where, host.split("@")[0]))
            if "@" not in host and rest.startswith("/"):  # NFS: the server's directory (Lustre: a file system name)
                p.paths.add((where, rest))
    elif key == "host":
        p.storage_hosts.add((where, data))
        for n in expand_hosts(data):
            p.name("host", n, where)
    elif _PATH_KEY.search(key) and data.startswith("/"):
        p.paths.add((where, data))
    elif _NAME_KEY.search(key):
        for n in expand_hosts(data):
            p.name("host", n, where)
    if _RANGE_KEY.search(key):
        p.ranges.add((where, data))
    if _KEY_KEY.search(key):
        p.key_urls.add((where, data))


def _inventory(p: Positions, data: object) -> None:
    def walk(group: dict) -> None:
        for host in (group.get("hosts") or {}):
            for n in expand_hosts(str(host)):
                p.name("host", n, "ansible/inventory.yml")
        for name, child in (group.get("children") or {}).items():
            p.name("group", str(name), "ansible/inventory.yml")
            walk(child or {})

    if isinstance(data, dict):
        for root in data.values():
            walk(root or {})


def _conf_pairs(text: str) -> Iterator[tuple[str, str]]:
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for token in line.split():
            k, sep, v = token.partition("=")
            if sep:
                yield k, v


def _slurm(p: Positions, file: str, text: str) -> None:
    for k, v in _conf_pairs(text):
        where = f"{file}:{k}"
        if k in ("SlurmctldHost", "AccountingStorageHost", "AccountingStorageBackupHost", "DbdHost",
                 "DbdBackupHost"):
            p.name("slurm-host", v, where)  # as written: name(address) is Slurm's syntax
            p.name("host", v.split("(")[0], where)
        elif k == "NodeName":
            p.name("slurm-node", v, where)
            for n in expand_hosts(v):
                p.name("host", n, where)
        elif k == "PartitionName":
            p.name("partition", v, where)
        elif k in ("StateSaveLocation", "SlurmdSpoolDir", "BasePath"):
            p.paths.add((where, v))
        elif k == "StorageHost":
            p.storage_hosts.add((where, v))


def _pulumi(p: Positions, file: str, text: str) -> None:
    data = json.loads(text) if file.endswith(".json") else yaml.load(text, _Loader)

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k).rsplit(":", 1)[-1])
            if isinstance(node.get("value"), str):
                walk(node["value"], key)
        elif isinstance(node, list):
            for item in node:
                walk(item, key)
        elif isinstance(node, str):
            if _RANGE_KEY.search(key) or key.lower().endswith("cidr"):
                p.ranges.add((f"{file}:{key}", node))
            elif key in ("hostnames", "controllers", "accounting"):
                p.name("host", node, f"{file}:{key}")

    walk(data, "")
    if isinstance(data, dict):
        for group in data.get("groups", []) or []:
            if isinstance(group, dict) and isinstance(group.get("name"), str):
                p.name("group", group["name"], f"{file}:groups")


def read_positions(files: dict[str, str]) -> Positions:
    """Every privilege-bearing position of a render (``{relative path: text}``)."""
    p = Positions()
    for path, text in files.items():
        p.name("file", path, path)
        for label, char in READER_HIDING.items():
            if (re.search(r"\r(?!\n)", text) if label == "CR" else char in text):
                p.hiding.add((path, label))
    if "hosts/hosts" in files:
        for line in files["hosts/hosts"].splitlines():
            cols = line.split("#")[0].split()
            if cols:
                p.addresses.add(numeric_address(cols[0]) or cols[0])
                for n in cols[1:]:
                    p.name("host", n, "hosts/hosts")
    if "ansible/inventory.yml" in files:
        _inventory(p, yaml.load(files["ansible/inventory.yml"], _Loader))
    for path, text in files.items():
        if path.startswith("ansible/group_vars/") and path.endswith((".yml", ".yaml")):
            _group_vars(p, path, yaml.load(text, _Loader))
        elif path in ("slurm/slurm.conf", "slurm/job_container.conf", "slurm/slurmdbd.conf.j2"):
            _slurm(p, path, text)
        elif path in ("pulumi/cluster.json", "pulumi/Pulumi.yaml"):
            _pulumi(p, path, text)
    return p


# --- the checks -------------------------------------------------------------------------------------------

NAME_SPACES = ("host", "group", "partition", "slurm-host", "slurm-node", "qos")
COLLISION_SPACES = ("host", "group", "partition", "qos", "file")


def _collisions(names: set[str]) -> set[frozenset[str]]:
    by_fold: dict[str, set[str]] = {}
    for n in names:
        by_fold.setdefault(n.casefold(), set()).add(n)
    return {frozenset(v) for v in by_fold.values() if len(v) > 1}


def violations(p: Positions, base: Positions, payloads: tuple[str, ...] = ()) -> list[str]:
    """What the render ``p`` carries in a privilege-bearing position that the baseline render ``base`` does not:
    a name that is an address or reserved, names colliding case-insensitively, a privileged path, a world or
    public range, a storage or database host that is a planned host's address (or loopback/reserved), a key URL
    over plain http, a raw reader-hiding character; and, for syntax payloads, any of them in any
    position (``payloads``)."""
    out: list[str] = []
    for ns in NAME_SPACES:
        for n in sorted(p.names.get(ns, set()) - base.names.get(ns, set())):
            why = bad_name(n)
            if why:
                out.append(f"{ns} name {n!r} is {why} ({p.where[(ns, n)]})")
    for ns in COLLISION_SPACES:
        for pair in sorted(_collisions(p.names.get(ns, set())) - _collisions(base.names.get(ns, set())), key=sorted):
            out.append(f"{ns} names {sorted(pair)} differ only in case ({p.where[(ns, sorted(pair)[0])]})")
    for where, path in sorted(p.paths - base.paths):
        if privileged_path(path):
            out.append(f"privileged path {path!r} ({where})")
    for where, text in sorted(p.ranges - base.ranges):
        if world_range(text, public_ok="admin" in where.lower()):
            out.append(f"world/public range {text!r} ({where})")
    planned = base.addresses
    for where, host in sorted(p.storage_hosts - base.storage_hosts):
        addr = numeric_address(host)
        if addr in planned:
            out.append(f"storage/database host {host!r} is planned host address {addr} ({where})")
        elif (addr and ipaddress.ip_address(addr).is_loopback) or (not addr and bad_name(host)):
            out.append(f"storage/database host {host!r} is {bad_name(host)} ({where})")
    for where, url in sorted(p.key_urls - base.key_urls):
        if url.lower().startswith("http://"):
            out.append(f"repository key over plain http {url!r} ({where})")
    for file, label in sorted(p.hiding - base.hiding):
        out.append(f"raw {label} in {file}")
    new = sorted(set(p.values()) - set(base.values())) if payloads else []
    for where, value in new:
        for payload in payloads:
            if payload.strip() and payload in value:
                out.append(f"payload {payload!r} in {value!r} ({where})")
    return out
