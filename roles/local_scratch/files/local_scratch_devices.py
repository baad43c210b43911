#!/usr/bin/python3
"""Which drives carry this node's scratch, and what to do with them (installed by clusterctl's local_scratch role).

Prints one JSON object: {"devices": [...], "action": "create" | "assemble" | "keep", "raid0": bool, "notes": [...]},
or a refusal on stderr with exit status 3. Nothing is written: the role acts on the answer.

The drives are the ones listed (--device, repeated), else discovered: whole NVMe namespaces (/sys/block/nvme*n*)
within 2 % of the catalog's size (--size-bytes). A drive is refused, never touched, when it holds or backs a mounted
file system (the OS disk: /, /boot, ...), has partitions, is used by another device (an md or dm holder that is not
the scratch array), or carries any signature (partition table, file system, RAID member) other than the scratch's
own: the md member of the array --md-name (RAID0, two or more drives) or the XFS labelled --label (one drive).
Discovery must find exactly --count drives. An array or file system that exists is assembled or kept, never
re-created: "create" only when every drive is blank (blkid -p finds nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

SIZE_TOLERANCE = 0.02
"""clusterctl.plan.scratch.SIZE_TOLERANCE: a drive within 2 % of the catalog's size is a data drive"""
NVME_NAMESPACE = re.compile(r"^nvme[0-9]+n[0-9]+$")
"""a whole NVMe namespace in /sys/block (its partitions are nvmeXnYpZ, controllers nvmeX)"""


class Refused(Exception):
    """The drives cannot be used as they are; the message says which and why."""


@dataclass(frozen=True)
class Drive:
    """A block device as sysfs and blkid describe it."""

    path: str
    """/dev/NAME, or the path the operator listed"""
    majmin: str
    size_bytes: int
    partitions: bool = False
    holders: tuple[str, ...] = ()
    """names of the devices built on it (/sys/block/NAME/holders: md127, dm-0)"""
    signature: dict = field(default_factory=dict)
    """blkid -p -o export: TYPE, LABEL, PTTYPE, UUID ...; empty when blank"""


def state_of(drive: Drive, md_name: str, label: str, raid0: bool) -> str:
    """'blank', 'member' (of the scratch array), 'ours' (the scratch XFS on the one drive), or 'foreign'."""
    sig = drive.signature
    if not sig:
        return "blank"
    if raid0 and sig.get("TYPE") == "linux_raid_member" and sig.get("LABEL", "").split(":")[-1] == md_name:
        return "member"
    if not raid0 and sig.get("TYPE") == "xfs" and sig.get("LABEL") == label:
        return "ours"
    return "foreign"


def usable(drive: Drive, in_use: set[str]) -> str:
    """Why ``drive`` is not a data drive ('' when it may be one)."""
    if drive.majmin in in_use:
        return "holds or backs a mounted file system (the OS disk?)"
    if drive.partitions:
        return "has partitions"
    other = [h for h in drive.holders if not h.startswith("md")]
    if other:
        return f"is used by {', '.join(other)}"
    return ""


def decide(drives: list[Drive], *, count: int, size_bytes: int, listed: bool, in_use: set[str], md_name: str,
           label: str, md_active: bool) -> dict:
    """The drives to use and the action, or :class:`Refused`. ``drives``: the listed drives, or every NVMe
    namespace found; ``in_use``: maj:min of every device holding a mounted file system, its partitions' parents
    and the devices under it; ``md_active``: /dev/md/<md_name> is assembled."""
    notes = []
    if listed:
        for d in drives:
            why = usable(d, in_use)
            if why:
                raise Refused(f"{d.path} {why}: not a data drive, left untouched")
        chosen = drives
    else:
        chosen = []
        for d in drives:
            why = usable(d, in_use)
            if not why and abs(d.size_bytes - size_bytes) > SIZE_TOLERANCE * size_bytes:
                why = f"is {d.size_bytes} bytes, not the catalog's {size_bytes}"
            if why:
                notes.append(f"{d.path} skipped: {why}")
            else:
                chosen.append(d)
        if len(chosen) != count:
            raise Refused(f"found {len(chosen)} data NVMe drive(s) ({', '.join(d.path for d in chosen) or 'none'}), "
                          f"the catalog says {count}: {'; '.join(notes) or 'no NVMe namespace'}; list the drives "
                          "in local_scratch_devices")
    raid0 = len(chosen) >= 2
    states = {d.path: state_of(d, md_name, label, raid0) for d in chosen}
    foreign = [f"{p} ({_describe(d.signature)})" for d in chosen for p in [d.path] if states[p] == "foreign"]
    if foreign:
        raise Refused(f"{', '.join(foreign)}: a signature that is not the scratch's; never overwritten (wipefs it "
                      "by hand if the data is not needed)")
    kinds = set(states.values())
    if kinds == {"blank"}:
        action = "create"
    elif raid0 and kinds == {"member"}:
        action = "keep" if md_active else "assemble"
    elif not raid0 and kinds == {"ours"}:
        action = "keep"
    else:
        raise Refused("some drives carry the scratch array and others are blank ("
                      + ", ".join(f"{p}: {s}" for p, s in sorted(states.items()))
                      + "): a replaced drive of a RAID0 loses the array; re-create it by hand after wipefs")
    return {"devices": [d.path for d in chosen], "action": action, "raid0": raid0, "notes": notes}


