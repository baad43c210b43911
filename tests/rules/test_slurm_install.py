"""slurm.install: the install source's model and kinds, the rules SLURM020-022, and what they render (group_vars,
gres.conf) as exact lines."""

from __future__ import annotations

import pytest
import yaml

from clusterctl import kinds
from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.targets import ansible as ansible_target
from clusterctl.targets import slurm as slurm_target
from tests.helpers import hits, lab, to_yaml

REPO = {"kind": "repo", "url": "https://repo.example.com/slurm/debian", "key": "https://repo.example.com/slurm/key.asc",
        "suite": "jammy", "version": "24.05.4-1"}


def distro_lab(os_name: str = "ubuntu-22.04", version: str = "24.05", **install):
    data = lab()
    data["slurm"]["version"] = version
    data["slurm"]["install"] = {"kind": "distro", **install}
    data["software"]["os"] = os_name
    return data


def problems(data: dict) -> list:
    text = to_yaml(data)
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text, "bp.yaml")
    err = exc.value
    return [(p.message, err.source.locate(p.path, key=p.key)) for p in err.problems]


@pytest.mark.parametrize("url", ["https://repo.example.com/a b", "https://repo.example.com/x\nTypes: deb",
                                 "https://user:pw@repo.example.com/", "ftp://repo.example.com/", "file:/srv/debs",
                                 "https://repo.example.com/a#x", "https://repo.example.com/../etc", "repo.example.com",
                                 "https://repo.example.com/a\nSigned-By: /tmp/k"])
def test_repo_url_refuses_what_could_inject_into_a_sources_file(url):
    assert kinds.APT_URL.explain(url) is not None
    data = lab()
    data["slurm"]["install"] = {**REPO, "url": url}
    ((message, loc),) = problems(data)
    assert message.startswith("slurm.install.url is ")
    assert loc is not None and loc.line == to_yaml(data).splitlines().index(
        next(line for line in to_yaml(data).splitlines() if line.lstrip().startswith("url:"))) + 1


def test_repo_key_suite_and_kind_are_checked():
    assert kinds.APT_KEY.explain("key.asc") is not None and kinds.APT_KEY.explain("/etc/apt/keyrings/s.gpg") is None
    assert kinds.APT_SUITE.explain("jammy main") is not None
    data = lab()
    data["slurm"]["install"] = {**REPO, "kind": "ppa"}
    assert any("kind" in m or "ppa" in m for m, _ in problems(data))
    data["slurm"]["install"] = {"kind": "debs", "path": "srv/debs", "version": "24.05.4-1"}
    assert any("absolute path" in m for m, _ in problems(data))


def test_distro_that_ships_another_release_warns_at_the_version_line():
    (h,) = hits(distro_lab(), "SLURM020")
    assert h.path == ("slurm", "version")
    assert h.message == ("slurm.version is 24.05 but ubuntu-22.04 ships Slurm 21.08 (slurm.install is distro): the "
                         "preflight would stop site.yml on every host")
    assert "kind repo" in h.hint and "debs" in h.hint and '"21.08"' in h.hint
    (h,) = hits(distro_lab("ubuntu-24.04"), "SLURM020")
    assert "ubuntu-24.04 ships Slurm 23.11" in h.message


def test_distro_that_ships_the_release_is_quiet():
    assert hits(distro_lab("debian-12", "22.05"), "SLURM020") == []
    assert hits(distro_lab("debian-13", "24.11"), "SLURM020") == []
    assert hits(lab(), "SLURM020") == []  # a debs source


def test_pinned_package_of_another_release_is_an_error():
    data = lab()
    data["slurm"]["install"]["version"] = "24.11.5-1"
    (h,) = hits(data, "SLURM021")
    assert h.path == ("slurm", "install", "version")
    assert h.message == "package version 24.11.5-1 is Slurm 24.11, but slurm.version is 24.05"
    assert hits(lab(), "SLURM021") == []


def test_nvml_missing_from_the_source_is_said():
    (h,) = hits(distro_lab("debian-12", "22.05"), "SLURM022")
    assert h.path == ("slurm", "gres_autodetect")
    assert "AutoDetect=off and the explicit GPU lines only (node group gpu: 8 x h100-sxm)" in h.message
    data = lab()
    data["slurm"]["install"]["gpu_nvml"] = False
    (h,) = hits(data, "SLURM022")
    assert h.path == ("slurm", "install", "gpu_nvml") and "debs Slurm packages have no gpu/nvml" in h.message
    assert hits(lab(), "SLURM022") == []
    off = distro_lab("debian-12", "22.05")
    off["slurm"]["gres_autodetect"] = "off"
    assert hits(off, "SLURM022") == []


