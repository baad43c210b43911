"""The rehearsal's one recipe for writing a file on this machine: whole or not at all.

The text goes to a new temporary file beside the target, created with its final mode (a secret is never
readable by others, not even for a moment), is flushed to disk and renamed over the target: a crash leaves the
old file or the new one. (Files on a node go through :func:`clusterctl.rehearse.node.ssh.write_file`; the
rendered tree through the writer, :mod:`clusterctl.write`. The fake provider API, a standalone program on a
node, keeps its own three lines.)
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_text_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` (UTF-8) and ``mode``, making its parent directories."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), mode)  # the mode as asked, whatever the umask
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
