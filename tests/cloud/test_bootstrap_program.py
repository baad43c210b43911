"""clusterctl-bootstrap (clusterctl/cloud/node/bootstrap.py) run as the real program, in a temporary root
(``--root``), against the fake provider API (aws/gcloud/az on PATH), a local HTTP server standing in for
Azure's IMDS, Blob and Key Vault endpoints, and the real ansible-playbook converging a small bundle locally.

Stand-ins, and why: ``hostname`` (the real one would rename the test machine); the cloud CLIs and endpoints
(no cloud here). What is not tested here: a real instance, a real cloud-init run (the rehearsal runs the
program on a node; docs/cloud.md)."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.cloud.nodeprog import NODE, calls, env_with, fake_bin, tar_gz
from tests.helpers import wait_until

PROGRAM = NODE / "bootstrap.py"
MUNGE = "bXVuZ2Uta2V5LXZhbHVlLXNlY3JldC0xMjM0NTY3ODkw"
DBPASS = "db-Pa55-w0rd-very-secret"

SITE = b"""---
- name: Converge
  hosts: all
  gather_facts: false
  tasks:
    - name: The secrets arrive as variables
      ansible.builtin.assert:
        that: [vault_munge_key | length > 10]
      no_log: true
    - name: Write a marker next to the bundle
      ansible.builtin.copy:
        content: "{{ inventory_hostname }} {{ playbook_dir | basename }}\\n"
        dest: "{{ playbook_dir }}/../converged"
        mode: "0644"
