"""Which hosts do what for Slurm: the controllers, the accounting (slurmdbd) hosts, login and compute hosts.

Decided here once, for bare metal and cloud alike; the Slurm and Ansible targets, the acceptance tests, the
cloud stack, the rules and the rehearsal ask for it instead of expanding ``slurm.controllers`` themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, GroupPlan


@dataclass(frozen=True, slots=True)
class SlurmRoles:
    controllers: tuple[str, ...]
    """slurmctld hosts, primary first (``slurm.controllers``); empty without Slurm or for a malformed list,
    which SLURM002 reports"""
    accounting: tuple[str, ...]
    """slurmdbd hosts, primary first: ``accounting_host`` (default: the first controller), then
    ``accounting_backup_host`` (the backup slurmdbd: the same role, the same file)"""
    groups: tuple[GroupPlan, ...] = ()
    """the plan's node groups, from which :attr:`login` and :attr:`compute` are read when asked (most callers
    want only the daemon hosts, and a large plan has hundreds of thousands of compute hosts)"""

    @property
    def login(self) -> tuple[str, ...]:
        """hosts of the node groups with role login"""
        return tuple(h for g in self.groups if g.role == "login" for h in g.hosts)

    @property
    def compute(self) -> tuple[str, ...]:
        """hosts of the node groups with role compute (they run slurmd)"""
        return tuple(h for g in self.groups if g.role == "compute" for h in g.hosts)

    @property
    def daemons(self) -> frozenset[str]:
        """hosts that run slurmctld or slurmdbd"""
        return frozenset(self.controllers + self.accounting)

    @property
    def primary_controller(self) -> str | None:
        return self.controllers[0] if self.controllers else None

    @property
    def primary_accounting(self) -> str | None:
        return self.accounting[0] if self.accounting else None

    @property
    def has_backup_controller(self) -> bool:
        return len(self.controllers) > 1


NO_SLURM = SlurmRoles((), ())


def slurm_roles(plan: ClusterPlan) -> SlurmRoles:
    """The Slurm host roles of ``plan`` (:data:`NO_SLURM` for a blueprint without a ``slurm:`` section)."""
    s = plan.blueprint.slurm
    if s is None:
        return NO_SLURM
    try:
        controllers = tuple(hostlist.expand(s.controllers))
    except hostlist.HostlistError:
        controllers = ()
    accounting = [s.accounting_host] if s.accounting_host else list(controllers[:1])
    if s.accounting_backup_host and s.accounting_backup_host not in accounting:
        accounting.append(s.accounting_backup_host)
    return SlurmRoles(controllers, tuple(accounting), plan.groups)


def host_groups(plan: ClusterPlan) -> dict[str, GroupPlan]:
    """host name -> the node group it belongs to, for every planned host (the first group naming it, when two
    do: NAME001 reports that)."""
    owner: dict[str, GroupPlan] = {}
    for g in plan.groups:
        for h in g.hosts:
            owner.setdefault(h, g)
    return owner


def group_of(plan: ClusterPlan, host: str) -> GroupPlan | None:
    """The node group ``host`` belongs to, None for a name no group plans (a switch, a typo). For many look-ups
    build :func:`host_groups` once."""
    return next((g for g in plan.groups if host in g.hosts), None)


def gpu_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """The node groups with GPUs and at least one host: the nodes that train, write checkpoints and read data
    (the inventory's ``gpu_nodes``, the storage and reliability figures)."""
    return [g for g in plan.groups if g.type.gpus > 0]  # a group has at least one host (count >= 1 at load)
