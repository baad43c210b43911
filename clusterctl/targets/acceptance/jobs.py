"""The acceptance jobs of a plan, as data: what each runs, where, and the figure it is judged against.

Per GPU node group in a Slurm partition (docs/acceptance.md):

- nccl-tests ``all_reduce_perf`` and ``alltoall_perf`` (``-b 8 -e 8G -f 2 -g 1``, one rank per GPU) over the whole
  group, over each scalable unit of its compute fabric when there are several, and per rail: one rank per node on
  one rail's NIC (``NCCL_IB_HCA==<device>``, the GPU of the same index);
- the same inside every NVLink domain at once (each node, or each multi-node NVLink block), each domain judged;
- ``ib_write_bw`` (perftest) between pairs of the group's nodes, rail by rail;
- DCGM diagnostics level 3 (``dcgmi diag -r 3 -j``) on every node;
- HPL (NVIDIA HPC-Benchmarks' ``hpl.sh`` in its container, through pyxis) over the whole group;

and per InfiniBand fabric the group's nodes are cabled to, ``ibdiagnet`` against the planned cabling.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from clusterctl import hostlist
from clusterctl.perf.collectives import ALL_REDUCE, ALL_TO_ALL
from clusterctl.perf.interconnect import Interconnect, interconnect_of
from clusterctl.plan.interfaces import compute_hcas, role_ports
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.nvlink import multi_node
from clusterctl.plan.subnet_manager import subnet_managers
from clusterctl.plan.topology import nvlink_blocks
from clusterctl.targets.acceptance import expected, hpl

NCCL_PROGRAMS = {ALL_REDUCE: "all_reduce_perf", ALL_TO_ALL: "alltoall_perf"}
"""NVIDIA/nccl-tests' program per operation (README: all_reduce_perf, alltoall_perf)"""
NCCL_ARGS = ("-b", "8", "-e", "8G", "-f", "2", "-g", "1")
"""nccl-tests README: minimum and maximum size, multiplication factor, one GPU per rank (one rank per GPU)"""
IB_WRITE_BW_ARGS = ("-F", "--report_gbits", "-D", "10", "-s", "8388608", "-q", "4")
"""perftest: no CPU-frequency warning abort, Gb/s, 10 s, 8 MiB messages, 4 QPs (the perftest maintainers' advice
for line rate on NDR: messages of 8 MB or more, several QPs, linux-rdma/perftest#252)"""
IB_WRITE_BW_PORT = 18515
"""perftest's default TCP port for the connection exchange; rail k uses 18515 + k"""
HPL_IMAGE = "nvcr.io#nvidia/hpc-benchmarks"
"""pyxis image syntax (registry#image) of NVIDIA's HPC-Benchmarks container"""
TIME = {"nccl": "00:30:00", "ib_write_bw": "00:30:00", "dcgm": "02:00:00", "ibdiagnet": "00:30:00",
        "hpl": "01:00:00"}
"""time limits: DCGM level 3 runs "approximately 30 minutes" per GPU set (DCGM Diagnostics, "Run Levels")"""


@dataclass(frozen=True)
class Job:
    """One batch job: its name (also its file's), the kind of test, a one-line description, its #SBATCH options
    (``None`` for a flag), its body (bash lines, every value quoted by construction) and its expected figures."""

    name: str
    kind: str
    what: str
    options: tuple[tuple[str, str | None], ...]
    body: tuple[str, ...]
    expected: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """A GPU node group the jobs run on: its partition and interconnect."""

    group: GroupPlan
    partition: str
    ic: Interconnect


def targets(plan: ClusterPlan) -> list[Target]:
    """The GPU groups in a Slurm partition with an interconnect the report can estimate, in blueprint order."""
    if plan.slurm is None:
        return []
    out = []
    for g in plan.groups:
        parts = [p for p in plan.slurm.partitions if g.name in p.groups]
        ic = interconnect_of(plan, g) if g.gpus else None
        if parts and ic is not None:
            out.append(Target(g, next((p for p in parts if p.default), parts[0]).name, ic))
    return out


def options(t: Target, name: str, kind: str, nodes: int, hosts: str, tasks: int,
            gpus: int) -> tuple[tuple[str, str | None], ...]:
    opts: list[tuple[str, str | None]] = [("job-name", name), ("partition", t.partition), ("nodes", str(nodes)),
                                          ("nodelist", hosts), ("ntasks-per-node", str(tasks))]
    if gpus:
        opts.append(("gpus-per-node", str(gpus)))
    return (*opts, ("exclusive", None), ("time", TIME[kind]), ("output", "%x-%j.out"))


