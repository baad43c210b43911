#!/usr/bin/python3
"""clusterctl-bootstrap: the first boot of a cloud instance, from bare image to a converged cluster node.

cloud-init writes this program to /usr/local/sbin/clusterctl-bootstrap and its settings to
/etc/clusterctl/bootstrap.json (clusterctl.cloud.stack.userdata.bootstrap_config plus "host"), then runs it once.
Steps (each named in the status file when it fails):

1. ``config``: read and check the settings; the host name must be a lower-case RFC 1123 label.
2. ``hostname``: when the running host name differs, set it (``hostname NAME`` and /etc/hostname; argument
   lists, no shell).
3. ``fetch``: fetch the configuration object by its URL scheme, retrying until it exists or ``timeout_s``
   passes (the Pulumi program may write it after the instance starts):
   ``s3://`` ``aws s3 cp URL FILE --region R``; ``gs://`` ``gcloud storage cp URL FILE``;
   ``https://ACCOUNT.blob.core.windows.net/...`` Blob REST (GET, ``x-ms-version``) with a managed-identity
   token from the instance metadata service (IMDS; ``client_id`` = the settings' ``identity`` when set);
   ``file://`` a copy (the rehearsal).
4. ``extract``: unpack it into /var/lib/clusterctl/bundle/<sha256>/ (once per object: a re-run reuses it).
   Only regular files and directories with relative names inside the bundle are accepted: an absolute name,
   a ``..`` component, a link or a device fails the step and nothing is used.
5. ``secrets``: fetch each secret by its reference kind - ``aws-ssm`` (``aws ssm get-parameter --name N
   --with-decryption --query Parameter.Value --output text``), ``gcp-secret`` (``gcloud secrets versions
   access latest --secret=S --project=P``), ``azure-keyvault`` (Key Vault REST, IMDS token for
   https://vault.azure.net), ``file`` (a path on the node) - reading values only from a pipe or the HTTP
   response, never from or into an argument, and write them as the JSON vars file
   /etc/clusterctl/secrets.json, created 0600 (never readable by others, not even for a moment).
6. ``ansible``: install ansible-core with apt when ``ansible-playbook`` is missing or older than 2.14 (on
   Ubuntu from the Ansible PPA when the distribution's is older: 22.04 ships 2.12).
7. ``converge``: ``ansible-playbook -i inventory.yml -c local --limit HOST -e @/etc/clusterctl/secrets.json
   site.yml`` in BUNDLE/ansible with ANSIBLE_CONFIG=BUNDLE/ansible/ansible.cfg (as clusterctl-pull runs a tree:
   roles/ansible_pull/files/clusterctl-pull). The roles read the render from ``{{ playbook_dir }}/..``: the
   bundle holds the render's ansible/, slurm/, nccl/, hosts/ and cloud/.

Every run writes /var/lib/clusterctl/bootstrap-status.json (host, result, step that failed, message, bundle,
times) and appends to /var/log/clusterctl-bootstrap.log (0600). No secret value is written to either: the
output of ansible-playbook is logged with every secret value replaced by ``<secret NAME>``. A lock makes a
second run wait for the first; every step is idempotent, so an interrupted boot is simply run again.

Exit codes: 0 converged; 1 ansible-playbook failed; 2 bad settings (missing file, bad host name, unknown URL
scheme or secret kind); 3 the configuration object could not be fetched before ``timeout_s``; 4 the object is
not a safe tar.gz; 5 a secret could not be fetched; 6 ansible-core could not be installed; 7 the host name
could not be set.

Tests and the rehearsal: ``--root DIR`` (or CLUSTERCTL_BOOTSTRAP_ROOT) prefixes every path above;
CLUSTERCTL_BOOTSTRAP_RETRY_S sets the wait between fetch attempts (default 10); the settings key
``endpoint_overrides`` ({URL prefix: replacement}) points the Azure endpoints (IMDS, blob, vault) at a local
server. The defaults are the real paths and endpoints.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

CONFIG = "/etc/clusterctl/bootstrap.json"
SECRETS = "/etc/clusterctl/secrets.json"
STATE = "/var/lib/clusterctl"
LOG = "/var/log/clusterctl-bootstrap.log"
ETC_HOSTNAME = "/etc/hostname"
STATUS = "bootstrap-status.json"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
"""clusterctl.cloud.stack.hostname.LABEL: a lower-case RFC 1123 label"""
IMDS = "http://169.254.169.254"
IMDS_TOKEN = "/metadata/identity/oauth2/token"
IMDS_API = "2018-02-01"
"""Azure docs, "How to use managed identities for Azure resources on an Azure VM to acquire an access token"
(GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=R[&client_id=C], header Metadata: true)"""
STORAGE_RESOURCE = "https://storage.azure.com/"
VAULT_RESOURCE = "https://vault.azure.net"
BLOB_VERSION = "2021-08-06"
"""x-ms-version of the Get Blob request (Azure Storage REST, "Authorize with Microsoft Entra ID": OAuth needs
2017-11-09 or later)"""
VAULT_API = "7.4"
"""Key Vault REST, "Get Secret": GET {vaultBaseUrl}/secrets/{name}?api-version=7.4 -> {"value": ...}"""
BLOB_URL = re.compile(r"https://[a-z0-9]{3,24}\.blob\.core\.windows\.net/[^?#]+")
VAULT_URL = re.compile(r"https://[A-Za-z0-9-]{3,24}\.vault\.azure\.net/secrets/[A-Za-z0-9-]{1,127}(?:/[0-9a-f]{32})?")
GCP_SECRET = re.compile(r"projects/([a-z0-9-]{1,64}|[0-9]+)/secrets/([A-Za-z0-9_-]{1,255})")
SSM_NAME = re.compile(r"[A-Za-z0-9_.\-/]{1,2048}")
MIN_ANSIBLE = (2, 14)
"""the oldest ansible-core the roles are converged with (Debian 12's 2.14: the rehearsal nodes'); Ubuntu 22.04's
2.12 is older"""
EXIT = {"ok": 0, "converge": 1, "config": 2, "fetch": 3, "extract": 4, "secrets": 5, "ansible": 6, "hostname": 7}


class StepError(Exception):
    def __init__(self, step: str, message: str):
        super().__init__(message)
        self.step = step


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Paths:
    def __init__(self, root: str):
        def p(path: str) -> str:
            return os.path.join(root, path.lstrip("/")) if root else path
        self.root = root
        self.config, self.secrets, self.state, self.log, self.etc_hostname = (
            p(CONFIG), p(SECRETS), p(STATE), p(LOG), p(ETC_HOSTNAME))


class Log:
    """Appends timestamped lines; every known secret value is replaced before a line is written."""

    def __init__(self, path: str):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.f = os.fdopen(fd, "a")
        self.secrets: dict[str, str] = {}

    def redact(self, text: str) -> str:
        for name, value in self.secrets.items():
            for v in {value, value.strip()}:
                if v:
                    text = text.replace(v, f"<secret {name}>")
        return text

    def __call__(self, message: str) -> None:
        for line in self.redact(message).splitlines() or [""]:
            self.f.write(f"{now()} {line}\n")
        self.f.flush()


def json_text(value: dict) -> str:
    return json.dumps(value, indent=1, sort_keys=True) + "\n"


def write_atomically(path: str, text: str, mode: int) -> None:
    """``path`` replaced by ``text`` at once, with ``mode``: the one way this program writes a file. The text goes
    to a fresh temporary file beside it (mkstemp: O_EXCL, 0600 from its creation, so a secret is never readable
    by others), which is set to ``mode`` and renamed over ``path``; on failure the temporary file is removed."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(path))
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def load_config(paths: Paths) -> dict:
    try:
        with open(paths.config) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as exc:
        raise StepError("config", f"cannot read {paths.config}: {exc}") from None
    if not isinstance(cfg, dict) or cfg.get("version") != 1:
        raise StepError("config", f"{paths.config}: not a version 1 bootstrap configuration")
    host = cfg.get("host")
    if not isinstance(host, str) or not LABEL.fullmatch(host):
        raise StepError("config", f"host name {host!r} is not a lower-case RFC 1123 label")
    for key in ("provider", "region", "config_url"):
        if not isinstance(cfg.get(key), str):
            raise StepError("config", f"{paths.config}: {key} missing")
    if not isinstance(cfg.get("secrets", {}), dict):
        raise StepError("config", f"{paths.config}: secrets is not a mapping")
    cfg.setdefault("timeout_s", 1800)
    cfg.setdefault("secrets", {})
    return cfg


