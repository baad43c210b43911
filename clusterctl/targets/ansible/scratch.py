"""Node-local scratch in a compute group's variables: the local_scratch role's drives and mount, enroot's data and
cache on the scratch, and the node health check's free-space threshold, all from :mod:`clusterctl.plan.scratch`
(docs/ansible.md, "Node-local scratch")."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.scratch import scratch, scratch_devices
from clusterctl.targets.ansible.document import Section
from clusterctl.yamlout import unsafe

ENROOT_USER_PARTS = {"enroot_pyxis_data_path": "user-$(id -u)", "enroot_pyxis_cache_path": "group-$(id -g)"}
"""the per-user (data) and per-group (cache) directory enroot evaluates as the job's user, below the scratch parents
(the enroot_pyxis role's defaults, with their parents moved from /var/lib/enroot onto the scratch)"""


def scratch_sections(plan: ClusterPlan, g: GroupPlan) -> list[Section]:
    """A compute group's scratch variables; none without a node-local tier or on another role."""
    s = scratch(plan)
    if s is None or g.role != "compute":
        return []
    devices = scratch_devices(plan, g)
    out: list[Section] = []
    if devices is not None:
        layout = (f"md RAID0 over the {devices.count} drives" if devices.raid0 else "the one drive")
        out.append(([f"local_scratch: the data NVMe of {g.type.server_name} ({devices.count} x "
                     f"{devices.size_bytes} bytes, the catalog's nvme) as XFS on {layout}, mounted at the "
                     f"{s.tier} tier's {s.mount} before slurmd starts; never the OS disk, never re-created"],
                    unsafe({"local_scratch_mount": s.mount, "local_scratch_device_count": devices.count,
                            "local_scratch_device_size_bytes": devices.size_bytes})))
    sw = plan.software
    if g.type.gpus and sw is not None and sw.containers == "enroot":
        parents = {"enroot_pyxis_data_path": s.enroot_data, "enroot_pyxis_cache_path": s.enroot_cache}
        out.append(([f"enroot_pyxis: containers' data and image cache on the node-local scratch ({s.mount}), not the "
                     "OS disk"], unsafe({k: f"{parents[k]}/{part}" for k, part in ENROOT_USER_PARTS.items()})))
    out.append(([f"node_health: drain when the scratch ({s.mount}) has less than this free space, percent "
                 f"(storage tier {s.tier}: min_free_percent; 0: not checked)"],
                unsafe({"node_health_scratch_mount": s.mount,
                        "node_health_scratch_min_free_percent": s.min_free_percent})))
    return out
