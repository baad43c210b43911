"""Every family and row of the published modules, in a fixed order (imported explicitly, no discovery by
name)."""

from __future__ import annotations

from clusterctl.perf.published import (
    blackwell,
    fabric,
    hopper,
    moe,
    moe_families,
    narayanan,
    nccl,
    nccl_domains,
    nccl_small,
    strong_scaling,
)
from clusterctl.perf.published.rows import Family, Row


def families() -> dict[str, Family]:
    out: dict[str, Family] = {}
    for mod in _modules():
        for f in mod.FAMILIES:
            if f.name in out:
                raise ValueError(f"family {f.name!r} defined twice")
            out[f.name] = f
    return out


def rows() -> list[Row]:
    out: list[Row] = []
    for mod in _modules():
        out.extend(mod.ROWS)
    return out


def _modules():
    return (narayanan, hopper, nccl, nccl_domains, nccl_small, fabric, blackwell, moe, moe_families, strong_scaling)


__all__ = ["families", "rows"]
