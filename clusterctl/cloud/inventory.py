"""The Ansible inventory of a deployed cloud cluster: the render's groups plus each host's private address
from the Pulumi stack outputs (``clusterctl inventory BLUEPRINT --from-pulumi OUTPUTS.json -o DIR``).

Contract with the Pulumi program (``clusterctl.cloud.aws`` / ``gcp`` / ``azure``): the stack output
``nodes`` is ``{hostname: {"private_ip": ..., "group": ..., "role": ..., "instance_type": ...}}``, one entry
per host of the blueprint's cloud node groups. ``private_ip`` is required; ``group``, ``role`` and
``instance_type`` are checked against the blueprint when present. Other outputs (file systems, buckets,
VPC ids) are ignored here.

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

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan
from clusterctl.write import MANIFEST, OutputDirError, update_files, write_tree

INVENTORY = "ansible/inventory.yml"
HOSTS = "hosts/hosts"
CLOUD_FILES = (HOSTS, INVENTORY)
PULUMI_SECRET = "[secret]"
"""what ``pulumi stack output --json`` prints for a secret output without ``--show-secrets``"""
MAX_LISTED = 20


class OutputsError(ValueError):
    """The Pulumi outputs cannot be read or do not match the blueprint. ``str()`` is the located message."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class InventoryDirError(OutputDirError):
    """The output directory is not a current render of the blueprint."""


@dataclass(frozen=True)
class CloudNode:
    host: str
    private_ip: str
    group: str
    """node group in the blueprint"""


def read_outputs(path: Path) -> dict:
    """The JSON object of ``pulumi stack output --json --show-secrets``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputsError(f"{path}: cannot read the Pulumi outputs: {reason}",
                           "write it with: pulumi stack output --json --show-secrets > outputs.json") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OutputsError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}",
                           "pass the output of `pulumi stack output --json --show-secrets`, not the text format") \
            from None
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected a JSON object of stack outputs, got {type(data).__name__}",
                           "pass the output of `pulumi stack output --json --show-secrets`")
    return data


def cloud_hosts(plan: ClusterPlan) -> dict[str, str]:
    """host -> node group, for the plan's cloud node groups in plan order."""
    return {h: g.name for g in plan.groups if g.type.instance is not None for h in g.hosts}


def _listed(names: list[str]) -> str:
    shown = hostlist.compress(names[:MAX_LISTED]) if names else ""
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def cloud_nodes(plan: ClusterPlan, outputs: dict, source: Path | str,
                warnings: list[str] | None = None) -> list[CloudNode]:
    """The cloud hosts with their private addresses, in plan order; every problem is reported at once.

    Addresses outside the blueprint's in-band network (``addressing``) are appended to ``warnings``, not
    refused: the Pulumi program's VPC CIDR is a stack setting (AWS ``clusterctl:vpcCidr``) that may differ."""
    expected = cloud_hosts(plan)
    if not expected:
        raise OutputsError(f"blueprint '{plan.blueprint.name}' has no cloud node groups (instance types): "
                           f"there is nothing to take from {source}",
                           "clusterctl inventory is for blueprints with a cloud: section")
    if "nodes" not in outputs:
        keys = ", ".join(sorted(outputs)) or "none"
        raise OutputsError(f"{source}: no 'nodes' output (outputs: {keys})",
                           "render the Pulumi project with this clusterctl and run `pulumi up` again: the program "
                           "exports nodes = {hostname: {private_ip, group, role, instance_type}}")
    nodes = outputs["nodes"]
    if nodes == PULUMI_SECRET:
        raise OutputsError(f"{source}: nodes: the output is a secret shown as '{PULUMI_SECRET}'",
                           "add --show-secrets: pulumi stack output --json --show-secrets > outputs.json")
    if not isinstance(nodes, dict):
        raise OutputsError(f"{source}: nodes: expected an object {{hostname: {{private_ip: ...}}}}, "
                           f"got {type(nodes).__name__}")
    problems: list[str] = []
    extra = [h for h in nodes if h not in expected]
    missing = [h for h in expected if h not in nodes]
    if extra:
        problems.append(f"nodes: {len(extra)} host(s) that blueprint '{plan.blueprint.name}' does not have: "
                        f"{_listed(extra)}")
    if missing:
        problems.append(f"nodes: {len(missing)} host(s) of blueprint '{plan.blueprint.name}' are missing: "
                        f"{_listed(missing)}")
    pools = {}
    for p in plan.addresses:
        if p.role == "inband":
            for gi, _, _ in p.group_offsets:
                pools.setdefault(gi, p)
    group_index = {g.name: g.index for g in plan.groups}
    seen: dict[str, str] = {}
    outside: list[str] = []
    out = []
    for host, group in expected.items():
        if host not in nodes:
            continue
        entry = nodes[host]
        where = f"nodes.{host}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected an object with private_ip, got {type(entry).__name__}")
            continue
        ip = entry.get("private_ip")
        if ip == PULUMI_SECRET:
            problems.append(f"{where}.private_ip: a secret shown as '{PULUMI_SECRET}' (add --show-secrets)")
            continue
        if not isinstance(ip, str) or not ip:
            problems.append(f"{where}.private_ip: missing" if ip is None else
                            f"{where}.private_ip: expected an address string, got {json.dumps(ip)}")
            continue
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            problems.append(f"{where}.private_ip: '{ip}' is not an IP address")
            continue
        pool = pools.get(group_index[group])
        if pool is not None and addr not in ipaddress.ip_network(pool.cidr):
            outside.append(f"{where}.private_ip: {ip} is outside the blueprint's {pool.name} network {pool.cidr}")
        if ip in seen:
            problems.append(f"{where}.private_ip: {ip} is also the address of {seen[ip]}")
        seen.setdefault(ip, host)
        g = plan.group(group)
        for key, want in (("group", g.name), ("role", g.role), ("instance_type", g.type.instance_name)):
            got = entry.get(key)
            if got is not None and got != want:
                problems.append(f"{where}.{key}: '{got}' but the blueprint has {key} '{want}' for {host}")
        out.append(CloudNode(host, ip, group))
    if problems:
        shown = problems[:MAX_LISTED] + ([f"... and {len(problems) - MAX_LISTED} more"]
                                         if len(problems) > MAX_LISTED else [])
        raise OutputsError(f"{source}: the Pulumi outputs do not match blueprint '{plan.blueprint.name}' "
                           f"({len(problems)} problem(s)):\n  " + "\n  ".join(shown),
                           "pass the outputs of this blueprint's stack; after changing the blueprint, render "
                           "and `pulumi up` again before taking the outputs")
    if outside and warnings is not None:
        warnings.append(f"{source}: {len(outside)} address(es) outside the blueprint's network (the stack's VPC "
                        f"CIDR differs from addressing:): " + "; ".join(outside[:3])
                        + (f"; ... and {len(outside) - 3} more" if len(outside) > 3 else ""))
    return out


