"""What every part of the nccl target shapes: a :class:`Setting` (a ``KEY=VALUE`` line of nccl.conf with the
comments saying why), a :class:`ShellStep` of a companion env.sh, the :class:`CloudProfile` interface each
cloud provider's module implements, and the blueprint facts all of them read (overrides, NCCL version).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan, NodeTypePlan

ANY_IFNAME = "^lo,docker"
"""no in-band NIC / AWS: any interface but loopback and docker bridges"""
ENV_PATH = "/etc/nccl-env.sh"
"""where the nccl role installs nccl/<node_type>.env.sh (its nccl_env_path default)"""


@dataclass(frozen=True)
class Setting:
    """Comment lines saying why, then ``key=value`` (no key: a comment-only note)."""

    why: tuple[str, ...]
    key: str = ""
    value: str = ""


@dataclass(frozen=True)
class ShellStep:
    why: tuple[str, ...]
    code: tuple[str, ...]


@dataclass(frozen=True)
class CloudProfile:
    """A cloud provider's NCCL profile for one accelerator network of its instance types; the target finds it in
    :data:`clusterctl.targets.nccl.cloud.PROFILES` by ``(provider, network.fabric)``."""

    settings: Callable[[ClusterPlan, NodeTypePlan], list[Setting]]
    """the lines of ``nccl/<node_type>.conf``"""
    steps: Callable[[NodeTypePlan], list[ShellStep]] | None = None
    """the companion ``nccl/<node_type>.env.sh``, where the job must source the vendor's own profile"""
    nvlink: bool = True
    """the generic NVLink notes for a VM follow the settings"""


def overrides(plan: ClusterPlan, node_type: NodeTypePlan) -> Mapping[str, object]:
    """Per-node-type replacements for the documented defaults, from the blueprint's
    ``node_types.<name>.nccl``: ``ib_hca`` (device names, or a full NCCL_IB_HCA value) and
    ``socket_ifname`` (a full NCCL_SOCKET_IFNAME value)."""
    nt = plan.node_type_spec(node_type)
    if nt.nccl is None:
        return {}
    return {k: v for k, v in nt.nccl.model_dump().items() if v is not None}


def nccl_version(plan: ClusterPlan) -> tuple[int, ...] | None:
    """``software.nccl`` as numbers ("2.21.5" or "2.21.5-1" -> (2, 21, 5)); None when unset or unreadable."""
    sw = plan.software
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", sw.nccl) if sw and sw.nccl else None
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def version_text(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else "unknown"


def export(name: str, value: str) -> str:
    """``export NAME=value`` with the value quoted for the shell (``shlex.quote``)."""
    return f"export {name}={shlex.quote(value)}"
