"""Releases of the Kubernetes operators (``clusterctl/catalog/kubernetes_operators.yaml``): model, loader, checks.

What each release of the NVIDIA GPU Operator, the NVIDIA Network Operator, the NVIDIA DRA driver for GPUs and
Slinky's slurm-operator supports and deploys, each figure with a ``sources:`` line (evidence tags as in the
hardware catalog). :mod:`clusterctl.plan.kube_operators` resolves a blueprint's chosen releases against it, for
rule K8S004 and the kubernetes target alike.
"""

from __future__ import annotations

import datetime
import functools
import re
from pathlib import Path

from pydantic import Field

from clusterctl.catalog import CATALOG_DIR, CatalogFileError, validate_file
from clusterctl.kinds import FreeText, Identifier, Version
from clusterctl.strict import StrictModel

OPERATORS_FILE = "kubernetes_operators.yaml"
EVIDENCE_TAG = re.compile(r"\[(P|Q|S|D)\]")
_Sources = dict[Identifier, FreeText]


class Image(StrictModel):
    """A container image of an operand: registry path, image name and (unless the blueprint decides it) tag."""
    repository: FreeText
    image: Identifier
    version: Version | None = None


class GpuOperatorImages(StrictModel):
    """The operand images a ClusterPolicy names (the release's Helm values)."""
    driver: Image
    driver_manager: Image
    toolkit: Image
    device_plugin: Image
    dcgm_exporter: Image
    gfd: Image
    mig_manager: Image
    validator: Image


class GpuOperatorRelease(StrictModel):
    released: datetime.date
    drivers: list[Version] = Field(min_length=1)
    """the data center driver versions of the release's component matrix, newest first"""
    default_driver: Version
    images: GpuOperatorImages
    sources: _Sources


class NetworkOperatorRelease(StrictModel):
    released: datetime.date
    doca_drivers: dict[Version, Version] = Field(min_length=1)
    """DOCA version -> the doca-driver (DOCA-OFED) container tag the release deploys (its own and the LTS one)"""
    repository: FreeText
    """registry path of the release's images"""
    component_version: Version
    """the tag of the release's RDMA shared / SR-IOV device plugin, nv-ipam, Multus and CNI plugin images"""
    sources: _Sources


class DraDriverRelease(StrictModel):
    released: datetime.date
    repository: FreeText
    compute_domain_api: FreeText
    sources: _Sources


class SlinkyRelease(StrictModel):
    released: datetime.date
    api: FreeText
    chart: FreeText
    slurm: Version
    """the Slurm release of the chart's images (appVersion)"""
    slurmd_image: FreeText
    login_image: FreeText
    sources: _Sources


class OperatorReleases(StrictModel):
    gpu_operator: dict[Version, GpuOperatorRelease] = Field(min_length=1)
    network_operator: dict[Version, NetworkOperatorRelease] = Field(min_length=1)
    dra_driver: dict[Version, DraDriverRelease] = Field(min_length=1)
    slinky: dict[Version, SlinkyRelease] = Field(min_length=1)


SECTIONS = ("gpu_operator", "network_operator", "dra_driver", "slinky")


def check(releases: OperatorReleases) -> list[str]:
    """Problems the model cannot see alone: a field without a sourced line, a source without an evidence tag, a
    default driver the matrix does not list, a release dated in the future."""
    problems: list[str] = []
    today = datetime.date.today()
    for section in SECTIONS:
        for name, entry in getattr(releases, section).items():
            where = f"{section}.{name}"
            fields = set(type(entry).model_fields) - {"sources"}
            for missing in sorted(fields - set(entry.sources)):
                problems.append(f"{where}: no sources line for {missing}")
            for key, text in entry.sources.items():
                if key not in fields:
                    problems.append(f"{where}.sources.{key}: not a field")
                elif not EVIDENCE_TAG.search(text):
                    problems.append(f"{where}.sources.{key}: no [P]/[Q]/[S]/[D] evidence tag")
            if entry.released > today:
                problems.append(f"{where}: released {entry.released} is in the future")
            if isinstance(entry, GpuOperatorRelease) and entry.default_driver not in entry.drivers:
                problems.append(f"{where}: default_driver {entry.default_driver} is not one of its drivers")
    return problems


def load_releases(path: Path = CATALOG_DIR / OPERATORS_FILE) -> OperatorReleases:
    """The release table at ``path``; a broken file is a CatalogFileError (its location, or the entry at fault)."""
    releases = validate_file(OperatorReleases, path)
    problems = check(releases)
    if problems:
        raise CatalogFileError("; ".join(f"{path.name}: {p}" for p in problems))
    return releases


@functools.lru_cache(maxsize=1)
def shipped_releases() -> OperatorReleases:
    """The shipped release table (loaded once)."""
    return load_releases()
