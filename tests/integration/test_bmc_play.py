"""The rendered BMC play (ansible/bmc.yml of lab-ha) against the rehearsal's Redfish emulators
(clusterctl/rehearse/fake/redfish.py) on 127.0.0.x addresses of this machine, through ansible-runner, with the
credentials in an ansible-vault file (docs/bmc.md):

- status reads PowerState On on two BMCs; pxe sets the boot override (read back from the emulator itself);
  cycle makes the emulator call ``on_power(host, "restart")`` and the state reads On again;
- a vault with another password fails with the play's own message naming the secret reference;
- the password is in no process's argv while the plays run (/proc/*/cmdline, scanned throughout), nor in the
  plays' output, the runner's artifacts or the rendered files.

The rendered vars file's mapping is reused with only the addresses changed (``-e @bmcs.yml``), so the names and
secret references are the renderer's.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import socket
import ssl
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import ansible_runner
import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan.expand import expand
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.fake.redfish import start_bmcs
from clusterctl.targets import render_targets
from tests.helpers import REPO

ADDRESSES = {"gpu01": "127.0.0.41", "gpu02": "127.0.0.42"}
USER = "clusterctl-test"


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class ArgvScanner(threading.Thread):
    """Reads every process's command line until stopped; records those holding the secret."""

    def __init__(self, secret: bytes):
        super().__init__(daemon=True)
        self.secret, self.found, self.scans = secret, [], 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.02):
            for proc in Path("/proc").iterdir():
                if proc.name.isdigit():
                    try:
                        argv = (proc / "cmdline").read_bytes()
                    except OSError:
                        continue
                    if self.secret in argv:
                        self.found.append(argv.replace(b"\0", b" ").decode(errors="replace"))
            self.scans += 1


@pytest.fixture(scope="module")
def bmc_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("bmc")
    (base / "runner").mkdir()
    plan = expand(load_blueprint(REPO / "blueprints" / "lab-ha.yaml"))
    files = render_targets(plan, ["ansible", "bmc"])
    for rel, text in files.items():
        path = base / "render" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    password = "bmc-" + secrets.token_hex(12)
    credentials = base / "credentials.json"
    credentials.write_text(json.dumps({"user": USER, "password": password}))
    credentials.chmod(0o600)
    events: list[tuple[str, str]] = []
    restarted = threading.Event()

    def on_power(host: str, action: str) -> None:
        events.append((host, action))
        restarted.set()

    port = _free_port(ADDRESSES["gpu01"])
    fleet = start_bmcs(base / "out", ADDRESSES, on_power, port=port, credentials=credentials)
    rendered = json.loads((base / "render" / "ansible" / "vars" / "bmc.json").read_text())["clusterctl_bmcs"]
    overrides = {"clusterctl_bmcs": {h: {**rendered[h], "address": a} for h, a in ADDRESSES.items()},
                 "bmc_port": port, "bmc_ca_path": str(fleet.ca_cert)}
    (base / "bmcs.yml").write_text(yaml.safe_dump(overrides))
    (base / "bmcs-no-ca.yml").write_text(yaml.safe_dump({k: v for k, v in overrides.items() if k != "bmc_ca_path"}))
    vault_password = base / "vault-password"
    vault_password.write_text(secrets.token_hex(16) + "\n")
    vault_password.chmod(0o600)
    for name, pw in (("vault.yml", password), ("vault-wrong.yml", password + "x")):
        (base / name).write_text(yaml.safe_dump({"vault_bmc_lab": {"user": USER, "password": pw}}))
        done = subprocess.run(["ansible-vault", "encrypt", "--vault-password-file", str(vault_password),
                               str(base / name)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    scanner = ArgvScanner(password.encode())
    scanner.start()
    yield {"base": base, "fleet": fleet, "password": password, "events": events, "restarted": restarted,
           "scanner": scanner, "port": port}
    scanner.stopped.set()
    scanner.join()
    fleet.stop()


def play(lab, action: str, limit: str, vault: str = "vault.yml", ident: str | None = None,
         bmcs: str = "bmcs.yml"):
    base = lab["base"]
    cmdline = ["--limit", limit, "-e", f"bmc_action={action}", "-e", f"@{base / vault}", "-e",
               f"@{base / bmcs}", "--vault-password-file", str(base / "vault-password")]
    r = ansible_runner.run(private_data_dir=str(base / "runner"), project_dir=str(base / "render" / "ansible"),
                           playbook="bmc.yml", cmdline=shlex.join(cmdline), ident=ident or action, quiet=True,
                           rotate_artifacts=0, timeout=120,
                           envvars={"ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(base / "ansible-tmp"),
                                    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])})
    return r.rc, r.stdout.read()


