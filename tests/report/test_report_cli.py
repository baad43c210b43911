"""`clusterctl report` through the real command line: every shipped blueprint, outputs, errors."""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from clusterctl.resources import shipped_blueprints
from tests.helpers import BROKEN, cli, shipped, to_yaml

SECTIONS = ["capacity", "collectives", "training", "storage", "reliability", "power", "bom"]
SVG = "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("name", sorted(shipped_blueprints()))
def test_every_shipped_blueprint_reports(name, tmp_path):
    out = tmp_path / "r"
    r = cli("report", f"blueprints/{name}.yaml", "-o", str(out), "--model", "llama3-70b")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    data = json.loads((out / "report.json").read_text())
    assert [k for k in data if k in SECTIONS] == SECTIONS
    assert data["cluster"] == name
    md = (out / "report.md").read_text()
    for title in ("## Capacity", "## Collectives", "## Training estimate", "## Bill of materials"):
        assert title in md
    assert data["training"]["available"] and data["training"]["tokens_per_s"] > 0
    for fig in data["figures"]:
        root = ET.fromstring((out / "pictures" / fig).read_text())
        assert root.tag == SVG
        assert f"pictures/{fig}" in md


def test_report_is_deterministic(tmp_path):
    """The report's determinism test (every section and picture): two processes whose string hashes differ (as
    tests/test_render_cli.py::test_render_writes_every_target_and_is_byte_identical)."""
    a, b = tmp_path / "a", tmp_path / "b"
    seeds = {a: "0", b: str(random.SystemRandom().randrange(1, 2**32))}
    for d, seed in seeds.items():
        r = cli("report", "blueprints/gb200-nvl72-8rack.yaml", "-o", str(d), env={"PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f"{f}: PYTHONHASHSEED {seeds[a]} vs {seeds[b]}"


def with_server(tmp_path: Path, blueprint: str, old: str, new: str) -> Path:
    """A shipped blueprint with its ``old`` catalog server swapped for ``new``, written to a file."""
    data = shipped(blueprint)
    for nt in data["node_types"].values():
        if nt.get("server") == old:
            nt["server"] = new
    bp = tmp_path / f"{blueprint}-{new}.yaml"
    bp.write_text(to_yaml(data))
    return bp


def test_peak_bf16_is_exact_and_sourced(tmp_path):
    # 1,024 H100 SXM at the catalog's 989 TFLOP/s dense = 1,012.7 PFLOP/s (the example)
    bp = with_server(tmp_path, "hgx-h200-roce-1024", "hgx-h200-8gpu", "hgx-h100-8gpu")
    r = cli("report", str(bp), "--format", "json")
    assert r.returncode == 0, r.stderr
    peak = json.loads(r.stdout)["capacity"]["peak_bf16"]
    assert json.loads(r.stdout)["capacity"]["gpus"] == 1024
    assert peak["value"] == pytest.approx(1012.736)
    assert peak["catalog"] == "accelerators.h100-sxm.bf16_dense_tflops"
    assert "torchtitan" in peak["source"]


def test_model_and_layout_from_the_command_line(tmp_path):
    r = cli("report", "blueprints/dgx-h100-superpod-1su.yaml", "--format", "json", "--layers", "48",
            "--hidden", "8192", "--heads", "64", "--vocab", "51200", "--seq-len", "2048", "--tp", "8", "--pp", "2",
            "--recompute", "full", "--global-batch", "512")
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)["training"]
    assert t["layout"]["tp"] == 8 and t["layout"]["pp"] == 2 and t["layout"]["dp"] == 16
    assert t["layout"]["layouts_tried"] == 1
    assert 0 < t["mfu"] < 1


def test_simple_form_with_mfu():
    # lab-2node has no model shape: tokens/s = GPUs x peak x MFU / (6 x params)
    r = cli("report", "blueprints/lab-2node.yaml", "--format", "json", "--params-b", "70", "--mfu", "0.4")
    assert r.returncode == 0, r.stderr
    simple = json.loads(r.stdout)["training"]["simple"]
    assert simple["tokens_per_s"] == pytest.approx(16 * 989e12 * 0.4 / (6 * 70e9))
    # with the blueprint's model the FLOPs per token are the model's (Megatron count, more than 6N)
    r = cli("report", "blueprints/dgx-h100-superpod-1su.yaml", "--format", "json", "--mfu", "0.4")
    t = json.loads(r.stdout)["training"]
    assert t["simple"]["flops_per_token"] == t["model"]["flops_per_token"] > 6 * t["model"]["params"]


def test_workload_model_in_the_blueprint(tmp_path):
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["model"] = "llama3-8b"
    data["workload"]["training"] = {"tp": 1, "pp": 1, "global_batch": 512, "recompute": "selective"}
    bp = tmp_path / "bp.yaml"
    bp.write_text(to_yaml(data))
    r = cli("report", str(bp), "--format", "json")
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)["training"]
    assert t["model"]["name"] == "llama3-8b" and t["layout"]["dp"] == 256


