"""Storage clients and the NFS server (issue 11, item 6): Lustre's LNet NID (validated at load, STORAGE007),
LNet networks and the client repository, the WEKA agent install, and the NFS server a blueprint names on one
of its own nodes. No Lustre, WEKA or NFS kernel module here (this kernel has no nfsd and no NFS client): the
rendered files and the roles' parsed tasks and templates are checked exactly."""

from __future__ import annotations

import jinja2
import pytest
import yaml

from clusterctl.blueprint.load import BlueprintError
from clusterctl.resources import data_dir
from clusterctl.targets import ansible
from clusterctl import yamlout
from tests.helpers import codes, hits, lab, plan_of, shipped

ROLES = data_dir("roles")


def _lustre(servers: str, **extra) -> dict:
    return {"name": "lustre", "tier": "parallel", "filesystem": "lustre", "servers": servers, "mount": "/lustre",
            "capacity_tb": 100, "read_gb_per_s": 50, "write_gb_per_s": 30, **extra}


def _tasks(role: str, name: str) -> list[dict]:
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text())


def _flat(tasks: list[dict]) -> list[dict]:
    out = []
    for t in tasks:
        out.append(t)
        out += _flat(t.get("block", []))
    return out


def _task(role: str, name: str, title: str) -> dict:
    return next(t for t in _flat(_tasks(role, name)) if t["name"].startswith(title))


def _render(role: str, template: str, **variables) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string((ROLES / role / "templates" / template).read_text()).render(ansible_managed="m", **variables)


# --- (a) Lustre: the NID, LNet and the client repository

@pytest.mark.parametrize("servers", ["stor-mgmt.dc1", "stor-mgmt.dc1:/lustre", "10.0.0.1@o2ib:/waytoolongname"])
def test_a_lustre_source_without_a_nid_is_refused_at_load_with_its_location(servers):
    data = lab()
    data["storage"].append(_lustre(servers))
    with pytest.raises(BlueprintError) as err:
        plan_of(data)
    text = str(err.value)
    assert "storage[2].servers" in text and "the LNet NID of the MGS" in text


def test_a_lustre_source_with_nids_loads():
    data = lab()
    data["storage"].append(_lustre("10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/lustre"))
    plan_of(data)
    data["storage"][-1] = {**_lustre("x"), "filesystem": "weka", "servers": "weka[01-03]"}  # other file systems
    plan_of(data)


def test_o2ib_nid_without_an_rdma_storage_nic_is_an_error():
    data = lab()  # hgx-h100-8gpu: its storage NIC is a ConnectX-7 (InfiniBand/Ethernet); cpu-1u has none
    data["storage"].append(_lustre("10.0.0.1@o2ib:/lustre"))
    assert "STORAGE007" not in codes(data)  # the gpu group has one; head nodes mount nothing
    data["node_groups"].append({"name": "login", "type": "head", "role": "login", "count": 1, "hostnames": "login01",
                                "racks": "lab01"})
    (h,) = hits(data, "STORAGE007")
    assert "node type head (group login, role login)" in h.message and "10.0.0.1@o2ib:/lustre" in h.message
    data["storage"][-1]["servers"] = "10.0.0.1@o2ib,10.1.0.1@tcp:/lustre"  # the login nodes use the tcp NID
    assert "STORAGE007" not in codes(data)


def test_lnet_networks_on_the_storage_interfaces_and_the_signed_client_repository():
    data = lab()
    data["storage"].append(_lustre("10.0.0.1@o2ib,10.1.0.1@tcp:/lustre",
                                   client_repo="https://downloads.whamcloud.com/public/lustre/lustre-2.15.6/ubuntu2204/client",
                                   client_repo_key="https://repo.example.org/lustre.asc"))
    data["node_types"]["hgx"]["storage_interfaces"] = ["ibp154s0", "ibp192s0"]
    gv = yamlout.load(ansible.render(plan_of(data))["ansible/group_vars/gpu.yml"])
    assert gv["storage_clients_lnet_networks"] == "o2ib0(ibp154s0,ibp192s0)"
    assert gv["storage_clients_lustre_repo_url"] == (
        "https://downloads.whamcloud.com/public/lustre/lustre-2.15.6/ubuntu2204/client")
    assert gv["storage_clients_lustre_repo_key_url"] == "https://repo.example.org/lustre.asc"
    assert gv["storage_clients_mounts"][1]["src"] == "10.0.0.1@o2ib,10.1.0.1@tcp:/lustre"
    del data["node_types"]["hgx"]["storage_interfaces"]
    gv = yamlout.load(ansible.render(plan_of(data))["ansible/group_vars/gpu.yml"])
    assert gv["storage_clients_lnet_networks"] == "o2ib0"  # ko2iblnd's default interface (ib0)

    data["storage"][-1]["servers"] = "10.1.0.1@tcp:/lustre"  # Lustre over TCP: LNet's default tcp0, no option
    assert "storage_clients_lnet_networks" not in yamlout.load(ansible.render(plan_of(data))["ansible/group_vars/gpu.yml"])


