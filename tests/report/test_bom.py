"""Bill of materials: switch, cable and transceiver counts against the plan and the stated rules."""

import json
from pathlib import Path

import pytest
import yaml

from clusterctl.catalog.optics import OPTICS_FILE
from clusterctl.report.bom import build
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, plan_of, shipped

SHIPPED = sorted(p.stem for p in Path(BLUEPRINTS).glob("*.yaml"))
TWIN = "800G twin-port OSFP (2x400G) SR8/DR8"
DGX_TWIN = "800G twin-port OSFP flat-top (2x400G) (DGX end)"


def section(data: dict, **kw):
    plan = plan_of(data)
    return plan, build(ReportContext(plan=plan, **kw))


def rows(sec, fabric: str) -> list[dict]:
    return [r for r in sec.data["transceivers"]["by_fabric"] if r["fabric"] == fabric]


@pytest.mark.parametrize("name", SHIPPED)
def test_switch_counts_equal_the_plans_tiers(name):
    plan, sec = section(shipped(name))
    sw = sec.data["switches"]
    assert [(s["fabric"], s["role"], s["model"], s["count"]) for s in sw["by_fabric"]] == [
        (f.name, t.role, t.model, t.count) for f in plan.fabrics for t in f.tiers]
    assert sw["total"] == sum(f.switch_count for f in plan.fabrics)
    assert sum(m["count"] for m in sw["by_model"]) == sw["total"]


def test_superpod_1su_compute_fabric_matches_the_ra():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    ib = [(s["role"], s["model"], s["count"]) for s in sec.data["switches"]["by_fabric"] if s["fabric"] == "ib"]
    assert ib == [("leaf", "qm9700", 8), ("spine", "qm9700", 4)]  # RA Table 4, 1 SU