@pytest.mark.parametrize("args,needle", [
    (["--model", "gpt5"], "unknown model preset"),
    (["--model", "llama3-70b", "--tp", "3", "--pp", "1", "--recompute", "full"], "heads"),
    (["--layers", "10"], "--hidden"),
    (["--mfu", "2"], "--mfu"),
    (["--png"], "-o"),
    (["--recompute", "sometimes"], "--recompute: Input should be 'none', 'selective' or 'full'"),
    (["--tp", "0"], "Invalid value for '--tp'"),
])
def test_bad_options_exit_2_with_a_reason(args, needle):
    r = cli("report", "blueprints/lab-2node.yaml", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_blueprint_with_errors_is_not_reported(tmp_path):
    broken = sorted(Path(BROKEN).glob("*.yaml"))[0]
    out = tmp_path / "r"
    r = cli("report", str(broken), "-o", str(out))
    assert r.returncode == 1 and "not reported" in r.stderr
    assert not out.exists()


def test_bad_workload_in_blueprint_is_located(tmp_path):
    data = shipped("lab-2node")
    data.setdefault("workload", {"params_b": 7})["training"] = {"tp": "eight"}
    bp = tmp_path / "bp.yaml"
    bp.write_text(yaml.safe_dump(data, sort_keys=False))
    r = cli("report", str(bp))
    assert r.returncode == 2 and "workload.training.tp" in r.stderr


def test_png_pictures(tmp_path):
    out = tmp_path / "r"
    r = cli("report", "blueprints/lab-2node.yaml", "-o", str(out), "--png")
    assert r.returncode == 0, r.stderr
    pngs = sorted(out.glob("pictures/*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)


def test_list_models():
    r = cli("report", "blueprints/lab-2node.yaml", "--list-models")
    assert r.returncode == 0 and "llama3-405b" in r.stdout and "gpt3-175b" in r.stdout


def test_fp8_on_a_gpu_without_it_is_refused(tmp_path):
    bp = with_server(tmp_path, "lab-2node", "hgx-h100-8gpu", "dgx-a100")
    r = cli("report", str(bp), "--model", "llama3-8b", "--precision", "fp8")
    assert r.returncode == 2 and "no FP8 matmul rate" in r.stderr, r.stderr
    assert cli("report", str(bp), "--model", "llama3-8b", "--precision", "bf16").returncode == 0


def test_gpu_without_scale_up_figure_reports(tmp_path):
    bp = with_server(tmp_path, "lab-2node", "hgx-h100-8gpu", "mi300x-8gpu")
    r = cli("report", str(bp), "--model", "llama3-8b", "--suppress", "SLURM004")
    assert r.returncode == 0, r.stderr
    assert "every GPU is taken as its own domain" in r.stdout


def test_report_pictures_read_right(tmp_path):
    """Through the CLI: the bus-bandwidth chart draws each collective with its own dash pattern (all_gather
    is not hidden under reduce_scatter), the converged fabric is not labelled with rails and the
    management fabric shows no '0.09:1' oversubscription."""
    out = tmp_path / "r"
    r = cli("report", "blueprints/gb200-nvl72-8rack.yaml", "-o", str(out))
    assert r.returncode == 0, r.stderr
    ns = "{http://www.w3.org/2000/svg}"
    chart = ET.fromstring((out / "pictures" / "busbw-576-gpus.svg").read_text())
    lines = [e for e in chart.iter(f"{ns}polyline") if "series" in (e.get("class") or "")]
    ops = [e.get("data-series") for e in lines]
    assert {"all_gather", "reduce_scatter"} <= set(ops)
    assert len({e.get("stroke-dasharray") for e in lines}) == len(lines)
    legend = [e.text for e in chart.iter(f"{ns}text") if e.get("class") == "legend"]
    assert legend == ops
    assert "576 GPUs" in chart.find(f"{ns}title").text
    topo = (out / "pictures" / "topology.svg").read_text()
    assert "144 nodes, 4 links each" in topo and "144 nodes × 4 rails" in topo  # converged vs ib
    assert not re.search(r"oversubscription 0\.\d+:1", topo)
    assert "non-blocking (uplinks" in topo
