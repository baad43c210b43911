"""``users``: a user of the site's directory logs in to the login node, has the association the blueprint gives
and runs ``srun`` on the compute nodes (docs/rehearse.md, "The users scenario").

The rehearsal serves the site's directory itself: Debian's ``slapd`` on the last Slurm controller, configured from
fixed LDIF (one user, ``ada``, in the group ``researchers``; a service DN SSSD binds as, the only reader: anonymous
binds read nothing and every operation needs TLS, ``olcSecurity: tls=1``), with a per-rehearsal CA and server
certificate. That is the site's directory, not clusterctl's output. The blueprint as rehearsed points
``users.directory`` at it (``ldap://`` + StartTLS, the bind DN's password in the vault file) and gives the account
``research`` to the group ``researchers``; the roles do the rest. After the converge, ``ada``'s key is put in her
home on the login node (the rehearsal's sshd runs without PAM, so a key: the user still resolves only through SSSD,
and sshd refuses an unknown one), and she logs in over SSH, reads her association with sacctmgr and runs
``srun -N<compute nodes> hostname``.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.rehearse.node.command import run_command
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Need, Scenario
from clusterctl.rehearse.scenario.deploy import Cluster, rehearsal_files
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import ssh_ok
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

SUFFIX = "dc=rehearsal,dc=clusterctl"
BIND_DN = f"cn=sssd,ou=services,{SUFFIX}"
USER, UID, GROUP, GID = "ada", 20001, "researchers", 20001
ACCOUNT = "research"
CA_PATH = "/etc/ssl/certs/clusterctl-rehearsal-ldap-ca.pem"
"""where the rehearsal puts its directory's CA on every node, as a site puts its own (users.directory.ca_certificate)"""
TLS_DIR = "/etc/ldap/tls"
LDAP_PACKAGES = ("slapd", "ldap-utils")
DIRECTORY_CLIENT_PACKAGES = ("sssd-ldap", "libnss-sss", "libpam-sss")
"""what the directory_client role installs (roles/directory_client/defaults/main.yml)"""
INSTALL_TIMEOUT_S = 300
BIND_PASSWORD_FILE = "/root/clusterctl-ldap/bindpw"
"""the bind password for the directory host's own check (ldapsearch -y: the file, never the command line)"""

CONFIG_LDIF = f"""\
dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: /var/run/slapd/slapd.pid
olcArgsFile: /var/run/slapd/slapd.args
olcTLSCACertificateFile: {TLS_DIR}/ca.pem
olcTLSCertificateFile: {TLS_DIR}/server.pem
olcTLSCertificateKeyFile: {TLS_DIR}/server.key

dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif

include: file:///etc/ldap/schema/cosine.ldif

include: file:///etc/ldap/schema/nis.ldif

include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={{-1}}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {{-1}}frontend

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcAccess: {{0}}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcDbDirectory: /var/lib/ldap
olcSuffix: {SUFFIX}
olcSecurity: tls=1
olcAccess: {{0}}to attrs=userPassword by anonymous auth by * none
olcAccess: {{1}}to * by dn.exact={BIND_DN} read by * none
olcDbIndex: objectClass eq
olcDbIndex: uid,memberUid eq
"""
"""slapd's cn=config (slapd-config(5)): the mdb database of the directory, TLS required, only the bind DN reads"""

DATA_LDIF = f"""\
dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
o: clusterctl rehearsal
dc: rehearsal

dn: ou=people,{SUFFIX}
objectClass: organizationalUnit
ou: people

dn: ou=groups,{SUFFIX}
objectClass: organizationalUnit
ou: groups

dn: ou=services,{SUFFIX}
objectClass: organizationalUnit
ou: services

dn: {BIND_DN}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: sssd
userPassword: PASSWORD_HASH

dn: uid={USER},ou=people,{SUFFIX}
objectClass: inetOrgPerson
objectClass: posixAccount
objectClass: shadowAccount
uid: {USER}
cn: Ada Lovelace
sn: Lovelace
uidNumber: {UID}
gidNumber: {GID}
gecos: Ada Lovelace
homeDirectory: /home/{USER}
loginShell: /bin/bash

dn: cn={GROUP},ou=groups,{SUFFIX}
objectClass: posixGroup
cn: {GROUP}
gidNumber: {GID}
memberUid: {USER}
"""
"""the site's directory as the rehearsal serves it: one user in one group, and the service DN SSSD binds as"""

