"""Mount sources of the shared storage tiers, with host lists expanded as each client takes them.

A tier's ``servers`` may name its servers with a Slurm host list (``weka[01-16]``); no file system client reads
ranges, so the source written to fstab is expanded here, once, for the renderers, the network paths
(:mod:`clusterctl.plan.paths`) and the checks (STORAGE009):

* WEKA (``mount -t wekafs``): a comma list of backends, then ``/filesystem``: ``weka01,weka02/pfs`` (WEKA
  documentation, "Mount filesystems", stateless mount mode: ``mount -t wekafs backend1,backend2/fs /mnt``;
  https://docs.weka.io/weka-filesystems-and-object-stores/mounting-filesystems). Any backend serves the mount;
  naming several lets the client start while one is down.
* Lustre (``mount -t lustre``): ``MGSNID[:MGSNID]:/FSNAME``; the NIDs of one MGS node are joined by ``,`` and
  failover MGS nodes by ``:`` (mount.lustre(8); Lustre wiki, "Mounting a Lustre File System on Client Nodes",
  https://wiki.lustre.org/Mounting_a_Lustre_File_System_on_Client_Nodes). A host list in a NID names several
  MGS nodes: ``10.0.0.[1-2]@o2ib:/fs`` is the failover pair ``10.0.0.1@o2ib:10.0.0.2@o2ib:/fs``; the ranged
  NIDs of one ``,`` group pair up node by node (``mgs[1-2]@o2ib,mgs[1-2]@tcp`` is
  ``mgs1@o2ib,mgs1@tcp:mgs2@o2ib,mgs2@tcp``).
* VAST (mounted over NFS, ``server:/path``): NFS names one server (nfs(5): "server:/export"; the server is one
  host name or address), so a VAST source must be one name, the VIP pool's DNS name or one VIP: a host list of
  several is refused (STORAGE009) rather than mounted from its first host only.
"""

from __future__ import annotations

from clusterctl import hostlist

MOUNT_OPTIONS = {
    "nfs": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev",
    "nfs4": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev",
    "lustre": "defaults,_netdev,nofail,flock,nosuid,nodev",
    "wekafs": "defaults,_netdev,nofail,nosuid,nodev",
}
"""fstab options of a shared tier by file system type (the roles' storage_clients_mount_options mirror them):
``nofail`` keeps a node booting when a file server is down (node_health then drains it), ``_netdev`` orders the
mount after the network, and ``nosuid,nodev`` after ``defaults`` (which means suid,dev) so that a setuid binary
or a device file on a file server is no way to root on the nodes (docs/security.md, "Privilege-bearing paths")"""

MAX_NAMES = 1024
"""names a host list in a source may expand to (a source is at most 4,095 characters)"""


class SourceError(ValueError):
    """A tier's servers that the client cannot be given (the message says why, for a finding)."""


def _names(expr: str) -> list[str]:
    """The names of a host list (a comma list of names and ranges), bounded."""
    try:
        n = hostlist.count(expr)
        if n > MAX_NAMES:
            raise SourceError(f"'{expr}' names {n:,} servers; at most {MAX_NAMES:,} are written into a mount source")
        return hostlist.expand(expr)
    except hostlist.HostlistError as exc:
        raise SourceError(f"'{expr}' is not a host list: {exc}") from None


def weka_source(servers: str, fs: str) -> str:
    """``backends[/filesystem]`` as ``b1,b2,.../filesystem`` (``fs``, the tier's name, when none is given)."""
    hosts, sep, name = servers.partition("/")
    return ",".join(_names(hosts)) + "/" + (name if sep else fs)


def lustre_source(servers: str, fs: str) -> str:
    """``NID[,NID][:NID...][:/fsname]`` with host lists expanded to failover MGS nodes (``:``); ``:/fs`` (the
    tier's name) appended when the source names no file system."""
    nids, sep, name = servers.partition(":/")
    nodes: list[str] = []
    for group in nids.split(":"):  # one MGS node each, unless a NID in it is a host list
        terms = _split_nids(group)
        expanded = [[f"{a}@{net}" for a in (_names(addr) if "[" in addr else [addr])] for addr, net in terms]
        width = max(len(e) for e in expanded)
        if any(len(e) not in (1, width) for e in expanded):
            raise SourceError(f"the NIDs '{group}' name different numbers of MGS nodes "
                              f"({', '.join(str(len(e)) for e in expanded)}): one NID per node in each host list")
        nodes.extend(",".join(e[k if len(e) > 1 else 0] for e in expanded) for k in range(width))
    return ":".join(nodes) + ":/" + (name if sep else fs)


def _split_nids(group: str) -> list[tuple[str, str]]:
    """``a@net,b[1-2]@net`` -> [(a, net), (b[1-2], net)]: commas inside brackets belong to the host list."""
    out = []
    for term in _split_top(group):
        addr, _, net = term.rpartition("@")
        out.append((addr, net))
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def nfs_source(servers: str, fs: str) -> str:
    """VAST over NFS: ``server:/path`` (``/fs``, the tier's name, when no path is given); one server only."""
    host, sep, path = servers.partition(":/")
    names = _names(host)
    if len(names) != 1:
        raise SourceError(f"'{host}' names {len(names)} servers but an NFS mount takes one (server:/path): name the "
                          "VIP pool's DNS name, which spreads the clients over the VIPs")
    return f"{names[0]}:/{path if sep else fs}"


def mount_source(tier) -> tuple[str, str] | None:
    """(fstype, source) a client mounts a shared ``tier`` with, or None when it is not mounted (local, object, a
    parallel tier without servers, or a file system the renderers do not mount). Raises :class:`SourceError`."""
    if tier.tier == "nfs":
        return "nfs", tier.export
    if tier.tier != "parallel" or not tier.servers:
        return None
    if tier.filesystem == "lustre":
        return "lustre", lustre_source(tier.servers, tier.name)
    if tier.filesystem == "weka":
        return "wekafs", weka_source(tier.servers, tier.name)
    if tier.filesystem == "vast":
        return "nfs", nfs_source(tier.servers, tier.name)
    return None
