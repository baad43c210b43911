"""`clusterctl compare`: the shipped GB200 and SuperPOD blueprints and two `init` starters side by side through the
real command line (table, picture, JSON), the GPUs-used warning first, and when a design is called better."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from clusterctl.report.compare import Row, verdict
from tests.helpers import REPO, cli

SVG = "{http://www.w3.org/2000/svg}svg"
EXAMPLE = REPO / "docs" / "examples" / "compare-gb200-nvl72-8rack-dgx-h100-superpod-1su"


def _row(better, *values):
    return Row("x", "x", "", better, [None if v is None else {"value": v[0], "low": v[1], "high": v[2], **v[3:][0]}
                                      if len(v) > 3 else {"value": v[0], "low": v[1], "high": v[2]}
                                      for v in values])


def test_better_is_marked_only_when_the_ranges_are_apart():
    assert verdict(_row("higher", (100, 90, 110), (130, 120, 140))) == (1, False)
    assert verdict(_row("lower", (100, 90, 110), (130, 120, 140))) == (0, False)
    # 100 +-15 % and 110 +-15 % overlap: the model cannot tell them apart
    assert verdict(_row("higher", (100, 85, 115), (110, 93.5, 126.5))) == (None, True)
    assert verdict(_row(None, (1, 1, 1), (2, 2, 2))) == (None, False)  # GPUs: neither better nor worse
    assert verdict(_row("lower", (100, 100, 100), None)) == (None, False)  # one known value: nothing to compare
    # a cost with unpriced items is a lower bound: never called cheaper
    assert verdict(_row("lower", (100, 100, 100, {"lower_bound": True}), (300, 300, 300))) == (None, False)


def test_gb200_against_the_superpod_writes_table_picture_and_json(tmp_path):
    out = tmp_path / "cmp"
    r = cli("compare", "blueprints/gb200-nvl72-8rack.yaml", "blueprints/dgx-h100-superpod-1su.yaml", "-o", str(out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # the SuperPOD's Llama 3 70B layout (tp 4 x pp 7 = 28) fits 9 data-parallel replicas in 256 GPUs: 252
    assert lines[0] == ("WARNING dgx-h100-superpod-1su: the training estimate uses 252 of its 256 GPUs "
                        "(4 idle for this workload)")
    assert lines[1].startswith("WARNING the designs train different workloads (gb200-nvl72-8rack: llama3-405b; "
                               "dgx-h100-superpod-1su: llama3-70b)")
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "compare.json", "compare.md", "compare.svg"]
    d = json.loads((out / "compare.json").read_text())
    assert [x["name"] for x in d["designs"]] == ["gb200-nvl72-8rack", "dgx-h100-superpod-1su"]
    rows = {row["key"]: row for row in d["rows"]}
    assert [v["value"] for v in rows["gpus"]["values"]] == [576, 256]  # 8 racks x 72; 32 DGX x 8
    assert rows["gpus_used"]["values"][1]["value"] == 252
    # peak dense BF16: 576 x 2.5 PF (GB200) = 1,440 PF; 256 x 989 TF (H100 SXM) = 253.184 PF
    assert [v["value"] for v in rows["peak_pflops"]["values"]] == [1440, 253.184]
    assert rows["peak_pflops"]["best"] == 0
    # different models: no design is called better on what depends on the model
    for key in ("tokens_per_s", "train_days", "usd_per_million_tokens"):
        assert rows[key]["best"] is None
    # unpriced items in both: the costs are lower bounds and neither is called cheaper
    assert rows["capital"]["values"][0]["lower_bound"] and rows["capital"]["best"] is None
    assert ET.fromstring((out / "compare.svg").read_text()).tag == SVG
    md = (out / "compare.md").read_text()
    assert md.startswith("# Designs compared: gb200-nvl72-8rack, dgx-h100-superpod-1su\n")
    assert "![designs compared](compare.svg)" in md and "| Capital cost |" in md
    # the example docs/report.md links to is what the command writes today; regenerate with
    # clusterctl compare blueprints/gb200-nvl72-8rack.yaml blueprints/dgx-h100-superpod-1su.yaml -o EXAMPLE
    for name in ("compare.json", "compare.md", "compare.svg"):
        assert (EXAMPLE / name).read_bytes() == (out / name).read_bytes(), f"{EXAMPLE / name} is stale: regenerate"


def test_two_init_starters_b200_infiniband_against_gb200(tmp_path):
    for gpu, gpus in (("b200", "2048"), ("gb200", "2016")):
        r = cli("init", "--gpus", gpus, "--gpu", gpu, "--fabric", "infiniband", "-o", str(tmp_path / f"{gpu}.yaml"))
        assert r.returncode == 0, r.stderr
    designs = (str(tmp_path / "b200.yaml"), str(tmp_path / "gb200.yaml"))
    out, again = tmp_path / "o", tmp_path / "o2"
    assert cli("compare", *designs, "-o", str(out)).returncode == 0
    assert cli("compare", *designs, "-o", str(again)).returncode == 0
    for name in ("compare.json", "compare.md", "compare.svg"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name
    assert ET.fromstring((out / "compare.svg").read_text()).tag == SVG
    assert "| Racks |" in (out / "compare.md").read_text()
    d = json.loads((out / "compare.json").read_text())
    rows = {row["key"]: row for row in d["rows"]}
    assert [v["value"] for v in rows["gpus"]["values"]] == [2048, 2016]
    # 2,016 GB200 = 28 NVL72 racks (r[01-28]), 8 network racks (net[01-08]) and mgmt[01-02]
    assert rows["racks"]["values"][1]["value"] == 38
    assert rows["tokens_per_s"]["values"] == [None, None]  # a starter names no workload: no training figures
    # the same model and batch on both: 1,000 sequences per step fit 2,000 GPUs of either design, not all of them
    same = cli("compare", *designs, "--model", "llama3-405b", "--global-batch", "1000", "-o", str(tmp_path / "same"))
    assert same.returncode == 0, same.stderr
    s = json.loads((tmp_path / "same" / "compare.json").read_text())
    used = [x["gpus_used"] for x in s["designs"]]
    assert used[0] < 2048 and used[1] < 2016
    warnings = [f"starter-b200-infiniband-2048: the training estimate uses {used[0]:,} of its 2,048 GPUs "
                f"({2048 - used[0]:,} idle for this workload)",
                f"starter-gb200-infiniband-2016: the training estimate uses {used[1]:,} of its 2,016 GPUs "
                f"({2016 - used[1]:,} idle for this workload)"]
    assert s["warnings"] == warnings
    assert same.stdout.splitlines()[:2] == [f"WARNING {w}" for w in warnings]  # said first
    assert {x["workload"] for x in s["designs"]} == {"llama3-405b"}


def test_compare_misuse_and_unreadable_designs_exit_2(tmp_path):
    r = cli("compare", "blueprints/lab-2node.yaml")
    assert r.returncode == 2 and "compare takes 2 to 8 blueprints" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnode_types: {}\n")
    r = cli("compare", "blueprints/lab-2node.yaml", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "bad.yaml" in r.stderr
