"""How the privilege-bearing paths of a blueprint stand to each other, checked when it loads (exit 2).

Each path alone passes the path policy (:mod:`clusterctl.path_policy`, through its kind); these checks need the
whole blueprint (docs/security.md, "Privilege-bearing paths"):

* no storage tier is mounted inside another tier's mount point: one mount hides the other, and a mount point
  inside a node-local tier (mode 1777) is a directory any user can create first, as a symlink the mount follows;
* StateSaveLocation and the trusted ``debs`` directory are not inside a node-local tier: any user could create
  them first, and the roles would hand their directory (or the target of their symlink) to the slurm user, or
  apt would install their packages without a signature;
* StateSaveLocation is not a tier's mount point itself: the role would make the whole file system the slurm
  user's, mode 0750.

Two tiers on one mount point are rule STORAGE005's (an error no blueprint can suppress).
"""

from __future__ import annotations

from clusterctl.errors import Problem
from clusterctl.path_policy import under


def path_problems(bp) -> list[Problem]:
    """The problems of the relations between the paths of blueprint ``bp`` (empty: none)."""
    problems: list[Problem] = []
    tiers = bp.storage
    for j, inner in enumerate(tiers):
        outer_i = next((i for i, t in enumerate(tiers) if i != j and t.mount != inner.mount
                        and under(inner.mount, t.mount)), None)
        if outer_i is not None:
            outer = tiers[outer_i]
            extra = (": one mount would hide the other, and any user can create the mount point first in a "
                     "node-local tier (mode 1777)" if outer.tier == "local" else ": one mount would hide the other")
            problems.append(Problem(("storage", j, "mount"),
                                    f"storage[{j}].mount is '{inner.mount}', inside the mount point "
                                    f"'{outer.mount}' of storage[{outer_i}] ({outer.name}){extra}",
                                    hint=f"give tier {inner.name} a mount point outside every other tier's, "
                                         f"e.g. /mnt/{inner.name}"))
    slurm = bp.slurm
    if slurm is None:
        return problems
    named = [(("slurm", "state_save_location"), "slurm.state_save_location", slurm.state_save_location)]
    if slurm.install.kind == "debs":
        named.append((("slurm", "install", "path"), "slurm.install.path", slurm.install.path))
    for where, field, path in named:
        local = next((i for i, t in enumerate(tiers) if t.tier == "local" and under(path, t.mount)), None)
        if local is not None:
            problems.append(Problem(where, f"{field} is '{path}', inside node-local tier {tiers[local].name} "
                                           f"('{tiers[local].mount}', mode 1777): any user could create it first, as "
                                           "their own directory or a symlink the roles follow as root",
                                    hint="put it on the nodes' own disk (/var/spool/slurmctld, /srv/slurm-debs) "
                                         "or under a shared tier's mount"))
            continue
        same = next((i for i, t in enumerate(tiers) if t.mount == path), None)
        if same is not None and where[-1] == "state_save_location":
            problems.append(Problem(where, f"{field} is '{path}', the mount point of storage[{same}] "
                                           f"({tiers[same].name}) itself: the role would make the whole file system "
                                           "the slurm user's (mode 0750)",
                                    hint=f"use a directory under it, e.g. {path}/slurm/statesave"))
    return problems
