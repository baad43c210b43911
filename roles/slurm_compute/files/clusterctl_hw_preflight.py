#!/usr/bin/python3
"""clusterctl hardware preflight: this node's CPUs, memory, GPUs (and their NUMA placement) and NICs against ITS
NodeName line of slurm.conf and its gres.conf lines, before slurmd starts. Installed and run by the slurm_compute role
(docs/ansible.md, "Hardware preflight"); read-only.

Found values come from where slurmd looks: ``slurmd -C`` where slurmd is installed (slurmd(8): "Print actual hardware
configuration and exit"; the values it registers with), else ``lscpu`` and /proc/meminfo; GPUs from
``nvidia-smi --query-gpu=index,pci.bus_id`` where present (NUMA placement from sysfs:
/sys/bus/pci/devices/<bus>/numa_node and the node's CPUs' physical_package_id), else the /dev/nvidiaN device files;
NICs from /sys/class/net and /sys/class/infiniband.

Exit 0: the node matches; 1: it does not (one ``field: expected ..., found ...`` line each on stdout); 3: nothing to
compare (no slurm.conf yet, or no NodeName line names this node). Python 3.8 (Ubuntu 20.04) and the standard
library only.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

NOTHING_TO_COMPARE = 3
_RANGE = re.compile(r"^(.*?)\[([^\]]+)\](.*)$")


def expand_hostlist(text: str) -> list:
    """``gpu[01-03,07],head01`` -> gpu01 gpu02 gpu03 gpu07 head01 (Slurm host lists, one bracket per name; zero
    padding kept)."""
    names, depth, part = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            names.extend(_expand_one(part))
            part = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        part += ch
    return [n for n in names if n]


def _expand_one(name: str) -> list:
    m = _RANGE.match(name)
    if not m:
        return [name]
    head, body, tail = m.groups()
    out = []
    for piece in body.split(","):
        lo, _, hi = piece.partition("-")
        for i in range(int(lo), int(hi or lo) + 1):
            out.extend(_expand_one(f"{head}{str(i).zfill(len(lo))}{tail}"))
    return out


def settings(line: str) -> dict:
    """``Key=Value Key=Value`` -> {key: value} (keys lower-cased, as Slurm reads them)."""
    return {k.lower(): v for k, _, v in (w.partition("=") for w in line.split()) if v}


def node_line(conf: str, node: str):
    """The settings of the NodeName line naming ``node`` (``NodeName=DEFAULT`` values beneath it), or None."""
    default = {}
    for line in conf.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.lower().startswith("nodename="):
            continue
        kv = settings(line)
        if kv["nodename"].upper() == "DEFAULT":
            default.update(kv)
        elif node in expand_hostlist(kv["nodename"]):
            return {**default, **kv}
    return None


def gres_lines(conf: str, node: str) -> list:
    """The gpu lines of gres.conf for ``node``: those naming it, and those with no NodeName (every node)."""
    out = []
    for line in conf.splitlines():
        line = line.split("#", 1)[0].strip()
        kv = settings(line)
        if kv.get("name") != "gpu" or "file" not in kv:
            continue
        if "nodename" not in kv or node in expand_hostlist(kv["nodename"]):
            out.append(kv)
    return out


def expected(node_kv: dict, gres: list) -> dict:
    """What the rendered lines say: sockets, cores per socket, threads per core, RealMemory (MiB), GPU count, and
    the socket of each GPU device file (from gres.conf Cores=, logical indices: socket = first core // cores per
    socket)."""
    sockets = int(node_kv.get("sockets", node_kv.get("socketsperboard", 1))) * int(node_kv.get("boards", 1))
    cores = int(node_kv.get("corespersocket", 1))
    gpus = 0
    for item in node_kv.get("gres", "").split(","):
        parts = item.split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            gpus += int(parts[-1])
    socket_of = {}
    for kv in gres:
        first = kv.get("cores", "").split("-")[0].split(",")[0]
        for path in expand_hostlist(kv["file"]):
            socket_of[path] = int(first) // cores if first.isdigit() else None
    return {"sockets": sockets, "cores_per_socket": cores, "threads_per_core": int(node_kv.get("threadspercore", 1)),
            "real_memory_mib": int(node_kv.get("realmemory", 1)), "gpus": gpus, "gpu_sockets": socket_of}


def parse_slurmd_c(text: str) -> dict:
    """``slurmd -C``'s first line (NodeName=... CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=..
    ThreadsPerCore=.. RealMemory=..)."""
    kv = settings(text.splitlines()[0] if text.strip() else "")
    return {"sockets": int(kv.get("socketsperboard", kv.get("sockets", 0))) * int(kv.get("boards", 1)),
            "cores_per_socket": int(kv.get("corespersocket", 0)), "threads_per_core": int(kv.get("threadspercore", 0)),
            "memory_mib": int(kv.get("realmemory", 0)), "source": "slurmd -C"}


def parse_lscpu(text: str, meminfo: str) -> dict:
    """lscpu's ``Socket(s)``, ``Core(s) per socket``, ``Thread(s) per core`` and /proc/meminfo's MemTotal (MiB, what
    slurmd reports as RealMemory)."""
    def field(name):
        m = re.search(rf"^{re.escape(name)}:\s+(\d+)", text, re.M)
        return int(m.group(1)) if m else 0
    mem = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.M)
    return {"sockets": field("Socket(s)"), "cores_per_socket": field("Core(s) per socket"),
            "threads_per_core": field("Thread(s) per core"), "memory_mib": int(mem.group(1)) // 1024 if mem else 0,
            "source": "lscpu and /proc/meminfo"}


def compare(want: dict, cpu: dict, gpu_files: list, gpu_sockets: dict, ports: list, present: set) -> list:
    """One ``field: expected X, found Y (source)`` line per difference."""
    out = []
    for key, name in (("sockets", "Sockets"), ("cores_per_socket", "CoresPerSocket"),
                      ("threads_per_core", "ThreadsPerCore")):
        if want[key] != cpu[key]:
            out.append(f"{name}: expected {want[key]}, found {cpu[key]} ({cpu['source']})")
    if want["real_memory_mib"] > cpu["memory_mib"]:
        out.append(f"RealMemory: expected {want['real_memory_mib']} MiB at most, found {cpu['memory_mib']} MiB "
                   f"({cpu['source']}; slurmd would drain the node with Low RealMemory)")
    if want["gpus"] != len(gpu_files):
        out.append(f"GPUs: expected {want['gpus']} (NodeName Gres), found {len(gpu_files)}"
                   + (f" ({', '.join(gpu_files)})" if gpu_files else ""))
    for path, socket in sorted(want["gpu_sockets"].items()):
        if path not in gpu_files:
            out.append(f"GPU {path}: expected by gres.conf File=, not found")
        elif socket is not None and gpu_sockets.get(path) not in (None, socket):
            out.append(f"GPU {path}: expected on socket {socket} (gres.conf Cores=), found on socket "
                       f"{gpu_sockets[path]} (sysfs numa_node)")
    for port in ports:
        for kind, name in (("net", port.get("netdev")), ("infiniband", port.get("rdma"))):
            if name and (kind, name) not in present:
                what = "interface" if kind == "net" else "RDMA device"
                out.append(f"NIC {port.get('role', '')} {port.get('index', '')}: expected {what} {name}, not found "
                           f"(/sys/class/{kind})")
    return out


def found_cpu(meminfo_path: str) -> dict:
    """slurmd -C where slurmd is installed, else lscpu and /proc/meminfo."""
    if shutil.which("slurmd"):
        r = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=60, check=False)
        if r.returncode == 0 and r.stdout.strip():
            return parse_slurmd_c(r.stdout)
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=60, check=False,
                           env={**os.environ, "LC_ALL": "C"}).stdout
    with open(meminfo_path) as f:
        return parse_lscpu(lscpu, f.read())


def found_gpus(dev_dir: str, sysfs: str, prefixes: set) -> tuple:
    """(device files present, {device file: socket}) for the device-file prefixes gres.conf names (``/dev/nvidia``,
    ``/dev/dri/renderD``); the socket from nvidia-smi's PCI bus ids where nvidia-smi runs."""
    files = []
    for prefix in sorted(prefixes) or [os.path.join(dev_dir, "nvidia")]:
        files += [p for p in glob.glob(prefix + "[0-9]*") if re.fullmatch(re.escape(prefix) + r"\d+", p)]
    files.sort(key=lambda p: (re.sub(r"\d+$", "", p), int(re.search(r"(\d+)$", p).group(1))))
    sockets = {}
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=120, check=False)
        for line in r.stdout.splitlines() if r.returncode == 0 else []:
            index, _, bus = (s.strip() for s in line.partition(","))
            minor = _device_minor(bus) if bus else None
            socket = _pci_socket(sysfs, bus)
            sockets[os.path.join(dev_dir, f"nvidia{minor if minor is not None else index}")] = socket
    return files, sockets