def test_the_client_repository_needs_its_key():
    data = lab()
    data["storage"].append(_lustre("10.0.0.1@o2ib:/lustre", client_repo="https://repo.example.org/lustre"))
    with pytest.raises(BlueprintError) as err:
        plan_of(data)
    assert "client_repo and client_repo_key go together" in str(err.value)


def test_storage_clients_writes_lnet_options_and_the_lustre_repository():
    lnet = _task("storage_clients", "configure.yml", "Configure LNet's networks")
    assert lnet["ansible.builtin.copy"]["dest"] == "/etc/modprobe.d/lustre.conf"
    content = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        lnet["ansible.builtin.copy"]["content"]).render(ansible_managed="m", storage_clients_lnet_networks="o2ib0(ib0)")
    assert content.splitlines()[-1] == "options lnet networks=o2ib0(ib0)"
    assert lnet["when"] == "storage_clients_lnet_networks | length > 0"
    block = _task("storage_clients", "install.yml", "Add the Lustre client repository")
    assert "storage_clients_lustre_repo_url | length > 0" in block["when"]
    key = _task("storage_clients", "install.yml", "Download the Lustre client repository signing key")
    assert key["ansible.builtin.get_url"]["dest"] == "{{ storage_clients__lustre_keyring }}"
    text = _render("storage_clients", "lustre-client.sources.j2", storage_clients_lustre_repo_url="https://r.example/c",
                   storage_clients__lustre_keyring="/etc/apt/keyrings/lustre-client.asc")
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "Types: deb", "URIs: https://r.example/c", "Suites: /", "Signed-By: /etc/apt/keyrings/lustre-client.asc"]
    names = [t["name"] for t in _flat(_tasks("storage_clients", "install.yml"))]
    assert names.index(block["name"]) < names.index("Install the Lustre client")


# --- (b) WEKA: a comma list of backends, the agent from a backend, verified before it runs

def test_weka_agent_is_downloaded_checked_and_then_run():
    download = _task("storage_clients", "install.yml", "Download the WEKA install script")
    get = download["ansible.builtin.get_url"]
    assert get["url"] == "http://{{ storage_clients__weka_backend }}:{{ storage_clients_weka_agent_port }}/dist/v1/install"
    assert get["checksum"] == "{{ storage_clients_weka_agent_checksum }}"
    run = _task("storage_clients", "install.yml", "Run the WEKA install script")
    assert run["ansible.builtin.command"] == {"argv": ["sh", "{{ storage_clients__weka_script }}"], "creates": "/usr/bin/weka"}
    check = _task("storage_clients", "preflight.yml", "Assert the WEKA install script has a checksum")
    assert "storage_clients_weka_agent_checksum is match('^sha256:[0-9a-f]{64}$')" in check["ansible.builtin.assert"]["that"]
    text = (ROLES / "storage_clients" / "tasks" / "install.yml").read_text()
    assert "| sh" not in text and "| bash" not in text
    # the backend the script comes from: the first of the mount's comma list
    backend = yaml.safe_load((ROLES / "storage_clients/vars/main.yml").read_text())["storage_clients__weka_backend"]
    env = jinja2.Environment()
    env.filters["split"] = lambda s, sep: s.split(sep)
    mounts = [{"name": "w", "path": "/mnt/weka", "src": "weka01,weka02,weka03/data", "fstype": "wekafs"}]
    assert env.from_string(backend).render(storage_clients__weka_mounts=mounts).strip() == "weka01"
    gv = yamlout.load(ansible.render(plan_of(shipped("hgx-h200-roce-1024")))["ansible/group_vars/gpu.yml"])
    assert [m["src"] for m in gv["storage_clients_mounts"] if m["fstype"] == "wekafs"] == ["weka-mgmt.fra1/weka"]


# --- (c) the NFS server on one of the blueprint's own nodes

