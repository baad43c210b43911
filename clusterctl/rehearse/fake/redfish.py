"""The rehearsal's BMCs: one Redfish emulator (sushy-tools, :mod:`.redfish_bmc`) per host, listening on the
host's planned BMC address, whose power actions restart the host's rehearsal node.

:func:`start_bmcs` starts one emulator process per BMC address (sushy-tools binds one address per process;
one process each also keeps one ComputerSystem per BMC, the shape of a real server's BMC). Every process
reports on one FIFO that a thread of this process reads: a power action becomes ``on_power(host, action)``
with action ``on``, ``off`` or ``restart``. The addresses must already be configured on this machine (the
caller's job); the port is 443 unless given.

``out`` is a directory of the caller's (the day0 scenario passes the rehearsal's state directory,
``OUT/.rehearsal``); everything is in ``out/redfish/`` (0700): a self-signed certificate for every BMC
address (``ca.pem``, which is also what a client verifies against: the rendered play's ``bmc_ca_path``) and
its key, an htpasswd file of bcrypt digests (0600, what
sushy-tools' basic authentication reads), the FIFO ``events``, one JSON config and one log per BMC. The
credentials are a 0600 JSON file ``{"user": ..., "password": ...}``, the mapping the play's vault variable
holds (docs/bmc.md): the caller's file, or ``credentials.json`` there with a random password written here.
Neither the password nor its file's text is on any command line or in any log. ``BmcFleet.processes`` belong
in the rehearsal state's ``services``, so ``clusterctl rehearse --down`` stops them.
"""

from __future__ import annotations

import datetime
import importlib.util
import ipaddress
import json
import os
import secrets
import shutil
import signal
import stat
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.command import start_detached
from clusterctl.rehearse.node.state import Proc, alive, proc_of

LAUNCHER = Path(__file__).with_name("redfish_bmc.py")
READY_TIMEOUT_S = 30.0
DEFAULT_USER = "rehearsal"
UUID_NAMESPACE = uuid.UUID("6f1c3a52-7f0e-4d8a-9a51-2d2b5c9e0b28")
"""the systems' UUIDs are uuid5(this, host): the same host has the same UUID in every rehearsal"""
_STOP = b'{"event": "stop"}\n'


@dataclass
class BmcFleet:
    """The running emulators: ``processes`` (for the rehearsal state's services, so ``--down`` stops them),
    ``ca_cert`` (what a client verifies the BMCs' certificate against), ``credentials`` (the 0600 file)."""

    directory: Path
    ca_cert: Path
    credentials: Path
    port: int
    addresses: dict[str, str]
    processes: list[Proc] = field(default_factory=list)
    _events_fd: int = -1
    _reader: threading.Thread | None = None

    def stop(self) -> None:
        """Kill every emulator (its whole process group) and the event reader; safe to call twice."""
        for proc in self.processes:
            if alive(proc):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.waitpid(proc.pid, 0)
            except ChildProcessError:
                pass
        self.processes = []
        if self._events_fd >= 0:
            os.write(self._events_fd, _STOP)
            if self._reader is not None:
                self._reader.join(timeout=10)
            os.close(self._events_fd)
            self._events_fd = -1


