"""nvlink target: ``nvlink/<domain>.yaml``, one hand-off file per multi-node NVLink domain (GB200/GB300 NVL72 rack)
for the tool that manages the NVLink switch trays. clusterctl does not configure them: on NVL72 the switch trays
run NVOS, whose image holds the NVLink Subnet Manager, Fabric Manager and the NMX services (NMX-Controller, the
domain's subnet manager and global fabric manager; NMX-Telemetry), driven through NVOS (NVUE CLI/REST), NMX-M or
NVIDIA Mission Control / Base Command Manager (NVIDIA multi-node NVLink user guide, "Overview"; NMX-Controller
documentation, "NMX-Controller"). What the file states is what the rest of the render assumes of that fabric:
which compute trays (hosts) share one NVLink domain, how many GPUs must join it, the Slurm topology/block block
and the IMEX domain built on it, and that the whole domain is one NVLink partition (NVIDIA's Default Partition:
every GPU of the rack). The operator (or their automation) checks the switch trays' view against it and, once
NMX formed the partition, records the ClusterUUID / CliqueId the node health check then holds every tray to.
"""

from __future__ import annotations

from clusterctl.hostlist import compress
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.nvlink import imex_configured, multi_node, nvlink_domains
from clusterctl.plan.topology import nvlink_blocks
from clusterctl.targets.common import header, path_part
from clusterctl.yamlout import dump, unsafe

PARTITION = "default"
"""NVIDIA's Default Partition: all GPUs of the NVLink domain may talk (Mission Control administration guide,
"High-Speed Fabric Management": the NVL72 domain is set up as a single NVLink partition by default)"""


def render(plan: ClusterPlan) -> dict[str, str]:
    blocks = {b.nodes: b.name for b in nvlink_blocks(plan, multi_node(plan))}
    files: dict[str, str] = {}
    rack_of: dict[str, int] = {}
    for name, g, hosts in nvlink_domains(plan):
        if not rack_of or hosts[0] not in rack_of:
            rack_of = dict(zip(g.hosts, g.rack_index))
        racks = [plan.racks[r] for r in sorted({rack_of[h] for h in hosts}) if r >= 0]
        trays = {r.system.nvlink_switch_trays for r in racks if r.system is not None}
        block = blocks.get(compress(hosts))
        data = {
            "nvlink_domain": name,
            "racks": [r.name for r in racks],
            "rack_system": g.type.rack_system,
            "nvlink_switch_trays": trays.pop() if len(trays) == 1 else None,
            "node_group": g.name,
            "compute_trays": len(hosts),
            "gpus_per_tray": g.type.gpus,
            "expected_gpus": len(hosts) * g.type.gpus,
            "hosts": hosts,
            "partition": {
                "nvlink_partition": PARTITION,
                "gpus": len(hosts) * g.type.gpus,
                "slurm_block": block,
                "imex_domain": name if imex_configured(plan, g) else None,
                "imex_peers_file": f"ansible/group_vars/{path_part(name, 'NVLink domain group')}.yml"
                                   if imex_configured(plan, g) else None,
            },
            "node_health": {"node_health_nvlink_cluster_uuid": "", "node_health_nvlink_clique_id": ""},
        }
        files[f"nvlink/{path_part(name, 'NVLink domain group')}.yaml"] = dump(unsafe(data), _comments(plan, name))
    return files


def _comments(plan: ClusterPlan, name: str) -> list[str]:
    return [
        header(plan).rstrip("\n").removeprefix("# "),
        f"NVLink domain {name}: hand-off to the tool that manages its NVLink switch trays (NVOS with NMX-Controller,",
        "NMX-M, or NVIDIA Mission Control / Base Command Manager). clusterctl configures none of the switch trays;",
        "it assumes what follows, and the render relies on it (docs/nvlink.md):",
        "- hosts: the compute trays that share this NVLink domain, expected_gpus GPUs in all, each registered",
        "  with the fabric (nvidia-smi -q Fabric State Completed, Status Success: the node health check drains a",
        "  tray whose GPUs are not);",
        "- partition: the whole domain is one NVLink partition (NVIDIA's Default Partition); Slurm's",
        "  topology/block keeps a job inside slurm_block, and IMEX (nvidia_imex role) runs one domain over",
        "  the trays listed in imex_peers_file. A user partition smaller than the rack breaks both: change the",
        "  blueprint's nvlink_domain_gpus instead;",
        "- node_health: once NMX formed the partition, copy one tray's ClusterUUID and CliqueId (nvidia-smi -q)",
        "  into ansible/group_vars/<nvlink_domain>.yml as these variables: every tray is then held to them.",
    ]