def _quoted(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def nccl_job(plan: ClusterPlan, t: Target, op: str, scope: str, hosts: str, nodes: int,
             rail: tuple[int, str] | None = None) -> Job:
    """An nccl-tests job over ``nodes`` nodes: every GPU, or with ``rail`` one rank per node on that rail."""
    acc = plan.acceptance
    gpn = t.group.type.gpus
    ranks = nodes if rail else nodes * gpn
    program = f"{acc.nccl_tests}/{NCCL_PROGRAMS[op]}"
    body = ["export NCCL_DEBUG=WARN"]
    if rail:
        index, device = rail
        body.append(f"export NCCL_IB_HCA={shlex.quote('=' + device)}")
        if t.ic.gpus_per_domain > gpn:  # multi-node NVLink would carry the ranks: keep them on the NIC
            body.append("export NCCL_MNNVL_ENABLE=0")
        launch = _quoted("env", f"CUDA_VISIBLE_DEVICES={index}", program, *NCCL_ARGS)
        figure = expected.rail_busbw(op, t.ic, nodes)
    else:
        launch = _quoted(program, *NCCL_ARGS)
        figure = expected.group_busbw(op, t.ic, ranks)
    body.append(f"srun --mpi={shlex.quote(acc.mpi)} {launch}")
    name = f"nccl-{op}-{t.group.name}-{scope}"
    what = (f"nccl-tests {NCCL_PROGRAMS[op]} on {ranks} ranks ({scope}); the report predicts {figure:g} GB/s busbw "
            f"at {expected.NCCL_MAX_BYTES} bytes")
    exp = {"kind": "nccl", "op": op, "bytes": expected.NCCL_MAX_BYTES, "ranks": ranks, "scope": scope,
           "expected_busbw_gb_per_s": figure, "pass_fraction": acc.busbw_fraction}
    return Job(name, "nccl", what, options(t, name, "nccl", nodes, hosts, 1 if rail else gpn, gpn),
               tuple(body), exp)


def rail_devices(plan: ClusterPlan, g: GroupPlan, kinds: tuple[str, ...] = ("infiniband", "roce")) -> tuple[str, ...]:
    """The compute ports' RDMA devices in rail order (NCCL_IB_HCA's names), when every one is named and the compute
    fabric is of one of ``kinds``."""
    fabric = plan.compute_fabric(g)
    devices, _ = compute_hcas(plan, g.type)
    if fabric is None or fabric.kind not in kinds or not isinstance(devices, tuple):
        return ()
    return tuple(d.split(":")[0] for d in devices)


DOMAIN_STEPS = r'''i=0
for unit in "${units[@]}"; do  # one step per NVLink domain, each with its own output file, at most 64 at once
  while (( $(jobs -rp | wc -l) >= 64 )); do wait -n; done
  i=$((i + 1))  # here, not in the background command's words: those expand in the forked shell
  srun --mpi="$mpi" --nodelist="$unit" --nodes="$nodes" --ntasks-per-node="$tasks" \
    --output="%x-%j-domain$i.out" "${program[@]}" &
done
wait'''
"""the per-NVLink-domain steps: ``units`` holds each domain's host list"""


def domain_job(plan: ClusterPlan, t: Target, op: str) -> Job | None:
    """nccl-tests inside every NVLink domain at once: each node (one-node domains) or each multi-node NVLink block
    runs its own communicator over NVLink; every domain must reach the report's one-domain figure."""
    g = t.group
    d = t.ic.gpus_per_domain
    if d < 2 or d < g.type.gpus:  # no NVLink, or several domains in one node: no whole-node step to run
        return None
    blocks = [b.nodes for b in nvlink_blocks(plan, [g])] if g in multi_node(plan) else []
    units = ((f"units=({_quoted(*blocks)})",) if blocks
             else ('mapfile -t units < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',))  # a domain per node
    count = len(blocks) or g.count
    per = max(1, d // g.type.gpus)
    acc = plan.acceptance
    name = f"nccl-{op}-{g.name}-domain"
    figure = expected.group_busbw(op, t.ic, d)
    body = (*units, f"mpi={shlex.quote(acc.mpi)} nodes={per} tasks={g.type.gpus}",
            f"program=({_quoted(f'{acc.nccl_tests}/{NCCL_PROGRAMS[op]}', *NCCL_ARGS)})",
            *DOMAIN_STEPS.splitlines())
    what = (f"nccl-tests {NCCL_PROGRAMS[op]} in each of {count} NVLink domains of {d} GPUs; the report predicts "
            f"{figure:g} GB/s busbw at {expected.NCCL_MAX_BYTES} bytes")
    exp = {"kind": "nccl", "op": op, "bytes": expected.NCCL_MAX_BYTES, "ranks": d, "scope": "domain",
           "units": count, "expected_busbw_gb_per_s": figure, "pass_fraction": acc.busbw_fraction}
    return Job(name, "nccl", what, options(t, name, "nccl", g.count, g.hostlist, g.type.gpus, g.type.gpus),
               body, exp)


def nccl_jobs(plan: ClusterPlan, t: Target) -> list[Job]:
    g = t.group
    scopes = [("all", g.hostlist, g.count, None)]
    fabric = plan.compute_fabric(g)
    if fabric is not None and len(fabric.sus) > 1:
        members = set(g.hosts)
        scopes += [(f"su{su.index + 1}", su.hostlist, su.nodes, None) for su in fabric.sus
                   if su.nodes > 1 and set(hostlist.expand(su.hostlist)) <= members]
    if g.count > 1:
        scopes += [(f"rail{k}", g.hostlist, g.count, (k, d)) for k, d in enumerate(rail_devices(plan, g))]
    jobs = [nccl_job(plan, t, op, scope, hosts, nodes, rail)
            for scope, hosts, nodes, rail in scopes for op in NCCL_PROGRAMS]
    return jobs + [j for j in (domain_job(plan, t, op) for op in NCCL_PROGRAMS) if j is not None]


IB_WRITE_BW_PAIRS = r'''mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
pair() {  # server client: every rail in turn, the client's report kept as %x-%j-<client>-<device>.out
  local server=$1 client=$2 rail
  for rail in "${!rails[@]}"; do
    srun --nodes=1 --ntasks=1 --nodelist="$server" --output=/dev/null \
      ib_write_bw -d "${rails[rail]}" -p $((port + rail)) "${args[@]}" &
    sleep 2  # the server listens before the client connects
    srun --nodes=1 --ntasks=1 --nodelist="$client" --output="%x-%j-$client-${rails[rail]}.out" \
      ib_write_bw -d "${rails[rail]}" -p $((port + rail)) "${args[@]}" "$server"
    wait
  done
}
for ((i = 0; i + 1 < ${#nodes[@]}; i += 2)); do
  pair "${nodes[i]}" "${nodes[i + 1]}" &
done
wait
if (( ${#nodes[@]} % 2 )); then  # the odd node out, against the first
  pair "${nodes[0]}" "${nodes[-1]}"
fi'''
"""pairs (node 2i serves, 2i+1 connects) in parallel, rails one after another within a pair"""


def ib_write_bw_job(plan: ClusterPlan, t: Target) -> Job | None:
    g = t.group
    devices = rail_devices(plan, g, ("infiniband",))  # RoCE needs the GID index, which NCCL picks per release
    if g.count < 2 or not devices:
        return None
    name = f"ib-write-bw-{g.name}"
    figure = expected.nic_gb_per_s(t.ic)
    pairs = g.count // 2 + g.count % 2
    body = (f"rails=({_quoted(*devices)})", f"args=({_quoted(*IB_WRITE_BW_ARGS)})", f"port={IB_WRITE_BW_PORT}",
            *IB_WRITE_BW_PAIRS.splitlines())
    what = (f"ib_write_bw between {pairs} pairs of nodes on each of {len(devices)} rails; the report's per-NIC "
            f"goodput is {figure:g} GB/s")
    exp = {"kind": "ib_write_bw", "rails": list(devices), "pairs": pairs, "expected_gb_per_s": figure,
           "pass_fraction": plan.acceptance.ib_write_bw_fraction}
    return Job(name, "ib_write_bw", what, options(t, name, "ib_write_bw", g.count, g.hostlist, 1, 0), body, exp)


def dcgm_job(plan: ClusterPlan, t: Target) -> Job:
    g = t.group
    name = f"dcgm-diag-{g.name}"
    # one file per node, named by the Slurm node name (srun's %N is the host name, which two slurmd on one host
    # share): <job>-<job id>-<node>.out
    body = ("srun --ntasks-per-node=1 bash -c "
            "'dcgmi diag -r 3 -j > \"$SLURM_JOB_NAME-$SLURM_JOB_ID-$SLURMD_NODENAME.out\"'",)
    what = f"DCGM diagnostics level 3 on each of the {g.count} nodes (JSON, one file per node)"
    exp = {"kind": "dcgm", "level": 3, "nodes": g.count}
    return Job(name, "dcgm", what, options(t, name, "dcgm", g.count, g.hostlist, 1, g.type.gpus), body, exp)


def hpl_job(plan: ClusterPlan, t: Target) -> Job | None:
    """HPL over the whole group, one rank per GPU, in NVIDIA's container through pyxis (enroot clusters only)."""
    g = t.group
    acc = plan.acceptance
    accel = g.type.accelerator
    if accel is None or plan.software is None or plan.software.containers != "enroot":
        return None
    n = hpl.problem_size(g.gpus, accel.hbm_gb, acc.hpl_block_size)
    p, q = hpl.process_grid(g.gpus)
    name = f"hpl-{g.name}"
    image = f"{HPL_IMAGE}:{acc.hpl_container}"
    body = (f"srun --mpi={shlex.quote(acc.mpi)} --container-image={shlex.quote(image)} "
            f'--container-mounts="$SLURM_SUBMIT_DIR/hpl:/acceptance-hpl:ro" '
            f"/workspace/hpl.sh --dat {shlex.quote(f'/acceptance-hpl/{g.name}.dat')}",)
    gflops = round(acc.hpl_tflops_per_gpu * 1000 * g.gpus, 3) if acc.hpl_tflops_per_gpu else None
    what = (f"HPL on {g.gpus} GPUs: N {n}, NB {acc.hpl_block_size}, P x Q {p} x {q}"
            + (f"; expected {gflops:g} Gflops" if gflops else "; verdict from the residual check"))
    exp = {"kind": "hpl", "n": n, "nb": acc.hpl_block_size, "p": p, "q": q, "gpus": g.gpus,
           "expected_gflops": gflops, "pass_fraction": acc.hpl_fraction}
    return Job(name, "hpl", what, options(t, name, "hpl", g.count, g.hostlist, g.type.gpus, g.type.gpus),
               body, exp)


def ibdiagnet_jobs(plan: ClusterPlan, found: list[Target]) -> list[Job]:
    """One per InfiniBand fabric a target group is cabled to, run on the group's first node from the port of that
    fabric (its RDMA device when named), against the planned cabling in ``ibdiagnet/<fabric>.topo``."""
    jobs = []
    for sm in subnet_managers(plan):
        fp = sm.fabric
        on = [(t, role) for t in found for gi, role in fp.attached if gi == t.group.index]
        if not on:
            continue
        t, role = on[0]
        ports = role_ports(plan, t.group.type, role)
        device = ports[0].rdma if ports else None
        name = f"ibdiagnet-{fp.name}"
        topo = f"ibdiagnet/{fp.name}.topo"
        run = ["ibdiagnet", *(["-i", device] if device else [])]
        body = (f'srun --nodes=1 --ntasks=1 {_quoted(*run)} -t "$SLURM_SUBMIT_DIR"/{shlex.quote(topo)} '
                f'-o "$SLURM_SUBMIT_DIR"/{shlex.quote(name)}-"$SLURM_JOB_ID"',)
        what = f"ibdiagnet on {t.group.hosts[0]} against the planned cabling of fabric {fp.name}"
        exp = {"kind": "ibdiagnet", "fabric": fp.name}
        jobs.append(Job(name, "ibdiagnet", what, options(t, name, "ibdiagnet", 1, t.group.hosts[0], 1, 0), body,
                        exp))
    return jobs


def plan_jobs(plan: ClusterPlan) -> list[Job]:
    """Every acceptance job of the plan, in a stable order: per group nccl-tests, ib_write_bw, DCGM, HPL; then
    ibdiagnet per fabric."""
    found = targets(plan)
    jobs: list[Job] = []
    for t in found:
        jobs += nccl_jobs(plan, t)
        jobs += [j for j in (ib_write_bw_job(plan, t), dcgm_job(plan, t), hpl_job(plan, t)) if j is not None]
    return jobs + ibdiagnet_jobs(plan, found)
