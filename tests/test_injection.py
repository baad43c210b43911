"""No blueprint string becomes live syntax: every string field of the JSON Schema, fed injection payloads.

For **every** string field of ``clusterctl schema`` (property values, list items, mapping keys and mapping
values; found by walking ``$defs``/``properties``/``items``/``additionalProperties``/``propertyNames``),
a payload (a line break with ``Prolog=``, ``#``, ``=``, quotes, ``$(...)``, backticks, ``{{ }}``, ``{% %}``,
``;``, a carriage return) is put into a blueprint that uses the field, and the blueprint is loaded,
expanded and rendered in-process. The answer must be one of:

- refused: a :class:`BlueprintError` (exit 2) with a problem on exactly that field's path, or
- rendered such that every output still reads back to the same structure as the render without the
  payload: Slurm files by a ``Key=Value`` line reader (same keys on the same lines), nccl.conf by a
  ``KEY=VALUE`` reader, YAML by ``yaml.safe_load`` (with ``!unsafe`` accepted) with the same shape and no
  new Jinja in untagged strings, Jinja templates with the same non-text tokens, Python by ``ast.parse``
  with the same tree up to constants, shell by ``bash -n``, ``/etc/hosts`` by a column reader, and every
  other file with the same number of lines.

Fields are located in shipped blueprints whose ``catalog:`` sections are given copies of the shipped
entries they use (so catalog fields reach the outputs too), plus a few settings the shipped blueprints do
not use. ``test_every_string_field_is_located`` fails when a new string field has no location, so the
sweep cannot silently skip it. The concrete cases of issue 9 run through the real CLI.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import jinja2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterctl.blueprint.load import format_path, load_blueprint_text
from clusterctl.catalog import load_shipped_catalog
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.targets import render_targets
from tests.helpers import REPO, cli, shipped

PAYLOADS = ("\nProlog=/tmp/x", "#", "=", "'", '"', "$(touch /tmp/pwned)", "`touch /tmp/pwned`",
            "{{ lookup('pipe','id') }}", "{% if true %}x{% endif %}", ";", "\r", " x=y")
PLACES = ("suffix", "prefix", "middle", "whole")


# --- the schema's string fields ---------------------------------------------------------------------------

@cache
def schema() -> dict:
    """The JSON Schema as the real command prints it."""
    proc = cli("schema")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _is_string(node: dict) -> bool:
    return node.get("type") == "string" and "enum" not in node and "const" not in node


def _leaves(node: dict, field: str) -> Iterator[str]:
    """Field ids of the string leaves under one property schema: ``Def.prop``, ``[]`` for list items,
    ``{key}`` for mapping keys, ``{}`` for mapping values. Referenced models are enumerated on their own."""
    if "$ref" in node:
        return
    for option in node.get("anyOf", []) + node.get("oneOf", []):
        yield from _leaves(option, field)
    if _is_string(node):
        yield field
    if node.get("type") == "array":
        yield from _leaves(node.get("items", {}), field + "[]")
    if node.get("type") == "object" and "properties" not in node:
        if "propertyNames" in node:
            yield field + "{key}"
        if isinstance(node.get("additionalProperties"), dict):
            yield from _leaves(node["additionalProperties"], field + "{}")


@cache
def string_fields() -> tuple[str, ...]:
    s = schema()
    models = {"Blueprint": s, **s["$defs"]}
    out = {leaf for name, model in models.items() for prop, sub in model.get("properties", {}).items()
           for leaf in _leaves(sub, f"{name}.{prop}")}
    return tuple(sorted(out))


# --- where each field occurs in a blueprint ---------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    base: str
    path: tuple
    key: bool  # the field is a mapping key: the payload renames it


def _add(found: dict, field: str, site: Site) -> None:
    """Keep the first place of ``field`` in each base blueprint."""
    places = found.setdefault(field, [])
    if not any(p.base == site.base for p in places):
        places.append(site)


def _type_ok(option: dict, value: object) -> bool:
    if "$ref" in option:
        return isinstance(value, dict)
    kind = option.get("type")
    return {"string": isinstance(value, str), "null": value is None, "array": isinstance(value, list),
            "object": isinstance(value, dict), "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool)}.get(kind, False)


def _locate(node: dict, value: object, path: tuple, field: str, base: str, found: dict) -> None:
    defs = schema()["$defs"]
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        _locate_model(name, defs[name], value, path, base, found)
        return
    options = node.get("oneOf") or node.get("anyOf")
    if options:
        disc = node.get("discriminator")
        if disc and isinstance(value, dict):
            name = disc["mapping"][value[disc["propertyName"]]].rsplit("/", 1)[-1]
            _locate_model(name, defs[name], value, path, base, found)
            return
        for option in options:
            if _type_ok(option, value) or ("oneOf" in option and isinstance(value, (str, dict))):
                _locate(option, value, path, field, base, found)
                return
        return
    if _is_string(node) and isinstance(value, str):
        _add(found, field, Site(base, path, False))
    elif node.get("type") == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            _locate(node.get("items", {}), item, path + (i,), field + "[]", base, found)
    elif node.get("type") == "object" and isinstance(value, dict) and "properties" not in node:
        for k, v in value.items():
            if "propertyNames" in node:
                _add(found, field + "{key}", Site(base, path + (k,), True))
            _locate(node.get("additionalProperties", {}), v, path + (k,), field + "{}", base, found)


def _locate_model(name: str, model: dict, value: object, path: tuple, base: str, found: dict) -> None:
    if not isinstance(value, dict):
        return
    for prop, sub in model.get("properties", {}).items():
        if prop in value:
            _locate(sub, value[prop], path + (prop,), f"{name}.{prop}", base, found)


@cache
def _shipped_catalog() -> dict:
    out: dict = {}
    from clusterctl.catalog import NOT_HARDWARE

    for path in sorted(p for p in (REPO / "clusterctl" / "catalog").glob("*.yaml") if p.name not in NOT_HARDWARE):
        for section, entries in (yaml.safe_load(path.read_text()) or {}).items():
            out.setdefault(section, {}).update(entries)
    return out


def with_catalog_copies(data: dict) -> dict:
    """``data`` with a copy of every shipped catalog entry it uses in its own ``catalog:`` section, so
    the entries' strings (descriptions, vendors, sources, CPU models) are blueprint input that reaches
    the outputs."""
    cat = _shipped_catalog()
    own = data.setdefault("catalog", {})

    def take(section: str, name: str | None) -> dict | None:
        if name and name in cat.get(section, {}):
            own.setdefault(section, {})[name] = copy.deepcopy(cat[section][name])
            return own[section][name]
        return None

    for nt in data.get("node_types", {}).values():
        for entry in (take("servers", nt.get("server")), take("instances", nt.get("instance"))):
            if entry:
                take("accelerators", (entry.get("gpus") or {}).get("model"))
                for nic in entry.get("nics", []):
                    take("nics", nic["model"])
                rack = take("rack_systems", entry.get("rack_system"))
                if rack:
                    take("servers", rack["compute_tray"])
    for f in data.get("fabrics", []):
        for key in ("switch", "spine_switch", "core_switch"):
            take("switches", f.get(key))
    for profile in data.get("rack_profiles", {}).values():
        take("rack_systems", profile.get("system"))
    return data


def lab_extended() -> dict:
    """The lab blueprint with the optional string settings no shipped blueprint uses."""
    data = shipped("lab-2node")
    data["racks"][0]["row"] = "a"
    data["cooling"] = {"cdus": [{"name": "cdu-a", "capacity_kw": 100, "flow_lpm": 200, "supply_c": 30}]}
    data["rack_profiles"]["lab"]["cdu"] = "cdu-a"
    data["node_types"]["hgx"]["features"] = ["h100"]
    data["node_types"]["hgx"]["nccl"] = {"ib_hca": ["mlx5_0", "mlx5_1:1"], "socket_ifname": "=bond0"}
    data["fabrics"][0]["spine_switch"] = "qm9700"
    data["fabrics"][0]["core_switch"] = "qm9700"
    data["fabrics"][1]["core_switch"] = "sn2201"
    data["storage"].append({"name": "s3", "tier": "object", "endpoint": "https://s3.example", "mount": "/s3",
                            "capacity_tb": 100, "read_gb_per_s": 10, "write_gb_per_s": 10})
    data["storage"].append({"name": "lustre", "tier": "parallel", "servers": "10.2.0.4@tcp:/lustrefs",
                            "mount": "/lustre", "capacity_tb": 100, "read_gb_per_s": 10, "write_gb_per_s": 10,
                            "client_repo": "https://repo.example/lustre", "client_repo_key": "https://repo.example/k.asc"})
    data["node_types"]["hgx"]["storage_interfaces"] = ["ibp154s0"]
    data["workload"] = {"params_b": 70, "model": "llama3-70b"}
    data["slurm"].update(cluster_name="lab_2node", accounting_host="head01", accounting_backup_host="gpu01",
                         database_host="db01", database_ca="/etc/ssl/certs/db01-ca.pem")
    data["site"]["time_servers"] = ["ntp1.example.org"]
    data["site"]["inventory"] = ["lab-2node-inventory.csv"]  # in INVENTORIES
    data["cost"] = {"price_sheet": "lab-2node-prices.yaml"}  # in INVENTORIES
    data["site"].update(dns_domain="lab.example.org", dns_servers=["10.0.0.53"])
    data["site"]["provisioner"] = {"kind": "pxe", "server": "head01", "bios_boot_file": "undionly.kpxe",
                                   "uefi_boot_file": "ipxe.efi", "ipxe_script_url": "http://10.10.0.19/boot.ipxe",
                                   "http_boot_url": "http://10.10.0.19/ipxe.efi"}
    data["slurm"]["partitions"][0]["max_time"] = "7-00:00:00"
    data["slurm"]["scheduler"] = {"exclusive_partitions": ["gpu"]}  # a partition name reaching OverSubscribe
    data["slurm"]["rollout"] = {"pull": {"source": "https://git.example.com/cluster/lab.git", "ref": "release/1"}}
    data["software"].update(nccl="2.21.5", doca="2.7.0")
    data["validation"] = {"suppress": [{"rule": "POWER001", "reason": "lab bench power is metered"}]}
    data["node_types"]["inline"] = {"spec": copy.deepcopy(_shipped_catalog()["servers"]["cpu-1u"])}
    data["slurm"]["install"] = {"kind": "repo", "url": "https://repo.example.com/slurm/debian",
                                "key": "https://repo.example.com/slurm/key.asc", "suite": "jammy",
                                "key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
                                "components": ["main"], "version": "24.05.4-1"}
    data["users"] = {"directory": {"uris": ["ldaps://ldap01.example.com"], "search_base": "dc=example,dc=com",
                                   "ca_certificate": "/etc/ssl/certs/example-ca.pem",
                                   "bind_dn": "cn=sssd,ou=services,dc=example,dc=com"},
                     "admin_groups": ["hpcadmin"],
                     "accounts": [{"name": "research", "parent": "root", "default_qos": "normal", "users": ["alice"],
                                   "groups": ["researchers"]}]}
    data["slurm"]["partitions"][0]["allow_accounts"] = ["research"]
    data["acceptance"] = {"nccl_tests": "/opt/nccl-tests/build", "hpl_container": "24.09"}  # docs/acceptance.md
    return with_catalog_copies(data)


def lab_distro() -> dict:
    """The lab blueprint on Debian 12 with the distribution's Slurm, pinned (slurm.install kind distro)."""
    data = shipped("lab-2node")
    data["software"]["os"] = "debian-12"
    data["slurm"].update(version="22.05", gres_autodetect="off",
                         install={"kind": "distro", "version": "22.05.8-4+deb12u3"})
    data["slurm"]["accounting_records"] = {"archive_directory": "/srv/slurmdbd/archive",
                                           "dump_directory": "/srv/slurmdbd/dumps"}
    return with_catalog_copies(data)


