"""subnet_manager target: the subnet manager configuration and the cabling check file of every InfiniBand fabric.

Per InfiniBand fabric, under ``subnet_manager/<fabric>/`` (docs/network.md, "InfiniBand subnet manager"):

- ``opensm.conf``: the keys of OpenSM 3.3 (Debian's opensm; ``opensm --create-config`` lists them all, and
  tests/targets/test_subnet_manager.py compares against the installed program's own list): the routing engine
  the plan chose (plan/subnet_manager.py), ``sm_priority`` of the master (the ``subnet_manager`` role writes each
  host's own), the partition file. Adaptive routing and the SHARP aggregation manager are not upstream OpenSM
  features: the file says so in comments rather than writing keys Debian's opensm does not know;
- ``partitions.conf``: opensm(8) "PARTITION CONFIGURATION" syntax, one partition per NIC role on the fabric;
- ``<fabric>.topo``: the cabling as an IBDM topology file (ibdm-topo-file(1): one section per system, a line
  per cable ``LOCAL-PORT -Nx-SPEED-> REMOTE-TYPE REMOTE-NAME REMOTE-PORT``), which ``ibdiagnet -t FILE`` compares
  with the discovered fabric (NVIDIA IBUtils2/ibdiagnet "Topology Comparison"; the UFM Cable Validation Tool
  takes the same "topo file" for InfiniBand fabrics). Each cable is listed once, under its lower switch;
- ``mlnx-os-sm.txt`` when the SM is a switch's embedded SM: the MLNX-OS commands that enable it with the plan's
  priorities (MLNX-OS User Manual, "Subnet Manager": ``ib smnode <name> enable``, ``ib smnode <name> sm-priority``);
- ``ufm-gv.cfg`` when the SM is UFM: the gv.cfg settings the plan decides (UFM Enterprise User Manual,
  "Additional Configuration (Optional)": ``[Sharp] sharp_enabled``).
"""

from __future__ import annotations

from clusterctl import hostlist
from clusterctl.plan.cables import fabric_cables
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.subnet_manager import SubnetManagerPlan, opensm_hosts, subnet_managers
from clusterctl.targets.common import header, path_part
from clusterctl.yamlout import PureDumper, body, comment_lines

SM_DIR = "subnet_manager"
PARTITIONS_PATH = "/etc/opensm/partitions.conf"
"""where Debian's opensm reads partitions (``opensm --create-config``: partition_config_file)"""


def _where(sm: SubnetManagerPlan) -> str:
    if not sm.declared:
        return ("no subnet manager is declared for this fabric (rule IB001): until one runs, every port stays "
                "INIT and nothing is forwarded")
    names = ", ".join(f"{i.name} (priority {i.priority})" for i in sm.instances)
    return {"hosts": f"OpenSM on hosts {names}; the subnet_manager role installs it there",
            "appliances": f"NVIDIA UFM on appliances {names}; UFM's SM reads the same OpenSM keys",
            "switches": f"the embedded SM of switches {names} (see mlnx-os-sm.txt)"}[sm.placement]


def opensm_conf(plan: ClusterPlan, sm: SubnetManagerPlan) -> str:
    master = sm.instances[0].priority if sm.instances else 0
    lines = [header(plan).rstrip("\n"),
             f"# OpenSM configuration of InfiniBand fabric {sm.fabric.name}: {_where(sm)}.",
             "# Keys as `opensm --create-config` of OpenSM 3.3 writes them (opensm(8)).",
             "",
             f"# {sm.fabric.tiers_declared}-tier fat tree: "
             + ("ftree ranks the switches from the leaves up; updn if ftree refuses the fabric"
                if sm.routing_engine.startswith("ftree") else "one switch tier, up/down routing"),
             f"routing_engine {sm.routing_engine}",
             "",
             "# the highest priority is master" + ("; the subnet_manager role writes each SM host's own priority"
                                                    if sm.placement == "hosts" else ""),
             f"sm_priority {master}",
             "",
             f"partition_config_file {PARTITIONS_PATH}",
             "",
             "# sweep every 10 s and re-route after a trap (a link down), OpenSM's defaults spelled out",
             "sweep_interval 10",
             "sweep_on_trap TRUE",
             ""]
    if sm.adaptive_routing:
        lines += ["# adaptive_routing: true. Upstream OpenSM (this package) has no adaptive routing; it is a feature of",
                  "# NVIDIA's SM (UFM, or the opensm of DOCA-OFED/MLNX_OFED), whose keys are not written here. The",
                  "# embedded SM of MLNX-OS does not support it (MLNX-OS User Manual, \"Subnet Manager\").", ""]
    if sm.sharp:
        lines += ["# sharp: true. The SHARP aggregation manager is NVIDIA's (UFM: [Sharp] sharp_enabled = true in",
                  "# gv.cfg); upstream OpenSM has no SHARP support and runs no aggregation manager.", ""]
    return "\n".join(lines)


def partitions_conf(plan: ClusterPlan, sm: SubnetManagerPlan) -> str:
    lines = [header(plan).rstrip("\n"),
             f"# Partitions of InfiniBand fabric {sm.fabric.name} (opensm(8), \"PARTITION CONFIGURATION\").",
             "# Members by keyword, not port GUID: the GUIDs are the hardware's and not in the plan.",
             "# The default partition: the SM and the switches full members, every other port limited.",
             "Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;"]
    for p in sm.partitions:
        where = ", at P_Key index 0 (IPoIB's parent interface, NCCL_IB_PKEY 0)" if p.index0 else ""
        lines += [f"# {p.name} NICs: every channel adapter a full member{where}",
                  f"{p.name}=0x{p.pkey:04x}{', indx0' if p.index0 else ''}, ipoib, defmember=full : ALL_CAS ;"]
    return "\n".join(lines) + "\n"


