"""The Ansible inventory of a deployed cloud cluster: the render's groups plus each host's private address
from the Pulumi stack outputs (``clusterctl inventory BLUEPRINT --from-pulumi OUTPUTS.json -o DIR``).

Contract with the Pulumi program (``clusterctl.cloud.pulumi.aws`` / ``gcp`` / ``azure``): the stack output
``nodes`` is ``{hostname: {"private_ip": ..., "group": ..., "role": ..., "instance_type": ...}}``, one entry
per host of the blueprint's static cloud node groups (elastic groups' hosts exist only while Slurm's power saving
has created them: they are not required, and are taken when listed). ``private_ip`` is required; ``group``, ``role`` and
``instance_type`` are checked against the blueprint when present. Other outputs (file systems, buckets,
VPC ids) are ignored here.

What this module does not do: put the files into a render's directory. That is
:func:`clusterctl.targets.cloud_inventory.write_inventory`, which renders the ansible target again to compare
(the cloud package sits below the targets and renders nothing).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterctl import hostlist
from clusterctl.cloud.stack.node_address import Refused, check_address
from clusterctl.cloud.stack.outputs_file import OutputsError, read_outputs
from clusterctl.cloud.stack.spec import inband_networks
from clusterctl.hidden_chars import shown
from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import AddressPool, ClusterPlan

INVENTORY = "ansible/inventory.yml"
HOSTS = "hosts/hosts"
__all__ = ["OutputsError", "read_outputs", "cloud_nodes", "cloud_files"]

CLOUD_FILES = (HOSTS, INVENTORY)
PULUMI_SECRET = "[secret]"
"""what ``pulumi stack output --json`` prints for a secret output without ``--show-secrets``"""
MAX_LISTED = 20


@dataclass(frozen=True)
class CloudNode:
    host: str
    private_ip: str
    group: str
    """node group in the blueprint"""


def cloud_hosts(plan: ClusterPlan) -> dict[str, str]:
    """host -> node group, for the plan's cloud node groups in plan order."""
    return {h: g.name for g in plan.groups if g.type.instance is not None for h in g.hosts}


def elastic_hosts(plan: ClusterPlan) -> frozenset[str]:
    """Hosts of the elastic node groups (``cloud.elastic``): the stack has no instance for them until a job
    resumes them, so its ``nodes`` output does not list them."""
    return frozenset(h for g in plan.groups if g.type.instance is not None and is_elastic(plan, g.index)
                     for h in g.hosts)


HOST_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
OUTPUT_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _listed(names: list[str]) -> str:
    """Host names from the outputs for a message: plain ones compressed, anything else quoted and escaped."""
    plain = [n for n in names if HOST_TEXT.fullmatch(n)]
    odd = [shown(n) for n in names if not HOST_TEXT.fullmatch(n)]
    parts = ([hostlist.compress(plain[:MAX_LISTED])] if plain else []) + odd[:MAX_LISTED]
    hidden = max(0, len(plain) - MAX_LISTED) + max(0, len(odd) - MAX_LISTED)
    return ", ".join(parts) + (f" and {hidden} more" if hidden else "")


@dataclass(frozen=True)
class _Problem:
    text: str
    hint: str = ""