def test_distro_nvml_plugin_only_where_the_archive_has_it():
    (h,) = hits(distro_lab("ubuntu-22.04", "21.08", gpu_nvml=True), "SLURM022")
    assert str(h.severity) == "error" and "ubuntu-22.04 has no slurm-wlm-nvml-plugin" in h.message
    assert hits(distro_lab("debian-12", "22.05", gpu_nvml=True), "SLURM022") == []


def plan(data: dict):
    return expand(load_blueprint_text(to_yaml(data), "bp.yaml"))


def gres_lines(data: dict) -> list[str]:
    return slurm_target.render(plan(data))["slurm/gres.conf"].splitlines()[1:4]


def test_gres_conf_without_nvml_lists_the_gpus_with_autodetect_off():
    assert gres_lines(distro_lab("debian-12", "22.05")) == [
        "# AutoDetect=nvml not emitted: the distribution's slurm-wlm is built without NVML (slurm-wlm-nvml-plugin "
        "not installed: slurm.install.gpu_nvml false), and slurmd is fatal on AutoDetect=nvml without it "
        "(gres.conf(5) AutoDetect); the lines below are the only source",
        "AutoDetect=off",
        "# one line per node group and socket; Cores= (servers with a declared CPU layout) are that socket's "
        "logical core indices"]
    text = slurm_target.render(plan(distro_lab("debian-12", "22.05")))["slurm/gres.conf"]
    assert text.splitlines()[4:] == ["NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-51",
                                     "NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=52-103"]


def test_gres_conf_with_nvml_keeps_autodetect():
    assert gres_lines(lab())[1] == "AutoDetect=nvml"
    assert gres_lines(distro_lab("debian-12", "22.05", gpu_nvml=True))[1] == "AutoDetect=nvml"


def install_vars(data: dict) -> dict:
    text = ansible_target.render(plan(data))["ansible/group_vars/all.yml"]
    return {k: v for k, v in yaml.safe_load(text).items()
            if k.startswith(("slurm_preflight_", "slurm_controller_packages", "slurm_compute_packages",
                             "slurm_login_packages", "slurmdbd_packages"))}


def test_group_vars_of_a_repo_source():
    data = lab()
    data["slurm"]["install"] = {**REPO, "components": ["main", "contrib"]}
    assert install_vars(data) == {
        "slurm_preflight_install_source": "repo", "slurm_preflight_install_version": "24.05.4-1",
        "slurm_preflight_repo_url": "https://repo.example.com/slurm/debian",
        "slurm_preflight_repo_key": "https://repo.example.com/slurm/key.asc", "slurm_preflight_repo_key_fingerprint": "",
        "slurm_preflight_repo_suite": "jammy", "slurm_preflight_repo_components": ["main", "contrib"],
        "slurm_controller_packages": ["slurm-smd-slurmctld=24.05.4-1", "slurm-smd-client=24.05.4-1"],
        "slurm_compute_packages": ["slurm-smd-slurmd=24.05.4-1", "slurm-smd-client=24.05.4-1"],
        "slurm_login_packages": ["slurm-smd-client=24.05.4-1"],
        "slurmdbd_packages": ["slurm-smd-slurmdbd=24.05.4-1"], "slurm_preflight_package": "slurm-smd-slurmd"}


def test_group_vars_of_debs_and_distro_sources():
    assert install_vars(lab()) == {
        "slurm_preflight_install_source": "debs", "slurm_preflight_install_version": "24.05.4-1",
        "slurm_preflight_debs_dir": "/srv/slurm-debs",
        "slurm_controller_packages": ["slurm-smd-slurmctld=24.05.4-1", "slurm-smd-client=24.05.4-1"],
        "slurm_compute_packages": ["slurm-smd-slurmd=24.05.4-1", "slurm-smd-client=24.05.4-1"],
        "slurm_login_packages": ["slurm-smd-client=24.05.4-1"],
        "slurmdbd_packages": ["slurm-smd-slurmdbd=24.05.4-1"], "slurm_preflight_package": "slurm-smd-slurmd"}
    assert install_vars(distro_lab("debian-12", "22.05", gpu_nvml=True)) == {
        "slurm_preflight_install_source": "distro", "slurm_preflight_install_version": "",
        "slurm_controller_packages": ["slurmctld", "slurm-client"],
        "slurm_compute_packages": ["slurmd", "slurm-client", "slurm-wlm-nvml-plugin"],
        "slurm_login_packages": ["slurm-client"], "slurmdbd_packages": ["slurmdbd"],
        "slurm_preflight_package": "slurmd"}
