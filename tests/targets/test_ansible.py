"""ansible target: inventory ranges, group_vars, site.yml, hosts file, role copies, and the shipped roles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.resources import data_dir
from clusterctl.targets import ansible, render_targets
from clusterctl.targets.ansible.inventory import InventoryError, ansible_ranges, group_name
from clusterctl.targets.ansible.shipped_roles import CONTRACT_ROLES, HARDWARE_ROLES, SHARED_ROLES, shared_roles
from clusterctl import yamlout
from tests.helpers import BLUEPRINTS, lab, plan_of

SHIPPED = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))
ROLES = data_dir("roles")
MY_ROLES = ("common", "munge", "slurm_controller", "slurm_compute", "slurm_login", "slurmdbd", "nccl",
            "storage_clients", "node_health")


def plan(name: str):
    return expand(load_blueprint(BLUEPRINTS / f"{name}.yaml"))


def files_of(name: str) -> dict[str, str]:
    return ansible.render(plan(name))


@pytest.fixture(scope="module")
def lab_files():
    return files_of("lab-2node")


@pytest.fixture(scope="module")
def pod_files():
    return files_of("dgx-h100-superpod-4su")


# --- host ranges

@pytest.mark.parametrize("names,expected", [
    ([f"gpu{i:04d}" for i in range(1, 129)], ["gpu[0001:0128]"]),
    (["gpu01", "gpu02", "gpu04"], ["gpu[01:02]", "gpu04"]),
    (["n8", "n9", "n10", "n11"], ["n[8:11]"]),
    (["head01", "login01", "login02"], ["head01", "login[01:02]"]),
    (["ndv5-001", "ndv5-002"], ["ndv5-[001:002]"]),
    (["mgmt"], ["mgmt"]),
    (["gpu98", "gpu99", "gpu100"], ["gpu[98:100]"]),
    (["gpu098", "gpu099", "gpu100"], ["gpu[098:100]"]),
    (["gpu98", "gpu99", "gpu100", "gpu0101"], ["gpu[98:100]", "gpu0101"]),
    (["gpu01", "gpu02", "gpu100"], ["gpu[01:02]", "gpu100"]),
])
def test_ansible_ranges(names, expected):
    assert ansible_ranges(names) == expected


def test_group_names_are_identifiers():
    assert group_name("ib-core.1") == "ib_core_1"
    assert group_name("1a") == "_1a"


# --- inventory

def test_lab_inventory_is_exact(lab_files):
    inv = yamlout.load(lab_files["ansible/inventory.yml"])
    assert inv == {"all": {"children": {
        "gpu": {"hosts": {"gpu[01:02]": None}},
        "head": {"hosts": {"head01": None}},
        "compute": {"children": {"gpu": None}},
        "slurm_controllers": {"hosts": {"head01": None}},
        "slurm_accounting": {"hosts": {"head01": None}},
        "slurm_cluster": {"children": {"compute": None, "head": None, "slurm_controllers": None,
                                       "slurm_accounting": None}},
        "nfs_servers": {"hosts": {"head01": None}},
        "gpu_nodes": {"children": {"gpu": None}},
        "rack_lab01": {"hosts": {"gpu[01:02]": None, "head01": None}},
        "su_ib_1": {"hosts": {"gpu[01:02]": None}},
    }}}


def test_superpod_inventory_uses_ranges(pod_files):
    text = pod_files["ansible/inventory.yml"]
    groups = yamlout.load(text)["all"]["children"]
    assert groups["dgx"] == {"hosts": {"dgx[001:127]": None}}
    assert groups["head"] == {"hosts": {"head[01:02]": None}}
    assert groups["login"] == {"hosts": {"login[01:02]": None}}
    assert groups["compute"] == {"children": {"dgx": None}}
    assert groups["slurm_controllers"] == {"hosts": {"head[01:02]": None}}
    assert groups["slurm_accounting"] == {"hosts": {"head01": None}}
    assert groups["slurm_cluster"] == {"children": {"compute": None, "head": None, "login": None,
                                                    "slurm_controllers": None, "slurm_accounting": None}}
    # four scalable units of the compute fabric: 32 + 32 + 32 + 31 DGX
    assert {k: v for k, v in groups.items() if k.startswith("su_")} == {
        "su_ib_1": {"hosts": {"dgx[001:032]": None}},
        "su_ib_2": {"hosts": {"dgx[033:064]": None}},
        "su_ib_3": {"hosts": {"dgx[065:096]": None}},
        "su_ib_4": {"hosts": {"dgx[097:127]": None}},
    }
    # only the compute fabric gets scalable-unit groups (not stor, inband, oob)
    racks = {k: v for k, v in groups.items() if k.startswith("rack_")}
    assert len(racks) == 34  # 32 DGX racks and two management racks; the IB racks hold only switches
    assert racks["rack_r01"] == {"hosts": {"dgx[001:004]": None}}
    assert racks["rack_r32"] == {"hosts": {"dgx[125:127]": None}}
    assert racks["rack_mgmt01"] == {"hosts": {"head01": None}}  # the head nodes in two racks (rule BLAST001)
    assert racks["rack_mgmt02"] == {"hosts": {"head02": None, "login[01:02]": None}}
    assert "dgx001" not in text and len(text.splitlines()) < 250


def test_frontier_inventory_stays_small():
    text = files_of("frontier-3tier-100k")["ansible/inventory.yml"]
    groups = yamlout.load(text)["all"]["children"]
    assert groups["gpu"] == {"hosts": {"gpu[00001:13312]": None}}
    assert len(text.splitlines()) < 20_000  # ~3,700 racks and 208 scalable units, never one line per host


def test_node_group_named_after_its_role_is_the_role_group():
    inv = yamlout.load(files_of("lab-2node")["ansible/inventory.yml"])["all"]["children"]
    assert inv["head"] == {"hosts": {"head01": None}}  # group 'head' (role head) is also the role group


def test_node_group_named_after_another_role_is_refused():
    data = lab()
    data["node_groups"][1]["name"] = "compute"  # role head, but 'compute' is the compute nodes' role group
    with pytest.raises(InventoryError, match="rename the node group"):
        ansible.render(plan_of(data))


# --- group_vars

def test_all_yml_holds_render_dir_versions_and_vault_references(lab_files):
    all_yml = yamlout.load(lab_files["ansible/group_vars/all.yml"])
    assert all_yml["clusterctl_render_dir"] == "{{ playbook_dir }}/.."
    assert all_yml["clusterctl_slurm_version"] == "24.05"
    assert all_yml["slurm_version"] == "24.05"
    assert all_yml["clusterctl_slurm_controllers"] == ["head01"]
    assert all_yml["clusterctl_driver_version"] == "550"
    assert all_yml["munge_key"] == "{{ vault_munge_key | default('') }}"
    assert all_yml["slurmdbd_storage_pass"] == "{{ vault_slurmdbd_storage_pass | default('') }}"
    assert "ansible-vault create" in lab_files["ansible/group_vars/all.yml"]


def test_gpu_group_vars_are_the_plan(lab_files):
    gv = yamlout.load(lab_files["ansible/group_vars/gpu.yml"])
    assert gv == {
        "clusterctl_node_group": "gpu", "clusterctl_node_role": "compute", "clusterctl_node_type": "hgx",
        "nccl_conf_file": "hgx.conf", "nccl_enroot_env_file": "hgx.enroot.env",  # containers: enroot
        "nvidia_driver_fabric_manager": True,  # HGX: NVSwitch baseboard, no multi-node NVLink (no IMEX)
        "node_health_nvlink_fabric": True,  # Hopper GPUs register with the NVLink fabric
        "node_health_gpu_count": 8, "node_health_rdma_port_count": 8, "node_health_rdma_rate_gbps": 400,
        "node_health_mounts": ["/home"],
        # the one 3 TB data drive of hgx-h100-8gpu (catalog) at the scratch tier's /raid, enroot's data and cache
        # there, and its free space checked (docs/ansible.md, "Node-local scratch")
        "local_scratch_mount": "/raid", "local_scratch_device_count": 1, "local_scratch_device_size_bytes": 3 * 10**12,
        "enroot_pyxis_data_path": "/raid/enroot/data/user-$(id -u)",
        "enroot_pyxis_cache_path": "/raid/enroot/cache/group-$(id -g)",
        "node_health_scratch_mount": "/raid", "node_health_scratch_min_free_percent": 10,
        "storage_clients_mounts": [{"name": "home", "path": "/home", "src": "head01:/export/home", "fstype": "nfs",
                                    "opts": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev"}],
        "storage_clients_lustre_install": False,
        "storage_clients_local_dirs": ["/raid"],
        # the compute ports' names the lab declares (an OEM server: no vendor table), checked before anything
        "host_network_ports": [{"role": "compute", "index": k, "netdev": netdev, "rdma": f"mlx5_{k}"} for k, netdev in
                               enumerate(("ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0",
                                          "ibp206s0", "ibp220s0"))],
    }
    head = yamlout.load(lab_files["ansible/group_vars/head.yml"])
    assert "nccl_conf_file" not in head and "storage_clients_mounts" not in head


def test_software_pins_reach_the_hardware_roles(pod_files):
    all_yml = yamlout.load(pod_files["ansible/group_vars/all.yml"])
    assert (all_yml["nvidia_driver_branch"], all_yml["doca_ofed_version"], all_yml["dcgm_cuda_major"]) == \
        ("550", "2.7.0", 12)


def test_nvl72_racks_are_imex_domains_with_rendered_peers():
    files = files_of("gb200-nvl72-8rack")
    inv = yamlout.load(files["ansible/inventory.yml"])["all"]["children"]
    domains = {k: v for k, v in inv.items() if k.startswith("nvlink_")}
    assert len(domains) == 8 and domains["nvlink_gb200_1"] == {"hosts": {"gb[001:018]": None}}
    gv = yamlout.load(files["ansible/group_vars/gb200.yml"])
    assert gv["nvidia_imex_channel0"] is False and gv["nvidia_driver_fabric_manager"] is False
    peers = yamlout.load(files["ansible/group_vars/nvlink_gb200_2.yml"])["nvidia_imex_peers"]
    hosts = dict(line.split()[::-1] for line in files["hosts/hosts"].splitlines() if not line.startswith("#"))
    assert peers == [hosts[f"gb{n:03d}"] for n in range(19, 37)]


def test_superpod_group_vars_mount_lustre(pod_files):
    gv = yamlout.load(pod_files["ansible/group_vars/dgx.yml"])
    assert gv["storage_clients_mounts"][0] == {"name": "lustre", "path": "/lustre", 
                                               "src": "10.31.3.250@o2ib,10.20.3.250@tcp:/lustre",
                                               "fstype": "lustre", "opts": "defaults,_netdev,nofail,flock,nosuid,nodev"}
    assert gv["storage_clients_lustre_install"] is True
    assert gv["node_health_mounts"] == ["/lustre", "/home"]
    login = yamlout.load(pod_files["ansible/group_vars/login.yml"])
    assert [m["path"] for m in login["storage_clients_mounts"]] == ["/lustre", "/home"]
    assert login["storage_clients_local_dirs"] == []  # node-local NVMe tiers are for compute nodes


SECRET_KEY = re.compile(r"(pass|password|passwd|secret|token|munge_key|private)", re.I)
VAULT_REF = re.compile(r"^\{\{ vault_[a-z0-9_]+( \| default\(''\))? \}\}$")


@pytest.mark.parametrize("name", SHIPPED)
def test_group_vars_hold_no_plain_secret(name):
    files = files_of(name)
    for path, text in files.items():
        if not path.startswith("ansible/group_vars/"):
            continue
        data = yamlout.load(text) or {}
        for key, value in data.items():
            if SECRET_KEY.search(key):
                assert isinstance(value, str) and VAULT_REF.match(value), f"{path}: {key} is not a vault reference"
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            assert not re.search(r"(?i)(password|secret|storagepass)\s*[:=]\s*[^\s{\"]", line), f"{path}: {line}"


# --- site.yml

def test_lab_site_yml_plays(lab_files):
    site = yamlout.load(lab_files["ansible/site.yml"])
    plays = [(p["hosts"], [r["role"] for r in p["roles"]]) for p in site]
    hardware = [r for r in HARDWARE_ROLES if (ROLES / r / "tasks" / "main.yml").is_file()
                and r != "nvidia_imex"]  # the lab's NVLink domains are one node each: no IMEX
    assert plays == [
        ("slurm_cluster", ["slurm_preflight"]),
        ("all", ["host_network_preflight"]),  # the interface names, before any play changes a host
        ("all", ["common"]),
        ("all", ["host_firewall"]),  # the firewall and the exporters right after the /etc/hosts block
        ("all", ["monitoring_exporters"]),
        ("head01", ["dns_server"]),  # the controllers serve the cluster's zones, every node resolves through them
        ("all", ["dns_client"]),
        ("slurm_controllers", ["dhcp_server"]),  # Kea, before any play that needs a host to have its address
        ("compute", ["local_scratch"]),  # the data NVMe at /raid, before enroot's and slurmd's data go there
        ("nfs_servers", ["nfs_server"]),
        ("slurm_cluster", ["slurm_accounts", "munge"]),  # the accounts before any Slurm or MUNGE package
        ("gpu", hardware + ["host_network", "nccl"]),
        ("slurm_accounting", ["slurmdbd"]),
        ("slurm_controllers", ["slurm_controller"]),
        ("compute", ["storage_clients", "node_health", "slurm_compute"]),
        ("head01", ["monitoring_server"]),  # Prometheus last, once every exporter is in place
    ]
    assert all(p["become"] is True and p["name"][0].isupper() for p in site)
    for p in site[2:]:  # each role tagged with its name: --tags slurm_compute, --skip-tags nvidia_driver
        assert all(r["tags"] == [r["role"]] for r in p["roles"])


def test_slurm_release_preflight_is_the_first_play_and_stops_every_host(lab_files):
    """The version guard runs before any play that installs or starts something, without gathering facts, and
    one failing host stops the playbook for all (any_errors_fatal); tagged 'always' so a rolling change run
    with --tags slurm_compute is guarded too, and skippable by name."""
    guard = yamlout.load(lab_files["ansible/site.yml"])[0]
    assert guard["hosts"] == "slurm_cluster"
    assert guard["gather_facts"] is False and guard["any_errors_fatal"] is True
    assert guard["roles"] == [{"role": "slurm_preflight", "tags": ["slurm_preflight", "always"]}]
    assert "ansible/roles/slurm_preflight/tasks/preflight.yml" in lab_files


@pytest.mark.parametrize("version,release", [("24.05", "24.05"), ("24.11.3", "24.11"), ("22.05.8", "22.05")])
def test_all_yml_slurm_version_is_the_rendered_release(version, release):
    data = lab()
    data["slurm"]["version"] = version
    files = ansible.render(plan_of(data))
    assert yamlout.load(files["ansible/group_vars/all.yml"])["slurm_version"] == release
    # untagged: ansible-core 2.19 reads `!unsafe "24.05"` as the float 24.05, which the preflight would compare
    assert f"\nslurm_version: '{release}'\n" in files["ansible/group_vars/all.yml"]
    assert f"# for Slurm {release}:" in render_targets(plan_of(data), ["slurm"])["slurm/slurm.conf"]


def test_blueprint_without_slurm_has_no_preflight_play():
    data = lab()
    del data["slurm"]
    site = yamlout.load(ansible.render(plan_of(data))["ansible/site.yml"])
    assert [p["hosts"] for p in site][0] == "all"
    assert all(r["role"] != "slurm_preflight" for p in site for r in p["roles"])


def test_slurm_preflight_role_compares_major_minor_and_touches_nothing():
    text = (ROLES / "slurm_preflight/tasks/preflight.yml").read_text()
    tasks = list(_tasks(yaml.safe_load(text), "preflight.yml"))
    modules = {k for task, _ in tasks for k in task if k.startswith("ansible.builtin.")}
    # reads (shell/command with changed_when false), the package lists refresh, asserts: no package, no service
    assert modules <= {"ansible.builtin.assert", "ansible.builtin.shell", "ansible.builtin.command",
                       "ansible.builtin.apt"}, modules
    apt = [task for task, _ in tasks if "ansible.builtin.apt" in task]
    assert [set(t["ansible.builtin.apt"]) for t in apt] == [{"update_cache", "cache_valid_time"}]
    for task, _ in tasks:
        if "ansible.builtin.shell" in task or "ansible.builtin.command" in task:
            assert task["changed_when"] is False and task["check_mode"] is False, task["name"]
    assert "slurm.conf was rendered for Slurm {{ slurm_preflight_version }}; this host" in text
    assert "hostvars" not in text and "groups[" not in text and "delegate_to" not in text
    defaults = yaml.safe_load((ROLES / "slurm_preflight/defaults/main.yml").read_text())
    assert defaults["slurm_preflight_version"] == "{{ slurm_version | default('') }}"
    assert defaults["slurm_preflight_programs"][:2] == ["slurmctld", "slurmd"]


def test_site_yml_lists_only_copied_roles(pod_files):
    site = yamlout.load(pod_files["ansible/site.yml"])
    used = {r["role"] for p in site for r in p["roles"]}
    copied = {p.split("/")[2] for p in pod_files if p.startswith("ansible/roles/")}
    assert used | shared_roles(used) == copied and "node_drain" in copied  # included by slurm_compute
    login = next(p for p in site if p["hosts"] == "login")
    assert [r["role"] for r in login["roles"]] == ["storage_clients", "enroot_pyxis", "slurm_login"]


def test_cloud_gpu_groups_get_no_doca_without_infiniband():
    gcp = yamlout.load(files_of("gcp-a3-mega")["ansible/site.yml"])
    gpu_play = next(p for p in gcp if p["hosts"] == "a3mega")
    assert "doca_ofed" not in [r["role"] for r in gpu_play["roles"]]
    assert "nccl" in [r["role"] for r in gpu_play["roles"]]


def test_every_contract_role_is_shipped():
    for role in CONTRACT_ROLES:
        assert (ROLES / role / "tasks" / "main.yml").is_file(), f"roles/{role} is missing"


def test_nccl_files_named_in_group_vars_are_rendered():
    for name in SHIPPED:
        files = render_targets(plan(name))
        for path, text in files.items():
            if path.startswith("ansible/group_vars/") and path != "ansible/group_vars/all.yml":
                gv = yamlout.load(text)
                for key in ("nccl_conf_file", "nccl_env_file"):
                    if key in gv:
                        assert f"nccl/{gv[key]}" in files, f"{name}: {path} names nccl/{gv[key]}"


# --- hosts file, ansible.cfg

def test_lab_hosts_file_is_exact(lab_files):
    assert lab_files["hosts/hosts"] == (
        "# generated by clusterctl from blueprint 'lab-2node'; do not edit\n"
        "# static name resolution for the cluster, installed into /etc/hosts by the common role (between its "
        "'clusterctl hosts' markers)\n"
        "# node group gpu: in-band addresses from pool inband (10.10.0.0/24)\n"
        "10.10.0.17 gpu01\n"
        "10.10.0.18 gpu02\n"
        "# node group head: in-band addresses from pool inband (10.10.0.0/24)\n"
        "10.10.0.19 head01\n"
        "# switches: management addresses from pool mgmt (10.12.0.0/24)\n"
        "10.12.0.17 ib-leaf01\n"
        "10.12.0.18 mgmt-leaf01\n")


def test_superpod_hosts_file_lists_every_node_and_switch(pod_files):
    p = plan("dgx-h100-superpod-4su")
    lines = [line for line in pod_files["hosts/hosts"].splitlines() if not line.startswith("#")]
    names = [line.split()[1] for line in lines]
    assert len(names) == len(set(names)) == p.nodes + sum(f.switch_count for f in p.fabrics)
    addresses = [line.split()[0] for line in lines]
    assert len(set(addresses)) == len(addresses)


def test_cloud_nodes_are_left_to_the_provider_dns():
    text = files_of("aws-p5")["hosts/hosts"]
    assert "provider's DNS" in text and "gpu001" not in text


def test_ansible_cfg_is_tuned_for_scale(lab_files):
    cfg = lab_files["ansible/ansible.cfg"]
    for line in ("forks = 100", "pipelining = true", "fact_caching = jsonfile", "gathering = smart",
                 "host_key_checking = true", "callback_result_format = yaml", "timeout = 30",
                 "ControlPersist=30m", "inventory = inventory.yml", "roles_path = roles"):
        assert line in cfg, line


# --- output properties

@pytest.mark.parametrize("name", SHIPPED)
def test_output_is_sorted_and_headed(name):
    first = files_of(name)  # determinism: tests/test_render_cli.py, two processes, two hash seeds
    assert list(first) == sorted(first)
    for path, text in first.items():
        if not path.startswith("ansible/roles/"):
            assert text.startswith(f"# generated by clusterctl from blueprint '{name}'; do not edit\n"), path
            if path.endswith(".yml"):
                yamlout.load(text)


def test_roles_are_byte_identical_copies(pod_files):
    copied = {p: t for p, t in pod_files.items() if p.startswith("ansible/roles/")}
    assert copied
    for path, text in copied.items():
        assert (ROLES / path.removeprefix("ansible/roles/")).read_text() == text


# --- the shipped roles

def _tasks(items, where):
    for item in items or []:
        yield item, where
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key), where)


def _role_dirs():
    """The roles: every directory of roles/ but dot-directories (roles/.molecule holds the Molecule
    scenarios' shared playbooks, not a role)."""
    return sorted(p for p in ROLES.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.mark.parametrize("role", [p.name for p in _role_dirs()])
def test_role_layout(role):
    root = ROLES / role
    for rel in ("defaults/main.yml", "meta/main.yml", "meta/argument_specs.yml", "tasks/main.yml",
                "handlers/main.yml"):
        assert (root / rel).is_file(), f"roles/{role}/{rel}"
    defaults = yaml.safe_load((root / "defaults/main.yml").read_text()) or {}
    spec = yaml.safe_load((root / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(spec), "every default is documented in meta/argument_specs.yml"
    assert all(k.startswith(role + "_") for k in defaults), "variables are prefixed with the role name"


@pytest.mark.parametrize("role", [p.name for p in _role_dirs()])
def test_every_task_has_a_name(role):
    for path in sorted((ROLES / role).glob("*/*.yml")):
        if path.parent.name not in ("tasks", "handlers"):
            continue
        for task, _ in _tasks(yaml.safe_load(path.read_text()), path):
            assert task.get("name"), f"{path.relative_to(ROLES)}: a task without a name: {task}"


@pytest.mark.parametrize("role", MY_ROLES)
def test_my_roles_split_into_phases_and_use_builtin_modules(role):
    root = ROLES / role
    main = yaml.safe_load((root / "tasks/main.yml").read_text())
    imported = [t["ansible.builtin.import_tasks"] for t in main]
    assert imported[0] == "preflight.yml" and imported[-1] == "configure.yml"
    for t in main:
        assert role in t["tags"] and set(t["tags"]) & {"preflight", "install", "configure"}
    for path in sorted((root / "tasks").glob("*.yml")) + [root / "handlers/main.yml"]:
        for task, _ in _tasks(yaml.safe_load(path.read_text()), path):
            modules = [k for k in task if "." in k or k in ("command", "shell", "copy", "template")]
            assert all(m.startswith("ansible.builtin.") for m in modules), f"{path}: {modules}"


@pytest.mark.parametrize("role", ("munge", "slurmdbd"))
def test_secret_tasks_are_not_logged(role):
    text = (ROLES / role / "tasks/configure.yml").read_text()
    for task in yaml.safe_load(text):
        if any(k in yaml.safe_dump(task) for k in ("munge_key", "slurmdbd_template")) and \
                ("ansible.builtin.copy" in task or "ansible.builtin.template" in task):
            assert task.get("no_log") is True, task["name"]


def test_no_secret_ships_in_the_roles():
    for path in ROLES.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "BEGIN RSA" not in text and "PRIVATE KEY" not in text, path
    munge = yaml.safe_load((ROLES / "munge/defaults/main.yml").read_text())
    assert munge["munge_key"] == "" and munge["munge_key_src"] == ""


def test_roles_read_only_the_render_dir_never_other_hosts():
    for role in MY_ROLES:
        for path in (ROLES / role).rglob("*.yml"):
            text = path.read_text()
            assert "hostvars" not in text and "groups[" not in text and "delegate_to" not in text, path


def test_node_health_script_checks_gpus_links_and_mounts():
    text = (ROLES / "node_health/files/node-health-check.sh").read_text()
    for needle in ("nvidia-smi -L", "/sys/class/infiniband/*/ports/*", "mountpoint -q", "State=DRAIN"):
        assert needle in text
    assert Path(ROLES / "node_health/files/node-health-check.sh").stat().st_mode & 0o111


# --- controller HA: StateSaveLocation on shared storage, backup slurmdbd

@pytest.fixture(scope="module")
def ha_files():
    return files_of("lab-ha")


def test_ha_controllers_mount_the_state_tier_before_slurmctld(ha_files):
    site = yamlout.load(ha_files["ansible/site.yml"])
    ctl = next(p for p in site if p["name"] == "Slurm controllers")
    assert [r["role"] for r in ctl["roles"]] == ["storage_clients", "slurm_controller"]
    head = yamlout.load(ha_files["ansible/group_vars/head.yml"])
    # only the tier holding StateSaveLocation, not home: head nodes mount nothing else for their role
    assert head["storage_clients_mounts"] == [{"name": "shared", "path": "/shared", "src": "nas01:/export/shared",
                                               "fstype": "nfs", "opts": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev"}]
    assert head["storage_clients_lustre_install"] is False and head["storage_clients_local_dirs"] == []
    assert "node_health_mounts" not in head
    login = yamlout.load(ha_files["ansible/group_vars/login.yml"])
    assert [m["path"] for m in login["storage_clients_mounts"]] == ["/home", "/shared"]


def test_ha_backup_slurmdbd_is_in_the_accounting_group(ha_files):
    inv = yamlout.load(ha_files["ansible/inventory.yml"])["all"]["children"]
    assert inv["slurm_accounting"] == {"hosts": {"head[01:02]": None}}
    assert inv["slurm_controllers"] == {"hosts": {"head[01:02]": None}}
    all_yml = yamlout.load(ha_files["ansible/group_vars/all.yml"])
    assert all_yml["clusterctl_slurm_accounting_host"] == "head01"


def test_controllers_mount_nothing_when_state_is_local(lab_files):
    site = yamlout.load(lab_files["ansible/site.yml"])
    ctl = next(p for p in site if p["name"] == "Slurm controllers")
    assert [r["role"] for r in ctl["roles"]] == ["slurm_controller"]
    assert "storage_clients_mounts" not in yamlout.load(lab_files["ansible/group_vars/head.yml"])


def test_controller_on_a_login_group_keeps_every_mount():
    data = lab()
    data["node_groups"][1]["role"] = "login"  # head01 is a login node and the only controller
    data["node_groups"][1]["name"] = "login"
    data["storage"].insert(0, {"name": "shared", "tier": "nfs", "export": "nas01:/export/shared",
                               "mount": "/shared", "capacity_tb": 1, "read_gb_per_s": 1, "write_gb_per_s": 1})
    data["slurm"]["state_save_location"] = "/shared/state"
    files = ansible.render(plan_of(data))
    login = yamlout.load(files["ansible/group_vars/login.yml"])
    assert [m["path"] for m in login["storage_clients_mounts"]] == ["/shared", "/home"]


def test_weka_backends_given_as_a_host_list_are_expanded_for_the_mount():
    """The WEKA client mounts ``backend1,backend2/fs``; a host list was written unexpanded (``weka[01-03]/fs``)."""
    from clusterctl.plan.sources import weka_source
    from clusterctl.targets.ansible.storage import storage_mounts
    from tests.helpers import lab, plan_of

    assert weka_source("weka[01-03]", "data") == "weka01,weka02,weka03/data"
    assert weka_source("b1,b2/fs", "data") == "b1,b2/fs"
    assert weka_source("weka[01-02],w9/pfs", "data") == "weka01,weka02,w9/pfs"  # the file system given: still expanded
    data = lab()
    data["storage"].append({"name": "data", "tier": "parallel", "filesystem": "weka", "servers": "weka[01-03]",
                            "mount": "/data", "capacity_tb": 100, "read_gb_per_s": 50, "write_gb_per_s": 30})
    plan = plan_of(data)
    gpu = next(g for g in plan.groups if g.name == "gpu")
    mounts = {m["path"]: m for m in storage_mounts(plan, gpu)[0]}
    assert mounts["/data"]["src"] == "weka01,weka02,weka03/data" and mounts["/data"]["fstype"] == "wekafs"


def test_every_task_that_handles_the_database_password_is_not_logged():
    """The slurmdbd role's database tasks carry the vault password in SQL on standard input: each is no_log,
    and the password is never an argv element (a command line is visible to every user of the host).
    tests/e2e runs them against MariaDB in the deploy rehearsal."""
    path = ROLES / "slurmdbd" / "tasks" / "database.yml"
    tasks = yaml.safe_load(path.read_text())
    secret = [t for t in tasks if "storage_pass" in yaml.safe_dump(t)]
    assert len(secret) >= 2
    # the password reaches SQL only base64-encoded, decoded by the server: nothing of it is parsed as SQL
    assert all("FROM_BASE64('{{ slurmdbd_storage_pass | b64encode }}')" in t["ansible.builtin.command"]["stdin"]
               for t in secret)
    for t in secret:
        assert t.get("no_log") is True, t["name"]
        argv = (t.get("ansible.builtin.command") or {}).get("argv", [])
        assert not any("pass" in str(a) or "{{" in str(a) for a in argv), t["name"]


def test_shared_roles_are_exactly_the_roles_included_by_others():
    """SHARED_ROLES (what is copied with a role) is what the roles' include_role tasks name: a role included by
    another but not listed would be missing from a render, a listed user that no longer includes it copies too much."""
    included: dict[str, set[str]] = {}
    for role in _role_dirs():
        for path in sorted((role / "tasks").glob("*.yml")):
            for task, _ in _tasks(yaml.safe_load(path.read_text()), path):
                name = (task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role") or {})
                if name.get("name") not in (None, role.name) and "{{" not in name["name"]:  # node_drain's change
                    # path includes its caller's own tasks back (node_drain_apply_role), no other role
                    included.setdefault(name["name"], set()).add(role.name)
    assert included == {r: set(users) for r, users in SHARED_ROLES.items()}
    assert included["internal_common"] == {"nvidia_driver", "dcgm", "doca_ofed", "enroot_pyxis"}


def test_pull_status_collector_is_the_static_playbook_with_the_header_and_the_status_path():
    """ansible/pull-status.yml is templates/ansible/pull-status.yml.j2: clusterctl fills in the header and the
    status file; the playbook's own Ansible templates reach the file as written (a raw block)."""
    text = files_of("frontier-3tier-100k")["ansible/pull-status.yml"]
    assert text.startswith("# generated by clusterctl from blueprint 'frontier-3tier-100k'; do not edit\n"
                           "# Collect every node's pull-status.json (/var/lib/clusterctl/pull-status.json) and ")
    assert "        src: /var/lib/clusterctl/pull-status.json\n" in text
    assert ("        dest: \"{{ clusterctl_pull_summary | default(playbook_dir + '/../pull-summary.json') }}\"\n"
            in text)
    assert "          {%- set nodes = {} %}{% set versions = {} %}{% set failed = {} %}\n" in text
    assert text.endswith("      run_once: true\n      become: false\n")
    template = (data_dir("templates") / "ansible" / "pull-status.yml.j2").read_text()
    assert "{{ status_file }}" in template and "{% raw %}" in template