def run(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, **kw)


def set_hostname(host: str, paths: Paths, env: dict, log: Log) -> None:
    if socket.gethostname() != host:
        r = run(["hostname", host], env)
        if r.returncode != 0:
            raise StepError("hostname", f"hostname {host}: {r.stderr.strip()[-300:]}")
        log(f"host name set to {host}")
    try:
        with open(paths.etc_hostname) as f:
            current = f.read().strip()
    except OSError:
        current = None
    if current != host:
        write_atomically(paths.etc_hostname, host + "\n", 0o644)


# --- Azure REST (IMDS token, Blob, Key Vault) -------------------------------------------------------------

def endpoint(cfg: dict, url: str) -> str:
    """``url`` with a test override of its prefix applied (settings key ``endpoint_overrides``)."""
    for prefix, replacement in sorted((cfg.get("endpoint_overrides") or {}).items(), key=lambda kv: -len(kv[0])):
        if url.startswith(prefix):
            return replacement + url[len(prefix):]
    return url


class RefuseRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error. urllib's own handler repeats the request at the new address with the request's
    headers, whatever the host or scheme: the ``Authorization: Bearer`` token of a Blob or Key Vault read (and
    the ``Metadata`` header of a token request) would go to whichever server the answer names."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        fp.close()
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused (a request carrying a "
                                                         "token or asking for one is never sent on)", headers, None)


