"""testinfra target: acceptance tests of the configured cluster, one file per node group.

``tests/test_<group>.py`` checks what the roles installed (files equal to the rendered ones, packages,
limits, fstab) and, under markers, what needs the real machine: ``hardware`` (GPU count, RDMA links),
``services`` (daemons running), ``mounts`` (shared file systems mounted) and ``kernel`` (sysctl values
loaded). Run them through the rendered inventory::

    pytest --hosts=ansible://gpu --ansible-inventory=OUT/ansible/inventory.yml OUT/tests

Expectations come from the plan; files are compared with the rendered ones at test time, so the tests
follow whatever the slurm and nccl targets wrote.
"""

from __future__ import annotations

import json
from functools import cache

import jinja2

from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.site_records import dns_domain, name_servers, site_records
from clusterctl.targets.ansible.chrony import CHRONY_CONF, PUBLIC_TIME_POOL, site_time_servers
from clusterctl.plan.slurm import pmix_packages
from clusterctl.targets.ansible.hardware import enroot_login, nccl_groups, rdma_nics
from clusterctl.targets.nccl.enroot import ENROOT_ENV_PATH
from clusterctl.targets.ansible.node_files import (HOSTS_MARKER, LIMITS_FILE, NODE_HEALTH_CONFIG, NODE_HEALTH_SCRIPT,
                                                   SLURM_CONFIG_DIR, SYSCTL_FILE, neigh_thresholds)
from clusterctl.plan.cloud import elastic_groups
from clusterctl.targets.ansible.slurm_vars import qos_vars
from clusterctl.targets.ansible.storage import storage_mounts
from clusterctl.targets.common import header, new_environment, path_part

SLURM_ROLES = ("compute", "head", "login")
"""node roles in the Ansible group slurm_cluster (plus the controller and accounting hosts)"""


def _time_context(plan: ClusterPlan) -> dict:
    """Which time sources chrony.conf names: the controllers on every other node, site.time_servers (none: the
    controllers keep their own time) on the controllers; the role's public pool on every node of a blueprint
    without Slurm."""
    controllers = slurm_roles(plan).controllers
    upstream = site_time_servers(plan) if controllers else [PUBLIC_TIME_POOL]
    return {"time_controllers": list(controllers), "time_upstream": upstream}


def _dns_context(plan: ClusterPlan) -> dict:
    """The cluster's name servers and one name only DNS answers (a BMC's: /etc/hosts lists in-band and switch names
    only), when the dns target renders zones."""
    servers = name_servers(plan)
    if not servers:
        return {"dns_servers": {}}
    probe = next((r for r in site_records(plan) if r.kind == "bmc"), None) or next(site_records(plan))
    return {"dns_domain": dns_domain(plan), "dns_servers": {s.name: s.address for s in servers},
            "dns_probe": (probe.name, probe.address)}


def _group_context(plan: ClusterPlan, g: GroupPlan, nccl: dict[str, dict]) -> dict:
    roles = slurm_roles(plan)
    controllers, accounting = roles.controllers, roles.accounting
    hosts = set(g.hosts)
    slurm = plan.slurm is not None
    ports, rate = rdma_nics(g)
    mounts, expected, local = storage_mounts(plan, g)
    n = nccl.get(g.name, {})
    return {
        "g": g,
        "slurm": slurm and (g.role in SLURM_ROLES or bool(hosts & set(controllers + accounting))),
        "controllers": slurm and bool(hosts & set(controllers)),
        "accounting": slurm and bool(hosts & set(accounting)),
        "slurmd": slurm and g.role == "compute",
        "login": g.role == "login",
        "node_health": g.role == "compute",
        "gpus": g.type.gpus,
        "rdma_ports": ports,
        "rdma_rate": rate,
        "nccl_conf": f"nccl/{n['nccl_conf_file']}" if n else None,
        "nccl_path": n.get("nccl_conf_path", "/etc/nccl.conf"),
        "nccl_env": f"nccl/{n['nccl_env_file']}" if "nccl_env_file" in n else None,
        "nccl_enroot_env": f"nccl/{n['nccl_enroot_env_file']}" if "nccl_enroot_env_file" in n else None,
        "nccl_enroot_env_path": ENROOT_ENV_PATH,
        "mounts": mounts,
        "expected_mounts": expected,
        "local_dirs": local,
        "accounts": _accounts(plan) if slurm else [],
        "directory": slurm and (g.role in SLURM_ROLES or bool(hosts & set(controllers + accounting)))
        and plan.users is not None and plan.users.directory is not None,
        "pmix": pmix_packages(plan) if slurm and (g.role in ("compute", "login") or bool(hosts & set(controllers)))
        else [],
        "pyxis": slurm and enroot_login(plan) and (g.role == "login" or (g.role == "compute" and g.type.gpus > 0)),
        **_power_save_context(plan, slurm and bool(hosts & set(controllers))),
    }


