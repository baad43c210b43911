"""GCP A3 Mega: the gcp_tcpxo role's RxDM prolog/epilog pieces (GPUDirect-TCPXO receive-datapath manager).

* site.yml applies the role to the a3-megagpu-8g node group of gcp-a3-mega and to no group of any other shipped
  blueprint (nor to an A3 Ultra variant).
* The role converges for real (ansible-playbook, connection local) with its install paths moved into a temporary
  directory: the two pieces are byte-for-byte the files under tests/cloud/data/gcp_tcpxo/ (regenerate with
  CLUSTERCTL_UPDATE_GOLDEN=1 and review the diff; refused under CI), mode 0755, ``bash -n`` clean; a second
  converge changes nothing; an image value with shell syntax in it stays one quoted word.
* The nccl target's A3 Mega env file sources the profile from the directory the prolog installs it into.

What cannot run here: Docker with the NVIDIA runtime, the TCPXO kernel module, the images, a3-megagpu-8g
hardware; the scripts are tested as text (docs/cloud.md).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from clusterctl.targets import render_targets
from clusterctl import yamlout
from clusterctl.targets.nccl.gcp_gpudirect import TCPXO_LIB
from tests.cloud.test_hostnames import BLUEPRINTS as CLOUD_BLUEPRINTS
from tests.conftest import refresh_requested
from tests.helpers import BLUEPRINTS, REPO, plan_of, shipped
from tests.roles import local_converge

ROLE = "gcp_tcpxo"
DATA = Path(__file__).parent / "data" / ROLE
PIECES = {"prolog": "gcp_tcpxo_prolog_path", "epilog": "gcp_tcpxo_epilog_path"}


def _site(data: dict) -> list[dict]:
    return yamlout.load(render_targets(plan_of(data), ["ansible"])["ansible/site.yml"])


def _roles_by_hosts(site: list[dict]) -> dict[str, list[str]]:
    return {p["hosts"]: [r["role"] for r in p.get("roles", [])] for p in site}


def test_site_applies_the_role_to_the_a3_mega_group_only():
    roles = _roles_by_hosts(_site(shipped("gcp-a3-mega")))
    assert [h for h, rs in roles.items() if ROLE in rs] == ["a3mega"]
    assert roles["a3mega"].index("nccl") < roles["a3mega"].index(ROLE)


@pytest.mark.parametrize("name", sorted(p.stem for p in BLUEPRINTS.glob("*.yaml") if p.stem != "gcp-a3-mega"))
def test_no_other_shipped_blueprint_gets_the_role(name):
    site = render_targets(plan_of(shipped(name)), ["ansible"])["ansible/site.yml"]
    assert ROLE not in site


def test_an_a3_ultra_group_gets_no_rxdm():
    data = shipped("gcp-a3-mega")
    data["node_types"]["a3mega"]["instance"] = "a3-ultragpu-8g"
    assert not [h for h, rs in _roles_by_hosts(_site(data)).items() if ROLE in rs]


def _converge(root: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    variables = {var: str(root / "etc" / f"{kind}.d" / "50-rxdm") for kind, var in PIECES.items()}
    variables.update(extra or {})
    return local_converge.converge(ROLE, root, variables)


@pytest.fixture(scope="module")
def converged(tmp_path_factory):
    root = tmp_path_factory.mktemp("rxdm")
    first = _converge(root)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    second = _converge(root)
    return root, first, second


@pytest.mark.parametrize("kind", sorted(PIECES))
def test_rendered_piece_is_exactly_the_expected_script(converged, kind):
    root, *_ = converged
    path = root / "etc" / f"{kind}.d" / "50-rxdm"
    text = path.read_text()
    expected = DATA / f"50-rxdm.{kind}"
    if refresh_requested("CLUSTERCTL_UPDATE_GOLDEN"):
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(text)
    assert text == expected.read_text()
    assert path.stat().st_mode & 0o777 == 0o755
    assert text.startswith("#!/bin/bash\n")
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_prolog_starts_the_pinned_rxdm_with_the_tcpxo_mounts(converged):
    root, *_ = converged
    prolog = (root / "etc" / "prolog.d" / "50-rxdm").read_text()
    defaults = yamlout.load((REPO / "roles" / ROLE / "defaults" / "main.yml").read_text())
    assert f"rxdm_image={defaults['gcp_tcpxo_rxdm_image']}\n" in prolog
    assert f"plugin_image={defaults['gcp_tcpxo_nccl_plugin_image']}\n" in prolog
    assert re.search(r":v\d+\.\d+\.\d+$", defaults["gcp_tcpxo_rxdm_image"])  # pinned, not :latest
    for needed in ("--volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper",
                   "--volume /var/lib/nvidia/lib64:/usr/local/nvidia/lib64", "--gpus all", "--network=host",
                   "--num_hops=2 --num_nics=8", "modprobe import-helper", "install --install-nccl",
                   "Buffer manager initialization complete"):
        assert needed in prolog, needed


def test_second_converge_changes_nothing(converged):
    _, first, second = converged
    assert local_converge.changed(first.stdout) > 0
    assert second.returncode == 0 and local_converge.changed(second.stdout) == 0, second.stdout[-3000:]


def test_an_image_value_with_shell_syntax_stays_one_quoted_word(tmp_path):
    evil = "us-docker.pkg.dev/x/y:v1; touch /tmp/pwned $(id)"
    result = _converge(tmp_path, {"gcp_tcpxo_rxdm_image": evil})
    assert result.returncode == 0, result.stdout[-3000:]
    prolog = (tmp_path / "etc" / "prolog.d" / "50-rxdm").read_text()
    assert f"rxdm_image={shlex.quote(evil)}\n" in prolog
    assert subprocess.run(["bash", "-n", str(tmp_path / "etc" / "prolog.d" / "50-rxdm")]).returncode == 0


def test_nccl_env_agrees_with_what_the_prolog_installs(converged):
    root, *_ = converged
    prolog = (root / "etc" / "prolog.d" / "50-rxdm").read_text()
    env = render_targets(plan_of(shipped("gcp-a3-mega")), ["nccl"])["nccl/a3mega.env.sh"]
    # the installer writes NCCL, the plugin and nccl-env-profile.sh to /var/lib/tcpxo/lib64 (its fixed path)
    assert TCPXO_LIB == "/var/lib/tcpxo/lib64"
    assert f"rm -rf {TCPXO_LIB}\n" in prolog and "--volume /var/lib:/var/lib" in prolog
    assert f"source {TCPXO_LIB}/nccl-env-profile.sh" in env
    # what slurm-gcp appends to the profile for Debian 12 / Ubuntu, the env file sets itself
    assert "export NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/aperture_devices" in env
    assert f'export LD_LIBRARY_PATH="{TCPXO_LIB}' in env
    assert "50-rxdm Slurm prolog" in env
    for name in sorted(set(CLOUD_BLUEPRINTS.values()) - {"gcp-a3-mega"}):
        for path, text in render_targets(plan_of(shipped(name)), ["nccl"]).items():
            assert "50-rxdm" not in text, path
