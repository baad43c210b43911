"""nccl target: /etc/nccl.conf per GPU node type, exact lines per fabric, and GCP's companion profile."""

from __future__ import annotations

import re
import subprocess

import pytest

from clusterctl.catalog import load_shipped_catalog
from clusterctl.resources import shipped_blueprints
from clusterctl.targets import nccl
from clusterctl.targets.nccl import cloud
from clusterctl.targets.nccl.settings import CloudProfile, Setting, ShellStep
from tests.conftest import require_tool
from tests.helpers import plan_of, shipped

KEY_VALUE = re.compile(r"^[A-Z][A-Z0-9_]*=\S+$")


def render(data: dict) -> dict[str, str]:
    return nccl.render(plan_of(data))


def settings(text: str) -> dict[str, str]:
    """KEY -> VALUE of the non-comment lines (each key once)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            assert key not in out, f"{key} twice"
            out[key] = value
    return out


def conf(blueprint: str | dict, node_type: str) -> dict[str, str]:
    data = shipped(blueprint) if isinstance(blueprint, str) else blueprint
    return settings(render(data)[f"nccl/{node_type}.conf"])


# --- bare metal: InfiniBand --------------------------------------------------------------------------

def test_lab_single_tier_not_rail_optimized():
    assert conf("lab-2node", "hgx") == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1",
        "NCCL_SOCKET_IFNAME": "=bond0",
        "NCCL_CROSS_NIC": "1",
        "NCCL_NVLS_ENABLE": "1",
    }


def test_only_gpu_node_types_get_a_file():
    files = render(shipped("lab-2node"))
    assert sorted(files) == ["nccl/hgx.conf"]  # the head node (cpu-1u) has no GPUs


@pytest.mark.parametrize("blueprint", ["dgx-h100-superpod-1su", "dgx-h100-superpod-4su"])
def test_dgx_h100_superpod_rail_optimized_two_tier(blueprint):
    s = conf(blueprint, "dgx")
    # the eight OSFP compute ports as the DGX H100 user guide names them; mlx5_1/2/7/8 are the
    # storage and in-band ConnectX-7 ports and must not be used by NCCL
    assert s["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    hcas = {h.split(":")[0] for h in s["NCCL_IB_HCA"].lstrip("=").split(",")}
    assert not hcas & {"mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"}
    assert s["NCCL_CROSS_NIC"] == "0"
    assert int(s["NCCL_IB_QPS_PER_CONNECTION"]) > 1
    assert s["NCCL_NVLS_ENABLE"] == "1"
    assert s["NCCL_SOCKET_IFNAME"] == "=bond0"
    assert "NCCL_IB_TIMEOUT" not in s  # 2 tiers, ~1,000 endpoints: NCCL's default timeout is fine
    assert "NCCL_MNNVL_ENABLE" not in s and "NCCL_IB_TC" not in s


def test_no_hca_names_are_guessed_when_no_source_gives_them():
    data = shipped("dgx-h100-superpod-1su")
    data["node_types"]["dgx"] = {"server": "hgx-h100-8gpu"}  # an OEM server: no vendor table, none declared
    text = render(data)["nccl/dgx.conf"]
    assert "NCCL_IB_HCA" not in settings(text)
    flat = " ".join(line.lstrip("# ") for line in text.splitlines())
    assert "(rule NET001); declare node_types.dgx.interfaces.compute" in flat and "ASSUMED" not in text


def test_declared_interfaces_give_the_hca_names():
    data = shipped("dgx-h100-superpod-1su")
    data["node_types"]["dgx"] = {"server": "hgx-h100-8gpu", "interfaces": {
        "compute": [{"netdev": f"ibp{k}s0", "rdma": f"mlx5_{k + 2}"} for k in range(8)],
        "inband": [{"netdev": "enp9s0f0np0"}, {"netdev": "enp9s0f1np1"}]}}
    text = render(data)["nccl/dgx.conf"]
    s = settings(text)
    assert s["NCCL_IB_HCA"] == "=mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1"
    assert s["NCCL_SOCKET_IFNAME"] == "=bond0"
    flat = " ".join(line.lstrip("# ") for line in text.splitlines())
    assert "bonds enp9s0f0np0, enp9s0f1np1 (node_types.dgx.interfaces.inband)" in flat


def test_gb200_nvl72_multi_node_nvlink():
    text = render(shipped("gb200-nvl72-8rack"))["nccl/tray.conf"]
    s = settings(text)
    assert s["NCCL_MNNVL_ENABLE"] == "1"
    assert "IMEX" in text
    assert s["NCCL_NVLS_ENABLE"] == "1"
    assert s["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1"  # not the BlueField-3 ports
    assert s["NCCL_CROSS_NIC"] == "0"


def test_large_fabric_raises_the_ib_timeout():
    s = conf("frontier-3tier-100k", "b200")
    assert s["NCCL_IB_TIMEOUT"] == "22"
    assert s["NCCL_IB_QPS_PER_CONNECTION"] == "4"


# --- bare metal: RoCE --------------------------------------------------------------------------------

def test_roce_h200_traffic_class_and_gid_auto_selection():
    text = render(shipped("hgx-h200-roce-1024"))["nccl/hgx.conf"]
    s = settings(text)
    assert s["NCCL_IB_TC"] == "106"  # the fabric's traffic_class
    assert "DSCP 26" in text
    assert "NCCL_IB_GID_INDEX" not in s  # NCCL 2.21.5 picks the RoCEv2 GID itself
    assert s["NCCL_CROSS_NIC"] == "0"
    assert int(s["NCCL_IB_QPS_PER_CONNECTION"]) > 1
    assert s["NCCL_IB_HCA"].startswith("=mlx5_0:1,")
    assert "NCCL_IB_ROCE_VERSION_NUM" not in s


def test_roce_traffic_class_follows_the_blueprint():
    data = shipped("hgx-h200-roce-1024")
    data["fabrics"][0]["traffic_class"] = 104
    text = render(data)["nccl/hgx.conf"]
    assert settings(text)["NCCL_IB_TC"] == "104" and "DSCP 26" in text and "ECN bits 0" in text


@pytest.mark.parametrize("version", [None, "2.19.3"])
def test_roce_gid_index_on_old_or_unknown_nccl(version):
    data = shipped("hgx-h200-roce-1024")
    if version is None:
        del data["software"]["nccl"]
    else:
        data["software"]["nccl"] = version
    assert conf(data, "hgx")["NCCL_IB_GID_INDEX"] == "3"


# --- no compute fabric ---------------------------------------------------------------------------------

def test_gpu_node_type_without_compute_fabric_uses_sockets():
    data = shipped("lab-2node")
    data["fabrics"] = [f for f in data["fabrics"] if f["name"] != "ib"]
    s = conf(data, "hgx")
    assert s["NCCL_IB_DISABLE"] == "1"
    assert "NCCL_IB_HCA" not in s and "NCCL_CROSS_NIC" not in s
    assert s["NCCL_NVLS_ENABLE"] == "1"  # NVLink inside the node still matters


def test_overrides_replace_the_assumed_names():
    data = shipped("lab-2node")
    data["node_types"]["hgx"]["nccl"] = {"ib_hca": ["mlx5_2", "mlx5_9"], "socket_ifname": "=eno1"}
    s = settings(nccl.render(plan_of(data))["nccl/hgx.conf"])
    assert s["NCCL_IB_HCA"] == "=mlx5_2:1,mlx5_9:1" and s["NCCL_SOCKET_IFNAME"] == "=eno1"


# --- cloud ---------------------------------------------------------------------------------------------

def test_aws_p5_efa_has_no_fi_or_protocol_constants():
    text = render(shipped("aws-p5"))["nccl/p5.conf"]
    s = settings(text)
    assert s == {"NCCL_SOCKET_IFNAME": "^lo,docker"}
    assert not any(k.startswith("FI_") for k in s)
    assert "NCCL_PROTO" not in s and "NCCL_ALGO" not in s
    assert "aws-ofi-nccl" in text


def test_gcp_a3_mega_sources_the_tcpxo_profile_and_copies_no_constants():
    files = render(shipped("gcp-a3-mega"))
    assert sorted(files) == ["nccl/a3mega.conf", "nccl/a3mega.env.sh"]
    assert settings(files["nccl/a3mega.conf"]) == {}
    assert "a3mega.env.sh" in files["nccl/a3mega.conf"]
    env = files["nccl/a3mega.env.sh"]
    assert "source /var/lib/tcpxo/lib64/nccl-env-profile.sh" in env
    exports = dict(re.findall(r"^export (\w+)=(.*)$", env, re.MULTILINE))
    assert set(exports) == {"NCCL_FASTRAK_CTRL_DEV", "NCCL_FASTRAK_IFNAME", "NCCL_SOCKET_IFNAME",
                            "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "LD_LIBRARY_PATH"}
    assert len(exports["NCCL_FASTRAK_IFNAME"].split(",")) == 8
    for constant in ("NCCL_BUFFSIZE", "NCCL_PROTO", "NCCL_ALGO", "NCCL_MIN_NCHANNELS", "NCCL_NET_GDR_LEVEL",
                     "NCCL_CROSS_NIC", "NCCL_NVLS_ENABLE"):
        assert not re.search(rf"^\s*(export )?{constant}=", env, re.MULTILINE), constant


@pytest.mark.parametrize("instance", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_gcp_rdma_sources_the_gib_profile(instance):
    data = shipped("gcp-a3-mega")
    data["node_types"]["a3mega"]["instance"] = instance
    env = render(data)["nccl/a3mega.env.sh"]
    assert 'source "$_gib/scripts/set_nccl_env.sh"' in env and "/usr/local/gib" in env
    assert set(re.findall(r"^\s*export (\w+)=", env, re.MULTILINE)) == {"LD_LIBRARY_PATH", "NCCL_NET", "NCCL_SOCKET_IFNAME"}


def test_gcp_a3_high_uses_the_tcpxo_profile_with_four_nics():
    data = shipped("gcp-a3-mega")
    data["node_types"]["a3mega"]["instance"] = "a3-highgpu-8g"
    env = render(data)["nccl/a3mega.env.sh"]
    assert "source /var/lib/tcpxo/lib64/nccl-env-profile.sh" in env
    assert "enp6s0f0,enp12s0f0,enp134s0f0,enp140s0f0" in env  # fallback when PCI detection finds fewer


@pytest.mark.parametrize("instance", ["a3-megagpu-8g", "a3-highgpu-8g", "a3-ultragpu-8g"])
def test_gcp_env_file_is_valid_bash_and_sets_interfaces_without_the_profile(instance, tmp_path):
    require_tool("bash")
    data = shipped("gcp-a3-mega")
    data["node_types"]["a3mega"]["instance"] = instance
    env = tmp_path / "env.sh"
    env.write_text(render(data)["nccl/a3mega.env.sh"])
    assert subprocess.run(["bash", "-n", str(env)], check=False, capture_output=True).returncode == 0
    r = subprocess.run(["bash", "-c", f'set -u; source "{env}"; echo "$NCCL_SOCKET_IFNAME"'],
                       check=False, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout.strip()
    assert "not found" in r.stderr  # no vendor profile on this machine: said loudly, not silently


def test_azure_nd_v5_keeps_the_image_values():
    s = conf("azure-nd-h100-v5", "ndv5")
    assert s == {
        "NCCL_IB_PCI_RELAXED_ORDERING": "1",
        "NCCL_TOPO_FILE": "/opt/microsoft/ndv5/topo.xml",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
        "NCCL_IB_HCA": "^=mlx5_an0",
        "NCCL_SOCKET_IFNAME": "=eth0",
    }


def test_azure_nd_h200_v5_uses_the_same_image_customization():
    data = shipped("azure-nd-h100-v5")
    data["node_types"]["ndv5"]["instance"] = "Standard_ND96isr_H200_v5"
    assert conf(data, "ndv5")["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv5/topo.xml"


def test_every_accelerator_network_of_the_catalog_has_a_profile():
    """cloud.PROFILES has no dead entry, and only plain Ethernet networks fall back to TCP sockets."""
    networks = {(i.provider, i.network.fabric) for i in load_shipped_catalog().instances.values()}
    assert set(cloud.PROFILES) <= networks
    assert networks - set(cloud.PROFILES) == {(p, "ethernet") for p in ("aws", "azure", "gcp")}


def test_the_registered_profile_decides_the_files(monkeypatch):
    data = shipped("aws-p5")
    assert nccl.group_files(plan_of(data)) == {"gpu": ("nccl/p5.conf",)}
    profile = CloudProfile(lambda plan, nt: [Setting((f"test profile for {nt.name}",), "NCCL_TEST", "1")],
                           lambda nt: [ShellStep(("test step",), ("export NCCL_TEST_ENV=1",))], nvlink=False)
    monkeypatch.setitem(cloud.PROFILES, ("aws", "efa"), profile)
    files = render(data)
    assert settings(files["nccl/p5.conf"]) == {"NCCL_TEST": "1"}
    assert "# test profile for p5\n" in files["nccl/p5.conf"] and "NVLS" not in files["nccl/p5.conf"]
    assert "# test step\nexport NCCL_TEST_ENV=1\n" in files["nccl/p5.env.sh"]
    assert nccl.group_files(plan_of(data)) == {"gpu": ("nccl/p5.conf", "nccl/p5.env.sh")}


# --- every file -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=sorted(shipped_blueprints()))
def rendered(request) -> tuple[str, dict[str, str]]:
    return request.param, render(shipped(request.param))


def test_every_line_is_a_commented_key_value(rendered):
    name, files = rendered
    for path, text in files.items():
        lines = text.splitlines()
        assert lines[0] == f"# generated by clusterctl from blueprint '{name}'; do not edit", path
        assert text.endswith("\n") and "\n\n" not in text, path
        if not path.endswith(".conf"):
            continue
        for i, line in enumerate(lines):
            if line.startswith("#"):
                assert len(line) <= 100, (path, line)
                # NCCL versions without the '#' check would read a comment holding '=' as a variable
                assert "=" not in line, (path, line)
                continue
            assert KEY_VALUE.match(line), (path, line)
            assert lines[i - 1].startswith("#"), f"{path}: {line} has no comment above it"


def test_no_debugging_variables_in_any_file(rendered):
    _, files = rendered
    for path, text in files.items():
        if path.endswith(".conf"):
            s = settings(text)
            assert not {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS"} & set(s), path


def test_group_files_name_what_render_writes(rendered):
    name, files = rendered
    listed = [p for paths in nccl.group_files(plan_of(shipped(name))).values() for p in paths]
    assert set(listed) == set(files)


def test_node_type_on_two_compute_fabrics_takes_the_conservative_settings():
    data = shipped("lab-2node")
    data["node_groups"].insert(1, {"name": "gpu2", "type": "hgx", "count": 2, "hostnames": "gpu[03-04]",
                                   "racks": "lab01"})
    data["fabrics"][0]["rail_optimized"] = True
    data["fabrics"][0]["tiers"] = 2
    data["fabrics"].insert(1, {"name": "ib2", "kind": "infiniband", "tiers": 1, "switch": "qm9700",
                               "switch_racks": "lab01", "attach": [{"group": "gpu2", "nic_role": "compute"}]})
    text = render(data)["nccl/hgx.conf"]
    s = settings(text)
    assert s["NCCL_CROSS_NIC"] == "1"  # one of the two fabrics is not rail-optimized
    assert s["NCCL_IB_QPS_PER_CONNECTION"] == "2"  # the other has two tiers
    assert "+1 more" in text
