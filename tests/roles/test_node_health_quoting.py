"""node_health: the expectations file is sourced by bash as root, so every value in it is shell-quoted.

The role's real template is rendered by real Ansible (``ansible.builtin.template`` on localhost, into a
temporary directory) from group_vars written the way the ansible target writes them (``!unsafe``), with mount
points that are shell and Jinja payloads. Then: ``bash -n`` accepts the file, sourcing it defines exactly the
expected variables with the payloads as literal words, the shipped check script reads it and reports those
mounts as not mounted, and no payload ran (the marker file never appears).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl import yamlout
from clusterctl.yamlout import Unsafe
from tests.conftest import require_tool

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "node_health"


def _payloads(marker: Path) -> list[str]:
    return [f"/a$(touch {marker})", f"/b`touch {marker}`", f"/c;touch {marker}", "/d e", "/f*", "/g'h\"i",
            f"/j{{{{ lookup('pipe', 'touch {marker}') }}}}", "/k\nNODE_HEALTH_DRAIN=9"]


@pytest.fixture(scope="module")
def rendered_conf(tmp_path_factory):
    playbook = require_tool("ansible-playbook")
    base = tmp_path_factory.mktemp("node_health")
    marker = base / "pwned"
    mounts = _payloads(marker)
    (base / "vars.yml").write_text(yamlout.dump({
        "node_health_gpu_count": 8, "node_health_rdma_port_count": 4, "node_health_rdma_rate_gbps": 400,
        "node_health_mounts": [Unsafe(m) for m in mounts], "node_health_drain": True,
        "node_health_fabric_manager": True, "node_health_imex": False, "node_health_xids": [48, 79],
        "node_health_nvlink_fabric": True, "node_health_nvlink_clique": True,
        "node_health_nvlink_cluster_uuid": Unsafe(mounts[0]), "node_health_nvlink_clique_id": Unsafe(mounts[-1]),
        "node_health_dcgm": True, "node_health_diag_timeout_s": 120,
        "node_health_scratch_mount": Unsafe(mounts[2]), "node_health_scratch_mounted": True,
        "node_health_scratch_min_free_percent": 10,
        "node_health_row_remap": True, "node_health_nvlink_errors": True, "node_health_nvlink_crc_limit": 100,
        "node_health_pcie": True,
        "ansible_python_interpreter": sys.executable}))
    (base / "play.yml").write_text(yamlout.dump([{
        "name": "render node-health.conf", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "template", "ansible.builtin.template": {
            "src": str(ROLE / "templates" / "node-health.conf.j2"), "dest": str(base / "node-health.conf"),
            "mode": "0644"}}]}]))
    result = subprocess.run([playbook, "-i", "localhost,", "-c", "local", "-e", f"@{base / 'vars.yml'}",
                             str(base / "play.yml")], capture_output=True, text=True, timeout=120, cwd=base,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    return base / "node-health.conf", mounts, marker


def test_conf_is_valid_bash(rendered_conf):
    conf, _, marker = rendered_conf
    assert subprocess.run(["bash", "-n", str(conf)]).returncode == 0
    assert not marker.exists()


def test_sourcing_defines_exactly_the_expected_values(rendered_conf):
    conf, mounts, marker = rendered_conf
    script = (f'set -u; before=$(compgen -v | sort); . "{conf}"; '
              'comm -13 <(echo "$before") <(compgen -v | sort) | grep -v "^before$"; echo ---; '
              'printf "%s\\0" "${NODE_HEALTH_MOUNTS[@]}"; echo; '
              'printf "%s\\0" "$NODE_HEALTH_DRAIN" "$NODE_HEALTH_NVLINK_CLUSTER_UUID" "$NODE_HEALTH_NVLINK_CLIQUE_ID" '
              '"$NODE_HEALTH_SCRATCH_MOUNT"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    names, _, rest = out.stdout.partition("---\n")
    assert sorted(names.split()) == ["NODE_HEALTH_DCGM", "NODE_HEALTH_DIAG_TIMEOUT_S", "NODE_HEALTH_DRAIN",
                                     "NODE_HEALTH_FABRIC_MANAGER", "NODE_HEALTH_GPU_COUNT", "NODE_HEALTH_IMEX",
                                     "NODE_HEALTH_MOUNTS", "NODE_HEALTH_NVLINK_CLIQUE",
                                     "NODE_HEALTH_NVLINK_CLIQUE_ID", "NODE_HEALTH_NVLINK_CLUSTER_UUID",
                                     "NODE_HEALTH_NVLINK_CRC_LIMIT", "NODE_HEALTH_NVLINK_ERRORS",
                                     "NODE_HEALTH_NVLINK_FABRIC", "NODE_HEALTH_PCIE", "NODE_HEALTH_RDMA_PORT_COUNT",
                                     "NODE_HEALTH_RDMA_RATE_GBPS", "NODE_HEALTH_ROW_REMAP",
                                     "NODE_HEALTH_SCRATCH_MIN_FREE_PERCENT", "NODE_HEALTH_SCRATCH_MOUNT",
                                     "NODE_HEALTH_SCRATCH_MOUNTED", "NODE_HEALTH_XIDS"]
    values = rest.split("\0")
    assert values[:len(mounts)] == mounts
    assert values[len(mounts)].split() == ["1"]
    # the expected NVLink partition and the scratch mount, word for word
    assert values[len(mounts) + 1:] == [mounts[0], mounts[-1], mounts[2], ""]
    assert not marker.exists()


def test_check_script_reads_the_mounts_as_words(rendered_conf):
    conf, mounts, marker = rendered_conf
    result = subprocess.run(["bash", str(ROLE / "files" / "node-health-check.sh"), "--no-drain", "--config",
                             str(conf)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1
    for m in mounts:
        assert f"{m} is not mounted" in result.stderr
    assert f"scratch {mounts[2]}: df gives no size" in result.stderr  # one word to df, whatever it holds
    assert not marker.exists()