def _node_problems(host: str, entry: object, group: str, plan: ClusterPlan,
                   pool: AddressPool | None) -> tuple[str | None, list[_Problem]]:
    """The checked private address of one host's entry in ``nodes``, and what is wrong with the entry."""
    where = f"nodes.{host}"
    if not isinstance(entry, dict):
        return None, [_Problem(f"{where}: expected an object with private_ip, got {shown(entry)}")]
    problems = []
    g = plan.group(group)
    for key, want in (("group", g.name), ("role", g.role), ("instance_type", g.type.instance_name)):
        got = entry.get(key)
        if got is not None and got != want:
            problems.append(_Problem(f"{where}.{key}: {shown(got)} but the blueprint has {key} '{want}' for {host}"))
    ip = entry.get("private_ip")
    if ip == PULUMI_SECRET:
        return None, problems + [_Problem(f"{where}.private_ip: a secret shown as '{PULUMI_SECRET}'",
                                          "add --show-secrets: pulumi stack output --json --show-secrets")]
    if ip is None:
        return None, problems + [_Problem(f"{where}.private_ip: missing; expected the host's private address")]
    network = ipaddress.ip_network(pool.cidr) if pool is not None else None
    checked = check_address(ip, network, pool.name if pool is not None else "")
    if isinstance(checked, Refused):
        return None, problems + [_Problem(f"{where}.private_ip: {checked.problem}; expected {checked.expected}",
                                          _network_hint(pool))]
    return str(checked), problems


def _network_hint(pool: AddressPool | None) -> str:
    if pool is None:
        return "add an addressing pool with role: inband holding the cloud VPC's range to the blueprint"
    return (f"the rendered Pulumi project puts the nodes in addressing.{pool.name} ({pool.cidr}); if the stack uses "
            f"another range (clusterctl:vpcCidr, primaryCidr, vnetCidr or an existing VPC), set "
            f"addressing.{pool.name}.cidr in the blueprint to it and render again")


def cloud_nodes(plan: ClusterPlan, outputs: dict, source: Path | str) -> list[CloudNode]:
    """The cloud hosts with their private addresses, in plan order; every problem is reported at once.

    Each address must be a plain IP address of an ordinary unicast kind in the host's in-band network
    (:mod:`clusterctl.cloud.stack.node_address`); anything else is an error, never a warning, because the address
    is written into the inventory and /etc/hosts."""
    expected = cloud_hosts(plan)
    if not expected:
        raise OutputsError(f"blueprint '{plan.name}' has no cloud node groups (instance types): "
                           f"there is nothing to take from {source}",
                           "clusterctl inventory is for blueprints with a cloud: section")
    if "nodes" not in outputs:
        keys = ", ".join(k if OUTPUT_KEY.fullmatch(k) else shown(k, 40) for k in sorted(outputs)[:20]) or "none"
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
    problems: list[_Problem] = []
    extra = [h for h in nodes if h not in expected]
    elastic = elastic_hosts(plan)  # created by Slurm's ResumeProgram, not by pulumi up: absent by design
    missing = [h for h in expected if h not in nodes and h not in elastic]
    if extra:
        problems.append(_Problem(f"nodes: {len(extra)} host(s) that blueprint '{plan.name}' does not "
                                 f"have: {_listed(extra)}; expected only the hosts of its cloud node groups"))
    if missing:
        problems.append(_Problem(f"nodes: {len(missing)} host(s) of blueprint '{plan.name}' are missing: "
                                 f"{_listed(missing)}"))
    pools = inband_networks(plan)
    seen: dict[str, str] = {}
    out = []
    for host, group in expected.items():
        if host not in nodes:
            continue
        ip, found = _node_problems(host, nodes[host], group, plan, pools.get(group))
        problems += found
        if ip is None:
            continue
        if ip in seen:
            problems.append(_Problem(f"nodes.{host}.private_ip: {ip} is also the address of {seen[ip]}; "
                                     f"expected one address per host"))
        seen.setdefault(ip, host)
        out.append(CloudNode(host, ip, group))
    if problems:
        shown_problems = [p.text for p in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            shown_problems.append(f"... and {len(problems) - MAX_LISTED} more")
        hints = list(dict.fromkeys(p.hint for p in problems if p.hint))
        hints.append("pass the outputs of this blueprint's stack; after changing the blueprint, render and "
                     "`pulumi up` again before taking the outputs; nothing was written")
        raise OutputsError(f"{source}: the Pulumi outputs do not match blueprint '{plan.name}' "
                           f"({len(problems)} problem(s)):\n  " + "\n  ".join(shown_problems), "; ".join(hints))
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