def switch_type(model: str) -> str:
    """the IBDM system type of a catalog switch model: NVIDIA's part names, MQM9700 for qm9700 (as in the UFM
    Cable Validation Tool's topo example); other models upper-cased"""
    return f"M{model.upper()}" if model.lower().startswith("qm") else model.upper()


def _width(gbps: float, native: float) -> str:
    """``-4x-100G->``: lanes and lane speed (an InfiniBand port has four lanes at its native speed)"""
    lane = native / 4
    lanes = max(1, round(gbps / lane)) if lane else 4
    return f"-{lanes}x-{lane:g}G->"


def topo_file(plan: ClusterPlan, sm: SubnetManagerPlan) -> str:
    fp = sm.fabric
    appliances = tuple(i.name for i in sm.instances) if sm.placement == "appliances" else ()
    cables = fabric_cables(plan, fp, appliances)
    types = {name: (switch_type(t.model), t.native_gbps) for t in fp.tiers for name in hostlist.expand(t.names)}
    lines = [header(plan).rstrip("\n"),
             f"# Cabling of InfiniBand fabric {fp.name} as planned: {len(cables):,} cables, each listed once under its",
             "# lower switch. Check the built fabric against it: ibdiagnet -t THIS_FILE (IBDM topology file format).",
             "# Hosts are HCA_<n> systems of n single-port adapters U1..Un; ibdiagnet needs an IBNL definition for",
             "# each (it writes them with --out_ibnl_dir), which this file does not carry."]
    current = ""
    for c in cables:
        if c.switch != current:
            current = c.switch
            lines += ["", f"{types[c.switch][0]} {c.switch}"]
        peer_type = types[c.peer][0] if c.peer_kind == "switch" else f"HCA_{c.peer_ports}"
        lines.append(f"{c.port} {_width(c.gbps, types[c.switch][1])} {peer_type} {c.peer} {c.peer_port}")
    return "\n".join(lines) + "\n"


def mlnx_os_sm(plan: ClusterPlan, sm: SubnetManagerPlan) -> str:
    lines = [header(plan).rstrip("\n"),
             f"# Embedded subnet manager of InfiniBand fabric {sm.fabric.name} ({sm.ib_nodes:,} nodes; MLNX-OS manages",
             "# up to 2,048, without adaptive routing and SHARP: MLNX-OS User Manual, \"Subnet Manager\").",
             "# On each switch below, in configuration mode (switch (config) #):"]
    for inst in sm.instances:
        lines += ["", f"# {inst.name}", f"ib smnode {inst.name} enable", f"ib smnode {inst.name} sm-priority {inst.priority}"]
    return "\n".join(lines) + "\n"


def ufm_gv_cfg(plan: ClusterPlan, sm: SubnetManagerPlan) -> str:
    names = ", ".join(i.name for i in sm.instances)
    return "\n".join([
        header(plan).rstrip("\n"),
        f"# UFM settings of InfiniBand fabric {sm.fabric.name} (appliances {names}), to merge into conf/gv.cfg",
        "# (UFM Enterprise User Manual, \"Additional Configuration (Optional)\"; in HA, UFM replicates gv.cfg to the",
        "# standby). Adaptive routing is set in UFM's SM configuration (\"Appendix - Adaptive Routing\"); its keys are",
        "# not written here because they could not be confirmed.",
        "[Sharp]",
        f"sharp_enabled = {'true' if sm.sharp else 'false'}",
    ]) + "\n"


def hosts_file(plan: ClusterPlan, hosts: dict[str, tuple[tuple[str, int], ...]]) -> str:
    """``subnet_manager/hosts.yml``: the fabric and sm_priority of every host that runs OpenSM (the
    subnet_manager role reads it). One fabric per host: a host named for two fabrics runs the first."""
    data = {"subnet_manager_hosts": {h: {"fabric": runs[0][0], "priority": runs[0][1]} for h, runs in hosts.items()}}
    return (comment_lines([header(plan, "").strip(), "Hosts that run OpenSM: the fabric they manage and their "
                           "sm_priority (the highest is master)."]) + "---\n" + body(data, dumper=PureDumper))


def render(plan: ClusterPlan) -> dict[str, str]:
    files: dict[str, str] = {}
    hosts = opensm_hosts(plan)
    if hosts:
        files[f"{SM_DIR}/hosts.yml"] = hosts_file(plan, hosts)
    for sm in subnet_managers(plan):
        base = f"{SM_DIR}/{path_part(sm.fabric.name, 'fabric name')}"
        files[f"{base}/opensm.conf"] = opensm_conf(plan, sm)
        files[f"{base}/partitions.conf"] = partitions_conf(plan, sm)
        files[f"{base}/{sm.fabric.name}.topo"] = topo_file(plan, sm)
        if sm.placement == "switches":
            files[f"{base}/mlnx-os-sm.txt"] = mlnx_os_sm(plan, sm)
        elif sm.placement == "appliances":
            files[f"{base}/ufm-gv.cfg"] = ufm_gv_cfg(plan, sm)
    return files