BASES = ("lab-extended", "lab-distro", "aws-p5", "gcp-a3-mega", "azure-nd-h100-v5", "gb200-nvl72-8rack",
         "dgx-h100-superpod-1su", "hgx-h200-roce-1024")


def roce_extended() -> dict:
    """The RoCE example with its spine and core switch models named explicitly."""
    data = shipped("hgx-h200-roce-1024")
    for f in data["fabrics"]:
        if f["kind"] == "roce":
            f.setdefault("spine_switch", f["switch"])
            f.setdefault("core_switch", f["switch"])
    return data


def aws_extended() -> dict:
    """aws-p5 with its GPU group elastic (the power-save render) and an existing compute identity."""
    data = shipped("aws-p5")
    data["node_groups"][0]["cloud"] = {"elastic": True}
    data["cloud"]["identities"] = {"compute": {"existing": "arn:aws:iam::123456789012:instance-profile/gpu-nodes",
                                               "grants": ["read-config", "read-secrets"]}}
    return data


@cache
def base(name: str) -> dict:
    if name == "lab-extended":
        return lab_extended()
    if name == "aws-p5":
        return with_catalog_copies(aws_extended())
    if name == "lab-distro":
        return lab_distro()
    return with_catalog_copies(roce_extended() if name == "hgx-h200-roce-1024" else shipped(name))