def inventory_text(rendered: str, nodes: list[CloudNode]) -> str:
    """The ansible target's inventory with ``all.hosts`` holding each cloud host's ``ansible_host``."""
    anchor = "\nall:\n"
    if anchor not in rendered:
        raise ValueError("the ansible target's inventory has no top-level 'all:' group")
    lines = [("  # cloud hosts: private addresses from the Pulumi stack outputs (clusterctl inventory "
              "--from-pulumi); group membership is in the ranges below"),
             "  hosts:"]
    lines += [f"    {json.dumps(n.host)}: {{ansible_host: {json.dumps(n.private_ip)}}}" for n in nodes]
    head, tail = rendered.split(anchor, 1)
    text = head + anchor + "\n".join(lines) + "\n" + tail
    yaml.safe_load(text)
    return text


def hosts_text(rendered: str, nodes: list[CloudNode]) -> str:
    """The ansible target's /etc/hosts block with the cloud hosts' private addresses in place of the
    'resolve through the provider's DNS' note."""
    block = ["# cloud node groups: private addresses from the Pulumi stack outputs"]
    block += [f"{n.private_ip} {n.host}" for n in nodes]
    lines = rendered.rstrip("\n").split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("# cloud node groups (")), None)
    if at is None:
        lines += block
    else:
        lines[at:at + 1] = block
    return "\n".join(lines) + "\n"


def cloud_files(plan: ClusterPlan, nodes: list[CloudNode], rendered: dict[str, str]) -> dict[str, str]:
    """``rendered`` (the ansible target's files) with the cloud versions of inventory.yml and hosts/hosts."""
    return {INVENTORY: inventory_text(rendered[INVENTORY], nodes), HOSTS: hosts_text(rendered[HOSTS], nodes)}


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
    from clusterctl.targets import render_targets

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
        raise InventoryDirError(f"{out} is not the current render of blueprint '{plan.blueprint.name}' "
                                f"({len(stale)} ansible file(s) differ: {shown}); {render_hint}")
    new = cloud_files(plan, nodes, rendered)
    # the writer's lock and journal: same bytes keep their timestamps, the manifest gets the new checksums
    result = update_files({path: new[path] for path in CLOUD_FILES}, out)
    return InventoryResult("updated", sorted(result.added + result.changed), len(nodes))
