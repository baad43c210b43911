"""The shipped price list (clusterctl/catalog/prices.yaml): it loads, every price is sourced and dated, and
every priced type is a catalog instance type."""

from __future__ import annotations

import datetime

import pytest

from clusterctl.catalog import CatalogFileError, load_shipped_catalog
from clusterctl.catalog.prices import EVIDENCE_TAG, check, load_prices, shipped_prices

CATALOG = load_shipped_catalog()
PRICES = shipped_prices()
def test_price_list_loads_and_passes_its_checks():
    assert PRICES.currency == "USD"
    assert check(PRICES, CATALOG) == []


def test_every_priced_type_is_a_catalog_instance_type():
    assert PRICES.unknown_types(CATALOG) == []


def test_the_hardware_catalog_does_not_read_the_price_file():
    assert set(CATALOG.origin.values()) == {f"shipped:{n}" for n in (
        "accelerators.yaml", "instances.yaml", "nics.yaml", "rack_systems.yaml", "servers.yaml", "switches.yaml")}


@pytest.mark.parametrize("name", sorted(PRICES.prices))
def test_every_price_is_dated_and_sourced_with_an_evidence_tag(name):
    entry = PRICES.prices[name]
    assert entry.on_demand or entry.capacity_block, name
    for kind in ("on_demand", "capacity_block"):
        for region, p in getattr(entry, kind).items():
            assert p.usd_per_hour > 0
            assert datetime.date(2024, 1, 1) <= p.as_of <= datetime.date.today(), (name, region)
            assert EVIDENCE_TAG.search(PRICES.sources[p.source]), (name, region, p.source)


def test_capacity_block_rates_are_aws_only():
    for name, entry in PRICES.prices.items():
        if entry.capacity_block:
            assert name in CATALOG.instances and CATALOG.instances[name].provider == "aws", name


def test_published_figures():
    # the figures as the sources give them: AWS p5 after the June 2025 price cut, Azure ND H100 v5 retail
    assert PRICES.price("p5.48xlarge", "us-east-2").usd_per_hour == 55.04
    assert PRICES.price("p5.48xlarge", "us-east-2", "capacity_block").usd_per_hour == 39.33
    assert PRICES.price("Standard_ND96isr_H100_v5", "eastus").usd_per_hour == 98.32
    assert PRICES.price("a3-megagpu-8g", "us-central1") is None  # not in the source: no price, not a guess


def _write(tmp_path, text):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    return path


def test_broken_file_is_located(tmp_path):
    path = _write(tmp_path, "currency: USD\nsources: {s: '[S] x'}\nprices:\n  p5.48xlarge:\n"
                            "    on_demand:\n      us-east-1: {usd_per_hour: -1, as_of: 2026-01-01, source: s}\n")
    with pytest.raises(CatalogFileError, match=r"prices.yaml:6:"):
        load_prices(path)


def test_unknown_type_unknown_source_untagged_source_and_future_date_are_reported(tmp_path):
    path = _write(tmp_path, "currency: USD\nsources: {s: 'no tag'}\nprices:\n  p9.huge:\n    on_demand:\n"
                            "      us-east-1: {usd_per_hour: 1, as_of: 2999-01-01, source: t}\n")
    problems = {(p.where, p.message) for p in check(load_prices(path), CATALOG)}
    assert problems == {
        ("sources.s", "no [P]/[Q]/[S]/[D] evidence tag"),
        ("prices.p9.huge", "not an instance type of the catalog"),
        ("prices.p9.huge.on_demand.us-east-1", "unknown source 't'"),
        ("prices.p9.huge.on_demand.us-east-1", "as_of 2999-01-01 is in the future"),
    }


def test_loading_against_the_catalog_refuses_what_check_finds(tmp_path):
    path = _write(tmp_path, "currency: USD\nsources: {s: '[S] x'}\nprices:\n  p9.huge:\n    on_demand:\n"
                            "      us-east-1: {usd_per_hour: 1, as_of: 2026-01-01, source: s}\n")
    assert load_prices(path).price("p9.huge", "us-east-1").usd_per_hour == 1  # shape only
    with pytest.raises(CatalogFileError,
                       match=r"^prices.yaml: prices.p9.huge: not an instance type of the catalog$"):
        load_prices(path, CATALOG)