@cache
def sites() -> dict[str, list[Site]]:
    """Field id -> its first place in each base blueprint that has it."""
    found: dict[str, list[Site]] = {}
    for name in BASES:
        _locate_model("Blueprint", schema(), base(name), (), name, found)
    return found


# --- putting a payload in ---------------------------------------------------------------------------------

def _place(original: str, payload: str, place: str) -> str:
    if place == "prefix":
        return payload + original
    if place == "middle":
        return original[:len(original) // 2] + payload + original[len(original) // 2:]
    if place == "whole":
        return payload
    return original + payload


def with_value(data: dict, site: Site, make) -> tuple[dict, tuple]:
    """A copy of ``data`` whose value (or key) at ``site`` is ``make(original)``; and the new path."""
    data = copy.deepcopy(data)
    parent = data
    for part in site.path[:-1]:
        parent = parent[part]
    last = site.path[-1]
    if not site.key:
        parent[last] = make(parent[last])
        return data, site.path
    new = make(last)
    items = [(new if k == last else k, v) for k, v in parent.items()]
    parent.clear()
    parent.update(items)
    return data, site.path[:-1] + (new,)


# --- reading outputs back ---------------------------------------------------------------------------------

class _Unsafe(str):
    """A string Ansible will not template (``!unsafe``)."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: _Unsafe(loader.construct_scalar(node)))
_JINJA = re.compile(r"\{\{|\{%|\{#")


def _shape(value: object, templated: bool = False) -> object:
    """The structure of loaded data: mapping keys, list lengths and, in files Ansible templates
    (``templated``), the Jinja in each string (an ``!unsafe`` string is never templated)."""
    if isinstance(value, dict):
        return {str(k): _shape(v, templated) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v, templated) for v in value]
    if isinstance(value, str):
        return ("text", len(_JINJA.findall(value)) if templated and not isinstance(value, _Unsafe) else 0)
    return type(value).__name__


def _slurm_keys(text: str) -> list[tuple[str, ...]]:
    """slurm.conf(5)-style files: '#' starts a comment; each line is whitespace-separated Key=Value."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(tuple(tok.split("=", 1)[0] if "=" in tok else f"<bare {tok}>" for tok in line.split()))
    return out


def _nccl_keys(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            assert "=" in line, f"not KEY=VALUE: {line!r}"
            out.append(line.split("=", 1)[0].strip())
    return out


def _hosts_columns(text: str) -> list[int]:
    return [len(line.split()) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _jinja_tokens(text: str) -> list[tuple[str, str]]:
    return [(tok, val) for _, tok, val in jinja2.Environment().lex(text) if tok != "data"]


class _Blank(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.Constant(value=None)


def _python_tree(text: str) -> str:
    return ast.dump(_Blank().visit(ast.parse(text)))


def reads_back(path: str, text: str, before: str) -> str | None:
    """None when ``text`` (with a payload in the blueprint) reads back to the same structure as
    ``before`` (without); otherwise what differs."""
    if text == before:
        return None
    name = path.rsplit("/", 1)[-1]
    if path.startswith("slurm/") and (name.endswith(".conf") or name.endswith(".conf.j2")):
        if _slurm_keys(text) != _slurm_keys(before):
            return "Slurm keys differ"
    if path.startswith("nccl/") and _nccl_keys(text) != _nccl_keys(before):
        return "NCCL keys differ"
    ansible = path.startswith("ansible/")  # vars and inventory Ansible templates when it reads them
    if name.endswith((".yml", ".yaml")) and \
            _shape(yaml.load(text, _Loader), ansible) != _shape(yaml.load(before, _Loader), ansible):
        return "YAML structure differs (or new Jinja in a string Ansible templates)"
    if name.endswith(".json") and _shape(json.loads(text)) != _shape(json.loads(before)):
        return "JSON structure differs"
    if name.endswith(".py") and _python_tree(text) != _python_tree(before):
        return "Python tree differs"
    if name.endswith(".j2") and _jinja_tokens(text) != _jinja_tokens(before):
        return "Jinja tokens differ"
    if path == "hosts/hosts" and _hosts_columns(text) != _hosts_columns(before):
        return "hosts columns differ"
    if name.endswith(".sh") or text.startswith("#!/bin/bash") or text.startswith("#!/bin/sh"):
        proc = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
        if proc.returncode:
            return f"bash -n: {proc.stderr.strip()}"
    if len(text.splitlines()) != len(before.splitlines()):
        return "line count differs"
    return None


def neutral(payload: str) -> str:
    """The payload with its syntax taken out: every non-space character an 'x'. A value changed by it
    means the same to clusterctl as the payload does (``vendor: NVIDIAxx`` is no NVIDIA part either) and
    wraps the same in comments, so the two renders differ only where the payload's syntax leaks."""
    return re.sub(r"\S", "x", payload)


def to_yaml(data: dict) -> str:
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


_CATALOG = load_shipped_catalog()


INVENTORIES = REPO / "tests" / "blueprints" / "inventory"
"""where the files beside the base blueprints are (lab-extended names a site.inventory file and a
cost.price_sheet)"""


def plan_data(data: dict):
    """Load and expand, as `validate` does (the shipped catalog read once for the whole module)."""
    return expand(load_blueprint_text(to_yaml(data), "bp.yaml", INVENTORIES), catalog=_CATALOG)


def refused(site: Site, field: str, payload: str, place: str) -> tuple[bool, dict]:
    """(True, _) when the blueprint with the payload is refused on exactly the field's path; (False,
    the changed data) when it loads and expands. Anything else fails the test."""
    data, path = with_value(base(site.base), site, lambda v: _place(v, payload, place))
    try:
        plan_data(data)
    except BlueprintError as exc:
        named = [p for p in exc.problems if tuple(p.path) == tuple(path)]
        assert named, (f"{field} = {payload!r} ({place}) refused, but not on {format_path(path)}: "
                       f"{[p.message for p in exc.problems]}")
        assert all("\n" not in p.message and "\r" not in p.message for p in named)
        return True, data
    return False, data


def check(site: Site, field: str, payload: str, place: str) -> str:
    """Run one case; returns "refused" or "rendered" (and fails the test on anything else)."""
    no, data = refused(site, field, payload, place)
    if no:
        return "refused"
    files = render_targets(plan_data(data))
    before = render_targets(plan_data(with_value(base(site.base), site,
                                                 lambda v: _place(v, neutral(payload), place))[0]))
    assert sorted(files) == sorted(before), f"{field} = {payload!r} changed the set of files"
    for out_path, text in files.items():
        why = reads_back(out_path, text, before[out_path])
        assert why is None, f"{field} = {payload!r} ({place}): {out_path}: {why}"
    return "rendered"


# --- the tests --------------------------------------------------------------------------------------------

def test_every_string_field_is_located():
    """The sweep below covers the whole schema: a string field added without a place to put it fails."""
    fields = string_fields()
    assert len(fields) > 60  # the walk found the schema's strings (sanity: about 90 today)
    for expected in ("LocalTier.mount", "Blueprint.node_types{key}", "Server.sources{}", "Server.sources{key}",
                     "NcclNames.ib_hca[]", "Workload.model", "CloudInstance.regions[]"):
        assert expected in fields
    missing = sorted(set(fields) - set(sites()))
    assert not missing, f"string fields no base blueprint uses: {missing}"


@pytest.mark.parametrize("path,before,after", [
    ("slurm/slurm.conf", "PartitionName=gpu MaxTime=60\n", "PartitionName=gpu MaxTime=60\nProlog=/tmp/x\n"),
    ("slurm/slurm.conf", "NodeName=gpu01 Feature=h100\n", "NodeName=gpu01 Feature=h100 Prolog=/tmp/x\n"),
    ("nccl/hgx.conf", "NCCL_SOCKET_IFNAME==bond0\n", "NCCL_SOCKET_IFNAME==bond0\nNCCL_NET_PLUGIN=/tmp/x\n"),
    ("ansible/group_vars/all.yml", "mounts: ['/raid']\n", "mounts: [\"{{ lookup('pipe','id') }}\"]\n"),
    ("ansible/group_vars/all.yml", "a: {b: 1}\n", "a: {b: 1, c: 2}\n"),
    ("tests/test_gpu.py", "MOUNTS = ['/raid']\n", "MOUNTS = ['/raid'] + [__import__('os').system('id')]\n"),
    ("ansible/roles/x/templates/a.j2", "x = 1\n", "x = {{ lookup('pipe','id') }}\n"),
    ("hosts/hosts", "10.0.0.1 gpu01\n", "10.0.0.1 gpu01 evil\n"),
    ("ansible/roles/x/files/a.sh", "#!/bin/bash\nA=1\n", "#!/bin/bash\nA='1\n"),
    ("ansible/ansible.cfg", "[defaults]\nx = 1\n", "[defaults]\nx = 1\ny = 2\n"),
])
def test_the_readers_see_an_injection(path, before, after):
    """The comparison above can fail: each reader tells an injected line or key from the original."""
    assert reads_back(path, before, before) is None
    assert reads_back(path, after, before) is not None


def test_unsafe_tagged_jinja_is_data():
    """A string Ansible never templates (``!unsafe``) may hold Jinja; an untagged one may not."""
    before = "mounts: ['/raid']\n"
    assert reads_back("ansible/group_vars/all.yml", "mounts: [!unsafe \"/raid{{ x }}\"]\n", before) is None
    assert reads_back("ansible/group_vars/all.yml", "mounts: [\"/raid{{ x }}\"]\n", before) is not None


FREE_TEXT = re.compile(r".*\.(description|vendor|reason)$|.*\.sources\{\}$|^Cpu\.model$")
"""the free-text fields: the only ones that may accept a payload (and must then render it harmlessly)"""


@pytest.mark.parametrize("field", string_fields())
def test_payloads_in_every_string_field(field):
    """Every payload appended to a valid value is refused on the field; in free text, where some are
    accepted, all accepted ones together render harmlessly (one render each way: the combinations are
    the property test's below)."""
    first = sites()[field][0]
    accepted = [p for p in PAYLOADS if not refused(first, field, p, "suffix")[0]]
    if not FREE_TEXT.match(field):
        assert not accepted, f"{field} accepts {accepted}: only free text may"
        return
    assert not any("\n" in p or "\r" in p for p in accepted), f"{field} accepts a line break"
    for site in sites()[field]:  # free text may reach different outputs in different blueprints
        assert check(site, field, "".join(accepted), "suffix") == "rendered"


FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(field=st.sampled_from(string_fields()), parts=st.lists(st.sampled_from(PAYLOADS), min_size=1, max_size=3),
       place=st.sampled_from(PLACES), which=st.integers(min_value=0, max_value=len(BASES) - 1))
def test_payload_combinations_anywhere(field, parts, place, which):
    """Payloads combined and put before, inside, after or instead of the value, in any blueprint that
    has the field."""
    places = sites()[field]
    check(places[which % len(places)], field, "".join(parts), place)


def test_free_text_payloads_render_harmlessly_through_the_cli(tmp_path):
    """The real command: a description full of payloads validates, renders (exit 0), and the rendered
    outputs read back like the render of the plain blueprint."""
    data = shipped("lab-2node")
    plain, bad = tmp_path / "plain.yaml", tmp_path / "bad.yaml"
    payload = "".join(p for p in PAYLOADS if "\n" not in p and "\r" not in p)
    data["description"] = neutral(payload)
    plain.write_text(to_yaml(data))
    data["description"] = payload
    bad.write_text(to_yaml(data))
    for src, out in ((plain, "a"), (bad, "b")):
        proc = cli("render", str(src), "-o", str(tmp_path / out))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    a, b = tmp_path / "a", tmp_path / "b"
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and ".clusterctl" not in str(p))
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and ".clusterctl" not in str(p))
    for rel in files:
        why = reads_back(str(rel), (b / rel).read_text(), (a / rel).read_text())
        assert why is None, f"{rel}: {why}"
    assert not (tmp_path / "pwned").exists()


# --- the concrete cases of issue 9, through the real CLI -----------------------------------------------------

def _nccl(data: dict, **names) -> None:
    data["node_types"]["hgx"]["nccl"] = names


def _rename_addressing(data: dict) -> None:
    data["addressing"] = {("in\nband" if k == "inband" else k): v for k, v in data["addressing"].items()}


ISSUE_CASES = {  # name: (change to the lab blueprint, field named in the message, why, text on the located line)
    "mount-command": (lambda d: d["storage"][1].update(mount="/raid$(touch /tmp/pwned)"), "storage[1].mount",
                      "an absolute path may not contain '$'", "mount:"),
    "export-jinja": (lambda d: d["storage"][0].update(export="head01:/export/{{ lookup('pipe', 'id') }}"),
                     "storage[0].export", "an NFS export may not contain '{'", "export:"),
    "max-time-newline": (lambda d: d["slurm"]["partitions"][0].update(max_time="1:00:00\nProlog=/tmp/x"),
                         "slurm.partitions[0].max_time", "a Slurm time may not contain a line break", "max_time:"),
    "feature-newline": (lambda d: d["node_types"]["hgx"].update(features=["h100\nPartitionName=evil Nodes=ALL"]),
                        "node_types.hgx.features[0]", "a Slurm feature may not contain a line break", "h100"),
    "socket-ifname-newline": (lambda d: _nccl(d, socket_ifname="=bond0\nNCCL_NET_PLUGIN=/tmp/x.so"),
                              "node_types.hgx.nccl.socket_ifname",
                              "an NCCL_SOCKET_IFNAME value may not contain a line break", "socket_ifname:"),
    "hca-newline": (lambda d: _nccl(d, ib_hca=["mlx5_0\nNCCL_NET_PLUGIN=/tmp/x.so"]),
                    "node_types.hgx.nccl.ib_hca[0]", "an HCA name may not contain a line break", "mlx5_0"),
    "addressing-key-newline": (_rename_addressing, "addressing has the key 'in\\nband'",
                               "a name may not contain a line break", "in"),
    "mount-quote": (lambda d: d["storage"][1].update(mount="/raid'+__import__('os').system('id')+'"),
                    "storage[1].mount", "an absolute path may not contain a quote", "mount:"),
    "rack-units-huge": (lambda d: d["rack_profiles"]["lab"].update(units=10_000_000),
                        "rack_profiles.lab.units", "less than or equal to 60", "units:"),
    "float-inf": (lambda d: d["site"].update(it_power_kw=float("inf")), "site.it_power_kw",
                  "a number must be finite", "it_power_kw:"),
    "float-nan": (lambda d: d["storage"][0].update(capacity_tb=float("nan")), "storage[0].capacity_tb",
                  "a number must be finite", "capacity_tb:"),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_issue_cases_are_refused_with_file_line_and_field(case, tmp_path):
    """Each blueprint the issue showed to be dangerous (or to hang `report`): `validate` exits 2, points
    at FILE:LINE:COL of the value, names the field and says why."""
    change, field, why, line_text = ISSUE_CASES[case]
    data = shipped("lab-2node")
    change(data)
    path = tmp_path / "bp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    proc = cli("validate", str(path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert field in out and why in out, out
    where = re.search(rf"--> {re.escape(str(path))}:(\d+):(\d+)", out)
    assert where, out
    assert line_text in path.read_text().splitlines()[int(where.group(1)) - 1], out
    assert "Traceback" not in out