def _system(lab, host: str) -> dict:
    """The emulator's ComputerSystem of ``host``, read directly (not through the play)."""
    creds = base64.b64encode(f"{USER}:{lab['password']}".encode()).decode()
    ctx = ssl.create_default_context(cafile=str(lab["fleet"].ca_cert))
    root = f"https://{ADDRESSES[host]}:{lab['port']}"

    def get(path: str) -> dict:
        req = urllib.request.Request(root + path, headers={"Authorization": f"Basic {creds}"})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return json.load(resp)

    return get(get("/redfish/v1/Systems")["Members"][0]["@odata.id"])


def test_status_reads_the_power_state_of_each_bmc(bmc_lab):
    rc, out = play(bmc_lab, "status", "gpu01,gpu02")
    assert rc == 0, out
    assert "gpu01 gpu01-bmc 127.0.0.41: PowerState On, boot override Hdd (Continuous)" in out
    assert "gpu02 gpu02-bmc 127.0.0.42: PowerState On, boot override Hdd (Continuous)" in out


def test_pxe_sets_the_boot_override(bmc_lab):
    rc, out = play(bmc_lab, "pxe", "gpu01")
    assert rc == 0, out
    assert "gpu01 gpu01-bmc 127.0.0.41: PowerState On, boot override Pxe" in out
    assert _system(bmc_lab, "gpu01")["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert _system(bmc_lab, "gpu02")["Boot"]["BootSourceOverrideTarget"] == "Hdd"


def test_cycle_restarts_the_node_and_reads_the_state_back(bmc_lab):
    rc, out = play(bmc_lab, "cycle", "gpu02")
    assert rc == 0, out
    assert bmc_lab["restarted"].wait(10)
    # the emulator offers no PowerCycle (sushy-tools' AllowableValues), so the play chose ForceRestart
    assert bmc_lab["events"] == [("gpu02", "restart")]
    assert "gpu02 gpu02-bmc 127.0.0.42: PowerState On" in out


def test_a_wrong_password_fails_with_a_clear_message(bmc_lab):
    rc, out = play(bmc_lab, "status", "gpu01", vault="vault-wrong.yml", ident="wrong")
    assert rc != 0
    assert "gpu01: gpu01-bmc (https://127.0.0.41:" in out
    assert "refused the credentials of vault_bmc_lab (HTTP 401)" in out


def test_a_certificate_no_trusted_ca_signed_is_refused(bmc_lab):
    """Without bmc_ca_path the emulators' per-rehearsal certificate chains to nothing this machine trusts."""
    rc, out = play(bmc_lab, "status", "gpu01", ident="no-ca", bmcs="bmcs-no-ca.yml")
    assert rc != 0
    assert "gpu01: gpu01-bmc (https://127.0.0.41:" in out
    assert "did not answer" in out and "CERTIFICATE_VERIFY_FAILED" in out


def test_an_unknown_action_is_refused(bmc_lab):
    rc, out = play(bmc_lab, "reboot", "gpu01", ident="unknown")
    assert rc != 0
    assert "bmc_action must be one of status, pxe, disk, cycle, on, off (got reboot)" in out


def test_the_password_is_in_no_argv_output_artifact_or_rendered_file(bmc_lab):
    """Last in the module: the scanner has watched every play above."""
    scanner = bmc_lab["scanner"]
    assert scanner.scans > 10
    assert scanner.found == []
    password = bmc_lab["password"].encode()
    base = bmc_lab["base"]
    leaked = [str(p.relative_to(base)) for where in ("runner", "render", "out") for p in (base / where).rglob("*")
              if p.is_file() and password in p.read_bytes()]
    assert leaked == []
    assert list((base / "runner" / "artifacts").glob("*/stdout")), "the runner kept its artifacts"


def test_the_harness_refuses_credentials_others_can_read(tmp_path):
    credentials = tmp_path / "credentials.json"
    credentials.write_text(json.dumps({"user": USER, "password": "x"}))
    credentials.chmod(0o644)
    with pytest.raises(RehearsalError, match="readable by others"):
        start_bmcs(tmp_path / "out", {"gpu01": "127.0.0.43"}, lambda h, a: None, port=1, credentials=credentials)
