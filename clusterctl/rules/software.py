"""Software: NVIDIA driver and CUDA versions against the GPUs and each other.

All rules are silent when the blueprint has no ``software:`` section. Sources:

- CUDA Compatibility guide, "Minor Version Compatibility", Table 1 "CUDA Toolkit 11.x, 12.x, and 13.x
  Minimum Required Driver Versions" (docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html,
  pointing to the CUDA Toolkit Release Notes for the full table "CUDA Toolkit and Minimum Required
  Driver Version for CUDA Minor Version Compatibility"): CUDA 13.x >= 580, CUDA 12.x >= 525,
  CUDA 11.x >= 450 (450.80.02).
- Hopper Compatibility Guide (docs.nvidia.com/cuda/hopper-compatibility-guide): applications built
  with CUDA 11.7 or earlier carry no sm_90 code; 11.8 is the first toolkit that builds for Hopper.
- NVIDIA technical blog "CUDA Toolkit 12.8 Delivers NVIDIA Blackwell Support" and the Blackwell
  Compatibility Guide ("Building Applications Using CUDA Toolkit 12.7 or Earlier" vs 12.8): 12.8 is
  the first toolkit supporting Blackwell.
- Ampere: CUDA 11.0 is the first toolkit (catalog accelerators.yaml, min_driver_branch source of a100).
- First driver branch per device: ``min_driver_branch`` in the accelerator catalog, with its sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from clusterctl.catalog.models import Accelerator, accelerator_vendor
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule

_DRIVER = re.compile(r"\d+(?:\.\d+)*")
_CUDA = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")

MIN_DRIVER_FOR_CUDA = {11: 450, 12: 525, 13: 580}
"""CUDA major -> oldest driver branch that runs it (minor version compatibility floor)"""
MIN_CUDA_FOR_GENERATION = {"ampere": (11, 0), "hopper": (11, 8), "blackwell": (12, 8)}
"""first CUDA toolkit that builds native code for the architecture"""


def driver_major(text: str) -> int | None:
    """``"550"`` or ``"550.90.07"`` -> 550; None when it is not digits[.digits...]."""
    text = text.strip()
    return int(text.split(".")[0]) if _DRIVER.fullmatch(text) else None


def cuda_version(text: str) -> tuple[int, int] | None:
    """``"12.4"`` or ``"12.4.1"`` -> (12, 4); None when it is not N.N[.N]."""
    m = _CUDA.fullmatch(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _is_nvidia(acc: Accelerator) -> bool:
    return accelerator_vendor(acc) == "NVIDIA"


def _accelerators(plan: ClusterPlan) -> dict[str, tuple[Accelerator, list[str]]]:
    """GPU model -> (catalog entry, node groups using it), for the groups of the plan."""
    out: dict[str, tuple[Accelerator, list[str]]] = {}
    for g in plan.groups:
        acc = g.type.accelerator
        if acc is not None and g.type.gpu_model:
            out.setdefault(g.type.gpu_model, (acc, []))[1].append(g.name)
    return out


@rule("SW001", "software", Severity.ERROR, "driver older than the GPUs")
def driver_supports_gpus(plan: ClusterPlan) -> Iterator[Hit]:
    """The NVIDIA driver branch (the first number of ``driver``) must be at least the first data-center
    branch that supports each GPU model (``min_driver_branch`` in the accelerator catalog, e.g. R525 for
    H100, R570 for B200/GB200). An older driver does not know the device: no GPUs, or no Fabric
    Manager for the NVSwitch baseboard, on every node."""
    sw = plan.blueprint.software
    if sw is None:
        return
    major = driver_major(sw.driver)
    if major is None:
        return
    for model, (acc, groups) in sorted(_accelerators(plan).items()):
        if not _is_nvidia(acc) or acc.min_driver_branch is None or major >= acc.min_driver_branch:
            continue
        yield Hit(("software", "driver"),
                  f"driver {sw.driver} is older than R{acc.min_driver_branch}, the first branch that supports "
                  f"{model} (node group {', '.join(groups)})",
                  f"use driver {acc.min_driver_branch} or a newer data-center branch")


@rule("SW002", "software", Severity.ERROR, "CUDA does not fit the driver or the GPUs")
def cuda_fits(plan: ClusterPlan) -> Iterator[Hit]:
    """CUDA must run on the driver and build for the GPUs. Driver floor per CUDA major (minor version
    compatibility, CUDA Compatibility guide Table 1 / CUDA Toolkit Release Notes "CUDA Toolkit and
    Minimum Required Driver Version for CUDA Minor Version Compatibility"): CUDA 11.x needs >= 450,
    12.x >= 525, 13.x >= 580. GPU floor per architecture: Ampere needs CUDA 11.0+, Hopper (sm_90)
    11.8+ (Hopper Compatibility Guide), Blackwell 12.8+ (NVIDIA "CUDA Toolkit 12.8 Delivers NVIDIA
    Blackwell Support"). Older toolkits have no code for the GPU and fail at the first kernel launch."""
    sw = plan.blueprint.software
    if sw is None:
        return
    cuda = cuda_version(sw.cuda)
    if cuda is None:
        return
    nvidia = {m: (a, g) for m, (a, g) in _accelerators(plan).items() if _is_nvidia(a)}
    if not nvidia:
        return
    major = driver_major(sw.driver)
    floor = MIN_DRIVER_FOR_CUDA.get(cuda[0])
    if major is not None and floor is not None and major < floor:
        yield Hit(("software", "driver"),
                  f"CUDA {sw.cuda} needs driver {floor} or newer (CUDA {cuda[0]}.x minor version "
                  f"compatibility); driver is {sw.driver}",
                  f"use driver {floor} or newer, or a CUDA release the driver supports")
    for model, (acc, groups) in sorted(nvidia.items()):
        need = MIN_CUDA_FOR_GENERATION.get(acc.generation.lower())
        if need is not None and cuda < need:
            yield Hit(("software", "cuda"),
                      f"CUDA {sw.cuda} cannot build for {model} ({acc.generation}, node group {', '.join(groups)}): "
                      f"{acc.generation.capitalize()} needs CUDA {need[0]}.{need[1]} or newer",
                      f"use CUDA {need[0]}.{need[1]} or newer")


@rule("SW003", "software", Severity.WARNING, "NVIDIA software on non-NVIDIA GPUs")
def gpu_vendors(plan: ClusterPlan) -> Iterator[Hit]:
    """``driver`` and ``cuda`` describe the NVIDIA stack. On a cluster whose GPUs are all AMD they do not
    apply (the blueprint has no ROCm version field yet, so the ROCm stack is unchecked); on a cluster
    mixing GPU vendors one software stack cannot serve all nodes and jobs cannot span the two kinds."""
    sw = plan.blueprint.software
    if sw is None:
        return
    accs = _accelerators(plan)
    vendors: dict[str, list[str]] = {}
    for model, (acc, _groups) in sorted(accs.items()):
        if accelerator_vendor(acc):
            vendors.setdefault(accelerator_vendor(acc), []).append(model)
    if len(vendors) > 1:
        detail = "; ".join(f"{v}: {', '.join(m)}" for v, m in sorted(vendors.items()))
        first_other = next(g for g in plan.groups if g.type.accelerator is not None
                           and accelerator_vendor(g.type.accelerator) not in ("", "NVIDIA"))
        yield Hit(first_other.path + ("type",), f"the cluster mixes GPU vendors ({detail})",
                  "build one cluster per GPU vendor, or suppress this with a reason")
    elif vendors and "NVIDIA" not in vendors:
        (other, models), = vendors.items()
        yield Hit(("software", "driver"),
                  f"software.driver ({sw.driver}) and software.cuda ({sw.cuda}) are NVIDIA versions but the GPUs "
                  f"are {other} ({', '.join(models)}); they do not apply and the {other} stack is not checked",
                  "keep them as placeholders; ROCm versions cannot be declared yet")


@rule("SW004", "software", Severity.ERROR, "unreadable version")
def version_strings(plan: ClusterPlan) -> Iterator[Hit]:
    """``driver`` must be an NVIDIA driver branch or full version (digits separated by dots: "550",
    "550.90.07") and ``cuda`` a toolkit release ("12.4" or "12.4.1"); anything else cannot be compared
    against the GPUs and the driver, so the version rules would pass it silently."""
    sw = plan.blueprint.software
    if sw is None:
        return
    if driver_major(sw.driver) is None:
        yield Hit(("software", "driver"), f"driver '{sw.driver}' is not a driver version (digits and dots)",
                  'write the branch or full version, e.g. "550" or "550.90.07" (no "R", no "-server")')
    if cuda_version(sw.cuda) is None:
        yield Hit(("software", "cuda"), f"cuda '{sw.cuda}' is not a CUDA release (N.N)",
                  'write e.g. "12.4" (quoted, so YAML keeps it text)')
