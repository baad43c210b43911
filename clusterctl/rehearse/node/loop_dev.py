"""Loop devices on this machine standing in for a node's block devices (the scratch scenario's data NVMe: this
kernel has no NVMe to give a rehearsal node, and no md or device-mapper either, docs/rehearse.md).

A stand-in is a sparse file under ``DIR/.rehearsal/loop/`` attached to a free loop device (``losetup --find
--show``), whose device node is then made inside the node (``mknod``, the node's own /dev). The state records the
file before the device is made; :func:`remove` (called by ``down``) detaches every loop device on a recorded file
(``losetup --associated``: also one made by a crash before its name was known) and deletes the file.
"""

from __future__ import annotations

from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.command import run_command
from clusterctl.rehearse.node.state import State, save, state_dir

COMMAND_TIMEOUT_S = 30.0


def attach(state: State, name: str, size_bytes: int) -> tuple[str, int, int]:
    """A sparse file of ``size_bytes`` named ``name`` on a new loop device: (device, major, minor)."""
    folder = state_dir(Path(state.dir)) / "loop"
    folder.mkdir(exist_ok=True)
    backing = folder / f"{name}.img"
    if str(backing) not in state.loop_files:
        state.loop_files.append(str(backing))
        save(state)
    with open(backing, "wb") as f:
        f.truncate(size_bytes)
    r = run_command(["losetup", "--find", "--show", str(backing)], timeout=COMMAND_TIMEOUT_S)
    if r.returncode != 0:
        raise RehearsalError(f"losetup --find --show {backing} failed: {r.stderr.strip()}",
                             "`clusterctl rehearse --down DIR` removes what was created")
    device = r.stdout.strip()
    major, minor = (int(x) for x in Path(f"/sys/class/block/{Path(device).name}/dev").read_text().split(":"))
    return device, major, minor


def remove(state: State) -> list[str]:
    """Detach the loop devices on every recorded file and delete the files (idempotent); the problems, if any."""
    problems = []
    for backing in state.loop_files:
        r = run_command(["losetup", "--list", "--associated", backing, "--noheadings", "--output", "NAME"],
                        timeout=COMMAND_TIMEOUT_S) if Path(backing).exists() else None
        for device in (r.stdout.split() if r is not None and r.returncode == 0 else []):
            d = run_command(["losetup", "--detach", device], timeout=COMMAND_TIMEOUT_S)
            if d.returncode != 0:
                problems.append(f"cannot detach {device} ({backing}): {d.stderr.strip()}")
        if not problems:
            Path(backing).unlink(missing_ok=True)
    return problems
