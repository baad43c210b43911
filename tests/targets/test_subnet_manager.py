"""The subnet_manager target: OpenSM configuration checked against the installed opensm's own key list, partitions
parsed as opensm(8) documents them, the ibdiagnet topology file against the plan's cable counts, the role's play."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from clusterctl import hostlist, yamlout
from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.catalog import load_shipped_catalog
from clusterctl.plan import expand
from clusterctl.plan.cables import fabric_cables
from clusterctl.rules.registry import run_rules
from clusterctl.starter import starter_blueprint
from clusterctl.targets import render_targets
from clusterctl.targets import subnet_manager as target
from tests.conftest import require_tool
from tests.helpers import lab, plan_of, shipped

IB_FABRICS = {"lab-2node": ["ib"], "lab-ha": ["ib"], "dgx-h100-superpod-1su": ["ib", "stor"],
              "dgx-h100-superpod-4su": ["ib", "stor"], "gb200-nvl72-8rack": ["ib"]}
"""every InfiniBand fabric of the shipped blueprints"""


def files(data: dict) -> dict[str, str]:
    return target.render(plan_of(data))


@pytest.fixture(scope="module")
def opensm_keys(tmp_path_factory) -> set[str]:
    """Every key OpenSM itself knows: `opensm --create-config FILE` writes its full option list."""
    opensm = require_tool("opensm", hint="apt-get install -y --no-install-recommends opensm")
    path = tmp_path_factory.mktemp("opensm") / "opensm.conf"
    subprocess.run([opensm, "--create-config", str(path)], check=True, capture_output=True, timeout=60)
    keys = {line.split()[0] for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}
    assert {"routing_engine", "sm_priority", "partition_config_file"} <= keys
    return keys


def conf_keys(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("name", sorted(IB_FABRICS))
def test_every_ib_fabric_renders_sm_configuration_with_keys_opensm_knows(name, opensm_keys):
    out = files(shipped(name))
    for fabric in IB_FABRICS[name]:
        for leaf in ("opensm.conf", "partitions.conf", f"{fabric}.topo"):
            assert f"subnet_manager/{fabric}/{leaf}" in out
        keys = conf_keys(out[f"subnet_manager/{fabric}/opensm.conf"])
        assert set(keys) <= opensm_keys, set(keys) - opensm_keys
        assert set(keys) == {"routing_engine", "sm_priority", "partition_config_file", "sweep_interval",
                             "sweep_on_trap"}


def test_routing_engine_follows_the_tiers_and_priority_the_placement():
    lab_conf = conf_keys(files(shipped("lab-ha"))["subnet_manager/ib/opensm.conf"])
    assert (lab_conf["routing_engine"], lab_conf["sm_priority"]) == ("updn", "15")
    pod = files(shipped("dgx-h100-superpod-4su"))
    assert conf_keys(pod["subnet_manager/ib/opensm.conf"])["routing_engine"] == "ftree,updn"
    assert pod["subnet_manager/ib/ufm-gv.cfg"].endswith("[Sharp]\nsharp_enabled = true\n")
    sm = files(shipped("dgx-h100-superpod-1su"))["subnet_manager/ib/mlnx-os-sm.txt"]
    assert [line for line in sm.splitlines() if line.startswith("ib ")] == [
        "ib smnode ib-spine01 enable", "ib smnode ib-spine01 sm-priority 15",
        "ib smnode ib-spine02 enable", "ib smnode ib-spine02 sm-priority 14"]


PARTITION = re.compile(r"^\s*(?P<name>[^=,:]*?)\s*(=\s*(?P<pkey>0x[0-9a-fA-F]+|\d+))?\s*(?P<flags>(,\s*[^,:]+)*)\s*:"
                       r"\s*(?P<members>[^;]*);\s*$")


def partitions(text: str) -> list[tuple[str, int, tuple[str, ...], str]]:
    """Statements as opensm(8) "PARTITION CONFIGURATION" defines them: ``Name[=PKey][,flag]* : members ;``,
    comments from '#'; every statement must parse and its P_Key fit in 15 bits."""
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    out = []
    for stmt in (s.strip() for s in body.split(";")):
        if not stmt:
            continue
        m = PARTITION.match(stmt + ";")
        assert m, f"not a partition definition: {stmt!r}"
        pkey = int(m["pkey"], 0)
        assert 0 < pkey <= 0x7FFF
        flags = tuple(f.strip() for f in m["flags"].split(",") if f.strip())
        assert set(flags) <= {"indx0", "ipoib", "defmember=full", "defmember=limited", "defmember=both"}, flags
        out.append((m["name"], pkey, flags, m["members"].strip()))
    return out


def test_partitions_parse_as_opensm_documents_them():
    assert partitions(files(shipped("lab-ha"))["subnet_manager/ib/partitions.conf"]) == [
        ("Default", 0x7FFF, (), "ALL, ALL_SWITCHES=full, SELF=full"),
        ("compute", 0x0001, ("indx0", "ipoib", "defmember=full"), "ALL_CAS")]
    stor = partitions(files(shipped("dgx-h100-superpod-1su"))["subnet_manager/stor/partitions.conf"])
    assert stor[1] == ("storage", 0x0002, ("indx0", "ipoib", "defmember=full"), "ALL_CAS")


def cables(topo: str) -> list[str]:
    return [line for line in topo.splitlines() if " -" in line and "-> " in line and not line.startswith("#")]


def test_topo_file_holds_every_planned_cable():
    lab_topo = cables(files(shipped("lab-ha"))["subnet_manager/ib/ib.topo"])
    assert len(lab_topo) == 16  # 2 HGX x 8 rails on one QM9700
    assert lab_topo[0] == "P1 -4x-100G-> HCA_8 gpu01 U1/P1"
    pod = cables(files(shipped("dgx-h100-superpod-4su"))["subnet_manager/ib/ib.topo"])
    assert len(pod) == 2044  # RA Table 4: 1,020 compute and UFM cables + 1,024 spine-leaf
    assert sorted(line.split()[3] for line in pod if " HCA_1 " in line) == ["ufm01", "ufm02", "ufm03", "ufm04"]
    assert len({(line.split()[3], line.split()[4]) for line in pod if "MQM9700" in line}) == 1024  # spine ports once
    stor = cables(files(shipped("dgx-h100-superpod-1su"))["subnet_manager/stor/stor.topo"])
    assert len(stor) == 120 and stor[0].startswith("P1/1 -2x-100G-> HCA_2 dgx001 U1/P1")  # NDR200 on split ports


def sm_on_hosts() -> dict:
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"kind": "opensm", "hosts": "gpu[01-02]", "priority": 12}
    return data


def test_the_role_runs_only_where_the_plan_puts_opensm_on_hosts():
    out = render_targets(plan_of(sm_on_hosts()), ["ansible", "subnet_manager"])
    assert yamlout.load(out["subnet_manager/hosts.yml"]) == {"subnet_manager_hosts": {
        "gpu01": {"fabric": "ib", "priority": 12}, "gpu02": {"fabric": "ib", "priority": 11}}}
    plays = yamlout.load(out["ansible/site.yml"])
    sm = [p for p in plays if p["hosts"] == "gpu01,gpu02"]
    assert [r["role"] for p in sm for r in p["roles"]] == ["subnet_manager"]
    assert "ansible/roles/subnet_manager/tasks/main.yml" in out
    lab_out = render_targets(plan_of(shipped("lab-ha")), ["ansible", "subnet_manager"])
    assert "subnet_manager/hosts.yml" not in lab_out
    assert not any("subnet_manager" in r["role"] for p in yamlout.load(lab_out["ansible/site.yml"]) for r in p["roles"])


def test_a_2048_gpu_infiniband_starter_validates_clean_with_its_ufm_placed():
    text = starter_blueprint(2048, "h100", "infiniband")
    assert "    extra_endpoints: 2\n    subnet_manager: {kind: ufm, hosts: \"ufm[01-02]\"}\n" in text
    plan = expand(load_blueprint_text(text, "starter.yaml"), load_shipped_catalog())
    assert [f"{f.code} {f.message}" for f in run_rules(plan).findings] == []
    compute = next(f for f in plan.fabrics if f.name == "compute")
    assert (compute.endpoints, len(compute.tiers), compute.su_nodes) == (2050, 3, 31)


# --- OpenSM itself, on a simulated fabric ------------------------------------------------------------------------

def two_leaf_fabric() -> dict:
    """The lab's two HGX on two leaves (one SU each) under two spines, OpenSM on both hosts."""
    data = sm_on_hosts()
    data["fabrics"][0].update(tiers=2, su_nodes=1, spine_count=2)
    return data