def read_credentials(path: Path) -> tuple[str, str]:
    """(user, password) from a 0600 JSON file ``{"user", "password"}``; a file others can read is refused."""
    mode = path.stat().st_mode
    if mode & 0o077:
        raise RehearsalError(f"{path}: BMC credentials readable by others (mode {stat.filemode(mode)})",
                             f"chmod 600 {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        user, password = data["user"], data["password"]
    except (ValueError, KeyError, TypeError):
        raise RehearsalError(f"{path}: not a JSON object with \"user\" and \"password\"",
                             f"write {path} as {{\"user\": \"...\", \"password\": \"...\"}} (mode 0600)") from None
    if not (isinstance(user, str) and isinstance(password, str) and user and password and ":" not in user):
        raise RehearsalError(f"{path}: \"user\" and \"password\" must be non-empty strings, no ':' in the user",
                             f"fix {path}")
    return user, password


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def _default_credentials(directory: Path) -> Path:
    path = directory / "credentials.json"
    if not path.exists():
        _write_private(path, json.dumps({"user": DEFAULT_USER, "password": secrets.token_urlsafe(24)}).encode())
    return path


def _write_htpasswd(path: Path, user: str, password: str) -> None:
    import bcrypt  # sushy-tools' own dependency, only needed once the emulator is wanted

    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
    _write_private(path, f"{user}:{digest}\n".encode())


def _write_certificate(directory: Path, addresses: list[str]) -> tuple[Path, Path]:
    """A self-signed P-256 certificate valid for every BMC address (CA:TRUE, so it is its own trust anchor)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clusterctl rehearsal BMC")])
    now = datetime.datetime.now(datetime.timezone.utc)
    public = key.public_key()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(a))
                                                        for a in addresses]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "ca.pem", directory / "bmc-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    return cert_path, key_path


class _Events:
    """Reads the FIFO: ready/failed lines wake :func:`start_bmcs`, power lines call ``on_power``."""

    def __init__(self, fd: int, on_power: Callable[[str, str], None]):
        self.fd, self.on_power = fd, on_power
        self.ready: set[str] = set()
        self.failed: dict[str, str] = {}
        self.changed = threading.Condition()

    def run(self) -> None:
        with os.fdopen(os.dup(self.fd), "rb", buffering=0) as pipe:
            for line in iter(pipe.readline, b""):
                event = json.loads(line)
                if event["event"] == "stop":
                    return
                if event["event"] == "power":
                    self.on_power(event["host"], event["action"])
                    continue
                with self.changed:
                    if event["event"] == "ready":
                        self.ready.add(event["host"])
                    else:
                        self.failed[event["host"]] = event.get("message", "")
                    self.changed.notify_all()

    def wait(self, hosts: set[str], timeout: float) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.failed or hosts <= self.ready, timeout=timeout)


def _check_sushy_tools() -> None:
    if importlib.util.find_spec("sushy_tools") is None:
        raise RehearsalError("the Redfish emulator (sushy-tools) is not installed",
                             "pip install 'clusterctl[rehearse]'")


def start_bmcs(out: Path, bmcs: Mapping[str, str], on_power: Callable[[str, str], None], *, port: int = 443,
               credentials: Path | None = None) -> BmcFleet:
    """Start one emulated BMC per ``bmcs`` entry (host -> BMC address, already configured on this machine) and
    return when every one listens. ``on_power(host, action)`` runs in a thread of this process."""
    _check_sushy_tools()
    directory = Path(out) / "redfish"
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    credentials = Path(credentials) if credentials is not None else _default_credentials(directory)
    user, password = read_credentials(credentials)
    _write_htpasswd(directory / "htpasswd", user, password)
    cert, key = _write_certificate(directory, sorted(set(bmcs.values())))
    events_path = directory / "events"
    if events_path.exists():
        events_path.unlink()
    os.mkfifo(events_path, 0o600)
    events_fd = os.open(events_path, os.O_RDWR)  # read and write: never blocks on open, never reads EOF
    events = _Events(events_fd, on_power)
    reader = threading.Thread(target=events.run, name="redfish-events", daemon=True)
    reader.start()
    fleet = BmcFleet(directory, cert, credentials, port, dict(bmcs), _events_fd=events_fd, _reader=reader)
    try:
        for host, address in sorted(bmcs.items()):
            fleet.processes.append(_start_one(directory, host, address, port, cert, key, events_path))
        events.wait(set(bmcs), READY_TIMEOUT_S)
    except BaseException:
        fleet.stop()
        raise
    if events.failed or not set(bmcs) <= events.ready:
        fleet.stop()
        host = sorted(events.failed)[0] if events.failed else sorted(set(bmcs) - events.ready)[0]
        reason = events.failed.get(host, f"not listening after {READY_TIMEOUT_S:g} s")
        raise RehearsalError(f"the emulated BMC of {host} at {bmcs[host]}:{port} did not start: {reason}",
                             f"see {directory / (host + '.log')}")
    return fleet


def _start_one(directory: Path, host: str, address: str, port: int, cert: Path, key: Path,
               events_path: Path) -> Proc:
    state = directory / "state" / host
    shutil.rmtree(state, ignore_errors=True)  # every rehearsal's BMC starts powered on, boot override unset
    state.mkdir(parents=True)
    config = directory / f"{host}.json"
    config.write_text(json.dumps({
        "host": host, "uuid": str(uuid.uuid5(UUID_NAMESPACE, host)), "listen": address, "port": port,
        "cert": str(cert), "key": str(key), "auth_file": str(directory / "htpasswd"), "state_dir": str(state),
        "events": str(events_path)}, indent=1, sort_keys=True) + "\n")
    # -P: the launcher's own directory is not on sys.path, so its neighbours (cloud.py, redfish.py) shadow nothing
    pid = start_detached([sys.executable, "-P", str(LAUNCHER), str(config)], log=directory / f"{host}.log")
    return proc_of(pid) or Proc(pid, 0)
