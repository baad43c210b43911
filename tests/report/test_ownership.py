"""Cost of ownership: hand-checked arithmetic on a small design, unsourced prices left out and named, the shipped
price catalog's entries sourced, and bad price sheets refused where they are wrong (exit 2)."""

from __future__ import annotations

import datetime
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from clusterctl.catalog import load_shipped_catalog
from clusterctl.catalog.hardware_prices import check, shipped_hardware_prices
from tests.helpers import REPO, cli

DATA = REPO / "tests" / "data" / "tco"
TAG = re.compile(r"^\[(P|Q|S|D)\] ")


def _report(bp: Path) -> dict:
    r = cli("report", str(bp), "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ownership"]


def _copy(tmp_path: Path, edit=None) -> Path:
    shutil.copy(DATA / "bp.yaml", tmp_path / "bp.yaml")
    sheet = yaml.safe_load((DATA / "prices.yaml").read_text())
    if edit:
        edit(sheet)
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(sheet, sort_keys=False))
    return tmp_path / "bp.yaml"


def test_two_servers_one_switch_one_rack_by_hand():
    own = _report(DATA / "bp.yaml")
    # capital, each line count x price from the sheet:
    #   2 servers x 200,000 = 400,000; 1 QM9700 x 30,000;
    #   16 node links (2 x 8 ConnectX-7 400G): switch end 16 / 2 per twin-port plug = 8 x 1,000 = 8,000,
    #   node end 16 x 500 = 8,000; 16 fibres x 100 = 1,600; 1 rack x 2,000; 2 feeds x 1,000 = 2,000
    assert [(ln["item"], ln["count"], ln["usd"]) for ln in own["capital"]["lines"]] == [
        ("hgx-h100-8gpu", 2, 400_000), ("qm9700", 1, 30_000), ("osfp-2x400g", 8, 8_000),
        ("osfp-400g-flat", 16, 8_000), ("cable-fibre-400g", 16, 1_600), ("racks", 1, 2_000), ("pdu_feeds", 2, 2_000)]
    assert own["capital"]["total"] == {"usd": 451_600, "low": 451_600, "high": 451_600}
    assert own["unpriced"] == [] and own["complete"] is True
    # IT power: 2 x 10.2 kW (catalog hgx-h100-8gpu) + 1.72 kW (qm9700) = 22.12 kW; x PUE 1.25 = 27.65 kW
    op = own["operating_per_year"]
    assert op["energy"]["kwh"] == pytest.approx(27.65 * 8760)            # 242,214 kWh
    assert op["energy"]["usd"] == pytest.approx(24_221.4)                # x $0.10
    assert op["colocation"]["usd"] == pytest.approx(22.12 * 100 * 12)    # 26,544
    assert op["support"]["usd"] == pytest.approx(45_160)                 # 10 % of 451,600
    assert own["depreciation_per_year"]["usd"] == pytest.approx(90_320)  # 451,600 / 5 years
    assert own["annual"]["usd"] == pytest.approx(186_245.4)
    # 16 GPUs x 8,760 h = 140,160 GPU-hours
    assert own["gpu_hours_per_year"] == 140_160
    assert own["usd_per_gpu_hour"]["usd"] == pytest.approx(1.329, abs=5e-4)


def test_an_unpriced_item_is_named_and_left_out_of_the_totals(tmp_path):
    def drop(sheet):
        del sheet["racks"], sheet["cables"]

    own = _report(_copy(tmp_path, drop))
    assert [(u["item"], u["count"]) for u in own["unpriced"]] == [("cable-fibre-400g", 16), ("racks", 1)]
    assert own["complete"] is False
    assert own["capital"]["total"]["usd"] == 451_600 - 1_600 - 2_000
    md = cli("report", str(tmp_path / "bp.yaml")).stdout
    assert "**Priced items only:**" in md and "rack enclosure × 1 (`racks`)" in md
    assert "at least $" in md


def test_a_price_range_carries_to_the_totals(tmp_path):
    def ranged(sheet):
        sheet["servers"]["hgx-h100-8gpu"] = {"low": 180_000, "high": 240_000, "as_of": datetime.date(2026, 11, 2),
                                             "source": "quote-1"}

    own = _report(_copy(tmp_path, ranged))
    line = own["capital"]["lines"][0]
    assert (line["usd_each"], line["low"], line["high"]) == (210_000, 360_000, 480_000)  # midpoint; 2 x low, 2 x high
    assert own["capital"]["total"]["low"] == 451_600 - 40_000
    assert own["capital"]["total"]["high"] == 451_600 + 80_000


def test_owned_facility_is_capital_written_off_over_its_own_life(tmp_path):
    bp = _copy(tmp_path, lambda s: s.update(facility_kw={"usd": 10_000, "as_of": datetime.date(2026, 11, 2), "source": "quote-1"}))
    text = bp.read_text().replace("cost: {price_sheet: prices.yaml}",
                                  "cost: {price_sheet: prices.yaml, facility: owned, facility_life_years: 20}")
    bp.write_text(text)
    own = _report(bp)
    assert own["capital"]["facility"]["usd"] == pytest.approx(221_200)  # 22.12 kW x 10,000
    assert own["operating_per_year"]["colocation"] is None
    assert own["depreciation_per_year"]["usd"] == pytest.approx(90_320 + 11_060)  # + 221,200 / 20


def test_every_shipped_price_has_a_source_a_date_and_evidence():
    prices = shipped_hardware_prices()
    assert check(prices, load_shipped_catalog()) == []
    entries = prices.entries()
    assert len(entries) >= 10
    for path, p in entries:
        assert p.source in prices.sources, path
        assert TAG.match(prices.sources[p.source]), p.source
        assert p.as_of <= datetime.date.today(), path
    assert prices.not_priced, "what was searched and not found is listed"


