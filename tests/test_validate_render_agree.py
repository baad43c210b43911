"""Validate and render agree (issue 25's acceptance): over random mutations of the shipped blueprints, a blueprint
without an error finding renders with every target, and every render refusal is reported first by an error
finding located at a real place of the blueprint. A blueprint that does not load (exit 2) is agreement.

`clusterctl render` validates first and renders only a blueprint without errors, so "validate exits 0 <=> render
succeeds" is: no error finding => every target renders. The other half is checked on the plan directly: when the
targets refuse a plan, validate has an error finding for it, with a location.

Mutations (each drawn independently, most left alone): slurm.version (malformed, ancient, supported, future, with
a patch level) with the install pin following or removed, slurm.install kind and package naming, topology,
block_sizes and gres_autodetect (release-gated), memory_reserve_gb, cluster_name, partition max_time and QOS
max_wall, cloud options (placement_group, reservation, an elastic group) and storage tier options (mount, an NFS
export served by a node of the blueprint, an added parallel, object or local tier), the last node group's name
(Ansible inventory group names) and the in-band address pool removed. The 100k-GPU blueprint is left
out for time (0.7 s a plan). Bounded and deterministic: max_examples below, derandomize=True (about 40 s on one
core); `--hypothesis-show-statistics` lists the refusals exercised as events.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.rules.base import Severity
from clusterctl.targets import RenderError, render_targets
from clusterctl.validate import validate_loaded

REPO = Path(__file__).resolve().parents[1]
SHIPPED = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "blueprints").glob("*.yaml"))
           if p.stem != "frontier-3tier-100k"}
MAX_EXAMPLES = 500

VERSIONS = ["17.11", "19.05", "20.02", "20.11", "21.08", "22.05", "23.02", "23.11", "24.05", "24.05.3", "24.11",
            "25.05", "25.11", "26.05", "99.11", "24.5", "24.13", "2024.05", "v24.05", "abc", ""]
TIMES = ["UNLIMITED", "60", "00:30", "1-00:00:00", "2-3", "7-0", "0", "bogus", "1:2:3:4", "00:61:00", "12345678",
         "10:123"]
TIERS = [
    {"name": "pfs", "tier": "parallel", "mount": "/lustre", "capacity_tb": 10, "read_gb_per_s": 1, "write_gb_per_s": 1,
     "servers": "10.0.0.1@o2ib:/lustre"},
    {"name": "weka", "tier": "parallel", "filesystem": "weka", "mount": "/weka", "capacity_tb": 10,
     "read_gb_per_s": 1, "write_gb_per_s": 1, "servers": "weka[01-02]/pfs"},
    {"name": "obj", "tier": "object", "endpoint": "https://s3.example.com", "capacity_tb": 10, "read_gb_per_s": 1,
     "write_gb_per_s": 1},
    {"name": "scratch2", "tier": "local", "mount": "/scratch2"},
]
GROUP_NAMES = ["slurm_controllers", "slurm_cluster", "gpu_nodes", "nfs_servers", "compute", "login", "head",
               "rack_lab01", "su_ib_1", "nvlink_gb200_1", "svc2"]
INSTALLS = {
    "distro": lambda v: {"kind": "distro"},
    "distro-pinned": lambda v: {"kind": "distro", "version": f"{v}.1-1"},
    "repo": lambda v: {"kind": "repo", "url": "https://repo.example.com/slurm", "key": "https://repo.example.com/k.asc",
                       "suite": "jammy", "version": f"{v}.1-1"},
    "repo-debian": lambda v: {"kind": "repo", "url": "https://repo.example.com/slurm",
                              "key": "https://repo.example.com/k.asc", "suite": "jammy", "version": f"{v}.1-1",
                              "packages": "debian"},
    "debs": lambda v: {"kind": "debs", "path": "/srv/slurm-debs", "version": f"{v}.4-1"},
}


def maybe(values):
    """Mostly None (leave the blueprint alone: each knob is drawn on its own, and a few bad values together would
    make nearly every example a load error), else one of ``values``."""
    return st.one_of(st.none(), st.none(), st.none(), st.sampled_from(values))


@st.composite
def slurm_mutations(draw, slurm: dict) -> list[str]:
    done = []
    if (version := draw(maybe(VERSIONS))) is not None:
        slurm["version"] = version
        slurm["install"] = INSTALLS[draw(st.sampled_from(sorted(INSTALLS)))](version)
        done.append(f"version {version!r} install {slurm['install']['kind']}")
    for key, values in (("topology", ["tree", "block", "yaml", "none"]), ("block_sizes", [[18], [1, 2], [4, 8]]),
                        ("gres_autodetect", ["nvml", "nvidia", "rsmi", "off"]),
                        ("memory_reserve_gb", [0.5, 16, 500, 960, 1999, 2048, 1_000_000]),
                        ("cluster_name", ["x" * 40, "x" * 41, "lab_2", "Lab", "a b", "a#b"])):
        if (value := draw(maybe(values))) is not None:
            slurm[key] = value
            done.append(f"{key} {value!r}")
    if (t := draw(maybe(TIMES))) is not None:
        slurm["partitions"][0]["max_time"] = t
        done.append(f"max_time {t!r}")
    if (t := draw(maybe(TIMES))) is not None:
        slurm["qos"] = [{"name": "urgent", "priority": 10, "max_wall": t}]
        done.append(f"max_wall {t!r}")
    return done


@st.composite
def mutated(draw) -> tuple[str, dict, list[str]]:
    name = draw(st.sampled_from(sorted(SHIPPED)))
    data = copy.deepcopy(SHIPPED[name])
    done = draw(slurm_mutations(data["slurm"])) if data.get("slurm") else []
    cloud = data.get("cloud")
    if cloud is not None:
        if (pg := draw(maybe([True, False]))) is not None:
            cloud["placement_group"] = pg
            done.append(f"placement_group {pg}")
        if (res := draw(maybe(["none", "my-reservation"]))) is not None:
            cloud.pop("reservation", None) if res == "none" else cloud.update(reservation=res)
            done.append(f"reservation {res}")
        if (elastic := draw(maybe([True, False]))) is not None:
            data["node_groups"][0]["cloud"] = {"elastic": elastic}
            done.append(f"elastic {elastic}")
    storage = data.setdefault("storage", [])
    if storage and (i := draw(maybe(range(len(storage))))) is not None:
        tier = storage[i]
        mount = draw(st.sampled_from(["/data", "/home/x", "/tmp/x", "/srv/a b", "/dev/shm/x"]))
        tier["mount"] = mount
        done.append(f"storage[{i}].mount {mount}")
        if tier.get("tier") == "nfs":
            host = data["node_groups"][0]["hostnames"].split("[")[0].rstrip("-")
            tier["export"] = draw(st.sampled_from([f"{host}:/x", "nfs01:/export/x", "nfs01:/a#b"]))
            done.append(f"export {tier['export']}")
    if (extra := draw(maybe(TIERS))) is not None:
        storage.append(copy.deepcopy(extra))
        done.append(f"tier {extra['name']}")
    if (group := draw(maybe(GROUP_NAMES))) is not None:
        data["node_groups"][-1]["name"] = group  # the last group (head, login, ...): partitions name the first
        done.append(f"node group {group}")
    if data.get("addressing") and draw(maybe([True])):
        data["addressing"] = {k: v for k, v in data["addressing"].items() if v.get("role") != "inband"}
        done.append("no in-band pool")
    return name, data, done


def _real_place(source, path: tuple) -> bool:
    """``path`` names a value of the loaded file, or a key with a default inside a mapping the file has."""
    return bool(path) and (tuple(path) in source.values or tuple(path[:-1]) in source.values)


@settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_validate_refuses_everything_render_refuses(case):
    name, data, done = case
    try:
        loaded = load_blueprint_text(yaml.safe_dump(data, sort_keys=False), f"{name}.yaml")
        validation = validate_loaded(loaded)
    except BlueprintError:
        event("load error (exit 2 on both sides)")
        return
    errors = [f for f in validation.result.findings if f.severity == Severity.ERROR and not f.suppressed]
    try:
        render_targets(validation.plan)
    except RenderError as exc:
        event(f"render refused: {str(exc).split(':')[0][:40]}")
        assert errors, f"{name} {done}: render refuses ({exc}) but validate has no error"
        assert any(_real_place(loaded.source, f.path) for f in errors), \
            f"{name} {done}: no error finding located in the blueprint: {[(f.code, f.path) for f in errors]}"
        return
    event("validate errors, render would be skipped" if errors else "validate clean, render ok")