SLAPD_SETUP = f"""\
set -e
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
echo 'slapd slapd/no_configuration boolean true' | debconf-set-selections
DEBIAN_FRONTEND=noninteractive apt-get install -y -q {' '.join(LDAP_PACKAGES)} >/dev/null
rm -f /usr/sbin/policy-rc.d
rm -rf /etc/ldap/slapd.d /var/lib/ldap
install -d -o openldap -g openldap -m 0750 /etc/ldap/slapd.d /var/lib/ldap
slapadd -q -n 0 -F /etc/ldap/slapd.d -l /root/clusterctl-ldap/config.ldif
slapadd -q -n 1 -F /etc/ldap/slapd.d -l /root/clusterctl-ldap/data.ldif
chown -R openldap:openldap /etc/ldap/slapd.d /var/lib/ldap
chown root:openldap {TLS_DIR}/server.key && chmod 0640 {TLS_DIR}/server.key
systemctl restart slapd
"""
"""install slapd without its debconf configuration or a start (policy-rc.d), then load the fixed LDIF offline"""


def ssha(password: str, salt: bytes) -> str:
    """An OpenLDAP ``{SSHA}`` userPassword value: base64(SHA1(password + salt) + salt) (slappasswd(8))."""
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()


def directory_host(plan: ClusterPlan) -> str:
    """The host that serves the rehearsal's directory: the last Slurm controller (a backup where there is one)."""
    return slurm_roles(plan).controllers[-1]


def _login_node(plan: ClusterPlan) -> str:
    return "" if slurm_roles(plan).login else "no login node (a node group with role login)"


LOGIN_NODE = Need("a login node", _login_node, "rehearse blueprints/lab-ha.yaml, or add a node group with role login")


def adjust_users(variant, host: str) -> None:
    """Point the variant's users.directory at the rehearsal's slapd on ``host`` and give the account ``research``
    to its group (an account of that name the blueprint has keeps its settings and gets the group)."""
    users = variant.data.setdefault("users", {}) or {}
    variant.data["users"] = users
    before = users.get("directory")
    users["directory"] = {"uris": [f"ldap://{host}"], "start_tls": True, "search_base": SUFFIX,
                          "ca_certificate": CA_PATH, "bind_dn": BIND_DN}
    accounts = users.setdefault("accounts", [])
    mine = next((a for a in accounts if a.get("name") == ACCOUNT), None)
    if mine is None:
        accounts.append({"name": ACCOUNT, "fairshare": 10, "groups": [GROUP]})
    elif GROUP not in mine.setdefault("groups", []):
        mine["groups"].append(GROUP)
    variant.changes["users.directory"] = {"blueprint": before, "rehearsed": users["directory"]}


def _certificates(host: str, address: str) -> tuple[bytes, bytes, bytes]:
    """(CA certificate, server certificate, server key), PEM: a per-rehearsal CA and slapd's certificate for
    ``host`` and ``address``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clusterctl rehearsal directory CA")])

    def build(subject, public, ca: bool):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public)
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=7))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(host), x509.IPAddress(
                ipaddress.ip_address(address))]), critical=False)
        return b.sign(ca_key, hashes.SHA256())

    ca = build(ca_name, ca_key.public_key(), True)
    server = build(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]), key.public_key(), False)
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), server.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def bind_password(state: State) -> str:
    """The bind DN's password: the rehearsal's vault file holds it (deploy.rehearsal_files), as a site's would."""
    _, secrets_path = rehearsal_files(state)
    return str(yaml.safe_load(secrets_path.read_text())["vault_directory_bind_pass"])