def _accounts(plan: ClusterPlan) -> list[tuple[str, int, int]]:
    """(name, uid, gid) of the slurm and munge accounts (slurm.user, slurm.munge_user)."""
    return [("slurm", plan.slurm.user.uid, plan.slurm.user.gid),
            ("munge", plan.slurm.munge_user.uid, plan.slurm.munge_user.gid)]


POWER_SAVE_PROGRAMS = {"clusterctl-power-save": 0o755, "clusterctl-bootstrap": 0o755,
                       "clusterctl_cloud_config.py": 0o644}
"""what roles/slurm_power_save installs from the render's cloud/bin/, with its modes"""
POWER_SAVE_CLI = {"aws": "aws", "gcp": "gcloud", "azure": "az"}


def _power_save_context(plan: ClusterPlan, controller: bool) -> dict:
    """On the controllers of a blueprint with elastic groups: what slurm_power_save installs."""
    groups = elastic_groups(plan) if controller else []
    if not groups:
        return {"power_save": None}
    return {"power_save": {"groups": [g.name for g in groups], "programs": POWER_SAVE_PROGRAMS,
                           "links": ["clusterctl-resume", "clusterctl-suspend", "clusterctl-resume-fail"],
                           "cli": POWER_SAVE_CLI[plan.cloud.provider], "provider": plan.cloud.provider,
                           "path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}


def docstring_text(text: object) -> str:
    """Text to place between triple quotes: every quote, backslash and control character escaped (the JSON
    escapes are Python escapes too), so a name can never end the docstring and start code."""
    return json.dumps(str(text))[1:-1]


@cache
def environment() -> jinja2.Environment:
    """The targets' environment with the filters of Python test files (``py``, ``doc``): one per process, like
    :func:`clusterctl.targets.common.environment`, of its own so no other target's template sees these filters."""
    env = new_environment()
    env.filters["py"] = repr
    env.filters["doc"] = docstring_text
    return env


def render(plan: ClusterPlan) -> dict[str, str]:
    env = environment()
    ctx = {"plan": plan, "header": header(plan).rstrip("\n"), "neigh": neigh_thresholds(plan),
           "slurm_config_dir": SLURM_CONFIG_DIR, "default_health_check": NODE_HEALTH_SCRIPT,
           "health_config": NODE_HEALTH_CONFIG, "sysctl_file": SYSCTL_FILE,
           "limits_file": LIMITS_FILE, "hosts_marker": HOSTS_MARKER,
           "chrony_conf": CHRONY_CONF, **_time_context(plan), **_dns_context(plan),
           "qos": ["|".join(str(v) for v in q.values()) for q in qos_vars(plan.slurm.qos)]
           if plan.slurm else []}
    files = {"tests/conftest.py": env.get_template("testinfra/conftest.py.j2").render(**ctx)}
    nccl = nccl_groups(plan)
    tmpl = env.get_template("testinfra/test_group.py.j2")
    for g in plan.groups:
        files[f"tests/test_{path_part(g.name, 'node group name')}.py"] = tmpl.render(**_group_context(plan, g, nccl),
                                                                                    **ctx)
    for path, text in files.items():  # a template slip fails the render, not the acceptance run
        compile(text, path, "exec")
    return dict(sorted(files.items()))
