"""Cable and transceiver facts (``clusterctl/catalog/optics.yaml``): which pluggable each switch, NIC and server
cage takes and how many links one carries, with sources; the bill of materials (clusterctl/report/bom.py) counts
with them and the price catalog (clusterctl/catalog/hardware_prices.py) prices their ``price_item``."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

OPTICS_FILE = Path(__file__).with_name("optics.yaml")
OPTICS_REF = "clusterctl/catalog/optics.yaml"


@functools.lru_cache(maxsize=1)
def optics() -> dict[str, Any]:
    """The shipped cable/transceiver facts (``optics.yaml``)."""
    return yaml.safe_load(OPTICS_FILE.read_text())


def transceiver_price_items() -> list[str]:
    """Every transceiver price item an ``optics.yaml`` entry names (``price_item``), sorted; hardware without an
    entry is priced as ``pluggable-<Gb/s>g`` (clusterctl/catalog/hardware_prices.py)."""
    o = optics()
    return sorted({e["price_item"] for s in ("switches", "nics", "servers") for e in o[s].values()})