def test_superpod_1su_compute_transceivers_follow_the_rule():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    ib = rows(sec, "ib")
    node_links = 32 * 8  # 256 x 400G
    up_links = 8 * 32  # 256 x 400G leaf-spine
    # switch ends: twin-port QM9700 cages, 2 links per plug; DGX ends: 4 OSFP cages for 8 NICs
    got = {(r["link"], r["end"]): (r["type"], r["count"]) for r in ib}
    assert got == {
        ("node-leaf", "leaf (qm9700)"): (TWIN, node_links // 2),
        ("node-leaf", "node (dgx-h100)"): (DGX_TWIN, 32 * 4),
        ("leaf-spine", "leaf (qm9700)"): (TWIN, up_links // 2),
        ("leaf-spine", "spine (qm9700)"): (TWIN, up_links // 2),
    }
    assert sum(r["count"] for r in ib) == 512
    cables = {c["link"]: c["cables"] for c in sec.data["cables"]["by_fabric"] if c["fabric"] == "ib"}
    assert cables == {"node-leaf": 256, "leaf-spine": 256}


def test_superpod_1su_storage_and_management_fabrics():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    stor = {(r["link"], r["end"]): r for r in rows(sec, "stor")}
    # 80 x 200G links (64 DGX ports + 16 appliance ports): QM9700 twin-port cage x 1:2 split = 4 per plug
    assert stor[("node-leaf", "leaf (qm9700)")]["links_per_transceiver"] == 4
    assert stor[("node-leaf", "leaf (qm9700)")]["count"] == 80 // 4
    assert stor[("node-leaf", "node (dgx-h100)")]["count"] == 32 * 2
    assert stor[("node-leaf", "node (dgx-h100)")]["type"] == "400G QSFP112 SR4 (NIC)"
    assert stor[("leaf-spine", "spine (qm9700)")]["count"] == 40 // 2
    assert sec.data["transceivers"]["extra_endpoints"] == [{"fabric": "stor", "endpoints": 16}]
    # OOB: 1G BMC links are copper (no transceivers); only the 20 x 100G leaf uplinks (10 racks with hosts x 2)
    # take plugs
    oob = rows(sec, "oob")
    assert {r["link"] for r in oob} == {"leaf-spine"}
    assert [r["count"] for r in oob] == [20, 20]
    copper = [c for c in sec.data["cables"]["by_fabric"] if c["fabric"] == "oob" and c["link"] == "node-leaf"]
    assert copper[0]["type"] == "1G RJ45 copper" and copper[0]["cables"] == 36


def test_breakout_at_the_switch_end():
    plan, sec = section(shipped("frontier-3tier-100k"))
    roce = {(r["link"], r["end"]): r for r in rows(sec, "roce")}
    # SN5600 800G cages split in 2 x 400G: one plug per two node links; the HGX NICs take one each
    assert roce[("node-leaf", "leaf (sn5600)")]["count"] == 106_496 // 2
    assert roce[("node-leaf", "node (hgx-b200-8gpu)")]["count"] == 106_496
    assert roce[("leaf-spine", "leaf (sn5600)")]["count"] == 1664 * 32
    assert roce[("spine-core", "core (sn5600)")]["count"] == plan.fabrics[0].links[2].count


def test_nics_gpus_servers_racks_and_feeds():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    d = sec.data
    nics = {(n["model"], n["role"]): (n["cards"], n["ports"]) for n in d["nics"]}
    assert nics[("cx7-400g", "compute")] == (256, 256)
    assert nics[("cx7-2x200g", "storage")] == (32, 64)  # dual-port cards
    assert d["gpus"] == [{"model": "h100-sxm", "count": 256}]
    assert d["servers"] == [{"model": "dgx-h100", "count": 32}, {"model": "cpu-2u", "count": 4}]
    assert [(r["profile"], r["count"]) for r in d["racks"]] == [("dgx", 8), ("ib", 2), ("mgmt", 2)]
    assert d["pdus"]["total_feeds"] == 8 * 3 + 2 * 2 + 2 * 2


def test_rack_systems_and_cdus():
    plan, sec = section(shipped("gb200-nvl72-8rack"))
    d = sec.data
    assert d["rack_systems"] == [{"system": "gb200-nvl72", "racks": 8, "compute_trays": 144,
                                  "nvlink_switch_trays": 72}]
    cdus = {c["name"]: c for c in d["cdus"]}
    # three CDUs in parallel on the row's loop: each serves the eight racks and carries a third of their heat
    assert [cdus[c]["racks"] for c in ("cdu-a", "cdu-b", "cdu-c")] == [8, 8, 8]
    assert cdus["cdu-a"]["liquid_load_kw"] == pytest.approx(8 * plan.racks[0].liquid_heat_kw / 3)


def test_cloud_bom_lists_instances():
    _, sec = section(shipped("aws-p5"))
    d = sec.data
    assert d["instances"] == [{"type": "p5.48xlarge", "provider": "aws", "count": 16},
                              {"type": "c7i.8xlarge", "provider": "aws", "count": 1}]
    assert d["switches"]["total"] == 0 and d["transceivers"]["total"] == 0 and d["servers"] == []
    assert "Cloud instances are listed by type" in sec.markdown


def test_every_optics_figure_has_a_source():
    data = yaml.safe_load(OPTICS_FILE.read_text())
    for section_name in ("switches", "nics", "servers"):
        for name, entry in data[section_name].items():
            figures = [k for k in entry if k not in ("sources", "role", "price_item")]
            assert set(figures) <= set(entry["sources"]), f"{section_name}.{name}"
            assert all(v.startswith(("[P]", "[Q]", "[S]", "[D]")) for v in entry["sources"].values())
    assert set(data["rules"]) - {"sources"} <= set(data["rules"]["sources"])


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_blueprint_builds(name):
    _, sec = section(shipped(name))
    assert sec.key == "bom" and sec.markdown.endswith("\n")
    assert json.loads(json.dumps(sec.data)) == sec.data
