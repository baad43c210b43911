"""bmc target: the hosts' BMC endpoints and the Redfish play that reaches them (docs/bmc.md).

- ``bmc/inventory.csv``: one row per host with a planned BMC address: ``host,bmc_name,bmc_address,bmc_mac,
  secret_ref`` (the MAC from the site's inventory when it names one, else empty; ``secret_ref`` is the NAME of
  the ansible-vault variable holding the credentials, never a value).
- ``ansible/vars/bmc.json``: the same as the Ansible variable ``clusterctl_bmcs`` ({host: {name, address, mac,
  secret}}), one file the play loads (not a host_vars file per host: a 100,000-GPU plan has 12,500 hosts). JSON,
  one host per line: Ansible reads it as YAML's subset, ``json`` writes it (escaping every string) ten times
  faster than the YAML emitter, and ansible-lint does not spend a minute on the 12,500 lines of the 100,000-GPU
  blueprint as it does on the YAML form. JSON has no comments: docs/bmc.md says where it comes from.
- ``ansible/bmc.yml``: the play (templates/ansible/bmc.yml.j2): power state, boot override, reset through
  Redfish with ``ansible.builtin.uri`` from the control host.

A host's BMC is its record of kind ``bmc`` (plan/site_records.py: ``gpu001-bmc``, the first BMC pool the host
takes an address from); its MAC and secret reference come from plan/host_identity.py (the reference checked at load:
clusterctl/blueprint/inventory_csv.py, ``vault_`` and lower-case letters, digits, underscores). A host without an
inventory row, or a row without a reference, uses :data:`DEFAULT_BMC_SECRET`. Nothing is written for a plan
without BMC addresses (cloud node groups have none).
"""

from __future__ import annotations

import csv
import io
import json

from clusterctl.plan.host_identity import host_identities
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.site_records import site_records
from clusterctl.targets.ansible.document import head_line
from clusterctl.targets.common import render_template
from clusterctl.yamlout import comment_lines

DEFAULT_BMC_SECRET = "vault_bmc_default"
"""the vault variable of a host whose inventory row names none: {user: ..., password: ...} (docs/bmc.md)"""
INVENTORY_CSV = "bmc/inventory.csv"
VARS_FILE = "ansible/vars/bmc.json"
PLAYBOOK = "ansible/bmc.yml"
CSV_COLUMNS = ("host", "bmc_name", "bmc_address", "bmc_mac", "secret_ref")


def bmc_endpoints(plan: ClusterPlan) -> list[dict[str, str]]:
    """Per host with a planned BMC address, in plan order: host, name, address, mac ('' when unknown) and the
    secret reference."""
    identities = host_identities(plan)
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for record in site_records(plan):
        if record.kind != "bmc" or record.owner in seen:
            continue
        seen.add(record.owner)
        identity = identities.get(record.owner)
        secret = (identity.bmc_secret if identity is not None else None) or DEFAULT_BMC_SECRET
        mac = (identity.bmc_mac if identity is not None else None) or ""
        out.append({"host": record.owner, "name": record.name, "address": record.address, "mac": mac,
                    "secret": secret})
    return out


def inventory_csv(endpoints: list[dict[str, str]]) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows((e["host"], e["name"], e["address"], e["mac"], e["secret"]) for e in endpoints)
    return text.getvalue()


def vars_file(endpoints: list[dict[str, str]]) -> str:
    """``{"clusterctl_bmcs": {host: {name, address, mac, secret}}}``, one host per line, in plan order."""
    lines = [f"    {json.dumps(e['host'])}: {json.dumps({k: e[k] for k in ('name', 'address', 'mac', 'secret')})}"
             for e in endpoints]
    return '{"clusterctl_bmcs": {\n' + ",\n".join(lines) + "\n}}\n"


def render(plan: ClusterPlan) -> dict[str, str]:
    endpoints = bmc_endpoints(plan)
    if not endpoints:
        return {}
    header = comment_lines([head_line(plan)]).rstrip("\n")
    return {INVENTORY_CSV: inventory_csv(endpoints),
            VARS_FILE: vars_file(endpoints),
            PLAYBOOK: render_template("ansible/bmc.yml.j2", header=header, vars_file="vars/bmc.json")}
