"""The cluster's configuration object: the rendered tree the nodes apply at boot, as one deterministic tar.gz.

The Pulumi program builds it from the render directory it runs in (``OUT/pulumi/..``) plus ``stack.json``,
the facts only the stack knows (launch templates, instance templates, the resource group: what the
power-saving program creates instances from), and writes it to the cluster's own bucket / storage account.
No secret is in it: ``secrets/`` is never read, and the values reach a node from the provider's secret store.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

BUNDLE_DIRS = ("ansible", "slurm", "nccl", "hosts", "cloud")
"""the parts of a render a node needs (not pulumi/, secrets/, tests/, the rehearsal's state)"""
STACK_FILE = "cloud/stack.json"
OBJECT_KEY = "clusterctl/config.tar.gz"
"""where the object is in the cluster's bucket / container"""
BUNDLE_FILE = "pulumi/.clusterctl/config.tar.gz"
"""where a program that uploads the object from a file (GCS and Blob resources take a file asset for binary
content) keeps it in the render: beside the project, left alone by re-renders"""


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = len(data), mode, 0, 0, 0, "", ""
    tar.addfile(info, io.BytesIO(data))


def config_bundle(render_dir: Path, stack: dict) -> bytes:
    """The tar.gz of BUNDLE_DIRS under ``render_dir`` (sorted, mtime 0, owner root, modes 0644/0755) plus
    ``stack`` as STACK_FILE: the same inputs give the same bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for top in BUNDLE_DIRS:
            base = render_dir / top
            if not base.is_dir():
                continue
            for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()):
                rel = path.relative_to(render_dir).as_posix()
                if rel == STACK_FILE:
                    continue
                _add(tar, rel, path.read_bytes(), 0o755 if path.stat().st_mode & 0o111 else 0o644)
        _add(tar, STACK_FILE, (json.dumps(stack, indent=1, sort_keys=True) + "\n").encode(), 0o644)
    return buf.getvalue()


def bundle_file(render_dir: Path, data: bytes) -> Path:
    """``data`` (the bundle's bytes) as BUNDLE_FILE of ``render_dir``, written atomically and only when it
    differs (a concurrent reader sees the old or the new object, never half; the same render keeps its file)."""
    path = Path(render_dir) / BUNDLE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_bytes() != data:
        part = path.with_name(path.name + ".part")
        part.write_bytes(data)
        part.replace(path)
    return path
