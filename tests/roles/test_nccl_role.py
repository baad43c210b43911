"""The nccl role converged for real on localhost (install paths moved into a temporary directory): the lab's
rendered nccl.conf and its enroot environment file land where NCCL and enroot read them, unchanged, and a second
run changes nothing."""

from __future__ import annotations

from clusterctl.targets import nccl
from tests.helpers import lab, plan_of
from tests.roles.local_converge import changed, converge


def test_conf_and_enroot_environment_file_are_installed_as_rendered(tmp_path):
    files = nccl.render(plan_of(lab()))
    src = tmp_path / "render" / "nccl"
    src.mkdir(parents=True)
    for path, text in files.items():
        (src / path.rsplit("/", 1)[-1]).write_text(text)
    etc = tmp_path / "etc"
    etc.mkdir()  # /etc exists on a node; environ.d is created by the role
    variables = {"clusterctl_render_dir": str(tmp_path / "render"), "nccl_conf_file": "hgx.conf",
                 "nccl_enroot_env_file": "hgx.enroot.env", "nccl_conf_path": str(etc / "nccl.conf"),
                 "nccl_enroot_env_path": str(etc / "enroot" / "environ.d" / "50-nccl.env")}
    run = converge("nccl", tmp_path, variables)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (etc / "nccl.conf").read_text() == files["nccl/hgx.conf"]
    installed = etc / "enroot" / "environ.d" / "50-nccl.env"
    assert installed.read_text() == files["nccl/hgx.enroot.env"]
    assert oct(installed.stat().st_mode & 0o777) == "0o644"
    again = converge("nccl", tmp_path, variables)
    assert again.returncode == 0 and changed(again.stdout) == 0, again.stdout
