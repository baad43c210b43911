"""What if, storage: a shared tier's bandwidth and the checkpoint's write time with building blocks down
(``clusterctl whatif``, docs/whatif.md).

A tier of ``building_blocks`` B with D of them down serves at ``(B - D) / B`` of its aggregate read and write
bandwidth while D is at most ``blocks_tolerated`` (failover partners or erasure coding keep every file
reachable), and not at all beyond. What the GPU nodes see, and the checkpoint's write time, are the healthy
report's model (perf/storage_io.py ``tier_time``: the smaller of the tier's bandwidth and their own storage NICs',
docs/report.md "Storage") on the tier with that share of its bandwidth: a tier limited by the nodes' NICs loses
nothing until its blocks' share falls below them. The write time is set against ``workload.checkpoint_budget_s``.
"""

from __future__ import annotations

from typing import Any

from clusterctl.perf.storage_io import tier_time
from clusterctl.plan.failure_domains import Effect, storage_blocks
from clusterctl.plan.model import ClusterPlan


def storage_after(plan: ClusterPlan, report: dict[str, Any], effects: list[Effect]) -> list[dict[str, Any]]:
    """One row per tier with building blocks down: blocks, whether it still serves, its bandwidth and (for the
    checkpoint tier) the checkpoint's write time healthy and after."""
    down: dict[int, set[str]] = {}
    for e in effects:
        for i, name in e.storage_blocks:
            down.setdefault(i, set()).add(name)
    st = report.get("storage") or {}
    rows_by_name = {t["name"]: t for t in st.get("tiers", [])}
    size = (st.get("model") or {}).get("checkpoint_bytes")
    ck = st.get("checkpoint") or {}
    data_tier = (st.get("data_loading") or {}).get("tier")
    out = []
    for i, names in sorted(down.items()):
        tier = plan.storage[i]
        blocks = len(storage_blocks(tier))
        tolerated = min(tier.blocks_tolerated, blocks - 1)
        share = (blocks - len(names)) / blocks if len(names) <= tolerated else 0.0
        row = rows_by_name.get(tier.name, {})
        after = tier_time(size, tier.model_copy(update={"write_gb_per_s": tier.write_gb_per_s * share,
                                                        "read_gb_per_s": tier.read_gb_per_s * share}), plan)
        write, read = (None if x is None else round(x, 6) for x in (after.write_gb_per_s, after.read_gb_per_s))
        item = {"tier": tier.name, "building_blocks": blocks, "down": sorted(names), "tolerated": tolerated,
                "serving": share > 0, "share_left": round(share, 6),
                "write_gb_per_s": {"healthy": row.get("write_gb_per_s"), "after": write},
                "read_gb_per_s": {"healthy": row.get("read_gb_per_s"), "after": read},
                "checkpoint_tier": ck.get("tier") == tier.name, "data_tier": data_tier == tier.name}
        if item["checkpoint_tier"] and size:
            after_s = round(after.write_s, 6) if after.write_s is not None else None
            budget = ck.get("budget_s")
            item["checkpoint"] = {"bytes": size, "healthy_write_s": ck.get("write_s"), "after_write_s": after_s,
                                  "budget_s": budget,
                                  "within_budget": None if budget is None or after_s is None else after_s <= budget}
        out.append(item)
    return out


def stopped_by_storage(rows: list[dict[str, Any]]) -> str | None:
    """why the training job stops, when a tier it reads data from or checkpoints to no longer serves"""
    for r in rows:
        if not r["serving"] and (r["checkpoint_tier"] or r["data_tier"]):
            what = " and ".join(w for w, on in (("reads its data from", r["data_tier"]),
                                                ("checkpoints to", r["checkpoint_tier"])) if on)
            return (f"storage tier {r['tier']}, which the job {what}, has {len(r['down'])} building blocks down of "
                    f"the {r['tolerated']} it tolerates: I/O to the unreachable files hangs and the job stops")
    return None


def storage_lines(rows: list[dict[str, Any]]) -> list[str]:
    """the terminal's lines for the tiers with blocks down"""
    out = []
    for r in rows:
        w, rd = r["write_gb_per_s"], r["read_gb_per_s"]
        line = (f"storage {r['tier']}: {len(r['down'])} of {r['building_blocks']} building blocks down "
                f"(tolerates {r['tolerated']}); ")
        if not r["serving"]:
            line += "it stops serving the files on them"
        else:
            line += (f"write {_g(w['healthy'])} -> {_g(w['after'])} GB/s, read {_g(rd['healthy'])} -> "
                     f"{_g(rd['after'])} GB/s as the GPU nodes see it")
        c = r.get("checkpoint")
        if c and c["after_write_s"] is not None:
            line += (f"; checkpoint write {_g(c['healthy_write_s'])} -> {_g(c['after_write_s'])} s"
                     + (f" (budget {_g(c['budget_s'])} s{'' if c['within_budget'] else ': OVER'})"
                        if c["budget_s"] is not None else ""))
        out.append(line)
    return out


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:,.4g}"
