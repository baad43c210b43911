"""GCP GPUDirect profile of the nccl target (TCPX/TCPXO/gIB): no constants in nccl.conf; a companion shell
file (nccl/<node_type>.env.sh) sources Google's profile, versioned with its plugin, and sets interface names
only, found by name or PCI address. Sources: GoogleCloudPlatform/cluster-toolkit (docs/nccl.md).
"""

from __future__ import annotations

from clusterctl.cloud.stack.gpudirect import RXDM_INSTANCE_TYPES
from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.targets.nccl.settings import ENV_PATH, CloudProfile, Setting, ShellStep, export

# GCP GPUDirect (GoogleCloudPlatform/cluster-toolkit examples/machine-learning/*/nccl-tests)
TCPXO_LIB = "/var/lib/tcpxo/lib64"
TCPXO_CTRL = "enp0s12"
TCPXO_MEGA_IFNAMES = ("enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0", "enp135s0", "enp141s0", "enp142s0")
TCPXO_HIGH_BDFS = ("0000:06:00.0", "0000:0c:00.0", "0000:86:00.0", "0000:8c:00.0")
TCPXO_HIGH_FALLBACK = ("enp6s0f0", "enp12s0f0", "enp134s0f0", "enp140s0f0")
GIB_DIRS = ("/usr/local/gib", "/var/lib/gib")
GIB_SOCKET_IFNAMES = ("enp0s19", "enp192s20")

NAMES = {"tcpxo": "GPUDirect-TCPXO", "tcpx": "GPUDirect-TCPX", "rdma-roce": "GPUDirect-RDMA (gIB)"}
"""the GPUDirect networks (instance type ``network.fabric``) this profile covers, by their Google names"""


def _fabric(nt: NodeTypePlan) -> str:
    assert nt.instance is not None  # a cloud profile serves instance types only
    return nt.instance.network.fabric


def settings(plan: ClusterPlan, nt: NodeTypePlan) -> list[Setting]:
    fabric = _fabric(nt)
    return [Setting((
        f"{NAMES[fabric]}: NCCL's plugin and tuning come from Google's profile, versioned with the plugin",
        "(and checked by its guest config checker). Hard-coded copies broke when the profile changed",
        "(NVIDIA/aicr PR #422), so this file sets nothing. Source the companion profile",
        f"(nccl/{nt.name}.env.sh, installed as {ENV_PATH} by the nccl role)",
        "in the job's bash before NCCL starts; it sources Google's profile and sets interface names only.",
        "Containers also need the plugin directory mounted.")),
    ]


def steps(nt: NodeTypePlan) -> list[ShellStep]:
    fabric = _fabric(nt)
    gpu_nics = nt.instance.network.gpu_nics if nt.instance else 0
    if fabric == "rdma-roce":
        first, second = (f"{d}/scripts/set_nccl_env.sh" for d in GIB_DIRS)
        return [
            ShellStep((
                "Google's gIB profile: plugin and every tuning value; clusterctl copies none of them.",
                f"Images install it under {GIB_DIRS[0]} (cluster-toolkit also used {GIB_DIRS[1]})."), (
                f"if [ -r {first} ]; then _gib={GIB_DIRS[0]}",
                f"elif [ -r {second} ]; then _gib={GIB_DIRS[1]}",
                "else _gib=; echo \"nccl-env: gIB profile set_nccl_env.sh not found\" >&2; fi",
                "if [ -n \"$_gib\" ]; then",
                "  source \"$_gib/scripts/set_nccl_env.sh\"",
                "  export LD_LIBRARY_PATH=\"$_gib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"",
                "fi",
                "unset _gib")),
            ShellStep(("Select the gIB network plugin, as cluster-toolkit's run scripts do after the profile.",),
                      (export("NCCL_NET", "gIB"),)),
            ShellStep(("Interface names of the VM's two gVNICs for bootstrap traffic (cluster-toolkit Slurm images).",),
                      (export("NCCL_SOCKET_IFNAME", ",".join(GIB_SOCKET_IFNAMES)),)),
        ]
    profile = f"{TCPXO_LIB}/nccl-env-profile.sh"
    installed_by = ((f"On {nt.instance_name} the 50-rxdm Slurm prolog (gcp_tcpxo role) installs it before every",
                     "multi-node job, with the plugin, and starts RxDM (docs/cloud.md).")
                    if nt.instance_name in RXDM_INSTANCE_TYPES else ())
    steps = [ShellStep((
        "Google's TCPXO profile: plugin and every tuning value (NCCL_BUFFSIZE, NCCL_PROTO, tuner config, ...);",
        "clusterctl copies none of them.", *installed_by), (
        f"if [ -r {profile} ]; then",
        f"  NCCL_LIB_DIR={TCPXO_LIB} source {profile}",
        f"else echo \"nccl-env: {profile} not found (GPUDirect-TCPXO not installed?)\" >&2; fi"))]
    if fabric == "tcpxo":
        names = TCPXO_MEGA_IFNAMES
        why = ["Interface names only: control NIC, the GPU NICs, the LLCM device directory (cluster-toolkit",
               "Slurm images; GKE names them eth0..eth8)."]
        if len(names) != gpu_nics:
            why.append(f"WARNING: the catalog lists {gpu_nics} GPU NICs, the names {len(names)}.")
        ifname = [export("NCCL_FASTRAK_IFNAME", ",".join(names))]
    else:
        why = ["A3 High: cluster-toolkit now runs GPUDirect over the same TCPXO (FasTrak) stack; the legacy TCPX",
               "plugin had no vendor profile (its scripts hard-coded ~20 values), so it is not rendered.",
               "Interface names only; the 4 GPU NICs are found by PCI address (named enpXs0 or enpXs0f0)."]
        ifname = [
            "_ifs=; _k=0",
            f"for _bdf in {' '.join(TCPXO_HIGH_BDFS)}; do",
            "  for _n in /sys/bus/pci/devices/$_bdf/net/*; do",
            "    if [ -e \"$_n\" ]; then _ifs=\"${_ifs:+$_ifs,}${_n##*/}\"; _k=$((_k + 1)); break; fi",
            "  done",
            "done",
            f"[ \"$_k\" -eq {len(TCPXO_HIGH_BDFS)} ] || _ifs={','.join(TCPXO_HIGH_FALLBACK)}",
            "export NCCL_FASTRAK_IFNAME=\"$_ifs\"",
            "unset _ifs _k _bdf _n",
        ]
    steps.append(ShellStep(tuple(why), (
        export("NCCL_FASTRAK_CTRL_DEV", TCPXO_CTRL),
        *ifname,
        export("NCCL_SOCKET_IFNAME", TCPXO_CTRL),
        export("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"))))
    steps.append(ShellStep((
        "The plugin libraries must be on the loader path (and the directory and /dev/aperture_devices mounted",
        "into containers)."), (f"export LD_LIBRARY_PATH=\"{TCPXO_LIB}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"",)))
    return steps


PROFILE = CloudProfile(settings, steps, nvlink=False)
