"""Helpers for running the programs of clusterctl/cloud/node and the fake provider API as real subprocesses.

    bin_dir = fake_bin(tmp_path)        # aws, gcloud, az -> clusterctl/rehearse/fake/cloud.py (+ a fake hostname)
    calls(state)                        # the fake API's recorded calls, one dict per call
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAKE_CLOUD = REPO / "clusterctl" / "rehearse" / "fake" / "cloud.py"
NODE = REPO / "clusterctl" / "cloud" / "node"

FAKE_HOSTNAME = """#!/bin/sh
# stands in for hostname(1): setting the real one would rename the test machine
echo "$@" >> "$(dirname "$0")/hostname.calls"
"""


def fake_bin(tmp: Path, *, hostname: bool = True) -> Path:
    """A directory of aws/gcloud/az symlinks to the fake API (its #!/usr/bin/python3 runs it) and a fake
    ``hostname``."""
    d = tmp / "bin"
    d.mkdir(exist_ok=True)
    for cli in ("aws", "gcloud", "az"):
        (d / cli).symlink_to(FAKE_CLOUD)
    if hostname:
        (d / "hostname").write_text(FAKE_HOSTNAME)
        (d / "hostname").chmod(0o755)
    return d


def env_with(bin_dir: Path, state: Path, **extra: str) -> dict:
    """Environment for a subprocess: the fake CLIs first on PATH, then this Python's and the system's."""
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "CLUSTERCTL_FAKE_CLOUD_DIR": str(state), **extra}


def calls(state: Path) -> list[dict]:
    path = state / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tar_gz(members: dict[str, bytes | None], *, links: dict[str, str] | None = None) -> bytes:
    """A tar.gz of regular files (None: a directory) and symbolic links (name -> target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()
