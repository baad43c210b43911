"""GB200 NVL72 multi-node NVLink: IMEX configured per NVLink domain, Slurm's switch/nvidia_imex, the rules, and
NCCL_MNNVL_ENABLE only where IMEX is configured. The rehearsal has no GPUs, NVLink or systemd: the rendered
artefacts are asserted exactly here."""

from __future__ import annotations

import copy

import pytest

from clusterctl.targets import render_targets
from clusterctl import yamlout
from tests.helpers import hits, plan_of, shipped

SWITCH_LINES = ["SwitchType=switch/nvidia_imex", "SwitchParameters=imex_channel_count=2048"]


@pytest.fixture(scope="module")
def gb200():
    data = shipped("gb200-nvl72-8rack")
    return data, render_targets(plan_of(data))


def _slurm_lines(files) -> list[str]:
    return files["slurm/slurm.conf"].splitlines()


def test_slurm_conf_gives_each_job_an_imex_channel(gb200):
    _, files = gb200
    lines = _slurm_lines(files)
    at = lines.index(SWITCH_LINES[0])
    assert lines[at:at + 2] == SWITCH_LINES
    comment = lines[at - 1]
    assert comment.startswith("# multi-node NVLink (gb200 NVL72): IMEX channels are not created by default")
    assert "NVIDIA IMEX guide" in comment and "slurm.conf(5) SwitchType, Slurm 24.05" in comment


def test_no_switch_plugin_without_multi_node_nvlink():
    files = render_targets(plan_of(shipped("lab-2node")))  # HGX: 8-GPU domains inside one node
    assert not any(line.startswith("Switch") or "nvidia_imex" in line for line in _slurm_lines(files))
    assert "NCCL_MNNVL_ENABLE" not in "".join(v for k, v in files.items() if k.startswith("nccl/"))


def test_slurm_before_24_05_gets_no_plugin_and_an_error():
    data = shipped("gb200-nvl72-8rack")
    data["slurm"]["version"] = "23.11"
    data["slurm"].pop("block_sizes", None)
    assert [h.severity.name for h in hits(data, "NVLINK005")] == ["ERROR"]  # tests/rules/test_nvlink.py
    lines = _slurm_lines(render_targets(plan_of(data)))
    assert not any(line.startswith("SwitchType") for line in lines)
    assert any(line.startswith("# multi-node NVLink (gb200 NVL72): switch/nvidia_imex needs Slurm 24.05; not "
                               "configured for 23.11") for line in lines)
    gv = yamlout.load(render_targets(plan_of(data))["ansible/group_vars/gb200.yml"])
    assert gv["nvidia_imex_channel0"] is True  # no Slurm plugin: channel 0 at driver load instead


def test_shipped_gb200_is_quiet():
    data = shipped("gb200-nvl72-8rack")
    assert hits(data, "NVLINK005") == [] and hits(data, "NVLINK006") == []


def test_nodes_config_per_rack_is_its_18_trays(gb200):
    """8 NVL72 racks x 18 trays x 4 GPUs: one IMEX domain per rack; its peer list is the trays' in-band addresses
    in host order (10.40.0.0/22; the first 16 addresses go to the head and login nodes)."""
    _, files = gb200
    hosts = dict(line.split()[::-1] for line in files["hosts/hosts"].splitlines() if not line.startswith("#"))
    for n in range(1, 9):
        text = files[f"ansible/group_vars/nvlink_gb200_{n}.yml"]
        peers = yamlout.load(text)["nvidia_imex_peers"]
        assert peers == [hosts[f"gb{k:03d}"] for k in range(18 * (n - 1) + 1, 18 * n + 1)]
        assert "IMEX peers are the domain's in-band addresses (nodes_config.cfg, NVIDIA IMEX guide)" in text
    first = yamlout.load(files["ansible/group_vars/nvlink_gb200_1.yml"])["nvidia_imex_peers"]
    assert first == [f"10.40.0.{k}" for k in range(17, 35)]
    assert yamlout.load(files["ansible/group_vars/nvlink_gb200_8.yml"])["nvidia_imex_peers"][-1] == "10.40.0.160"


def test_gb200_play_applies_nvidia_imex_after_the_driver(gb200):
    _, files = gb200
    site = yamlout.load(files["ansible/site.yml"])
    (play,) = [p for p in site if p["hosts"] == "gb200"]
    roles = [r["role"] for r in play["roles"]]
    assert roles.index("nvidia_driver") + 1 == roles.index("nvidia_imex")
    all_yml = yamlout.load(files["ansible/group_vars/all.yml"])
    assert all_yml["nvidia_imex_branch"] == all_yml["nvidia_driver_branch"] == "570"
    gv = yamlout.load(files["ansible/group_vars/gb200.yml"])
    assert gv["nvidia_imex_channel0"] is False  # Slurm 24.11: switch/nvidia_imex makes a channel per job
    assert "ansible/roles/nvidia_imex/tasks/configure.yml" in files


def test_mnnvl_forced_only_where_imex_is_configured(gb200):
    _, files = gb200
    assert "\nNCCL_MNNVL_ENABLE=1" in files["nccl/tray.conf"]
    data = copy.deepcopy(gb200[0])
    del data["addressing"]["inband"]  # no in-band pool: no address for nodes_config.cfg
    # nor for the NFS export head01 serves (a render error of its own): the home tier goes too
    data["storage"] = [t for t in data["storage"] if t.get("tier") != "nfs"]
    assert len(hits(data, "NVLINK006")) == 1
    files = render_targets(plan_of(data))
    conf = files["nccl/tray.conf"]
    assert "NCCL_MNNVL_ENABLE=" not in conf and "NCCL_MNNVL_ENABLE not set: no IMEX domain is configured" in conf
    assert not any(p.startswith("ansible/group_vars/nvlink_") for p in files)
    site = yamlout.load(files["ansible/site.yml"])
    assert all(r["role"] != "nvidia_imex" for p in site for r in p["roles"])
