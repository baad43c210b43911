"""Software rules: each triggered by a small change to the lab blueprint, and quiet on the original."""

from __future__ import annotations

import pytest

from clusterctl.rules.software import cuda_version, driver_major
from tests.helpers import hits, shipped

CODES = ("SW001", "SW002", "SW003", "SW004")


def lab(server: str = "hgx-h100-8gpu"):
    data = shipped("lab-2node")
    data["node_types"]["hgx"]["server"] = server
    return data


def test_no_software_section_is_quiet():
    data = lab()
    del data["software"]
    for code in CODES:
        assert hits(data, code) == []


@pytest.mark.parametrize("text,major", [("550", 550), ("550.90.07", 550), ("R550", None), ("550-server", None),
                                        ("", None)])
def test_driver_major(text, major):
    assert driver_major(text) == major


@pytest.mark.parametrize("text,version", [("12.4", (12, 4)), ("12.4.1", (12, 4)), ("12", None), ("12.x", None)])
def test_cuda_version(text, version):
    assert cuda_version(text) == version


def test_driver_older_than_the_gpu():
    data = lab("hgx-h200-8gpu")
    data["software"]["driver"] = "535.183.01"
    (h,) = hits(data, "SW001")
    assert h.path == ("software", "driver")
    assert "driver 535.183.01 is older than R550, the first branch that supports h200-sxm" in h.message


def test_blackwell_needs_r570():
    data = lab("hgx-b200-8gpu")
    data["software"].update(driver="550", cuda="12.8")
    assert "older than R570" in hits(data, "SW001")[0].message
    data["software"]["driver"] = "570.133.20"
    assert hits(data, "SW001") == []


def test_cuda_needs_a_newer_driver():
    data = lab()
    data["software"].update(driver="570", cuda="13.0")
    (h,) = hits(data, "SW002")
    assert h.path == ("software", "driver")
    assert "CUDA 13.0 needs driver 580 or newer" in h.message and "driver is 570" in h.message
    data["software"].update(driver="580.65.06")
    assert hits(data, "SW002") == []
    data["software"].update(driver="470", cuda="12.2")  # also below H100's R525 (SW001)
    assert "CUDA 12.2 needs driver 525 or newer" in hits(data, "SW002")[0].message


def test_cuda_too_old_for_the_gpu_generation():
    data = lab()
    data["software"]["cuda"] = "11.7"
    (h,) = hits(data, "SW002")
    assert h.path == ("software", "cuda")
    assert "CUDA 11.7 cannot build for h100-sxm (hopper, node group gpu): Hopper needs CUDA 11.8" in h.message
    data["software"]["cuda"] = "11.8"
    assert hits(data, "SW002") == []
    data = lab("hgx-b200-8gpu")
    data["software"].update(driver="570", cuda="12.6")
    (h,) = hits(data, "SW002")
    assert "Blackwell needs CUDA 12.8 or newer" in h.message


def test_nvidia_versions_on_amd_gpus_warn():
    data = lab("mi300x-8gpu")
    (h,) = hits(data, "SW003")
    assert str(h.severity) == "warning" and h.path == ("software", "driver")
    assert "GPUs are AMD (mi300x)" in h.message
    assert hits(data, "SW001") == [] and hits(data, "SW002") == []


def test_mixed_gpu_vendors_warn():
    data = lab()
    data["node_types"]["amd"] = {"server": "mi300x-8gpu"}
    data["node_groups"].append({"name": "amd", "type": "amd", "count": 1, "hostnames": "amd01"})
    (h,) = hits(data, "SW003")
    assert h.path == ("node_groups", 2, "type")
    assert "mixes GPU vendors (AMD: mi300x; NVIDIA: h100-sxm)" in h.message


def test_unparseable_versions():
    data = lab()
    data["software"].update(driver="R550", cuda="12")
    found = {h.path: h for h in hits(data, "SW004")}
    assert set(found) == {("software", "driver"), ("software", "cuda")}
    assert "driver 'R550'" in found[("software", "driver")].message
    assert hits(data, "SW001") == [] and hits(data, "SW002") == []