def ibsim_net(plan, fabric) -> str:
    """The plan's cables as an ibsim network file (ibnetdiscover-like: a ``Switch N "name"`` or ``Hca N "name"``
    line, then ``[port] "peer"[peer port]`` per cable): each host port is a one-port adapter ``<host>-U<k>``."""
    links: dict[str, dict[int, tuple[str, int]]] = {}
    sizes: dict[str, tuple[str, int]] = {}
    for t in fabric.tiers:
        for name in hostlist.expand(t.names):
            sizes[name] = ("Switch", t.native_ports * t.down_breakout)
    for c in fabric_cables(plan, fabric):
        peer = c.peer if c.peer_kind == "switch" else f"{c.peer}-{c.peer_port.split('/')[0]}"
        a, b = int(c.port[1:]), 1 if c.peer_kind != "switch" else int(c.peer_port[1:])
        sizes.setdefault(peer, ("Hca", 1))
        links.setdefault(c.switch, {})[a] = (peer, b)
        links.setdefault(peer, {})[b] = (c.switch, a)
    out = []
    for name, (kind, ports) in sizes.items():
        out.append(f'{kind} {ports} "{name}"')
        out += [f'[{p}] "{peer}"[{q}]' for p, (peer, q) in sorted(links.get(name, {}).items())]
        out.append("")
    return "\n".join(out)