_OPENER = urllib.request.build_opener(RefuseRedirect)


def http_get(url: str, headers: dict, timeout: float = 30) -> bytes:
    """GET ``url``; a redirect is an HTTPError (:class:`RefuseRedirect`), and the headers are unredirected
    ones too (urllib never copies those to a redirect target)."""
    req = urllib.request.Request(url, method="GET")
    for key, value in headers.items():
        req.add_unredirected_header(key, value)
    with _OPENER.open(req, timeout=timeout) as resp:  # noqa: S310 (https or the IMDS address)
        return resp.read()


def azure_token(cfg: dict, resource: str) -> str:
    query = {"api-version": IMDS_API, "resource": resource}
    if cfg.get("identity"):
        query["client_id"] = cfg["identity"]
    url = endpoint(cfg, IMDS + IMDS_TOKEN) + "?" + urllib.parse.urlencode(query)
    try:
        data = json.loads(http_get(url, {"Metadata": "true"}))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise RuntimeError(f"managed identity token for {resource}: {exc}") from None
    token = data.get("access_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise RuntimeError(f"managed identity token for {resource}: no access_token in the answer")
    return token


# --- the configuration object -----------------------------------------------------------------------------

class NotThereYet(Exception):
    pass


def fetch_once(cfg: dict, dest: str, env: dict) -> None:
    """Fetch the object into ``dest``; NotThereYet when it does not exist (yet) or cannot be read now."""
    url = cfg["config_url"]
    if url.startswith("file://"):
        src = url[len("file://"):]
        if not os.path.isfile(src):
            raise NotThereYet(f"{src} does not exist")
        shutil.copyfile(src, dest)
    elif url.startswith("s3://"):
        r = run(["aws", "s3", "cp", url, dest, "--region", cfg["region"], "--only-show-errors"], env)
        if r.returncode != 0:
            raise NotThereYet(r.stderr.strip()[-300:])
    elif url.startswith("gs://"):
        r = run(["gcloud", "storage", "cp", url, dest], env)
        if r.returncode != 0:
            raise NotThereYet(r.stderr.strip()[-300:])
    elif BLOB_URL.fullmatch(url):
        try:
            token = azure_token(cfg, STORAGE_RESOURCE)
            data = http_get(endpoint(cfg, url), {"Authorization": f"Bearer {token}", "x-ms-version": BLOB_VERSION})
        except (RuntimeError, urllib.error.URLError, OSError) as exc:
            raise NotThereYet(str(exc)) from None
        with open(dest, "wb") as f:
            f.write(data)
    else:
        raise StepError("config", f"config_url {url!r}: not s3://, gs://, https://ACCOUNT.blob.core.windows.net/ "
                                  "or file://")


def fetch_config(cfg: dict, state: str, env: dict, log: Log) -> str:
    """The object as a local file, waiting for it up to ``timeout_s``."""
    dest = os.path.join(state, "config.tar.gz")
    tmp = dest + ".part"
    retry = float(os.environ.get("CLUSTERCTL_BOOTSTRAP_RETRY_S", "10"))
    deadline = time.monotonic() + float(cfg["timeout_s"])
    attempt = 0
    while True:
        attempt += 1
        try:
            fetch_once(cfg, tmp, env)
            os.replace(tmp, dest)
            log(f"fetched {cfg['config_url']} (attempt {attempt})")
            return dest
        except NotThereYet as exc:
            if time.monotonic() + retry > deadline:
                raise StepError("fetch", f"{cfg['config_url']} not available after {cfg['timeout_s']} s "
                                         f"({attempt} attempts): {exc}") from None
            if attempt == 1:
                log(f"waiting for {cfg['config_url']}: {exc}")
            time.sleep(retry)


def extract(archive: str, state: str) -> tuple[str, str]:
    """(sha256, directory) of the bundle, extracted safely once."""
    h = hashlib.sha256()
    with open(archive, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    bundles = os.path.join(state, "bundle")
    target = os.path.join(bundles, digest)
    if os.path.isdir(target):
        return digest, target
    os.makedirs(bundles, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".new-", dir=bundles)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = member.name
                parts = name.split("/")
                if name.startswith("/") or ".." in parts or not name or "\\" in name:
                    raise StepError("extract", f"unsafe member name {name!r} in the configuration object")
                if not (member.isfile() or member.isdir()):
                    raise StepError("extract", f"member {name!r} is not a regular file or directory (links and "
                                               "devices are refused)")
                path = os.path.join(tmp, *[p for p in parts if p not in ("", ".")])
                if member.isdir():
                    os.makedirs(path, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(path), exist_ok=True)
                src = tar.extractfile(member)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o755 if member.mode & 0o111 else 0o644)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(src, out)
        for required in ("ansible/site.yml", "ansible/inventory.yml"):
            if not os.path.isfile(os.path.join(tmp, required)):
                raise StepError("extract", f"the configuration object has no {required}")
        os.rename(tmp, target)
    except (tarfile.TarError, OSError, EOFError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StepError("extract", f"the configuration object is not a readable tar.gz: {exc}") from None
    except StepError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return digest, target


# --- secrets ------------------------------------------------------------------------------------------------

def fetch_secret(cfg: dict, var: str, ref: dict, env: dict) -> str:
    if not isinstance(ref, dict) or len(ref) != 1:
        raise StepError("config", f"secret {var}: one reference expected")
    (kind, where), = ref.items()
    if kind == "aws-ssm":
        if not SSM_NAME.fullmatch(where) or where.startswith("-"):
            raise StepError("config", f"secret {var}: {where!r} is not an SSM parameter name")
        r = run(["aws", "ssm", "get-parameter", "--name", where, "--with-decryption", "--query", "Parameter.Value",
                 "--output", "text", "--region", cfg["region"]], env)
        if r.returncode != 0:
            raise StepError("secrets", f"secret {var} (SSM {where}): {r.stderr.strip()[-300:]}")
        return r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
    if kind == "gcp-secret":
        m = GCP_SECRET.fullmatch(where)
        if not m:
            raise StepError("config", f"secret {var}: {where!r} is not projects/P/secrets/S")
        r = run(["gcloud", "secrets", "versions", "access", "latest", f"--secret={m.group(2)}",
                 f"--project={m.group(1)}"], env)
        if r.returncode != 0:
            raise StepError("secrets", f"secret {var} (Secret Manager {where}): {r.stderr.strip()[-300:]}")
        return r.stdout
    if kind == "azure-keyvault":
        if not VAULT_URL.fullmatch(where):
            raise StepError("config", f"secret {var}: {where!r} is not https://VAULT.vault.azure.net/secrets/NAME")
        try:
            token = azure_token(cfg, VAULT_RESOURCE)
            body = http_get(endpoint(cfg, where) + "?api-version=" + VAULT_API, {"Authorization": f"Bearer {token}"})
            value = json.loads(body)["value"]
        except (RuntimeError, urllib.error.URLError, OSError, ValueError, KeyError, TypeError) as exc:
            raise StepError("secrets", f"secret {var} (Key Vault {where}): {type(exc).__name__}: "
                                       f"{str(exc)[:200]}") from None
        if not isinstance(value, str):
            raise StepError("secrets", f"secret {var} (Key Vault {where}): no string value")
        return value
    if kind == "file":
        try:
            with open(where) as f:
                value = f.read()
        except OSError as exc:
            raise StepError("secrets", f"secret {var} (file {where}): {exc.strerror}") from None
        return value[:-1] if value.endswith("\n") else value
    raise StepError("config", f"secret {var}: unknown reference kind {kind!r}")


def write_secrets(path: str, values: dict) -> None:
    """The vars file, 0600 from its creation (write_atomically)."""
    write_atomically(path, json_text(values), 0o600)


# --- Ansible ------------------------------------------------------------------------------------------------

def ansible_version(env: dict) -> tuple[int, int] | None:
    """The installed ansible-core's (major, minor), None when there is none."""
    if not shutil.which("ansible-playbook", path=env["PATH"]):
        return None
    r = run(["ansible-playbook", "--version"], env)
    m = re.search(r"core (\d+)\.(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def ensure_ansible(env: dict, log: Log) -> None:
    """ansible-core at least MIN_ANSIBLE: the distribution's package (Debian 12: 2.14, Ubuntu 24.04: 2.16), else
    on Ubuntu the Ansible PPA (Ubuntu 22.04 ships 2.12)."""
    have = ansible_version(env)
    if have is not None and have >= MIN_ANSIBLE:
        return
    apt_env = {**env, "DEBIAN_FRONTEND": "noninteractive"}

    def apt(*args: str) -> None:
        r = run(["apt-get", "-q", "-y", *args], apt_env)
        if r.returncode != 0:
            raise StepError("ansible", f"apt-get {args[0]}: {r.stderr.strip()[-300:]}")
    log(f"ansible-core {have or 'missing'}: installing ansible-core with apt")
    apt("update")
    apt("install", "--no-install-recommends", "ansible-core")
    have = ansible_version(env)
    if (have is None or have < MIN_ANSIBLE) and os_id() == "ubuntu":
        log(f"ansible-core {have} is older than {MIN_ANSIBLE}: adding the Ansible PPA (ppa:ansible/ansible)")
        apt("install", "--no-install-recommends", "software-properties-common")
        r = run(["add-apt-repository", "--yes", "ppa:ansible/ansible"], apt_env)
        if r.returncode != 0:
            raise StepError("ansible", f"add-apt-repository: {r.stderr.strip()[-300:]}")
        apt("update")
        apt("install", "--no-install-recommends", "ansible-core")
        have = ansible_version(env)
    if have is None or have < MIN_ANSIBLE:
        raise StepError("ansible", f"ansible-core {have} installed; the roles need {MIN_ANSIBLE[0]}.{MIN_ANSIBLE[1]} "
                                   "or later (install it in the image)")


def os_id() -> str:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("ID="):
                    return line[3:].strip().strip('"')
    except OSError:
        pass
    return ""


def converge(host: str, bundle: str, secrets_path: str, env: dict, log: Log) -> tuple[int, str | None]:
    """ansible-playbook site.yml for this host only, local connection; (exit code, the failed task)."""
    ansible = os.path.join(bundle, "ansible")
    args = ["ansible-playbook", "-i", "inventory.yml", "-c", "local", "--limit", host, "-e", "@" + secrets_path,
            "site.yml"]
    log("running " + " ".join(args) + f" in {ansible}")
    aenv = {**env, "ANSIBLE_CONFIG": os.path.join(ansible, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_FORCE_COLOR": "0"}
    proc = subprocess.Popen(args, cwd=ansible, env=aenv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")
    task, failed = None, None
    for line in proc.stdout:
        log(line.rstrip("\n"))
        m = re.match(r"TASK \[(.*)\]", line)
        if m:
            task = m.group(1)
        elif failed is None and line.startswith(("fatal:", "failed:")):
            failed = task
    return proc.wait(), (log.redact(failed) if failed else None)


# --- the run ------------------------------------------------------------------------------------------------

def write_status(state: str, status: dict) -> None:
    write_atomically(os.path.join(state, STATUS), json_text(status), 0o644)


def bootstrap(paths: Paths, log: Log) -> dict:
    status = {"host": None, "result": "failed", "step": None, "message": "", "bundle": None, "failed_task": None,
              "started": now(), "finished": None, "seconds": None}
    t0 = time.monotonic()
    env = {**os.environ, "PATH": os.pathsep.join(filter(None, [os.environ.get("PATH"), PATH])),
           "HOME": os.environ.get("HOME") or "/root"}
    step = "config"
    try:
        cfg = load_config(paths)
        status["host"] = host = cfg["host"]
        log(f"bootstrap of {host} ({cfg['provider']}, {cfg['config_url']})")
        step = "hostname"
        set_hostname(host, paths, env, log)
        step = "fetch"
        archive = fetch_config(cfg, paths.state, env, log)
        step = "extract"
        digest, bundle = extract(archive, paths.state)
        status["bundle"] = digest
        log(f"bundle {digest} in {bundle}")
        step = "secrets"
        values = {}
        for var, ref in sorted(cfg["secrets"].items()):
            values[var] = fetch_secret(cfg, var, ref, env)
            log.secrets[var] = values[var]
            log(f"secret {var}: fetched ({next(iter(ref))})")
        write_secrets(paths.secrets, values)
        step = "ansible"
        ensure_ansible(env, log)
        step = "converge"
        rc, failed = converge(host, bundle, paths.secrets, env, log)
        status.update(rc=rc, failed_task=failed)
        if rc != 0:
            raise StepError("converge", f"ansible-playbook exited {rc}" + (f" at task {failed!r}" if failed else ""))
        status["result"] = "ok"
    except StepError as exc:
        status.update(step=exc.step, message=log.redact(str(exc)))
    except Exception as exc:  # noqa: BLE001 - an unexpected failure is reported like any other
        status.update(step=step, message=log.redact(f"{type(exc).__name__}: {exc}"))
    status["finished"] = now()
    status["seconds"] = round(time.monotonic() - t0, 1)
    log(f"result: {status['result']}" + (f" at step {status['step']}: {status['message']}" if status["step"] else ""))
    write_status(paths.state, status)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="first boot of a cloud instance (see the program's docstring)")
    parser.add_argument("--root", default=os.environ.get("CLUSTERCTL_BOOTSTRAP_ROOT", ""),
                        help="prefix of every path (tests); default the real paths")
    a = parser.parse_args(argv)
    paths = Paths(a.root)
    os.makedirs(paths.state, exist_ok=True)
    log = Log(paths.log)
    with open(os.path.join(paths.state, "bootstrap.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run (cloud-init's and an operator's) waits for the first
        status = bootstrap(paths, log)
    print(json.dumps({k: status[k] for k in ("host", "result", "step", "message")}, sort_keys=True))
    return EXIT["ok"] if status["result"] == "ok" else EXIT[status["step"]]


if __name__ == "__main__":
    sys.exit(main())
