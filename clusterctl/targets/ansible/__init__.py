"""ansible target: inventory with host ranges, group_vars from the plan, site.yml, ansible.cfg, a static
/etc/hosts block, and copies of the shipped roles (docs/ansible.md, docs/render-layout.md).

Everything a role needs is rendered here from the plan, so no role reads facts of another host and
``--limit`` / adding nodes work. One module per part: inventory, addresses (and /etc/hosts), plays (site.yml),
group_vars, storage, hardware, slurm_vars, chrony, pull, shipped_roles; document lays out every YAML file.
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.nvlink import imex_configured, nvlink_domains
from clusterctl.plan.roles import slurm_roles
from clusterctl.targets.ansible.addresses import group_addresses, hosts_file
from clusterctl.targets.ansible.document import yaml_file
from clusterctl.targets.ansible.group_vars import (all_vars_file, controllers_vars_file, group_vars_file,
                                                   nvlink_vars_file)
from clusterctl.targets.ansible.hardware import nccl_groups
from clusterctl.targets.ansible.inventory import inventory_file
from clusterctl.targets.ansible.plays import plays, site_file
from clusterctl.targets.ansible.pull import pull_files, pull_settings
from clusterctl.targets.ansible.shipped_roles import existing_roles, role_files, shared_roles
from clusterctl.targets.ansible.storage import nfs_exports
from clusterctl.targets.common import at, conf_value, environment, header, path_part
from clusterctl.yamlout import FlowMap, unsafe


def render(plan: ClusterPlan) -> dict[str, str]:
    env = environment()
    available = existing_roles()
    site_plays = plays(plan, available)
    roles = slurm_roles(plan)
    controllers, accounting = roles.controllers, roles.accounting
    nccl = nccl_groups(plan)
    with at(("name",)):
        facts_dir = conf_value(path_part(plan.name, "blueprint name"), "blueprint name", extra="%;")
    files = {
        "hosts/hosts": hosts_file(plan),
        "ansible/ansible.cfg": env.get_template("ansible/ansible.cfg.j2").render(
            header=header(plan).rstrip("\n"), facts_dir=facts_dir),
        "ansible/inventory.yml": inventory_file(plan),
        "ansible/group_vars/all.yml": all_vars_file(plan, controllers, accounting),
        **({"ansible/group_vars/slurm_controllers.yml": controllers_vars_file(plan, controllers)} if controllers
           else {}),
        "ansible/site.yml": site_file(plan, site_plays),
    }
    for g in plan.groups:
        files[f"ansible/group_vars/{path_part(g.name, 'node group name')}.yml"] = group_vars_file(plan, g, nccl)
    addresses: dict[str, dict[str, str] | None] = {}
    for name, g, hosts in nvlink_domains(plan):
        if not imex_configured(plan, g):
            continue
        if g.name not in addresses:
            listed = group_addresses(plan, g)
            addresses[g.name] = dict(zip(g.hosts, listed)) if listed is not None else None
        files[f"ansible/group_vars/{path_part(name, 'NVLink domain group')}.yml"] = nvlink_vars_file(
            plan, name, g, hosts, addresses[g.name])
    exports = nfs_exports(plan)
    if exports:
        files["ansible/group_vars/nfs_servers.yml"] = yaml_file(plan, [
            "NFS tiers served by the cluster's own nodes: each host applies the items that name it (nfs_server role).",
            "Options: nfs_server_export_options (rw,sync,no_subtree_check,root_squash; roles/nfs_server/defaults)."],
            [([], {"nfs_server_exports": unsafe([FlowMap(e) for e in exports])})])
    if pull_settings(plan) is not None:
        files.update(pull_files(plan))
    used = {r for p in site_plays for r in p.roles}
    files.update(role_files(used | shared_roles(used)))
    return dict(sorted(files.items()))
