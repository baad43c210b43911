"""Files and paths the roles write on every node, which the rendered tests (the testinfra target) check too,
and the neighbour table sizes of the common role."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan

SLURM_CONFIG_DIR = "/etc/slurm"
NODE_HEALTH_SCRIPT = "/usr/local/sbin/node-health-check"
NODE_HEALTH_CONFIG = "/etc/clusterctl/node-health.conf"
SYSCTL_FILE = "/etc/sysctl.d/90-clusterctl.conf"
LIMITS_FILE = "/etc/security/limits.d/90-clusterctl.conf"
HOSTS_MARKER = "clusterctl hosts"


def neigh_thresholds(plan: ClusterPlan) -> tuple[int, int, int]:
    """ARP/ND table sizes: room for every node and switch several times over (IPoIB, in-band, storage)."""
    entries = 4 * (plan.nodes + sum(f.switch_count for f in plan.fabrics))
    t3 = 16384
    while t3 < entries:
        t3 *= 2
    return t3 // 4, t3 // 2, t3