def test_lab_head_node_serves_its_nfs_export_before_anything_mounts_it():
    files = ansible.render(plan_of(lab()))
    inventory = yamlout.load(files["ansible/inventory.yml"])
    assert inventory["all"]["children"]["nfs_servers"] == {"hosts": {"head01": None}}
    assert yamlout.load(files["ansible/group_vars/nfs_servers.yml"]) == {
        "nfs_server_exports": [{"host": "head01", "path": "/export/home", "clients": "10.10.0.0/24"}]}
    site = yamlout.load(files["ansible/site.yml"])
    hosts = [p["hosts"] for p in site]
    roles = [[r["role"] for r in p["roles"]] for p in site]
    server = hosts.index("nfs_servers")
    assert roles[server] == ["nfs_server"]
    assert all(i > server for i, r in enumerate(roles) if "storage_clients" in r)
    assert "ansible/roles/nfs_server/tasks/main.yml" in files


def test_an_external_nfs_server_is_not_set_up():
    data = lab()
    data["storage"][0]["export"] = "nas01:/export/home"
    files = ansible.render(plan_of(data))
    assert "ansible/group_vars/nfs_servers.yml" not in files
    assert "nfs_servers" not in yamlout.load(files["ansible/inventory.yml"])["all"]["children"]
    assert "nfs_server" not in [r["role"] for p in yamlout.load(files["ansible/site.yml"]) for r in p["roles"]]


def test_nfs_server_role_exports_to_the_inband_network_with_safe_options():
    defaults = yaml.safe_load((ROLES / "nfs_server/defaults/main.yml").read_text())
    assert defaults["nfs_server_export_options"] == "rw,sync,no_subtree_check,root_squash"
    assert defaults["nfs_server_packages"] == ["nfs-kernel-server"]
    line = _task("nfs_server", "configure.yml", "Export the directories")["ansible.builtin.lineinfile"]
    assert line["path"] == "{{ nfs_server_exports_file }}"
    rendered = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(line["line"]).render(
        nfs_server_export={"host": "head01", "path": "/export/home", "clients": "10.10.0.0/24"},
        nfs_server_export_options=defaults["nfs_server_export_options"])
    assert rendered == "/export/home 10.10.0.0/24(rw,sync,no_subtree_check,root_squash)"
    directory = _task("nfs_server", "configure.yml", "Create the export directories")["ansible.builtin.file"]
    assert directory["state"] == "directory" and directory["path"] == "{{ nfs_server_export.path }}"
    handler = yaml.safe_load((ROLES / "nfs_server/handlers/main.yml").read_text())[0]
    assert handler["ansible.builtin.command"]["argv"] == ["exportfs", "-ra"]


def test_host_lists_in_servers_reach_fstab_expanded_through_the_cli(tmp_path):
    """Issue 14 item 2: ``weka[01-16]/pfs`` was written unexpanded into the mount source. Rendered through the
    real CLI, parsed, and the role's fstab line built from it: WEKA takes ``b1,...,b16/pfs``, Lustre the failover
    MGS pair ``nid1:nid2:/fs`` (sources cited in clusterctl/plan/sources.py)."""
    from tests.helpers import cli, to_yaml

    data = lab()
    data["storage"] += [
        {"name": "pfs", "tier": "parallel", "filesystem": "weka", "servers": "weka[01-16]/pfs", "mount": "/mnt/weka",
         "capacity_tb": 1000, "read_gb_per_s": 200, "write_gb_per_s": 100},
        _lustre("10.10.0.[250-251]@tcp:/lustre"),  # two MGS nodes in the in-band pool: a failover pair
    ]
    bp = tmp_path / "hostlists.yaml"
    bp.write_text(to_yaml(data))
    r = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    gv = yaml.safe_load((tmp_path / "out" / "ansible" / "group_vars" / "gpu.yml").read_text())
    mounts = {m["path"]: (m["fstype"], m["src"]) for m in gv["storage_clients_mounts"]}
    weka = ",".join(f"weka{n:02d}" for n in range(1, 17)) + "/pfs"
    assert mounts["/mnt/weka"] == ("wekafs", weka)
    assert mounts["/lustre"] == ("lustre", "10.10.0.250@tcp:10.10.0.251@tcp:/lustre")
    assert mounts["/home"] == ("nfs", "head01:/export/home")
    (fstab,) = [t for t in _tasks("storage_clients", "configure.yml") if t["name"] == "Add mounts to fstab"]
    line = fstab["ansible.builtin.lineinfile"]["line"]
    env = jinja2.Environment()
    opts = {"wekafs": "x", "lustre": "x", "nfs": "x"}
    for m in gv["storage_clients_mounts"]:
        out = env.from_string(line).render(storage_clients_mount=m, storage_clients_mount_options=opts).split()
        assert out[:3] == [mounts[m["path"]][1], m["path"], m["fstype"]]
    assert not any("[" in m["src"] for m in gv["storage_clients_mounts"])
