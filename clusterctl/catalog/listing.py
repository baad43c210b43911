"""The catalog as a plain-text table, one section after another."""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.catalog import Catalog


def _summary(section: str, e) -> str:
    if section == "accelerators":
        fp8 = f", FP8 {e.fp8_dense_tflops:g} TF" if e.fp8_dense_tflops else ""
        return (f"{e.generation}: BF16 {e.bf16_dense_tflops:g} TF dense{fp8}, {e.hbm_gb:g} GB HBM at "
                f"{e.hbm_tb_per_s:g} TB/s, {e.tdp_w:g} W")
    if section == "nics":
        return f"{e.ports} x {e.speed_gbps:g} Gb/s ({', '.join(e.protocols)})"
    if section == "switches":
        modes = " / ".join(f"{m.ports} x {m.speed_gbps:g}G" for m in e.port_modes)
        up = f" + {e.uplinks.ports} x {e.uplinks.speed_gbps:g}G up" if e.uplinks else ""
        return f"{modes}{up}, {e.power_w:g} W, {e.height_u}U ({', '.join(e.protocols)})"
    if section == "servers":
        gpus = f"{e.gpus.count} x {e.gpus.model}, " if e.gpus else ""
        nics = ", ".join(f"{n.count} x {n.model} {n.role}" for n in e.nics)
        return f"{gpus}{e.cpu.sockets} x {e.cpu.cores_per_socket}c, {e.memory_gb:g} GB, {e.power_kw:g} kW, " \
               f"{e.height_u}U {e.cooling}; {nics}"
    if section == "rack_systems":
        return (f"{e.compute_trays} x {e.compute_tray} + {e.nvlink_switch_trays} NVLink switch trays, "
                f"{e.power_kw:g} kW, {e.height_u}U")
    if section == "instances":
        n = e.network
        gpus = f"{e.gpus.count} x {e.gpus.model}, " if e.gpus else ""
        return (f"{e.provider}: {gpus}{e.vcpus} vCPU, {e.memory_gb:g} GB, "
                f"{f'{n.gpu_nics} x ' if n.gpu_nics else ''}{n.fabric} ({n.total_gbps:g} Gb/s)")
    return ""


def catalog_table(cat: Catalog, sections: Sequence[str]) -> str:
    lines = []
    for s in sections:
        entries = cat.section(s)
        lines.append(f"{s} ({len(entries)})")
        width = max((len(n) for n in entries), default=0)
        for name, e in sorted(entries.items()):
            origin = cat.origin.get((s, name), "")
            mark = "  [blueprint]" if origin == "blueprint" else ""
            lines.append(f"  {name:<{width}}  {_summary(s, e)}{mark}")
        lines.append("")
    return "\n".join(lines)