"""
INVENTORY = (f"all:\n  vars:\n    ansible_python_interpreter: {sys.executable}\n"  # no discovery in a unit test
             "  hosts:\n    gpu001:\n    gpu002:\n").encode()
CFG = b"[defaults]\nstdout_callback = default\nhost_key_checking = false\n"


def bundle(site: bytes = SITE) -> bytes:
    return tar_gz({"ansible": None, "ansible/site.yml": site, "ansible/inventory.yml": INVENTORY,
                   "ansible/ansible.cfg": CFG, "slurm/slurm.conf": b"ClusterName=x\n"})


def settings(provider: str, url: str, secrets: dict, **extra) -> dict:
    return {"version": 1, "provider": provider, "region": "us-east-2", "config_url": url, "secrets": secrets,
            "timeout_s": 30, "host": "gpu001", **extra}


@pytest.fixture
def node(tmp_path):
    root, state = tmp_path / "root", tmp_path / "cloud"
    (root / "etc/clusterctl").mkdir(parents=True)
    state.mkdir()
    return root, state, fake_bin(tmp_path)


def run(root: Path, state: Path, bin_dir: Path, cfg: dict, timeout: float = 120, **env):
    (root / "etc/clusterctl/bootstrap.json").write_text(json.dumps(cfg))
    return subprocess.run([sys.executable, str(PROGRAM), "--root", str(root)], capture_output=True, text=True,
                          env=env_with(bin_dir, state, CLUSTERCTL_BOOTSTRAP_RETRY_S="0.2", **env), timeout=timeout)


def status(root: Path) -> dict:
    return json.loads((root / "var/lib/clusterctl/bootstrap-status.json").read_text())


def put_object(state: Path, bucket: str, data: bytes) -> None:
    obj = state / "objects" / bucket / "clusterctl/config.tar.gz"
    obj.parent.mkdir(parents=True, exist_ok=True)
    obj.write_bytes(data)


def no_secret_anywhere(root: Path, state: Path, *values: str) -> None:
    texts = [json.dumps(c["argv"]) for c in calls(state)]
    texts += [(root / "var/log/clusterctl-bootstrap.log").read_text(),
              (root / "var/lib/clusterctl/bootstrap-status.json").read_text()]
    for v in values:
        assert not [t for t in texts if v in t]


def test_aws_fetches_the_object_and_ssm_secrets_and_converges(node):
    root, state, bin_dir = node
    put_object(state, "bkt", bundle())
    (state / "secrets.json").write_text(json.dumps({"/clusterctl/c/munge-key": MUNGE,
                                                    "/clusterctl/c/slurmdbd-password": DBPASS}))
    cfg = settings("aws", "s3://bkt/clusterctl/config.tar.gz",
                   {"vault_munge_key": {"aws-ssm": "/clusterctl/c/munge-key"},
                    "vault_slurmdbd_storage_pass": {"aws-ssm": "/clusterctl/c/slurmdbd-password"}})
    r = run(root, state, bin_dir, cfg)
    assert r.returncode == 0, r.stdout + r.stderr + (root / "var/log/clusterctl-bootstrap.log").read_text()
    got = [c["argv"] for c in calls(state)]
    assert got == [
        ["s3", "cp", "s3://bkt/clusterctl/config.tar.gz",
         str(root / "var/lib/clusterctl/config.tar.gz.part"), "--region", "us-east-2", "--only-show-errors"],
        ["ssm", "get-parameter", "--name", "/clusterctl/c/munge-key", "--with-decryption", "--query",
         "Parameter.Value", "--output", "text", "--region", "us-east-2"],
        ["ssm", "get-parameter", "--name", "/clusterctl/c/slurmdbd-password", "--with-decryption", "--query",
         "Parameter.Value", "--output", "text", "--region", "us-east-2"],
    ]
    secrets = root / "etc/clusterctl/secrets.json"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert json.loads(secrets.read_text()) == {"vault_munge_key": MUNGE, "vault_slurmdbd_storage_pass": DBPASS}
    st = status(root)
    assert st["result"] == "ok" and st["host"] == "gpu001" and st["step"] is None
    bundle_dir = root / "var/lib/clusterctl/bundle" / st["bundle"]
    assert (bundle_dir / "converged").read_text() == "gpu001 ansible\n"  # --limit gpu001, site.yml in the bundle
    assert (bin_dir / "hostname.calls").read_text() == "gpu001\n"
    assert (root / "etc/hostname").read_text() == "gpu001\n"
    no_secret_anywhere(root, state, MUNGE, DBPASS)
    # a second run reuses the extracted bundle, converges again and exits 0 (idempotent)
    r2 = run(root, state, bin_dir, cfg)
    assert r2.returncode == 0 and status(root)["bundle"] == st["bundle"]
    assert len(list((root / "var/lib/clusterctl/bundle").iterdir())) == 1


def test_gcp_secret_manager_and_storage(node):
    root, state, bin_dir = node
    put_object(state, "gbkt", bundle())
    (state / "secrets.json").write_text(json.dumps({"projects/p-1/secrets/c-munge-key": MUNGE}))
    cfg = settings("gcp", "gs://gbkt/clusterctl/config.tar.gz",
                   {"vault_munge_key": {"gcp-secret": "projects/p-1/secrets/c-munge-key"}})
    r = run(root, state, bin_dir, cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [c["argv"] for c in calls(state)] == [
        ["storage", "cp", "gs://gbkt/clusterctl/config.tar.gz", str(root / "var/lib/clusterctl/config.tar.gz.part")],
        ["secrets", "versions", "access", "latest", "--secret=c-munge-key", "--project=p-1"]]
    assert json.loads((root / "etc/clusterctl/secrets.json").read_text()) == {"vault_munge_key": MUNGE}
    no_secret_anywhere(root, state, MUNGE)


def test_waits_for_an_object_written_after_the_instance_started(node):
    root, state, bin_dir = node
    obj = root.parent / "late" / "config.tar.gz"
    (root.parent / "munge.key").write_text(MUNGE + "\n")
    cfg = settings("aws", f"file://{obj}", {"vault_munge_key": {"file": str(root.parent / "munge.key")}})

    log_file = root / "var/log/clusterctl-bootstrap.log"

    def later():  # once the program has looked for the object and not found it
        wait_until(lambda: log_file.exists() and "waiting for file://" in log_file.read_text(),
                   "the program to wait for the object")
        obj.parent.mkdir()
        obj.write_bytes(bundle())
    t = threading.Thread(target=later)
    t.start()
    r = run(root, state, bin_dir, cfg)
    t.join()
    assert r.returncode == 0, r.stdout + r.stderr
    log = (root / "var/log/clusterctl-bootstrap.log").read_text()
    assert "waiting for file://" in log and "(attempt 1)" not in log
    assert json.loads((root / "etc/clusterctl/secrets.json").read_text()) == {"vault_munge_key": MUNGE}


def test_gives_up_after_timeout_s_with_exit_3(node):
    root, state, bin_dir = node
    cfg = settings("aws", "s3://none/clusterctl/config.tar.gz", {}, timeout_s=1)
    r = run(root, state, bin_dir, cfg)
    assert r.returncode == 3
    st = status(root)
    assert st["result"] == "failed" and st["step"] == "fetch" and "not available after 1 s" in st["message"]
    assert len(calls(state)) >= 2  # retried


@pytest.mark.parametrize("members,links", [
    ({"ansible/site.yml": SITE, "../evil": b"x"}, None),
    ({"ansible/site.yml": SITE, "/etc/evil": b"x"}, None),
    ({"ansible/site.yml": SITE, "ansible/../../evil": b"x"}, None),
    ({"ansible/site.yml": SITE}, {"ansible/inventory.yml": "/etc/shadow"}),
])
def test_unsafe_members_are_refused(node, members, links):
    root, state, bin_dir = node
    put_object(state, "bkt", tar_gz(members, links=links))
    r = run(root, state, bin_dir, settings("aws", "s3://bkt/clusterctl/config.tar.gz", {}))
    assert r.returncode == 4
    assert status(root)["step"] == "extract"
    assert not (root.parent / "evil").exists() and not (root / "etc/evil").exists()
    assert list((root / "var/lib/clusterctl/bundle").iterdir()) == []  # nothing half-extracted is kept


@pytest.mark.parametrize("host", ["GPU001", "gpu_001", "gpu001.example.com", "-x", "a\nb"])
def test_refuses_a_host_name_that_is_not_a_label(node, host):
    root, state, bin_dir = node
    r = run(root, state, bin_dir, {**settings("aws", "s3://b/k", {}), "host": host})
    assert r.returncode == 2 and status(root)["step"] == "config"
    assert not (bin_dir / "hostname.calls").exists()


def test_a_failed_converge_names_the_task_and_exits_1(node):
    root, state, bin_dir = node
    site = SITE.replace(b"vault_munge_key | length > 10", b"vault_munge_key == 'something else'")
    site = site.replace(b"      no_log: true\n", b"")  # the failure message would show the value: redacted
    put_object(state, "bkt", bundle(site))
    (state / "secrets.json").write_text(json.dumps({"/m": MUNGE}))
    r = run(root, state, bin_dir, settings("aws", "s3://bkt/clusterctl/config.tar.gz",
                                           {"vault_munge_key": {"aws-ssm": "/m"}}))
    assert r.returncode == 1
    st = status(root)
    assert st["step"] == "converge" and st["failed_task"] == "The secrets arrive as variables"
    log = (root / "var/log/clusterctl-bootstrap.log").read_text()
    assert "fatal: [gpu001]" in log
    no_secret_anywhere(root, state, MUNGE)


def test_secret_fetch_failure_exits_5_and_writes_no_vars_file(node):
    root, state, bin_dir = node
    put_object(state, "bkt", bundle())
    r = run(root, state, bin_dir, settings("aws", "s3://bkt/clusterctl/config.tar.gz",
                                           {"vault_munge_key": {"aws-ssm": "/missing"}}))
    assert r.returncode == 5 and "ParameterNotFound" in status(root)["message"]
    assert not (root / "etc/clusterctl/secrets.json").exists()


class Azure(BaseHTTPRequestHandler):
    """IMDS (token), Blob (the object) and Key Vault (a secret), checking the headers each requires."""

    blob = b""
    seen: list = []

    def do_GET(self):  # noqa: N802
        u = urlparse(self.path)
        q = parse_qs(u.query)
        self.seen.append((u.path, {k: v[0] for k, v in q.items()}, dict(self.headers)))
        if u.path == "/metadata/identity/oauth2/token":
            ok = self.headers.get("Metadata") == "true" and q.get("api-version") == ["2018-02-01"]
            body = json.dumps({"access_token": "tok-" + q["resource"][0], "token_type": "Bearer"}).encode()
            return self.answer(200 if ok else 400, body)
        if u.path == "/cont/clusterctl/config.tar.gz":
            ok = self.headers.get("Authorization") == "Bearer tok-https://storage.azure.com/" and \
                self.headers.get("x-ms-version")
            return self.answer(200 if ok else 403, self.blob)
        if u.path == "/secrets/munge-key":
            ok = self.headers.get("Authorization") == "Bearer tok-https://vault.azure.net" and \
                q.get("api-version") == ["7.4"]
            return self.answer(200 if ok else 401, json.dumps({"value": MUNGE, "id": "x"}).encode())
        return self.answer(404, b"{}")

    def answer(self, code: int, body: bytes):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_azure_blob_and_key_vault_through_the_managed_identity(node):
    root, state, bin_dir = node
    Azure.blob, Azure.seen = bundle(), []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Azure)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    local = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        cfg = settings("azure", "https://acct.blob.core.windows.net/cont/clusterctl/config.tar.gz",
                       {"vault_munge_key": {"azure-keyvault": "https://kv-c.vault.azure.net/secrets/munge-key"}},
                       identity="11111111-2222-3333-4444-555555555555",
                       endpoint_overrides={"http://169.254.169.254": local,
                                           "https://acct.blob.core.windows.net": local,
                                           "https://kv-c.vault.azure.net": local})
        r = run(root, state, bin_dir, cfg)
    finally:
        server.shutdown()
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(p, q.get("resource"), q.get("client_id")) for p, q, _ in Azure.seen] == [
        ("/metadata/identity/oauth2/token", "https://storage.azure.com/", "11111111-2222-3333-4444-555555555555"),
        ("/cont/clusterctl/config.tar.gz", None, None),
        ("/metadata/identity/oauth2/token", "https://vault.azure.net", "11111111-2222-3333-4444-555555555555"),
        ("/secrets/munge-key", None, None)]
    assert calls(state) == []  # no CLI on Azure: REST only
    assert json.loads((root / "etc/clusterctl/secrets.json").read_text()) == {"vault_munge_key": MUNGE}
    no_secret_anywhere(root, state, MUNGE)


def waits_for_flock(pid: int, path: Path) -> bool:
    """Whether process ``pid`` is blocked on an flock of ``path``: a ``->`` line of /proc/locks."""
    inode = f":{os.stat(path).st_ino} "
    return any(line.split()[1] == "->" and f" {pid} " in line and inode in line
               for line in Path("/proc/locks").read_text().splitlines())


def test_a_second_run_waits_for_the_first(node):
    root, state, bin_dir = node
    put_object(state, "bkt", bundle())
    (root.parent / "munge.key").write_text(MUNGE)
    cfg = settings("aws", "s3://bkt/clusterctl/config.tar.gz",
                   {"vault_munge_key": {"file": str(root.parent / "munge.key")}})
    (root / "etc/clusterctl/bootstrap.json").write_text(json.dumps(cfg))
    lock_dir = root / "var/lib/clusterctl"
    lock_dir.mkdir(parents=True)
    with open(lock_dir / "bootstrap.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, str(PROGRAM), "--root", str(root)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env_with(bin_dir, state))
        wait_until(lambda: proc.poll() is not None or waits_for_flock(proc.pid, lock_dir / "bootstrap.lock"),
                   "the second run to wait for the lock")
        assert proc.poll() is None and calls(state) == []  # waiting on the lock, nothing fetched
    assert proc.wait(timeout=120) == 0
    assert os.path.exists(lock_dir / "bootstrap-status.json")


def test_the_real_configuration_object_extracts(tmp_path):
    """the bundle the Pulumi programs upload (a render of aws-p5 + stack.json) passes the safe extraction whole"""
    from clusterctl.cloud.stack.bundle import config_bundle
    from clusterctl.cloud.node import bootstrap
    from clusterctl.targets import render_targets
    from tests.helpers import plan_of, shipped

    out = tmp_path / "out"
    for path, text in render_targets(plan_of(shipped("aws-p5"))).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    (out / "cloud/bin/clusterctl-bootstrap").chmod(0o755)
    archive = tmp_path / "config.tar.gz"
    archive.write_bytes(config_bundle(out, {"version": 1, "cluster": "aws-p5"}))
    digest, target = bootstrap.extract(str(archive), str(tmp_path / "state"))
    got = Path(target)
    assert (got / "ansible/site.yml").read_text() == (out / "ansible/site.yml").read_text()
    assert (got / "slurm/slurm.conf").is_file() and json.loads((got / "cloud/stack.json").read_text())["cluster"] == "aws-p5"
    assert os.access(got / "cloud/bin/clusterctl-bootstrap", os.X_OK)
    assert not (got / "pulumi").exists()
