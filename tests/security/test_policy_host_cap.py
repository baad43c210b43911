"""Issue 24: a cap on what a plan names (hosts, racks, switches: 2,000,000), counted from the host ranges and
fabric figures before anything is expanded. A 4 KB blueprint of thirty million hosts took gigabytes and
about a minute (exit 3 under a memory limit); it is now exit 2 at the field that goes over, with the figures.
Time and memory are measured by benchmarks/bench_bad_input.py (case hosts-30M), not asserted here."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import cli, lab, plan_of, to_yaml


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def thirty_million_hosts() -> dict:
    """The lab plus thirty groups of a million hosts each (about 4 KB of YAML)."""
    data = lab()
    data["node_groups"] += [{"name": f"g{i:02d}", "type": "head", "count": 1_000_000,
                             "hostnames": f"n{i:02d}x[0000001-1000000]"} for i in range(30)]
    return data


def test_millions_of_hosts_are_refused_before_expansion_at_the_group_that_goes_over(tmp_path):
    path = tmp_path / "hosts.yaml"
    path.write_text(to_yaml(thirty_million_hosts()))
    assert path.stat().st_size < 5000
    for command in (("validate",), ("render", "-o", str(tmp_path / "out")), ("report",)):
        r = cli(command[0], str(path), *command[1:])
        assert r.returncode == 2, (command, r.stderr)
        assert f"error[BP007]: blueprint exceeds an input limit\n  --> {path}:{_line(path, 'n01x[')}:" in r.stderr
        assert ("node group g01 adds 1,000,000 to 1,000,006 hosts, racks and switches planned before it: "
                "2,000,006 in all, more than clusterctl plans (2,000,000)") in r.stderr
    assert not (tmp_path / "out").exists()


def test_millions_of_racks_are_refused_before_expansion(tmp_path):
    data = lab()
    data["racks"] += [{"names": f"r{i}x[0000001-1000000]", "profile": "lab"} for i in range(3)]
    path = tmp_path / "racks.yaml"
    path.write_text(to_yaml(data))
    r = cli("validate", str(path))
    assert r.returncode == 2, r.stderr
    assert f"{path}:{_line(path, 'r1x[')}:" in r.stderr
    assert "racks[2].names adds 1,000,000 to 1,000,001 hosts, racks and switches planned before it" in r.stderr


def test_millions_of_rack_references_are_refused_before_expansion(tmp_path):
    """Thirty one-host groups, each placed in a million racks: the rack names a group lists are expanded too."""
    data = lab()
    data["node_groups"] += [{"name": f"g{i:02d}", "type": "head", "count": 1, "hostnames": f"h{i:02d}",
                             "racks": "r[0000001-1000000]"} for i in range(30)]
    path = tmp_path / "rackrefs.yaml"
    path.write_text(to_yaml(data))
    r = cli("validate", str(path))
    assert r.returncode == 2, r.stderr
    lines = path.read_text().splitlines()
    second = [n for n, line in enumerate(lines, 1) if "racks: r[0000001-1000000]" in line][1]
    assert f"{path}:{second}:" in r.stderr
    assert "node group g01's racks adds 1,000,000 to 1,000,008 hosts, racks and switches planned before it" in r.stderr


def test_millions_of_switches_are_refused_before_the_fabric_planner_names_them(tmp_path):
    """Half a million 8-GPU hosts are within the cap; a 3-tier fabric with 60,000 spines per pod over
    their 125,000 leaves would name billions of spines."""
    data = lab()
    data["node_groups"][0].update(count=500_000, hostnames="gpu[000001-500000]", racks=None)
    data["fabrics"][0].update(tiers=3, spine_count=60_000)
    path = tmp_path / "switches.yaml"
    path.write_text(to_yaml(data))
    r = cli("validate", str(path))
    assert r.returncode == 2, r.stderr
    assert f"{path}:{_line(path, '- name: ib')}:" in r.stderr
    assert "fabric ib's switches adds" in r.stderr and "more than clusterctl plans (2,000,000)" in r.stderr


def test_a_design_under_the_cap_still_validates(tmp_path):
    data = lab()
    data["node_groups"][0].update(count=2_000, hostnames="gpu[0001-2000]", racks=None)
    path = tmp_path / "ok.yaml"
    path.write_text(to_yaml(data))
    r = cli("validate", str(path), "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert "2,001 nodes" in r.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count=st.integers(1, 300), tiers=st.sampled_from([1, 2, 3]), rail=st.booleans(),
       su_nodes=st.one_of(st.none(), st.integers(1, 64)), su_by=st.sampled_from(["nodes", "rack"]),
       extra=st.integers(0, 40), uplinks=st.one_of(st.none(), st.integers(1, 64)),
       spines=st.one_of(st.none(), st.integers(1, 40)), ratio=st.sampled_from([1.0, 2.0, 3.0]),
       switch=st.sampled_from(["qm9700", "sn2201"]))
def test_the_switch_bound_is_never_below_what_the_planner_builds(count, tiers, rail, su_nodes, su_by, extra,
                                                                 uplinks, spines, ratio, switch):
    data = lab()
    data["node_groups"][0].update(count=count, hostnames=f"gpu[001-{count:03d}]", racks=None)
    data["racks"] = [{"names": "lab[01-20]", "profile": "lab"}]
    data["node_groups"][0]["racks"] = "lab[01-20]"
    data["node_groups"][1]["racks"] = "lab01"
    data["fabrics"][0].update(tiers=tiers, rail_optimized=rail, su_nodes=su_nodes, su_by=su_by,
                              extra_endpoints=extra, leaf_uplinks=uplinks, spine_count=spines,
                              oversubscription=ratio, switch=switch, switch_racks=None)
    from clusterctl.plan.size import switch_bound

    plan = plan_of(data)
    fab, fp = plan.blueprint.fabrics[0], plan.fabrics[0]
    members = [(g.count, g.type.nic_count("compute"), max((n.speed_gbps for n in g.type.nics_of("compute")),
                                                          default=0.0))
               for g in plan.groups if g.name == "gpu"]
    assert switch_bound(fab, plan.catalog.switches, members, len(plan.racks)) >= fp.switch_count
