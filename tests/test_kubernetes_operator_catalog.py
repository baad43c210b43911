"""The operator release table (clusterctl/catalog/kubernetes_operators.yaml): it loads, every figure is sourced, and
a broken entry is refused with its place."""

from __future__ import annotations

import pytest

from clusterctl.catalog import CatalogFileError
from clusterctl.catalog.kubernetes_operators import EVIDENCE_TAG, SECTIONS, load_releases, shipped_releases

RELEASES = shipped_releases()


def test_the_releases_read_upstream():
    # the newest release of each project when the table was written, and what it supports (its upstream file)
    gpu = RELEASES.gpu_operator["26.7.0"]
    assert gpu.drivers == ["610.57.04", "595.91.07", "580.173.02", "535.309.01"]
    assert gpu.default_driver == "595.91.07"
    net = RELEASES.network_operator["26.4.1"]
    assert net.doca_drivers == {"3.4.1": "doca3.4.1-26.04-1.1.0.0-1", "3.2.2": "doca3.2.2-25.10-2.4.1.0-4"}
    assert net.component_version == "network-operator-v26.4.1"
    assert RELEASES.dra_driver["0.4.1"].compute_domain_api == "resource.nvidia.com/v1beta1"
    assert list(RELEASES.slinky) == ["1.2.1"]


@pytest.mark.parametrize("section", SECTIONS)
def test_every_field_has_a_tagged_source(section):
    for name, entry in getattr(RELEASES, section).items():
        fields = set(type(entry).model_fields) - {"sources"}
        assert set(entry.sources) == fields, f"{section}.{name}"
        for key, text in entry.sources.items():
            assert EVIDENCE_TAG.search(text), f"{section}.{name}.sources.{key}"


def test_doca_versions_name_their_containers():
    for name, release in RELEASES.network_operator.items():
        for doca, tag in release.doca_drivers.items():
            assert tag.startswith(f"doca{doca}-") or (doca, tag) == ("2.9.0", "24.10-0.7.0.0-0"), name


ENTRY = """
gpu_operator:
  "1.0.0":
    released: 2025-01-01
    drivers: ["570.1.2"]
    default_driver: "570.1.2"
    images:
      driver: {repository: r, image: driver}
      driver_manager: {repository: r, image: m, version: v1}
      toolkit: {repository: r, image: t, version: v1}
      device_plugin: {repository: r, image: p, version: v1}
      dcgm_exporter: {repository: r, image: e, version: v1}
      gfd: {repository: r, image: p, version: v1}
      mig_manager: {repository: r, image: g, version: v1}
      validator: {repository: r, image: o, version: v1}
    sources: {released: "[P] a", drivers: "[P] b", default_driver: "[P] c", images: "[P] d"}
network_operator:
  "1.0.0": {released: 2025-01-01, doca_drivers: {"3.0.0": doca3.0.0-x}, repository: r, component_version: v1,
            sources: {released: "[P] a", doca_drivers: "[P] b", repository: "[P] c", component_version: "[P] d"}}
dra_driver:
  "1.0.0": {released: 2025-01-01, repository: r, compute_domain_api: a/v1,
            sources: {released: "[P] a", repository: "[P] b", compute_domain_api: "[P] c"}}
slinky:
  "1.0.0": {released: 2025-01-01, api: a/v1, chart: c, slurm: "25.05", slurmd_image: i, login_image: l,
            sources: {released: "[P] a", api: "[P] b", chart: "[P] c", slurm: "[P] d", slurmd_image: "[P] e",
                      login_image: "[P] f"}}
"""


def test_a_minimal_table_loads(tmp_path):
    path = tmp_path / "kubernetes_operators.yaml"
    path.write_text(ENTRY)
    assert list(load_releases(path).gpu_operator) == ["1.0.0"]


@pytest.mark.parametrize("change, problem", [
    (('drivers: "[P] b", ', ''), "gpu_operator.1.0.0: no sources line for drivers"),
    (('repository: "[P] b", compute_domain_api', 'repository: "b", compute_domain_api'),
     "dra_driver.1.0.0.sources.repository: no [P]"),
    (('default_driver: "570.1.2"', 'default_driver: "570.9.9"'), "default_driver 570.9.9 is not one of its drivers"),
    (('"1.0.0": {released: 2025-01-01, api', '"1.0.0": {released: 2999-01-01, api'), "is in the future"),
])
def test_a_broken_entry_is_refused(tmp_path, change, problem):
    path = tmp_path / "kubernetes_operators.yaml"
    path.write_text(ENTRY.replace(*change))
    with pytest.raises(CatalogFileError, match=problem.replace(".", r"\.").replace("[", r"\[")):
        load_releases(path)
