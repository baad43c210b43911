"""``clusterctl inventory BLUEPRINT --from-pulumi OUTPUTS.json -o DIR``: put the cloud inventory
(:mod:`clusterctl.cloud.stack.inventory`: the ansible target's files with each cloud host's private address) into a
render's directory. It lives with the targets because it renders the ansible target again to compare.

Where it goes: ``DIR`` is the directory ``clusterctl render BLUEPRINT -o DIR`` wrote. Two files are
replaced in place by the writer's protocol (``clusterctl.write.update_files``: under the directory's lock,
journaled, each file atomically) together with their new checksums in the manifest; every other file, and
everything clusterctl did not write (``DIR/pulumi``'s virtualenv and stack settings), is left alone:

- ``ansible/inventory.yml``: the same groups and host ranges as the bare-metal render, plus one line per
  cloud host under ``all.hosts`` with ``ansible_host: <private_ip>`` (cloud names are not in DNS as the
  blueprint spells them, so Ansible needs the address);
- ``hosts/hosts``: the static /etc/hosts block the common role installs, with the cloud hosts' private
  addresses added, so the nodes resolve each other's blueprint names (slurm.conf uses them).

``DIR`` must be current: if another ansible file differs from what ``render`` writes now, the command
refuses (render again first). A new or empty ``DIR`` gets a full render with the cloud files, through the
same atomic writer as ``render``. ``clusterctl render --check DIR`` afterwards reports these two files as
changed (they are the render plus addresses); ``render`` again writes the range-only versions back, so
run ``clusterctl inventory`` after every render.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterctl.cloud.stack.inventory import CLOUD_FILES, CloudNode, cloud_files
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import render_targets
from clusterctl.write import MANIFEST, OutputDirError, update_files, write_tree


class InventoryDirError(OutputDirError):
    """The output directory is not a current render of the blueprint."""


def _manifest_paths(out: Path) -> list[str] | None:
    manifest = out / MANIFEST
    if not manifest.is_file():
        return None
    return [line.rsplit(" ", 1)[0] for line in manifest.read_text().splitlines() if line and not line.startswith("#")]


@dataclass
class InventoryResult:
    mode: str
    """'updated' (in an existing render) or 'rendered' (a new directory)"""
    changed: list[str]
    hosts: int


def write_inventory(plan: ClusterPlan, nodes: list[CloudNode], out: Path, blueprint_file: str) -> InventoryResult:
    """Put the cloud inventory into ``out`` (see the module doc). Raises OutputDirError / InventoryDirError."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InventoryDirError(f"{out} exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        files = render_targets(plan)
        files.update(cloud_files(plan, nodes, files))
        write_tree(files, out, executable={p for p in files if p.endswith(".sh")})
        return InventoryResult("rendered", sorted(CLOUD_FILES), len(nodes))
    listed = _manifest_paths(out)
    render_hint = f"run `clusterctl render {blueprint_file} -o {out}` first"
    if listed is None:
        raise InventoryDirError(f"{out} is not empty and was not rendered by clusterctl (no {MANIFEST}); "
                                f"{render_hint}, or pass a new directory")
    absent = [p for p in CLOUD_FILES if p not in listed]
    if absent:
        raise InventoryDirError(f"{out} was rendered without the ansible target (no {', '.join(absent)}); "
                                f"{render_hint}")
    rendered = render_targets(plan, ["ansible"])
    stale = []
    for path, text in rendered.items():
        if path in CLOUD_FILES:
            continue
        target = out / path
        if not target.is_file() or target.read_bytes() != text.encode():
            stale.append(path)
    if stale:
        shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
        raise InventoryDirError(f"{out} is not the current render of blueprint '{plan.name}' "
                                f"({len(stale)} ansible file(s) differ: {shown}); {render_hint}")
    new = cloud_files(plan, nodes, rendered)
    # the writer's lock and journal: same bytes keep their timestamps, the manifest gets the new checksums
    result = update_files({path: new[path] for path in CLOUD_FILES}, out)
    return InventoryResult("updated", sorted(result.added + result.changed), len(nodes))