BAD_SHEETS = [
    ("negative", lambda s: s["switches"]["qm9700"].update(usd=-5), "switches.qm9700.usd",
     "greater than or equal to 0"),
    ("nan", lambda s: s["servers"]["hgx-h100-8gpu"].update(usd=float("nan")), "servers.hgx-h100-8gpu.usd",
     "finite"),
    ("unknown item", lambda s: s["switches"].update({"qm9999": dict(s["switches"]["qm9700"])}), "switches.qm9999",
     "not in the catalog's switches"),
    ("currency", lambda s: s.update(currency="EUR"), "currency", "works in USD"),
    ("no evidence", lambda s: s["sources"].update({"quote-1": "vendor quotation"}), "sources.quote-1",
     "evidence tag"),
    ("future", lambda s: s["racks"].update(as_of=datetime.date(2999, 1, 1)), "racks.as_of", "in the future"),
    ("reversed range", lambda s: s["racks"].update(low=3000, high=1000, usd=None), "racks", "above high"),
]


@pytest.mark.parametrize("name, edit, where, words", BAD_SHEETS, ids=[b[0] for b in BAD_SHEETS])
def test_a_bad_price_sheet_is_refused_where_it_is_wrong(tmp_path, name, edit, where, words):
    def apply(sheet):
        edit(sheet)
        if name == "reversed range":
            del sheet["racks"]["usd"]

    bp = _copy(tmp_path, apply)
    sheet_lines = (tmp_path / "prices.yaml").read_text().splitlines()
    r = cli("report", str(bp))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert words in r.stderr, r.stderr
    m = re.search(r"prices\.yaml:(\d+):\d+", r.stderr)
    assert m, r.stderr
    key = where.split(".")[-1]
    assert key in sheet_lines[int(m.group(1)) - 1] or key in sheet_lines[int(m.group(1)) - 2], (
        sheet_lines[int(m.group(1)) - 1], r.stderr)
    assert "BP010" in r.stderr or "BP003" in r.stderr


def test_a_price_sheet_outside_the_blueprints_directory_is_refused(tmp_path):
    bp = _copy(tmp_path)
    bp.write_text(bp.read_text().replace("price_sheet: prices.yaml", "price_sheet: missing.yaml"))
    r = cli("report", str(bp))
    assert r.returncode == 2 and "missing.yaml does not exist" in r.stderr
    bp.write_text(bp.read_text().replace("price_sheet: missing.yaml", "price_sheet: ../prices.yaml"))
    r = cli("validate", str(bp))
    assert r.returncode == 2 and "cost.price_sheet" in r.stderr


def test_servers_priced_without_adapters_get_them_from_the_nic_prices(tmp_path):
    def no_nics(sheet):
        sheet["servers"]["hgx-h100-8gpu"]["nics_included"] = False
        sheet["nics"] = {"cx7-400g": {"usd": 1000, "as_of": datetime.date(2026, 11, 2), "source": "quote-1"}}

    own = _report(_copy(tmp_path, no_nics))
    adapters = [ln for ln in own["capital"]["lines"] if ln["category"] == "network adapters"]
    # catalog hgx-h100-8gpu: 8 single-port ConnectX-7 400G compute adapters per server, 2 servers
    assert [(ln["item"], ln["count"], ln["usd"]) for ln in adapters] == [("cx7-400g", 16, 16_000)]
    assert own["capital"]["total"]["usd"] == 451_600 + 16_000


def test_storage_is_priced_per_tb_and_per_gb_per_s_of_its_tier_kind(tmp_path):
    def storage(sheet):
        sheet["storage_tb"] = {"parallel": {"usd": 300, "as_of": datetime.date(2026, 11, 2), "source": "quote-1"}}
        sheet["storage_gb_per_s"] = {"parallel": {"usd": 2000, "as_of": datetime.date(2026, 11, 2),
                                                  "source": "quote-1"}}

    bp = _copy(tmp_path, storage)
    bp.write_text(bp.read_text() + "storage:\n  - {name: lustre, tier: parallel, filesystem: lustre, mount: /lustre, "
                  "capacity_tb: 100, read_gb_per_s: 20, write_gb_per_s: 10}\n")
    own = _report(bp)
    lines = [(ln["item"], ln["count"], ln["usd"]) for ln in own["capital"]["lines"] if ln["category"] == "storage"]
    assert lines == [("storage_tb.parallel", 100, 30_000), ("storage_gb_per_s.parallel", 10, 20_000)]


def test_a_gb200_rack_is_priced_as_one_system_and_its_trays_are_not_priced_again():
    own = _report(REPO / "blueprints" / "gb200-nvl72-8rack.yaml")
    lines = {ln["item"]: ln for ln in own["capital"]["lines"]}
    nvl72 = lines["gb200-nvl72"]
    # 8 racks at the analysts' $3.1M (Morgan Stanley) to $3.4M (Bernstein), midpoint $3.25M
    assert (nvl72["count"], nvl72["usd"], nvl72["low"], nvl72["high"]) == (8, 26_000_000, 24_800_000, 27_200_000)
    assert "gb200-nvl72-tray" not in lines and "gb200-nvl72-tray" not in {u["item"] for u in own["unpriced"]}
    racks = [u for u in own["unpriced"] if u["item"] == "racks"]
    assert racks and racks[0]["count"] == 5  # 3 network and 2 management racks; the NVL72 racks come with the system
    assert own["complete"] is False and own["cloud"] == []  # no GB200 cloud instance type is priced
