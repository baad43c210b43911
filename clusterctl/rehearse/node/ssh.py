"""Commands and files on a rehearsal node over SSH, as root, with the rehearsal's key and pinned host keys
(``DIR/.rehearsal/ssh_config``).

:func:`write_file` is the one way the rehearsal puts a file on a node: the content travels on SSH's standard
input (never on a command line, so a secret is not visible in ``ps``), lands in a temporary file beside the
target (private until its mode and owner are set) and replaces the target by ``rename``: a reader on the node
sees the old file or the new one, never a part.
"""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath

from clusterctl.rehearse.node.command import CommandResult, run_command
from clusterctl.rehearse.node.state import State

SSH_TIMEOUT_S = 30.0
"""how long a command on a node may take unless its caller says otherwise"""


def control_dir(rid: str) -> Path:
    """Where SSH clients of rehearsal ``rid`` keep their control sockets (Ansible's ControlPersist). Not under
    DIR: a Unix socket path has at most 107 bytes, and ssh adds 17 to the 40 of ``%C``."""
    return Path("/run/clusterctl-rehearsal") / rid


def ssh_command(state: State, node: str, command: str) -> list[str]:
    """The argv that runs ``command`` on ``node`` as root over the rehearsal's SSH config."""
    return ["ssh", "-F", state.ssh_config, node, command]


def ssh(state: State, node: str, command: str, timeout: float = SSH_TIMEOUT_S) -> CommandResult:
    """Run ``command`` on ``node`` over SSH; raises :class:`~.command.CommandTimeout` after ``timeout`` s."""
    return run_command(ssh_command(state, node, command), timeout=timeout)


def write_file_script(path: str, mode: str, owner: str, *, append: bool = False, dir_mode: str = "0755") -> str:
    """The shell script :func:`write_file` runs on the node (content on standard input)."""
    q = shlex.quote(path)
    parent = shlex.quote(str(PurePosixPath(path).parent))
    umask = f"{0o777 & ~int(dir_mode, 8):03o}"
    keep = f"cat {q} 2>/dev/null; " if append else ""
    return (f"(umask {umask} && mkdir -p {parent}) || exit 1; umask 077; "
            f"tmp=$(mktemp {parent}/.clusterctl-write.XXXXXX) || exit 1; "
            f"if {{ {keep}cat; }} > \"$tmp\" && chmod {shlex.quote(mode)} \"$tmp\" && chown {shlex.quote(owner)} \"$tmp\" "
            f"&& mv -f \"$tmp\" {q}; then exit 0; fi; rm -f \"$tmp\"; exit 1")


def write_file(state: State, node: str, path: str, content: str | bytes, *, mode: str, owner: str = "root:root",
               append: bool = False, dir_mode: str = "0755", timeout: float = SSH_TIMEOUT_S) -> None:
    """Write ``content`` to ``path`` on ``node`` atomically with ``mode`` and ``owner`` (``append``: after what
    the file holds); missing parent directories are made with ``dir_mode``. Raises :class:`RemoteWriteError`."""
    data = content.encode() if isinstance(content, str) else content
    r = run_command(ssh_command(state, node, write_file_script(path, mode, owner, append=append, dir_mode=dir_mode)),
                    timeout=timeout, input=data, text=False)
    if r.returncode != 0:
        raise RemoteWriteError(f"{node}: writing {path}: {r.stderr.decode(errors='replace').strip()[-300:]}")


class RemoteWriteError(Exception):
    """A file could not be written on a node (the message names node, path and the node's error)."""
