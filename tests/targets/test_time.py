"""Time on the cluster: every node follows the Slurm controllers, the controllers follow site.time_servers
(no public pool unless written there), peer each other and serve the cluster's networks in orphan mode (an
air-gapped site has no public pool, and MUNGE credentials fail on clock skew). Rendered as group variables; the common role's chrony.conf.j2
turns them into the file the rendered testinfra test reads back."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml

from clusterctl.errors import BlueprintError
from clusterctl.targets import render_targets
from tests.helpers import lab, plan_of, shipped

REPO = Path(__file__).resolve().parents[2]


def _vars(files: dict, name: str) -> dict:
    return yaml.safe_load(files[f"ansible/group_vars/{name}.yml"]) or {}


def _chrony(variables: dict) -> str:
    """roles/common/templates/chrony.conf.j2 with the role defaults overridden by ``variables``."""
    defaults = yaml.safe_load((REPO / "roles" / "common" / "defaults" / "main.yml").read_text())
    text = (REPO / "roles" / "common" / "templates" / "chrony.conf.j2").read_text()
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    return env.from_string(text).render(**{"ansible_managed": "managed", "inventory_hostname": "head01", **defaults,
                                           **variables})


def test_every_node_follows_the_controllers_and_they_keep_their_own_time_without_site_servers():
    data = lab()
    del data["site"]["time_servers"]
    files = render_targets(plan_of(data))
    everyone, controllers = _vars(files, "all"), _vars(files, "slurm_controllers")
    assert everyone["common_chrony_servers"] == ["head01"] and everyone["common_chrony_pools"] == []
    assert controllers["common_chrony_servers"] == [] and controllers["common_chrony_pools"] == []
    assert "common_chrony_peers" not in controllers  # one controller: nobody to peer
    assert controllers["common_chrony_allow"] == ["10.10.0.0/24", "10.11.0.0/24", "10.12.0.0/24"]
    assert controllers["common_chrony_local_stratum"] == 10
    node = _chrony(everyone)
    assert "server head01 iburst\n" in node and "pool " not in node and "allow" not in node
    head = _chrony({**everyone, **controllers})  # group_vars/slurm_controllers.yml wins over all.yml
    assert "pool " not in head and "server " not in head and "peer " not in head
    assert "allow 10.10.0.0/24\nallow 10.11.0.0/24\nallow 10.12.0.0/24\n" in head
    assert "local stratum 10 orphan\n" in head
    assert "TIME_UPSTREAM = []" in files["tests/test_head.py"]


def test_two_controllers_peer_each_other_and_nodes_follow_both():
    files = render_targets(plan_of(shipped("lab-ha")))
    everyone, controllers = _vars(files, "all"), _vars(files, "slurm_controllers")
    assert everyone["common_chrony_servers"] == ["head01", "head02"]
    assert controllers["common_chrony_servers"] == ["ntp1.example.com"] and controllers["common_chrony_pools"] == []
    assert controllers["common_chrony_peers"] == ["head01", "head02"]
    node = _chrony({**everyone, "inventory_hostname": "gpu01"})
    assert "server head01 iburst\nserver head02 iburst\n" in node and "peer " not in node
    head01 = _chrony({**everyone, **controllers, "inventory_hostname": "head01"})
    head02 = _chrony({**everyone, **controllers, "inventory_hostname": "head02"})
    assert "\npeer head02\n" in head01 and "peer head01" not in head01  # chrony's peer takes no iburst
    assert "\npeer head01\n" in head02 and "peer head02" not in head02
    assert "local stratum 10 orphan\n" in head01 and "local stratum 10 orphan\n" in head02
    assert "server ntp1.example.com iburst\n" in head01 and "pool " not in head01


def test_site_time_servers_replace_the_public_pool_on_the_controllers():
    data = lab()
    data["site"]["time_servers"] = ["ntp1.example.org", "10.0.0.123"]
    files = render_targets(plan_of(data))
    controllers = _vars(files, "slurm_controllers")
    assert controllers["common_chrony_servers"] == ["ntp1.example.org", "10.0.0.123"]
    assert controllers["common_chrony_pools"] == []
    head = _chrony({**_vars(files, "all"), **controllers})
    assert "server ntp1.example.org iburst\nserver 10.0.0.123 iburst\n" in head
    test = files["tests/test_head.py"]
    assert "TIME_UPSTREAM = ['ntp1.example.org', '10.0.0.123']" in test
    assert "TIME_CONTROLLERS = ['head01']" in test
    compile(test, "test_head.py", "exec")


def test_without_slurm_every_node_keeps_the_role_default():
    data = lab()
    del data["slurm"]
    files = render_targets(plan_of(data))
    assert "ansible/group_vars/slurm_controllers.yml" not in files
    assert "common_chrony_servers" not in _vars(files, "all")
    assert "TIME_CONTROLLERS = []" in files["tests/test_gpu.py"]


@pytest.mark.parametrize("bad", ["ntp;reboot", "-oProxyCommand", "ntp server", "$(id)"])
def test_a_time_server_is_a_host_name(bad):
    data = lab()
    data["site"]["time_servers"] = [bad]
    with pytest.raises(BlueprintError):
        plan_of(data)


@pytest.mark.parametrize("name,servers", [("aws-p5", ["169.254.169.123"]), ("gcp-a3-mega", ["metadata.google.internal"]),
                                          ("azure-nd-h100-v5", [])])
def test_cloud_controllers_follow_the_providers_time_service(name, servers):
    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.plan import expand

    files = render_targets(expand(load_blueprint(REPO / "blueprints" / f"{name}.yaml")))
    controllers = _vars(files, "slurm_controllers")
    assert controllers["common_chrony_servers"] == servers
    assert controllers["common_chrony_pools"] == []  # Azure: no NTP service, and no public pool unless written
