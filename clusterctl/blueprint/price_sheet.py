"""The site's price sheet a blueprint names in ``cost.price_sheet``: read beside the blueprint and checked when
the blueprint is loaded (docs/report.md, "Cost of ownership").

A price sheet comes from a purchasing department's spreadsheet or a vendor's quote, through the same pull request
as the blueprint. It is read like the blueprint (size, depth and value limits, no hidden characters, UTF-8) and
every refusal is located in the sheet, file:line:column: a negative, non-finite or reversed price, an item the
catalog or the bill of materials does not know, another currency than USD, a source without an evidence tag, a
date in the future. Exit 2, as for a blueprint that cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from clusterctl.catalog import Catalog
from clusterctl.catalog.hardware_prices import HardwarePriceList, check
from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.limits import InputLimits
from clusterctl.location import SourceMap
from clusterctl.source import load_yaml_file

PRICE_SHEET_MAX_BYTES = 4 * 1024 * 1024
"""a price sheet of 4 MiB holds tens of thousands of items, far more than the catalog has"""


def read_price_sheet(name: str, base: Path, blueprint: SourceMap, catalog: Catalog,
                     problems_of: Callable[[ValidationError, SourceMap], list[Problem]]) -> HardwarePriceList:
    """The sheet ``name`` (``cost.price_sheet``) in ``base``, checked against ``catalog`` (shipped entries plus the
    blueprint's own); a file that is missing or leaves ``base`` is located at ``cost.price_sheet``. ``problems_of``
    turns a validation error into located problems (the blueprint loader's, so both files read alike)."""
    from clusterctl.blueprint.inventory_csv import resolved_inside

    at = ("cost", "price_sheet")
    path = base / name
    if resolved_inside(base, name) is None:
        raise BlueprintError(blueprint, [Problem(at, f"cost.price_sheet {name} is a symlink that leads out of the "
                                                     "blueprint's directory", hint="copy the sheet beside the "
                                                     "blueprint", code=LoadCode.UNREADABLE_FILE)])
    if not path.exists():
        raise BlueprintError(blueprint, [Problem(at, f"cost.price_sheet: {path} does not exist",
                                                 hint="write it in the shape of clusterctl/catalog/"
                                                      "hardware_prices.yaml (docs/report.md), or fix the name",
                                                 code=LoadCode.UNREADABLE_FILE)])
    data, smap = load_yaml_file(path, InputLimits(max_bytes=PRICE_SHEET_MAX_BYTES))
    if not isinstance(data, dict):
        raise BlueprintError(smap, [Problem((), "a price sheet is a mapping (currency:, sources:, servers:, ...)",
                                            hint="see clusterctl/catalog/hardware_prices.yaml",
                                            code=LoadCode.PRICE_SHEET)])
    try:
        sheet = HardwarePriceList.model_validate(data)
    except ValidationError as exc:
        problems = [Problem(p.path, p.message, p.hint or "see docs/report.md, \"Price sheet\"", LoadCode.PRICE_SHEET,
                            p.key, p.position) for p in problems_of(exc, smap)]
        raise BlueprintError(smap, problems) from None
    found = check(sheet, catalog)
    if found:
        raise BlueprintError(smap, [Problem(p.path, p.message, p.hint, LoadCode.PRICE_SHEET, p.key) for p in found])
    return sheet
