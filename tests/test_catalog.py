"""The shipped hardware catalog: it loads, every figure is sourced, and the cross-references hold."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel

from clusterctl.catalog import SECTIONS, load_shipped_catalog
from clusterctl.catalog.models import CloudInstance

CATALOG = load_shipped_catalog()
ENTRIES = [(section, name, entry) for section in SECTIONS for name, entry in CATALOG.section(section).items()]
IDS = [f"{section}:{name}" for section, name, _ in ENTRIES]
EVIDENCE_TAG = re.compile(r"\[(P|Q|S|D)\]")

# other code refers to these names; renaming one is a breaking change
EXPECTED = {
    "accelerators": {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "gb200", "b300", "gb300",
                     "mi300x"},
    "nics": {"cx6-hdr-200g", "cx7-400g", "cx7-2x200g", "cx8-800g", "bf3-2x200g", "bf3-400g", "eth-1g-bmc",
             "eth-25g", "eth-100g"},
    "switches": {"qm9700", "qm8700", "q3400-ra", "sn5600", "sn2201", "tomahawk5-64x800"},
    "servers": {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "hgx-h100-8gpu", "hgx-h200-8gpu", "hgx-b200-8gpu",
                "gb200-nvl72-tray", "mi300x-8gpu", "cpu-1u", "cpu-2u", "storage-2u", "hgx-b200-8gpu-liquid",
                "hgx-b300-8gpu", "gb300-nvl72-tray"},
    "rack_systems": {"gb200-nvl72", "gb300-nvl72"},
    "instances": {"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "p4de.24xlarge", "a3-highgpu-8g",
                  "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g", "Standard_ND96isr_H100_v5",
                  "Standard_ND96isr_H200_v5"},
}


def numeric_paths(value, path=()):
    """Dotted paths of every number written in an entry: nested models and list items included
    (list items share their list's path). Only fields set in the data count; untouched defaults do not."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path
    elif isinstance(value, BaseModel):
        for name in sorted(value.model_fields_set):
            if not path and name == "sources":
                continue
            yield from numeric_paths(getattr(value, name), path + (name,))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from numeric_paths(item, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from numeric_paths(item, path + (str(key),))


def covered(path: tuple[str, ...], sources: dict[str, str]) -> bool:
    """`cpu.cores_per_socket` is covered by that key or by `cpu`."""
    return any(".".join(path[:k]) in sources for k in range(1, len(path) + 1))


def test_shipped_catalog_loads_with_every_expected_entry():
    catalog = load_shipped_catalog()
    for section, names in EXPECTED.items():
        missing = names - set(catalog.section(section))
        assert not missing, f"{section}: missing {sorted(missing)}"
    for (section, name), origin in catalog.origin.items():
        assert origin.startswith("shipped:"), (section, name, origin)


@pytest.mark.parametrize(("section", "name", "entry"), ENTRIES, ids=IDS)
def test_every_number_has_a_source(section, name, entry):
    paths = sorted(set(numeric_paths(entry)))
    assert paths, f"{section}.{name} has no numeric figures?"
    unsourced = [".".join(p) for p in paths if not covered(p, entry.sources)]
    assert not unsourced, f"{section}.{name}: no sources line for {unsourced}"


@pytest.mark.parametrize(("section", "name", "entry"), [e for e in ENTRIES if isinstance(e[2], CloudInstance)],
                         ids=[i for i, e in zip(IDS, ENTRIES) if isinstance(e[2], CloudInstance)])
def test_instance_regions_are_sourced(section, name, entry):
    assert entry.regions, f"{name}: list at least one documented region"
    assert "regions" in entry.sources, f"{name}: regions need a sources line"
    assert len(set(entry.regions)) == len(entry.regions), f"{name}: duplicate regions"


@pytest.mark.parametrize(("section", "name", "entry"), ENTRIES, ids=IDS)
def test_sources_carry_an_evidence_tag_and_name_real_fields(section, name, entry):
    fields = set(type(entry).model_fields)
    for key, text in entry.sources.items():
        assert EVIDENCE_TAG.search(text), f"{section}.{name}.sources.{key}: no [P]/[Q]/[S]/[D] tag"
        assert key.split(".")[0] in fields, f"{section}.{name}.sources.{key}: not a field of {type(entry).__name__}"


def test_server_references_resolve():
    for name, server in CATALOG.servers.items():
        if server.gpus is not None:
            assert server.gpus.model in CATALOG.accelerators, f"{name}: unknown GPU {server.gpus.model}"
        for slot in server.nics:
            assert slot.model in CATALOG.nics, f"{name}: unknown NIC {slot.model}"
        if server.rack_system is not None:
            assert server.rack_system in CATALOG.rack_systems, f"{name}: unknown rack system {server.rack_system}"


def test_every_server_has_a_bmc_port_and_an_inband_nic():
    for name, server in CATALOG.servers.items():
        roles = {slot.role for slot in server.nics}
        bmc = [slot for slot in server.nics if slot.role == "bmc"]
        assert [(s.model, s.count) for s in bmc] == [("eth-1g-bmc", 1)], f"{name}: needs exactly one eth-1g-bmc"
        assert "inband" in roles, f"{name}: needs an in-band management NIC"


def test_gpu_servers_carry_one_compute_nic_per_gpu():
    for name, server in CATALOG.servers.items():
        if server.gpus is None:
            continue
        compute = sum(s.count for s in server.nics if s.role == "compute")
        assert compute == server.gpus.count, f"{name}: {compute} compute NICs for {server.gpus.count} GPUs"


def test_rack_system_references_resolve_both_ways():
    for name, rack in CATALOG.rack_systems.items():
        assert rack.compute_tray in CATALOG.servers, f"{name}: unknown compute tray {rack.compute_tray}"
        assert CATALOG.servers[rack.compute_tray].rack_system == name, f"{rack.compute_tray} must point back to {name}"


def test_instance_gpu_models_resolve():
    for name, instance in CATALOG.instances.items():
        if instance.gpus is None:  # CPU instance types (head, login, controller VMs)
            continue
        assert instance.gpus.model in CATALOG.accelerators, f"{name}: unknown GPU {instance.gpus.model}"


def test_gb200_nvl72_is_one_72_gpu_nvlink_domain():
    rack = CATALOG.rack_systems["gb200-nvl72"]
    tray = CATALOG.servers[rack.compute_tray]
    assert rack.compute_trays == 18
    assert tray.gpus is not None and tray.gpus.model == "gb200" and tray.gpus.count == 4
    assert rack.compute_trays * tray.gpus.count == 72 == tray.nvlink_domain_gpus
    assert CATALOG.accelerators["gb200"].scaleup_domain_max == 72
    assert tray.cooling == "liquid" and tray.liquid_fraction > 0.5


def test_hgx_and_dgx_domains_are_eight_gpus():
    for name, server in CATALOG.servers.items():
        if server.gpus is not None and server.rack_system is None:
            assert server.nvlink_domain_gpus == server.gpus.count == 8, name


def test_switch_port_modes_start_at_the_native_speed():
    for name, switch in CATALOG.switches.items():
        speeds = [mode.speed_gbps for mode in switch.port_modes]
        assert speeds[0] == max(speeds), f"{name}: first port mode must be the native (fastest) speed"


def test_data_sanity_h100_dense_bf16_is_989():
    assert CATALOG.accelerators["h100-sxm"].bf16_dense_tflops == 989


# ---------------------------------------------------------------- issue 14: breakouts and new servers

def _lab_with(tmp_path, **changes):
    from tests.helpers import shipped, to_yaml
    data = shipped("lab-2node")
    for key, value in changes.items():
        data[key] = value(data[key]) if callable(value) else value
    path = tmp_path / "bp.yaml"
    path.write_text(to_yaml(data))
    return path


def test_sn5600_leaf_takes_25g_and_100g_hosts_through_breakouts(tmp_path):
    """Through the CLI: 25G head-node NICs and 100G links on an SN5600 validate (Spectrum-4 splits its OSFP
    cages down to 10G), a 1G BMC port on it is still refused with the switch's real speed list."""
    from tests.helpers import cli
    fabrics = lambda fs: fs + [  # noqa: E731
        {"name": "fe", "kind": "ethernet", "tiers": 1, "switch": "sn5600", "switch_racks": "lab01",
         "attach": [{"group": "head", "nic_role": "inband"}, {"group": "gpu", "nic_role": "inband"}]},
        {"name": "stor", "kind": "roce", "tiers": 1, "rail_optimized": False, "switch": "sn5600",
         "link_gbps": 100, "switch_racks": "lab01", "attach": [{"group": "gpu", "nic_role": "storage"}]}]
    r = cli("validate", str(_lab_with(tmp_path, fabrics=fabrics)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FABRIC003" not in r.stdout + r.stderr
    bmc = lambda fs: fs + [{"name": "oob2", "kind": "ethernet", "tiers": 1, "switch": "sn5600",  # noqa: E731
                            "switch_racks": "lab01", "attach": [{"group": "head", "nic_role": "bmc"}]}]
    r = cli("validate", str(_lab_with(tmp_path, fabrics=bmc)))
    assert r.returncode != 0
    assert "FABRIC003" in r.stdout + r.stderr and "800G/400G/200G/100G/50G/25G/10G" in r.stdout + r.stderr


def test_liquid_cooled_hgx_b200_needs_a_liquid_loop(tmp_path):
    """The new liquid-cooled HGX B200 is a catalog server: in an air-only rack it is refused (COOL005), with a
    CDU and rack liquid capacity it validates."""
    from tests.helpers import cli
    types = lambda t: {**t, "hgx": {"server": "hgx-b200-8gpu-liquid"}}  # noqa: E731
    r = cli("validate", str(_lab_with(tmp_path, node_types=types)))
    assert r.returncode != 0 and "COOL005" in r.stdout + r.stderr
    profiles = lambda p: {k: {**v, "liquid_kw": 30, "cdu": "cdu-1"} for k, v in p.items()}  # noqa: E731
    cooling = {"cdus": [{"name": "cdu-1", "capacity_kw": 100, "flow_lpm": 200, "supply_c": 35, "delta_t_c": 10,
                         "coolant": "pg25"}]}
    software = lambda sw: {**sw, "driver": "570", "cuda": "12.8"}  # noqa: E731  (Blackwell needs R570)
    r = cli("validate", str(_lab_with(tmp_path, node_types=types, rack_profiles=profiles, cooling=cooling,
                                      software=software)))
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- issue 14: Blackwell Ultra (B300, GB300 NVL72)

def _b300_lab(tmp_path):
    """lab-2node with its two HGX H100 replaced by HGX B300 (8 x ConnectX-8 800G): the compute switch becomes a
    Quantum-X800 (XDR), the software the R580 / CUDA 13.0 pair the MLPerf v5.1 B300 systems ran."""
    from tests.helpers import shipped, to_yaml
    data = shipped("lab-2node")
    data["node_types"]["hgx"] = {"server": "hgx-b300-8gpu",  # an OEM server: the blueprint names its ports
                                 "interfaces": {"compute": data["node_types"]["hgx"]["interfaces"]["compute"]}}
    data["fabrics"][0]["switch"] = "q3400-ra"
    data["software"] = {**data["software"], "driver": "580", "cuda": "13.0"}
    path = tmp_path / "b300.yaml"
    path.write_text(to_yaml(data))
    return path


def _gb300_su(tmp_path):
    """The shipped eight-rack GB200 NVL72 SU rebuilt on GB300 NVL72: XDR compute fabric, racks sized for the
    RA's 142 kW, network racks for the Quantum-X800 switches."""
    from tests.helpers import shipped, to_yaml
    data = shipped("gb200-nvl72-8rack")
    data["name"] = "gb300-nvl72-8rack"
    data["site"].update(it_power_kw=1800, air_cooling_kw=600)
    data["rack_profiles"]["nvl72"].update(system="gb300-nvl72", power_kw=150, feed_kw=75, liquid_kw=120)
    data["rack_profiles"]["net"].update(power_kw=60, feed_kw=75, air_kw=60)
    data["node_types"]["tray"] = {"server": "gb300-nvl72-tray", "features": ["gb300", "nvl72"], "interfaces": {
        **data["node_types"]["tray"]["interfaces"],  # no GB300 port table was read: the blueprint names them
        "compute": [{"rdma": f"mlx5_{k}"} for k in (0, 1, 4, 5)]}}
    data["node_groups"][0]["name"] = "gb300"
    data["fabrics"][0]["switch"] = "q3400-ra"
    for fabric in data["fabrics"]:
        for attach in fabric["attach"]:
            attach["group"] = "gb300" if attach["group"] == "gb200" else attach["group"]
    data["slurm"]["partitions"][0]["groups"] = ["gb300"]
    data["software"] = {**data["software"], "driver": "580", "cuda": "13.0", "nccl": "2.28.3"}
    path = tmp_path / "gb300.yaml"
    path.write_text(to_yaml(data))
    return path


def _validate_render_report(tmp_path, path, gpus: int, model: str):
    import json

    from tests.helpers import cli
    r = cli("validate", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 error(s), 0 warning(s)" in r.stdout + r.stderr
    r = cli("render", str(path), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "out").is_dir() and any((tmp_path / "out").rglob("*"))
    r = cli("report", str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    capacity = json.loads(r.stdout)["capacity"]
    acc = CATALOG.accelerators[model]
    assert capacity["gpus"] == gpus
    assert capacity["peak_bf16"]["value"] == pytest.approx(gpus * acc.bf16_dense_tflops / 1000)
    assert capacity["peak_bf16"]["catalog"] == f"accelerators.{model}.bf16_dense_tflops"
    assert capacity["peak_fp8"]["value"] == pytest.approx(gpus * acc.fp8_dense_tflops / 1000)


def test_blackwell_ultra_dense_figures_are_half_nvidias_sparse_tables():
    """NVIDIA publishes sparse figures: HGX B300 36 PF BF16 / 72 PF FP8 per 8 GPUs, GB300 NVL72 720 PF FP8 per
    72 GPUs (sources in accelerators.yaml). The catalog holds the dense halves."""
    b300, gb300 = CATALOG.accelerators["b300"], CATALOG.accelerators["gb300"]
    assert (b300.bf16_dense_tflops, b300.fp8_dense_tflops) == (36_000 / 8 / 2, 72_000 / 8 / 2)
    assert gb300.fp8_dense_tflops == 720_000 / 72 / 2 and gb300.bf16_dense_tflops == gb300.fp8_dense_tflops / 2
    assert b300.scaleup_domain_max == 8 and gb300.scaleup_domain_max == 72


def test_gb300_nvl72_is_one_72_gpu_nvlink_domain_with_cx8_trays():
    rack = CATALOG.rack_systems["gb300-nvl72"]
    tray = CATALOG.servers[rack.compute_tray]
    assert rack.compute_trays * tray.gpus.count == 72 and tray.gpus.model == "gb300"
    assert tray.nvlink_domain_gpus == 72 and tray.cooling == "liquid"
    assert [(n.model, n.count) for n in tray.nics if n.role == "compute"] == [("cx8-800g", 4)]
    assert rack.power_kw == 142  # NVL72 Enterprise RA: 'Full rack requiring up to 142 kW'


def test_hgx_b300_validates_renders_and_reports_its_peak(tmp_path):
    """Through the CLI: a two-node HGX B300 lab validates clean, renders, and its report's peak is 16 x the
    catalog's dense B300 figures (36 PFLOP/s BF16, 72 PFLOP/s FP8)."""
    server = CATALOG.servers["hgx-b300-8gpu"]
    assert server.nvme is not None and server.nvme.count * server.nvme.size_tb > 60  # local NVMe (8 x 7.68 TB)
    _validate_render_report(tmp_path, _b300_lab(tmp_path), 16, "b300")


def test_gb300_nvl72_su_validates_renders_and_reports_its_peak(tmp_path):
    """Through the CLI: eight GB300 NVL72 racks (576 GPUs) validate clean, render, and report 576 x the
    catalog's dense GB300 figures (1,440 PFLOP/s BF16, 2,880 PFLOP/s FP8)."""
    _validate_render_report(tmp_path, _gb300_su(tmp_path), 576, "gb300")
