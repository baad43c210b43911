"""A path inside a rehearsal node's root, resolved and created as the node will see it, never outside it.

Stage 1 of a node (clusterctl/rehearse/node/lifecycle.py) builds the node's mounts while it still sees the host's
mount tree: the node's root is the overlay at ``ROOT`` and a bind mount's node path ``/a/b`` is
``ROOT/a/b``. A symlink in that root is the node's symlink: an absolute one (Debian's ``/var/run -> /run``,
``/var/lock -> /run/lock``) means ``ROOT/run`` to the node, but the host's ``/run`` to ``mkdir -p`` and
``mount`` run from stage 1. So ``mkdir -p ROOT/var/run/x`` made ``/run/x`` on the host, and the bind
mount went there rather than into the node.

:func:`resolve_in_root` walks the path one component at a time from ``root``, as ``chroot(2)`` would: an
absolute symlink restarts at ``root``, ``..`` never climbs above it, missing directories are created one
at a time with ``mkdir`` (which never follows a symlink), and the answer is a host path with no symlink
left in it below ``root``. Stage 1 mounts onto that path. Standard library only: stage 1 runs this file
as a script (``python3 -I path.py ROOT PATH`` prints the resolved host path).
"""

from __future__ import annotations

import errno
import os
import stat
import sys

MAX_SYMLINKS = 40
"""symlinks followed in one resolution, as Linux's path walk allows (ELOOP beyond)"""


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def resolve_in_root(root: str, path: str, *, create: bool = True, mode: int = 0o755) -> str:
    """The host path of directory ``path`` of the node whose root is ``root``, symlinks resolved inside
    ``root``; missing directories are created (mode ``mode``) when ``create``. Raises OSError:
    FileNotFoundError (missing, not ``create``), NotADirectoryError (a component is a file), ELOOP."""
    root = os.path.abspath(root)
    pending = _parts(path)
    done: list[str] = []
    links = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            if done:
                done.pop()
            continue
        here = os.path.join(root, *done, name)
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(here, mode)
            except FileExistsError:  # made meanwhile (perhaps as a symlink): look again
                pending.insert(0, name)
                continue
            st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links in the node", path)
            target = os.readlink(here)
            if target.startswith("/"):
                done = []  # the node's root, not the host's
            pending[:0] = _parts(target)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory in the node", "/" + "/".join([*done, name]))
        done.append(name)
    return os.path.join(root, *done)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: path.py ROOT PATH\n")
        return 2
    try:
        print(resolve_in_root(argv[1], argv[2]))
    except OSError as exc:
        sys.stderr.write(f"node_path: {argv[2]} in {argv[1]}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
