"""The Slurm release table (clusterctl.plan.slurm.FEATURES) and the refusals validate reports before render:
SLURM003 for a release older than the oldest rendered, SLURM011 for a memory reserve that leaves no memory,
SLURM012 for a QOS max_wall sacctmgr is not given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterctl.plan.slurm import (BLOCK_PLUGIN, CLOUD_REG_ADDRS, FEATURES, PRIVATE_DATA_CLOUD, Release,
                                   sacctmgr_wall, slurm_release, supports, version_table)
from clusterctl.targets import RenderError, render_targets
from clusterctl.targets import slurm as slurm_target
from tests.helpers import cli, hits, lab, plan_of

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "slurm.md"


def test_release_is_parsed_once_and_none_without_slurm_or_a_release():
    data = lab()
    assert slurm_release(plan_of(data)) == Release(24, 5)
    assert str(slurm_release(plan_of(data))) == "24.05"
    data["slurm"]["version"] = "24.13"
    assert slurm_release(plan_of(data)) is None
    data.pop("slurm")
    assert slurm_release(plan_of(data)) is None


def test_supports_reads_first_and_last_release():
    assert not supports(Release(23, 2), BLOCK_PLUGIN) and supports(Release(23, 11), BLOCK_PLUGIN)
    assert supports(Release(99, 11), BLOCK_PLUGIN) and not supports(None, BLOCK_PLUGIN)
    # cloud_reg_addrs: 20.11 up to 23.02, removed in 23.11
    assert [supports(Release(*v), CLOUD_REG_ADDRS) for v in ((20, 2), (20, 11), (23, 2), (23, 11))] == \
        [False, True, True, False]
    assert CLOUD_REG_ADDRS.removed == Release(23, 11) and PRIVATE_DATA_CLOUD.removed == Release(23, 2)
    assert supports(Release(20, 2), PRIVATE_DATA_CLOUD) and not supports(Release(23, 2), PRIVATE_DATA_CLOUD)


def test_every_feature_names_its_source_and_a_release():
    assert len({f.what for f in FEATURES}) == len(FEATURES) == 17
    for f in FEATURES:
        assert f.source and (f.first or f.last), f.what
        assert f.first is None or f.last is None or f.first <= f.last, f.what


def test_docs_version_table_is_the_release_table():
    text = DOCS.read_text()
    table = re.search(r"<!-- version-table: begin.*?-->\n(.*?)<!-- version-table: end -->", text, re.S)
    assert table, "docs/slurm.md has no generated version table"
    assert table.group(1) == version_table(), "regenerate it: python3 -c 'from clusterctl.plan.slurm import " \
                                              "version_table; print(version_table(), end=\"\")'"


def _old(version: str) -> dict:
    data = lab()
    data["slurm"]["version"] = version
    data["slurm"]["install"].pop("version", None)
    data["slurm"]["install"] = {"kind": "distro"}
    return data


def test_slurm003_refuses_a_release_older_than_the_oldest_rendered():
    (h,) = [f for f in hits(_old("19.05"), "SLURM003") if f.severity.name == "ERROR"]
    assert h.path == ("slurm", "version")
    assert h.message == ("Slurm 19.05 is older than 20.02, the oldest release rendered (select/cons_tres GPU "
                         "binding, gpu/rsmi, configless)")
    with pytest.raises(slurm_target.SlurmRenderError) as refused:
        slurm_target.render(plan_of(_old("19.05")))
    assert refused.value.path == ("slurm", "version") and str(refused.value) == h.message


def test_slurm003_keeps_the_oldest_rendered_release_a_warning():
    found = hits(_old("20.02"), "SLURM003")
    assert [f.severity.name for f in found] == ["WARNING"]
    assert found[0].message == "Slurm 20.02 is older than 23.11 and out of SchedMD support"
    assert "slurm/slurm.conf" in slurm_target.render(plan_of(_old("20.02")))


def test_slurm011_reports_a_reserve_that_leaves_no_memory():
    data = lab()
    data["slurm"]["memory_reserve_gb"] = 2048
    (h,) = hits(data, "SLURM011")
    assert h.path == ("slurm", "memory_reserve_gb")
    assert h.message == "node group gpu: memory_reserve_gb 2048 leaves no memory of a 2048 GB node"
    with pytest.raises(slurm_target.SlurmRenderError, match="^memory_reserve_gb 2048 leaves no memory of a 2048 GB"):
        slurm_target.render(plan_of(data))


def test_slurm011_quiet_when_memory_is_left():
    data = lab()
    data["slurm"]["memory_reserve_gb"] = 2047
    assert hits(data, "SLURM011") == []
    assert hits(lab(), "SLURM011") == []


def test_issue_example_validate_refuses_slurm_19_05_where_render_would(tmp_path):
    """lab-2node with slurm.version "19.05" and its install pin removed validated with exit 0 and render exited 2;
    validate now exits 1 with the error at the version's line."""
    text = (REPO / "blueprints" / "lab-2node.yaml").read_text()
    text = text.replace('version: "24.05"', 'version: "19.05"').replace(', version: "24.05.4-1"}', "}")
    text = text.replace("install: {kind: debs, path: /srv/slurm-debs}", "install: {kind: distro}")
    path = tmp_path / "lab-19.yaml"
    path.write_text(text)
    r = cli("validate", str(path))
    assert r.returncode == 1, r.stdout + r.stderr
    line = text.splitlines().index('  version: "19.05"') + 1
    assert "error[SLURM003]" in r.stderr and f"lab-19.yaml:{line}:12" in r.stderr


@pytest.mark.parametrize("wall", ["12345678", "10:123", "123456-00"])
def test_slurm012_reports_a_qos_max_wall_sacctmgr_is_not_given(wall):
    data = lab()
    data["slurm"]["qos"][0]["max_wall"] = wall
    (h,) = hits(data, "SLURM012")
    assert h.path == ("slurm", "qos", 0, "max_wall")
    assert h.message == (f"slurm.qos max_wall '{wall}' is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                         "D-HH:MM:SS)")
    with pytest.raises(RenderError, match="is not a Slurm time"):
        render_targets(plan_of(data), ["ansible"])


def test_slurm012_quiet_for_the_times_sacctmgr_takes():
    assert [sacctmgr_wall(t) for t in ("60", "90:30", "12:00:00", "2-12", "99999-23:59", "UNLIMITED")] == [
        "01:00:00", "01:31:00", "12:00:00", "2-12:00:00", "99999-23:59:00", ""]
    data = lab()
    data["slurm"]["qos"][0]["max_wall"] = "1234567"
    assert hits(data, "SLURM012") == [] and hits(lab(), "SLURM012") == []
