"""What the rendered roles install on a rehearsal node, by Slurm install kind: the site mirror's package list.

``tests/test_rehearse_mirror.py`` reads the rendered roles' ``apt``/``package`` tasks of every role a rehearsal
runs and fails when one names a package missing here (or listed in :data:`NOT_REHEARSED` with its reason), so this
list cannot drift from the roles.
"""

from __future__ import annotations

COMMON = ("munge", "chrony", "logrotate", "nfs-common", "mariadb-server", "ansible-core", "git", "unbound",
          "dns-root-data", "bind9-dnsutils", "kea-dhcp4-server", "xfsprogs",
          "nftables", "prometheus-node-exporter", "prometheus")
"""every install kind: munge (munge role), chrony and logrotate (common), nfs-common (storage_clients),
mariadb-server (slurmdbd's database), ansible-core and git (ansible_pull), unbound and dns-root-data (dns_server, on the
controllers: Debian's unbound validates with the root trust anchor that package holds), bind9-dnsutils (dig: the day0
scenario's forward and reverse queries), kea-dhcp4-server (dhcp_server, on the controllers of every bare-metal
blueprint with Slurm: Kea 2.2 on debian-12, its hooks in the same package), xfsprogs (local_scratch's mkfs.xfs, the
scratch scenario), nftables (host_firewall),
prometheus-node-exporter (monitoring_exporters) and prometheus (monitoring_server, on the monitoring server: 2.42 on
debian-12, promtool with it) where the blueprint has firewall and monitoring sections; the PMIx package is the plan's
(``clusterctl/plan/slurm.pmix_packages``: which one depends on the release and the OS)"""

SLURM = {
    "distro": ("slurmd", "slurmctld", "slurm-client", "slurmdbd", "libpam-slurm-adopt"),
    "debs": ("slurm-smd-slurmd", "slurm-smd-slurmctld", "slurm-smd-client", "slurm-smd-slurmdbd",
             "slurm-smd-libpam-slurm-adopt", "apt-utils"),
}
"""the Slurm packages by ``slurm.install.kind``: Debian's slurm-wlm, or SchedMD's ``slurm-smd-*`` (the local
.deb directory; apt-utils: slurm_preflight indexes that directory with apt-ftparchive)"""

FABRIC_SWITCH = ("frr",)
"""the fabric scenario's switch nodes: Debian's FRR (8.4 on debian-12), the routing suite Cumulus Linux runs under
NVUE, started by its own frr.service with the rendered frr.conf"""
FABRIC_HOST = ("netplan.io",)
"""the fabric scenario's hosts: netplan, which compiles the roce_network role's rail configuration for
systemd-networkd (part of the image's systemd)"""

NOT_REHEARSED = {
    "nfs-kernel-server": "REHEARSAL_VARS nfs_server_packages: []: this kernel has no NFS server",
    "lustre-client-modules-dkms": "REHEARSAL_VARS storage_clients_lustre_install: false (a vendor repository)",
    "lustre-client-utils": "REHEARSAL_VARS storage_clients_lustre_install: false (a vendor repository)",
    "azure-cli": "slurm_power_save on Azure only, from Microsoft's repository",
    "mdadm": "local_scratch with two or more drives: this kernel has no md; the scratch scenario's stand-in is one drive",
}
"""packages a role names that no rehearsal installs, with why"""


def mirror_packages(install_kind: str, pmix: tuple[str, ...] | list[str] = ()) -> tuple[str, ...]:
    """What the mirror must hold for a rehearsal of ``slurm.install.kind`` (``distro`` or ``debs``) whose plan
    installs the PMIx package(s) ``pmix``."""
    return COMMON + SLURM[install_kind] + tuple(pmix)