def _describe(sig: dict) -> str:
    return ", ".join(f"{k}={sig[k]}" for k in ("PTTYPE", "TYPE", "LABEL") if k in sig) or "unknown"


# --- reading this node ----------------------------------------------------------------------------------------

def _read(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read().strip()


def _sysfs(majmin: str) -> str:
    """/sys/dev/block/MAJ:MIN resolved (the device's directory under /sys/devices)."""
    return os.path.realpath(f"/sys/dev/block/{majmin}")


def _parent_and_slaves(majmin: str, seen: set[str]) -> None:
    """Add ``majmin``, its disk when it is a partition, and every device below it (slaves), recursively."""
    if majmin in seen:
        return
    seen.add(majmin)
    path = _sysfs(majmin)
    if os.path.exists(os.path.join(path, "partition")):
        _parent_and_slaves(_read(os.path.join(os.path.dirname(path), "dev")), seen)
    slaves = os.path.join(path, "slaves")
    for name in sorted(os.listdir(slaves)) if os.path.isdir(slaves) else []:
        _parent_and_slaves(_read(f"/sys/class/block/{name}/dev"), seen)


def in_use_devices(mountinfo: str) -> set[str]:
    """maj:min of every block device a mounted file system is on, with its disk and what lies below it."""
    seen: set[str] = set()
    for line in mountinfo.splitlines():
        majmin = line.split()[2]
        if not majmin.startswith("0:") and os.path.exists(f"/sys/dev/block/{majmin}"):
            _parent_and_slaves(majmin, seen)
    return seen


def signature(path: str) -> dict:
    """blkid's low-level probe of ``path`` (no cache, no udev): {} when it finds nothing (exit status 2)."""
    r = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True, text=True, timeout=30, check=False)
    if r.returncode == 2:
        return {}
    if r.returncode != 0:
        raise Refused(f"blkid -p {path} failed ({r.returncode}): {r.stderr.strip()}")
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def drive(path: str, majmin: str) -> Drive:
    sysdir = _sysfs(majmin)
    if os.path.exists(os.path.join(sysdir, "partition")):
        raise Refused(f"{path} is a partition, not a whole drive")
    name = os.path.basename(sysdir)
    parts = any(os.path.exists(os.path.join(sysdir, e, "partition")) for e in os.listdir(sysdir)
                if e.startswith(name))
    holders = tuple(sorted(os.listdir(os.path.join(sysdir, "holders"))))
    return Drive(path, majmin, int(_read(os.path.join(sysdir, "size"))) * 512, parts, holders, signature(path))


def listed_drive(path: str) -> Drive:
    st = os.stat(path)
    if not (st.st_mode & 0o170000 == 0o060000):
        raise Refused(f"{path} is not a block device")
    return drive(path, f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")


def nvme_namespaces() -> list[Drive]:
    names = sorted(n for n in os.listdir("/sys/block") if NVME_NAMESPACE.match(n))
    return [drive(f"/dev/{n}", _read(f"/sys/block/{n}/dev")) for n in names]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--size-bytes", type=int, required=True)
    p.add_argument("--device", action="append", default=[])
    p.add_argument("--md-name", required=True)
    p.add_argument("--label", required=True)
    a = p.parse_args(argv)
    try:
        drives = [listed_drive(d) for d in a.device] if a.device else nvme_namespaces()
        answer = decide(drives, count=a.count, size_bytes=a.size_bytes, listed=bool(a.device),
                        in_use=in_use_devices(_read("/proc/self/mountinfo")), md_name=a.md_name, label=a.label,
                        md_active=os.path.exists(f"/dev/md/{a.md_name}"))
    except Refused as exc:
        print(f"local_scratch: {exc}", file=sys.stderr)
        return 3
    print(json.dumps(answer, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