def _device_minor(bus: str):
    """The /dev/nvidiaN minor of the GPU at ``bus`` (/proc/driver/nvidia/gpus/<bus>/information "Device Minor")."""
    try:
        with open(f"/proc/driver/nvidia/gpus/{bus.lower()[-12:]}/information") as f:
            m = re.search(r"Device Minor:\s+(\d+)", f.read())
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _pci_socket(sysfs: str, bus: str):
    """The socket (physical_package_id of the NUMA node's first CPU) the PCI device ``bus`` hangs off; None when the
    platform reports no NUMA node (-1)."""
    dev = os.path.join(sysfs, "bus/pci/devices", bus.lower()[-12:])
    try:
        with open(os.path.join(dev, "numa_node")) as f:
            numa = int(f.read())
        if numa < 0:
            return None
        with open(os.path.join(sysfs, f"devices/system/node/node{numa}/cpulist")) as f:
            cpu = f.read().strip().split(",")[0].split("-")[0]
        with open(os.path.join(sysfs, f"devices/system/cpu/cpu{cpu}/topology/physical_package_id")) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def present_nics(sysfs: str) -> set:
    out = set()
    for kind in ("net", "infiniband"):
        d = os.path.join(sysfs, "class", kind)
        out |= {(kind, n) for n in (os.listdir(d) if os.path.isdir(d) else [])}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--node", required=True, help="this node's NodeName")
    ap.add_argument("--config-dir", default="/etc/slurm")
    ap.add_argument("--port", action="append", default=[], help="role:index:netdev:rdma of a planned NIC")
    ap.add_argument("--sysfs", default="/sys")
    ap.add_argument("--meminfo", default="/proc/meminfo")
    args = ap.parse_args(argv)
    try:
        with open(os.path.join(args.config_dir, "slurm.conf")) as f:
            node_kv = node_line(f.read(), args.node)
        gres_path = os.path.join(args.config_dir, "gres.conf")
        gres = gres_lines(open(gres_path).read(), args.node) if os.path.exists(gres_path) else []
    except OSError as exc:
        print(f"nothing to compare: {exc}")
        return NOTHING_TO_COMPARE
    if node_kv is None:
        print(f"nothing to compare: no NodeName line of {args.config_dir}/slurm.conf names {args.node}")
        return NOTHING_TO_COMPARE
    want = expected(node_kv, gres)
    prefixes = {re.sub(r"\d+$", "", p) for p in want["gpu_sockets"]}
    dev_dir = os.path.dirname(next(iter(sorted(prefixes)), "/dev/nvidia")) if prefixes else "/dev"
    files, sockets = found_gpus(dev_dir, args.sysfs, prefixes)
    ports = [dict(zip(("role", "index", "netdev", "rdma"), p.split(":"))) for p in args.port]
    diff = compare(want, found_cpu(args.meminfo), files, sockets, ports, present_nics(args.sysfs))
    for line in diff:
        print(line)
    if not diff:
        print(f"{args.node} matches its NodeName and gres.conf lines")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
