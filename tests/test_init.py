"""`clusterctl init`: the preset list, and starter blueprints sized from --gpus/--gpu/--fabric, through the
real command line. A starter must validate with no finding at all and render."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers import BLUEPRINTS, cli


@pytest.mark.parametrize("args", [("init", "--list"), ("init",)])
def test_init_lists_every_shipped_blueprint_with_its_description(args):
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    for path in BLUEPRINTS.glob("*.yaml"):
        description = yaml.safe_load(path.read_text())["description"]
        assert any(line.split()[0] == path.stem and description[:40] in line
                   for line in r.stdout.splitlines()[1:]), path.stem


def test_init_without_argument_says_how_to_start():
    r = cli("init")
    assert "clusterctl init --gpus" in r.stderr and "clusterctl init PRESET" in r.stderr


@pytest.mark.parametrize("gpus, gpu, fabric, tiers", [
    (64, "b200", "roce", 1),
    (2048, "b200", "roce", 2),
    (256, "h100", "infiniband", 2),
    (576, "gb200", "infiniband", 2),
])
def test_starter_blueprint_validates_clean_and_renders(tmp_path, gpus, gpu, fabric, tiers):
    out = tmp_path / "starter.yaml"
    r = cli("init", "--gpus", str(gpus), "--gpu", gpu, "--fabric", fabric, "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    data = yaml.safe_load(text)
    compute = next(f for f in data["fabrics"] if f["name"] == "compute")
    assert (compute["kind"], compute["tiers"]) == (fabric, tiers)
    group = next(g for g in data["node_groups"] if g["name"] == "gpu")
    assert data["node_types"][group["type"]]["server"]  # a catalog server
    # every top-level section is introduced by a comment for a newcomer
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line and not line.startswith((" ", "#")) and not line.startswith(("name:", "description:")):
            assert lines[n - 1].startswith("#"), f"section without a comment: {line}"
    v = cli("validate", str(out), "--fail-on", "info")
    assert v.returncode == 0, v.stdout + v.stderr
    assert f"{gpus:,} GPUs" in v.stderr + v.stdout and "0 error(s), 0 warning(s), 0 info" in v.stderr + v.stdout
    rendered = tmp_path / "out"
    rr = cli("render", str(out), "-o", str(rendered))
    assert rr.returncode == 0, rr.stderr
    assert (rendered / "slurm" / "slurm.conf").is_file() or any(rendered.rglob("slurm.conf"))


def test_starter_nvl72_uses_block_topology_over_whole_racks(tmp_path):
    out = tmp_path / "nvl.yaml"
    assert cli("init", "--gpus", "144", "--gpu", "gb200", "--fabric", "roce", "-o", str(out)).returncode == 0
    data = yaml.safe_load(out.read_text())
    assert data["slurm"]["topology"] == "block" and data["slurm"]["block_sizes"] == [18, 36]
    assert all(p.get("system") == "gb200-nvl72" for n, p in data["rack_profiles"].items() if n.startswith("nvl72"))
    assert cli("validate", str(out), "--fail-on", "info").returncode == 0


@pytest.mark.parametrize("args, message, hint", [
    (("--gpus", "100", "--gpu", "h100"), "--gpus 100 is not a multiple of 8", "try --gpus 104 or --gpus 96"),
    (("--gpus", "100", "--gpu", "gb200"), "not a multiple of 72", "try --gpus 144 or --gpus 72"),
    (("--gpus", "64", "--gpu", "b300"), "unknown GPU 'b300'", "one of h100, h200, b200, gb200"),
    (("--gpus", "64", "--fabric", "ethernet"), "unknown fabric 'ethernet'", "one of roce, infiniband"),
    (("--gpus", "0",), "--gpus 0 is out of range", "between 8 and"),
    (("lab-2node", "--gpus", "8"), "a preset or --gpus, not both", "clusterctl init lab-2node"),
])
def test_starter_refuses_impossible_questions_with_a_hint(tmp_path, args, message, hint):
    out = tmp_path / "x.yaml"
    r = cli("init", *args, "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "hint:" in r.stderr and hint in r.stderr
    assert not out.exists()


def test_starter_does_not_overwrite_without_force(tmp_path):
    out = tmp_path / "x.yaml"
    out.write_text("mine\n")
    assert cli("init", "--gpus", "16", "-o", str(out)).returncode == 2 and out.read_text() == "mine\n"
    assert cli("init", "--gpus", "16", "-o", str(out), "--force").returncode == 0


def test_readme_shows_the_pipeline_picture_and_points_to_the_shipped_blueprints():
    import re
    import xml.etree.ElementTree as ET

    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text()
    assert "next milestone" not in readme
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", readme)
    assert pictures == ["docs/pipeline.svg"]
    svg = ET.parse(REPO / pictures[0]).getroot()
    words = " ".join(t.text or "" for t in svg.iter() if t.tag.endswith("text"))
    for stage in ("blueprint", "load", "plan", "rules", "render", "report", "clusterctl validate"):
        assert stage in words, stage
    assert "[`blueprints/`](blueprints/)" in readme and "best examples" in readme
    # the starter commands the README and docs/cli.md show are the ones the CLI takes
    assert "clusterctl init --gpus 2048 --gpu b200 --fabric roce" in readme
    assert "clusterctl init --gpus N [--gpu h100|h200|b200|gb200] [--fabric roce|infiniband]" in \
        (REPO / "docs" / "cli.md").read_text()


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200", "gb200"])
@pytest.mark.parametrize("fabric", ["roce", "infiniband"])
@pytest.mark.parametrize("size", ["one rack", "a few racks", "three tiers"])
def test_every_starter_is_clean(gpu, fabric, size):
    """Every GPU on every fabric, from one rack to a three-tier fabric, validates with no finding at all."""
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.starter import starter_blueprint
    from clusterctl.validate import validate_loaded

    gpus = {"one rack": 72 if gpu == "gb200" else 32, "a few racks": 576 if gpu == "gb200" else 512,
            "three tiers": 8208 if gpu == "gb200" else 8192}[size]
    v = validate_loaded(load_blueprint_text(starter_blueprint(gpus, gpu, fabric), "starter.yaml"))
    assert [f"{f.code}: {f.message}" for f in v.result.active()] == []
    assert sum(g.gpus for g in v.plan.groups) == gpus


def test_the_largest_roce_starter_is_clean():
    """100,000 H100 on RoCE: the storage pool grows to a /15 (10.4-10.5), so the switches' router ids live in 10.0
    (they were in 10.5 and overlapped it: ADDR002)."""
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.starter import starter_blueprint
    from clusterctl.validate import validate_loaded

    text = starter_blueprint(100_000, "h100", "roce")
    assert "storage: {cidr: 10.4.0.0/15" in text and "loopback: {cidr: 10.0.0.0/" in text
    v = validate_loaded(load_blueprint_text(text, "starter.yaml"))
    assert [f"{f.code}: {f.message}" for f in v.result.active()] == []


@pytest.mark.parametrize("gpus, fabric, tiers", [
    # two tiers of SN5600 reach 64 spine ports x 64 leaf downlinks = 4,096 rail ports (512 nodes)
    (4096, "roce", 2), (4104, "roce", 3),
    # two tiers of QM9700 reach 64 x 32 = 2,048 ports; the 2 UFM appliances' ports need a third at 256 nodes
    (2040, "infiniband", 2), (2048, "infiniband", 3),
    # one switch while every port fits on it (QM9700: 64 ports, 8 nodes; its embedded SM takes no port)
    (64, "infiniband", 1), (72, "infiniband", 2),
])
def test_starter_takes_the_fewest_tiers_the_fabric_builder_plans(gpus, fabric, tiers):
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.plan import expand
    from clusterctl.starter import starter_blueprint

    plan = expand(load_blueprint_text(starter_blueprint(gpus, "h100", fabric), "starter.yaml"))
    compute = next(f for f in plan.fabrics if f.name == "compute")
    assert compute.tiers_declared == tiers and compute.endpoints <= compute.max_endpoints
