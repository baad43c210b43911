"""cloud_node target: the node programs land in cloud/bin/ of a cloud render, the two programs executable."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import BLUEPRINTS, REPO


def test_render_writes_the_programs_executable(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "clusterctl", "render", str(BLUEPRINTS / "gcp-a3-mega.yaml"), "-o",
                        str(out)], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    modes = {p.name: p.stat().st_mode & 0o777 for p in (out / "cloud/bin").iterdir()}
    assert modes == {"clusterctl-bootstrap": 0o755, "clusterctl-power-save": 0o755,
                     "clusterctl_cloud_config.py": 0o644}
    assert (out / "cloud/bin/clusterctl-bootstrap").read_text().startswith("#!/usr/bin/python3\n")
    manifest = (out / ".clusterctl-manifest").read_text()
    assert all(f"cloud/bin/{name}" in manifest for name in modes)
    r = subprocess.run([sys.executable, "-m", "clusterctl", "render", str(BLUEPRINTS / "gcp-a3-mega.yaml"), "-o",
                        str(out), "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr  # modes included: no drift
    os.chmod(out / "cloud/bin/clusterctl-power-save", 0o644)
    r = subprocess.run([sys.executable, "-m", "clusterctl", "render", str(BLUEPRINTS / "gcp-a3-mega.yaml"), "-o",
                        str(out), "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 1 and "clusterctl-power-save (should be executable)" in r.stderr
