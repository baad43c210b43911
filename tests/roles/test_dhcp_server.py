"""The dhcp_server role converged for real on localhost (ansible-playbook, connection local, facts gathered): it
writes Kea's configuration from the rendered dhcp/kea-dhcp4.conf with this host's own parts - the interface that
carries its planned address (found by address in its facts), its own HA name, the host's hooks directory - and
kea-dhcp4 -t (the template's validate) accepts it. Services off: nothing is started here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clusterctl import yamlout
from clusterctl.targets.dhcp import CONFIG, render
from tests.conftest import require_tool
from tests.helpers import REPO, plan_of, shipped


def _converge(root: Path, listen: list[str]) -> subprocess.CompletedProcess:
    require_tool("kea-dhcp4")  # the template's validate
    (root / "render" / "dhcp").mkdir(parents=True, exist_ok=True)
    (root / "render" / CONFIG).write_text(render(plan_of(shipped("lab-ha")))[CONFIG])
    variables = {"clusterctl_render_dir": str(root / "render"), "dhcp_server_listen": {"head02": listen},
                 "dhcp_server_packages": [], "dhcp_server_manage_services": False,
                 "dhcp_server_conf_path": str(root / "kea-dhcp4.conf")}
    (root / "play.yml").write_text(yamlout.dump([{"name": "dhcp_server", "hosts": "head02", "gather_facts": True,
                                                  "gather_subset": ["!all", "network"],
                                                  "roles": [{"role": "dhcp_server", "vars": variables}]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "roles"), "ANSIBLE_NOCOLOR": "1"}
    # head02: the inventory name the rendered HA peers know, reached locally
    return subprocess.run([require_tool("ansible-playbook"), "-i", "head02,", "-c", "local", "-e",
                           f"ansible_python_interpreter={sys.executable}", str(root / "play.yml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_role_binds_the_planned_address_and_names_this_server(tmp_path):
    done = _converge(tmp_path, ["127.0.0.1"])  # lo carries it here, as the in-band port does on a controller
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "kea-dhcp4.conf").read_text()
    assert text.startswith("# ")  # ansible_managed, then JSON
    conf = json.loads("\n".join(line for line in text.splitlines() if not line.startswith("#")))["Dhcp4"]
    assert conf["interfaces-config"]["interfaces"] == ["lo/127.0.0.1"]
    ha = conf["hooks-libraries"][1]["parameters"]["high-availability"][0]
    assert ha["this-server-name"] == "head02"
    assert conf["hooks-libraries"][0]["library"].endswith("-linux-gnu/kea/hooks/libdhcp_lease_cmds.so")
    assert conf["subnet4"][1]["reservations"][3] == {"hostname": "head02", "hw-address": "02:00:0a:0a:00:04",
                                                     "ip-address": "10.10.0.20"}

