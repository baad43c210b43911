"""The roles clusterctl ships (roles/): which exist, which roles others include, and the text copies rendered
under ansible/roles/."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from clusterctl.resources import data_dir

CONTRACT_ROLES = ("slurm_preflight", "common", "slurm_accounts", "munge", "slurm_controller", "slurm_compute", "slurm_login",
                  "slurmdbd", "nccl", "storage_clients", "node_health", "nvidia_driver", "doca_ofed", "dcgm",
                  "enroot_pyxis", "nvidia_imex", "node_drain", "internal_common", "roce_network", "nfs_server",
                  "gcp_tcpxo", "ansible_pull", "slurm_power_save", "host_network_preflight", "host_network",
                  "subnet_manager", "dns_server", "dns_client", "dhcp_server",
                  "local_scratch", "directory_client", "slurm_associations")
"""every role docs/render-layout.md names"""
HARDWARE_ROLES = ("doca_ofed", "nvidia_driver", "nvidia_imex", "dcgm", "enroot_pyxis")
"""GPU node roles, in the order they are applied (DOCA-OFED before the driver: nvidia-peermem needs both)"""


def existing_roles() -> list[str]:
    root = data_dir("roles")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "tasks" / "main.yml").is_file())


SHARED_ROLES = {"node_drain": ("nvidia_driver", "doca_ofed", "nvidia_imex"),
                "internal_common": ("doca_ofed", "nvidia_driver", "dcgm", "enroot_pyxis"),
                "host_network_preflight": ("host_network",)}
"""roles included (include_role) by the roles listed: copied with them. node_drain and internal_common no play
applies; host_network_preflight is also site.yml's guard play, and host_network runs it again when run alone"""


def shared_roles(used: set[str]) -> set[str]:
    return {r for r, users in SHARED_ROLES.items() if used & set(users)}


ROLE_TESTS_DIR = "molecule"
"""a role's Molecule scenarios (roles/<role>/molecule/): tests, never rendered into a cluster's roles"""


def role_files(roles: Iterable[str]) -> dict[str, str]:
    """``ansible/roles/<role>/...``: text copies of the shipped roles, in path order.

    Not copied: dot-files and dot-dirs, ``__pycache__``, and each role's ``molecule/`` directory (its
    Molecule scenarios test the role on a rehearsal node in this repository; a cluster never runs them)."""
    root = str(data_dir("roles"))
    files: dict[str, str] = {}
    for role in sorted(set(roles)):
        files.update(_role_tree(root, role))
    return files


@lru_cache(maxsize=None)
def _role_tree(root: str, role: str) -> tuple[tuple[str, str], ...]:
    """One shipped role's files (``role_files``), read once per process: the roles are package data, and a
    process that renders many blueprints (the security sweep, a service) would otherwise read them per render."""
    base = Path(root)
    out = []
    for path in sorted((base / role).rglob("*")):
        rel = path.relative_to(base)
        if not path.is_file() or any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        if len(rel.parts) > 1 and rel.parts[1] == ROLE_TESTS_DIR:
            continue
        try:
            out.append((f"ansible/roles/{rel.as_posix()}", path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:  # roles ship text only; a stray binary is not copied
            continue
    return tuple(out)
