"""The GPU node stack's variables: driver, IMEX, DOCA-OFED, DCGM and container pins from software:, Fabric
Manager and IMEX per node type, the NCCL files per group, and the RDMA ports node_health expects."""

from __future__ import annotations

import re

from clusterctl.catalog.models import accelerator_vendor
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.nvlink import imex_channel0, imex_configured, nvlink_stack
from clusterctl.targets.nccl import group_files

RDMA_PROTOCOLS = ("infiniband", "ethernet", "efa")
"""NIC protocols whose ports appear under /sys/class/infiniband (ConnectX/BlueField IB or RoCE, EFA)"""


def rdma_nics(g: GroupPlan) -> tuple[int, int]:
    """(ports, Gb/s) of the compute NICs that show up under /sys/class/infiniband; rate 0 = not checked."""
    nics = [n for n in g.type.nics_of("compute") if set(n.protocols) & set(RDMA_PROTOCOLS)]
    if not nics:
        return 0, 0
    rate = 0 if any("efa" in n.protocols for n in nics) else int(min(n.speed_gbps for n in nics))
    return sum(n.count for n in nics), rate


def nccl_groups(plan: ClusterPlan) -> dict[str, dict]:
    """node group -> nccl role variables, for the groups the nccl target renders files for (GPU node types):
    ``nccl_conf_file`` (and ``nccl_env_file`` where jobs source a vendor profile, ``nccl_enroot_env_file`` where
    jobs run enroot containers), ``nccl_conf_path``."""
    out = {}
    for name, paths in group_files(plan).items():
        g = plan.group(name)
        names = [p.rsplit("/", 1)[-1] for p in paths]
        v = {"nccl_conf_file": next(n for n in names if n.endswith(".conf"))}
        env = [n for n in names if n.endswith(".env.sh")]
        if env:
            v["nccl_env_file"] = env[0]
        containers = [n for n in names if n.endswith(".enroot.env")]
        if containers:
            v["nccl_enroot_env_file"] = containers[0]
        if g is not None and g.type.accelerator is not None and accelerator_vendor(g.type.accelerator) == "AMD":
            v["nccl_conf_path"] = "/etc/rccl.conf"
        out[name] = v
    return out


def software_vars(plan: ClusterPlan) -> dict[str, object]:
    """Variables of the hardware roles that the blueprint's software: section pins (only well-formed ones)."""
    sw = plan.software
    out: dict[str, object] = {}
    if sw is None:
        return out
    m = re.match(r"^(\d{3})(\.|$)", sw.driver)
    if m:
        out["nvidia_driver_branch"] = m.group(1)
        if any(imex_configured(plan, g) for g in plan.groups):
            out["nvidia_imex_branch"] = m.group(1)
    out.update(image_stack_vars(plan))
    if sw.doca and re.match(r"^\d+\.\d+\.\d+$", sw.doca):
        out["doca_ofed_version"] = sw.doca
    major = sw.cuda.split(".")[0]
    if major in ("11", "12", "13"):
        out["dcgm_cuda_major"] = int(major)
    return out


def image_stack_vars(plan: ClusterPlan) -> dict[str, str]:
    """What the driver and DOCA-OFED roles do with a stack the image ships: software.image_stack, else keep on
    cloud blueprints (DLAMI, Azure HPC images carry a tested stack) and replace elsewhere."""
    sw = plan.software
    policy = (sw.image_stack if sw is not None else None) or ("keep" if plan.cloud is not None else "replace")
    return {"nvidia_driver_image_stack": policy, "doca_ofed_image_stack": policy}


def enroot_login(plan: ClusterPlan) -> bool:
    """Whether login nodes get pyxis: containers are enroot (spank(8): SPANK plugins are loaded in srun's local
    context too, so --container-image needs pyxis's plugstack entry on the login nodes)."""
    sw = plan.software
    return sw is not None and sw.containers == "enroot"


APPARMOR_USERNS_OS = ("ubuntu-24.04",)
"""software.os values whose kernel sets kernel.apparmor_restrict_unprivileged_userns=1 by default (Ubuntu 24.04
release notes): enroot gets its AppArmor profile there"""


def container_vars(plan: ClusterPlan) -> dict[str, object]:
    """enroot_pyxis switches from software:. On Ubuntu 24.04 enroot's AppArmor profile (userns for enroot-nsenter)
    instead of lifting the restriction for every program with the sysctl."""
    sw = plan.software
    if sw is None or sw.containers != "enroot" or sw.os not in APPARMOR_USERNS_OS:
        return {}
    return {"enroot_pyxis_apparmor_profile": True}


def gpu_vars(g: GroupPlan) -> dict[str, object]:
    """nvidia_driver and node_health switches by node type, from the plan's :func:`nvlink_stack`: Fabric Manager on
    NVSwitch baseboards (with NVLSM on Blackwell HGX), the GPUs' NVLink fabric state (Hopper and later), and the
    clique of a multi-node NVLink domain (NVL72, whose IMEX peers are in group_vars/nvlink_<group>_<n>.yml)."""
    if not g.type.gpus:
        return {}
    stack = nvlink_stack(g)
    out: dict[str, object] = {"nvidia_driver_fabric_manager": stack.fabric_manager}
    if stack.nvlsm:
        out["nvidia_driver_fabric_manager_nvlsm"] = True
    if stack.fabric_state:
        out["node_health_nvlink_fabric"] = True
    if stack.clique:
        out["node_health_nvlink_clique"] = True
    return out


def imex_vars(plan: ClusterPlan, g: GroupPlan) -> dict[str, object]:
    """nvidia_imex: channel 0 for everyone only where Slurm's switch/nvidia_imex does not give each job its own."""
    if not imex_configured(plan, g):
        return {}
    return {"nvidia_imex_channel0": imex_channel0(plan)}