def test_opensm_routes_the_planned_fabric_with_the_rendered_configuration(tmp_path):
    """Debian's opensm, run once against ibsim's simulation of the planned cables (ibsim-utils: the umad calls of
    opensm go to the simulator), with the rendered opensm.conf and partitions.conf: the fat-tree engine routes the
    two tiers, the subnet comes up, and every channel adapter gets the compute P_Key at index 0."""
    ibsim = require_tool("ibsim", hint="apt-get install -y --no-install-recommends ibsim-utils")
    opensm = require_tool("opensm", hint="apt-get install -y --no-install-recommends opensm")
    plan = plan_of(two_leaf_fabric())
    out = target.render(plan)
    (tmp_path / "net").write_text(ibsim_net(plan, plan.fabrics[0]))
    (tmp_path / "partitions.conf").write_text(out["subnet_manager/ib/partitions.conf"])
    conf = out["subnet_manager/ib/opensm.conf"].replace(target.PARTITIONS_PATH, str(tmp_path / "partitions.conf"))
    (tmp_path / "opensm.conf").write_text(conf)
    env = dict(os.environ, IBSIM_SOCKNAME=f"clusterctl-test-{os.getpid()}", SIM_HOST="gpu01-U1")
    sim = subprocess.Popen([ibsim, "-s", "-n", str(tmp_path / "net")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env, cwd=tmp_path)
    try:
        for line in sim.stdout:  # ibsim says when its sockets are up
            if "Network simulator ready" in line:
                break
        env["LD_PRELOAD"] = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
        run = subprocess.run([opensm, "-F", str(tmp_path / "opensm.conf"), "--once", "-f", str(tmp_path / "osm.log"),
                              "-D", "0x07"], env=env, capture_output=True, text=True, timeout=120)
    finally:
        sim.kill()
        sim.wait(timeout=30)
    log = (tmp_path / "osm.log").read_text()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Loading Cached Option:routing_engine = ftree,updn" in run.stdout
    assert "ftree tables configured on all switches" in log and "SUBNET UP" in log
    assert "Fabric has 2 switches at rank 0 (roots)" in log and "Fabric has 2 switches at rank 1 (2 of them leafs)" in log
    assert len(set(re.findall(r"Setting pkey 0x0001 at indx0 for port (0x[0-9a-f]+)", log))) == 16  # 2 HGX x 8 HCAs