@dataclass
class Directory:
    """Before the converge: the directory's CA on every node, slapd with the fixed LDIF on the directory host."""

    host: str
    nodes: tuple[str, ...]
    name: str = "directory"

    def run(self, state: State, record: Record) -> None:
        t0 = time.monotonic()
        address = next(n.address for n in state.nodes if n.name == self.host)
        ca, cert, key = _certificates(self.host, address)
        for node in self.nodes:
            write_file(state, node, CA_PATH, ca, mode="0644")
        write_file(state, self.host, f"{TLS_DIR}/ca.pem", ca, mode="0644")
        write_file(state, self.host, f"{TLS_DIR}/server.pem", cert, mode="0644")
        write_file(state, self.host, f"{TLS_DIR}/server.key", key, mode="0600")
        write_file(state, self.host, "/root/clusterctl-ldap/config.ldif", CONFIG_LDIF, mode="0600")
        password = bind_password(state)
        data = DATA_LDIF.replace("PASSWORD_HASH", ssha(password, secrets.token_bytes(8)))
        write_file(state, self.host, "/root/clusterctl-ldap/data.ldif", data, mode="0600")
        write_file(state, self.host, BIND_PASSWORD_FILE, password, mode="0600")
        ssh_ok(state, self.host, SLAPD_SETUP, timeout=INSTALL_TIMEOUT_S)
        # the directory answers over StartTLS checked against the CA, to its bind DN and to nobody else
        search = f"LDAPTLS_CACERT={CA_PATH} ldapsearch -x -ZZ -H ldap://{address} -b {SUFFIX} -LLL"
        anonymous = ssh(state, self.host, f"{search} '(uid={USER})' uid").stdout.strip()
        bound = ssh(state, self.host, f"{search} -D {BIND_DN} -y {BIND_PASSWORD_FILE} '(uid={USER})' uid")
        found = next((x for x in bound.stdout.splitlines() if x.startswith("uid:")), bound.stderr.strip()[-200:])
        ok = "uid:" not in anonymous and found == f"uid: {USER}"
        seen = "nothing" if "uid:" not in anonymous else repr(anonymous)
        record(self.host, HostOutcome(OK if ok else FAILED, time.monotonic() - t0,
                                      f"slapd serves {SUFFIX} over StartTLS; the bind DN finds {found!r}, "
                                      f"an anonymous search {seen}"))


def user_key(state: State) -> tuple[Path, str]:
    """The directory user's SSH key pair in the rehearsal's state directory: (private key file, public key line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = state_dir(Path(state.dir)) / f"{USER}_ed25519"
    if not path.exists():
        key = ed25519.Ed25519PrivateKey.generate()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                      serialization.NoEncryption()))
    private = serialization.load_ssh_private_key(path.read_bytes(), None)
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, public.decode() + f" {USER}@clusterctl-rehearsal\n"


@dataclass
class UserLogin:
    """After the converge: ``ada`` resolves through SSSD, logs in to the login node with her key, has the
    association ``research`` and runs ``srun`` on every compute node."""

    cluster: Cluster
    name: str = "users"

    def run(self, state: State, record: Record) -> None:
        login, computes = self.cluster.login[0], self.cluster.compute
        t0 = time.monotonic()
        entry = ssh_ok(state, login, f"getent passwd {USER}").strip()
        home = f"/home/{USER}"
        ssh_ok(state, login, f"install -d -m 0700 -o {USER} -g {GROUP} {home} {home}/.ssh")
        key, public = user_key(state)
        write_file(state, login, f"{home}/.ssh/authorized_keys", public, mode="0600", owner=f"{USER}:{GROUP}")
        cmd = (f"id -un; sacctmgr -nP show assoc user={USER} format=Account,User; "
               f"srun -N{len(computes)} --chdir=/tmp hostname | sort")
        r = run_command(["ssh", "-F", state.ssh_config, "-l", USER, "-i", str(key), login, cmd], timeout=120)
        seconds = time.monotonic() - t0
        lines = r.stdout.split()
        if r.returncode != 0 or not lines or lines[0] != USER:
            raise StepFailed(f"{USER} on {login}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]} "
                             f"(getent passwd: {entry!r})")
        assoc = [x for x in lines[1:] if "|" in x]
        ran = sorted(x for x in lines[1:] if "|" not in x)
        ok = f"{ACCOUNT}|{USER}" in assoc and ran == sorted(computes)
        record(login, HostOutcome(OK if ok else FAILED, seconds,
                                  f"{entry}; logged in as {lines[0]}; associations {', '.join(assoc)}; "
                                  f"srun -N{len(computes)} ran on {','.join(ran)}",
                                  {"uid": UID, "srun_nodes": len(ran)}))


class UsersScenario(Scenario):
    name = "users"
    proves = ("a user of the site's LDAP directory (slapd, StartTLS, a bind DN from the vault) resolves through SSSD, "
              "logs in to the login node, has the association the blueprint gives their group and runs srun on the "
              "compute nodes")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE, LOGIN_NODE)
    packages = LDAP_PACKAGES + DIRECTORY_CLIENT_PACKAGES

    def adjust(self, variant, build: Build, v2: bool) -> None:
        adjust_users(variant, directory_host(build.plan))

    def before_converge(self, build: Build) -> list:
        return [build.label(Directory(directory_host(build.base), tuple(build.cluster.groups)), self.name)]

    def steps(self, build: Build) -> list:
        return [build.label(UserLogin(build.cluster), self.name)]
