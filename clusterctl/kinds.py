"""Typed strings: every blueprint and catalog string has a declared *kind*, checked when it is loaded.

A blueprint arrives through a pull request; a reviewer reads a mount path or a partition time, not the
shell, Jinja, Slurm or YAML it becomes. So no string is "just text": each field is annotated with one of
the kinds below, which says which characters and which shape the field may have. Every kind except
:data:`FreeText` is built from characters that mean nothing in any output language clusterctl writes
(no whitespace, quotes, ``$``, backticks, ``#``, ``=`` outside its shape, ``{``, ``;``, ``&``, ``|``,
``<>``, ``\\``, control characters) and none may start with ``-`` (no option injection). Free text
(descriptions, reasons, vendors, sources) stays free but must be one printable line; the targets escape
it where it is written.

A kind is a pydantic annotation (``Annotated[str, KIND]``): the check runs after pydantic's own strict
``str`` check, raises a ``clusterctl_kind`` error carrying the reason and what is allowed (the loader
turns it into a located exit-2 message), and the JSON Schema carries the kind's pattern and length so
editors flag the same values.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from clusterctl.names import why_not_a_name
from clusterctl import path_policy

#: the pydantic error type of a failed kind check (clusterctl/blueprint/load.py words it)
KIND_ERROR = "clusterctl_kind"

_CHAR_NAMES = {" ": "a space", "\n": "a line break", "\r": "a carriage return", "\t": "a tab",
               "'": "a quote (')", '"': 'a double quote (")', "`": "a backtick", "\\": "a backslash"}


def char_name(ch: str) -> str:
    """A character as a person reads it in an error message; control characters never printed raw
    (a terminal escape in an error message is itself an injection)."""
    if ch in _CHAR_NAMES:
        return _CHAR_NAMES[ch]
    if not ch.isprintable():
        name = unicodedata.name(ch, "")
        return f"the control character U+{ord(ch):04X}" + (f" ({name.lower()})" if name else "")
    return f"'{ch}'"


@dataclass(frozen=True)
class Kind:
    """One kind of string. ``chars`` (a regex character-class body) lists every character the kind may
    contain, so the first one outside it can be named; ``pattern`` is the whole shape, written in the
    regex dialect both Python and JSON Schema (ECMA-262) read; ``check`` is an optional semantic test
    (a CIDR must parse) returning the reason a value is wrong."""

    name: str
    noun: str
    """'an absolute path': the subject of error messages"""
    allowed: str
    """what is allowed, in words: the hint of every error of this kind"""
    example: str
    pattern: str
    max_length: int
    shape: str
    """why a value made of allowed characters is still wrong (its pattern failed)"""
    chars: str | None = None
    check: Callable[[str], str | None] | None = None
    min_length: int = 1

    def explain(self, value: str) -> str | None:
        """Why ``value`` is not of this kind, or None when it is."""
        if len(value) > self.max_length:
            return f"{self.noun} has at most {self.max_length:,} characters, this one has {len(value):,}"
        if len(value) < self.min_length:
            return f"{self.noun} cannot be empty"
        shape_ok = _compiled(self.pattern).fullmatch(value) is not None
        if shape_ok and (self.chars is not None or value.isprintable()):  # the common case: one C-level match
            return self.check(value) if self.check else None
        if self.chars is not None:
            bad = _compiled(f"[^{self.chars}]").search(value)
            if bad:
                return f"{self.noun} may not contain {char_name(bad.group())}"
        else:
            for ch in value:
                if not ch.isprintable():
                    return f"{self.noun} may not contain {char_name(ch)}"
        return f"{self.noun} {self.shape}"

    def _validate(self, value: str) -> str:
        reason = self.explain(value)
        if reason is not None:
            raise PydanticCustomError(KIND_ERROR, "{reason}", {"kind": self.name, "reason": reason,
                                                               "allowed": self.allowed, "example": self.example})
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> dict:
        out = handler(schema)
        out.update(pattern=self.pattern, maxLength=self.max_length, minLength=self.min_length)
        return out


_PATTERNS: dict[str, re.Pattern] = {}


def _compiled(pattern: str) -> re.Pattern:
    if pattern not in _PATTERNS:
        _PATTERNS[pattern] = re.compile(pattern)
    return _PATTERNS[pattern]


# --- semantic checks -------------------------------------------------------------------------------------

def _ip_address(value: str) -> str | None:
    try:
        ipaddress.ip_address(value)
    except ValueError as exc:
        return f"an address must be IPv4 dotted-quad or IPv6: {exc}"
    return None


def _dns_domain(value: str) -> str | None:
    if any(len(label) > 63 for label in value.split(".")):
        return "a DNS label has at most 63 characters (RFC 1035 2.3.4)"
    return None


def _cidr(value: str) -> str | None:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        return f"a network prefix must parse as IPv4 or IPv6: {exc}"
    return None


def _no_dot_segments(value: str) -> str | None:
    parts = value.split("/")
    if any(p in (".", "..") for p in parts):
        return "a path may not contain '.' or '..' segments: write the path it resolves to"
    return None


_BRACKETED = re.compile(r"\[[^\]]*\]")


def _host_list_names(value: str) -> str | None:
    """A name written out in a host list that cannot be a name (clusterctl/names.py); names a ``[range]`` makes
    are the rule NAME005's, which sees them expanded."""
    for term in _BRACKETED.sub("[", value).split(","):
        if "[" not in term and (reason := why_not_a_name(term)):
            return reason
    return None


def _nfs_export(value: str) -> str | None:
    return _no_dot_segments(value.split(":", 1)[1]) if ":/" in value else None


# --- the kinds -------------------------------------------------------------------------------------------

_NAME_START = "starts with a letter or digit"

FREE_TEXT = Kind(
    "FreeText", "free text", "one line of printable text (no line breaks or control characters)",
    "Two HGX H100 nodes in one rack", r"^[^\u0000-\u001f\u007f-\u009f]*$", 4000,
    "must be one line of printable text", min_length=0)

IDENTIFIER = Kind(
    "Identifier", "a name", "a name: letters, digits, '.', '_' and '-', starting with a letter or digit, "
    "at most 64 characters", "gpu-nodes", r"^[A-Za-z0-9][A-Za-z0-9._-]*$", 64, _NAME_START, r"A-Za-z0-9._-")

CLUSTER_NAME = Kind(
    "ClusterName", "a cluster name", "lower-case letters, digits and dashes, starting with a letter, at most "
    "40 characters (it becomes the Slurm ClusterName)", "lab-2node", r"^[a-z][a-z0-9-]*$", 40,
    "starts with a lower-case letter", r"a-z0-9-")

SLURM_CLUSTER_NAME = Kind(
    "SlurmClusterName", "a Slurm cluster name", "lower-case letters, digits, '_' and '-', starting with a "
    "letter, at most 40 characters (slurm.conf(5))", "lab_2node", r"^[a-z][a-z0-9_-]*$", 40,
    "starts with a lower-case letter", r"a-z0-9_-")

_NOT_RESERVED = ", not all, default, ungrouped or localhost*"

OBJECT_NAME = Kind(
    "ObjectName", "a name", "a name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most "
    "64 characters; not an address (2130706433, 127.1), localhost*, ip6-*, all, default or ungrouped",
    "batch", r"^[A-Za-z0-9][A-Za-z0-9._-]*$", 64, _NAME_START, r"A-Za-z0-9._-", why_not_a_name)
"""a name Slurm, Ansible or a resolver reads (a node type): an identifier that is not an address or a reserved word
(clusterctl/names.py)"""

PARTITION_NAME = Kind(
    "PartitionName", "a name", "a name: letters, digits, '.', '_' and '-', starting with a letter or digit, "
    "at most 64 characters; not an address (2130706433, 127.1), localhost*, ip6-*, all, default (Slurm's "
    "PartitionName=DEFAULT and ALL in any case) or ungrouped", "batch", r"^[A-Za-z0-9][A-Za-z0-9._-]*$", 64, _NAME_START, r"A-Za-z0-9._-",
    why_not_a_name)

QOS_NAME = Kind(
    "QosName", "a QOS name", "lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, at most "
    "64 characters (sacctmgr stores QOS names in lower case: Urgent would be re-added on every converge)"
    + _NOT_RESERVED, "urgent", r"^[a-z0-9][a-z0-9._-]*$", 64, "starts with a lower-case letter or digit",
    r"a-z0-9._-", why_not_a_name)

GROUP_NAME = Kind(
    "GroupName", "a node group name", "lower-case letters, digits and '_', starting with a letter, at most 63 "
    "characters (it becomes an Ansible group and a Slurm feature)" + _NOT_RESERVED, "gpu", r"^[a-z][a-z0-9_]*$",
    63, "starts with a lower-case letter", r"a-z0-9_", why_not_a_name)

FABRIC_NAME = Kind(
    "FabricName", "a fabric name", "lower-case letters, digits and dashes, starting with a letter, at most 32 "
    "characters (switch names are derived from it: compute-leaf01)", "compute", r"^[a-z][a-z0-9-]*$", 32,
    "starts with a lower-case letter", r"a-z0-9-")

HOST_NAME = Kind(
    "HostName", "a host name", "a host name: RFC 1123 labels (letters, digits, '-') joined by dots",
    "head01", r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", 253, _NAME_START, r"A-Za-z0-9_.-")

HOST_LIST = Kind(
    "HostList", "a host list", "a host list: names of letters, digits, '.', '_' and '-' with numeric ranges "
    "in brackets, joined by commas; no name an address (2130706433, 127.1), localhost*, ip6-*, all, default or "
    "ungrouped", "gpu[0001-0128],head01",
    r"^[A-Za-z0-9_\[][A-Za-z0-9._\[\]-]*(,[A-Za-z0-9_\[][A-Za-z0-9._\[\]-]*)*$", 10_000,
    "is comma-separated names, each starting with a letter, digit or '['", r"A-Za-z0-9._,\[\]-", _host_list_names)

_PATH_CHARS = r"A-Za-z0-9._+@~/-"
ABSOLUTE_PATH = Kind(
    "AbsolutePath", "an absolute path", "an absolute POSIX path: '/' then letters, digits and . _ - + @ ~ /",
    "/mnt/data", rf"^/[{_PATH_CHARS}]*$", 4095, "starts with '/'", _PATH_CHARS, _no_dot_segments)

NFS_EXPORT = Kind(
    "NfsExport", "an NFS export", "server:/path, the server a host name, an IPv4 address or [an IPv6 address], "
    "the path absolute", "nas01:/export/home",
    rf"^([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\]):/[{_PATH_CHARS}]*$", 4095,
    "is server:/path", r"A-Za-z0-9._+@~/:\[\]-", _nfs_export)

MOUNT_SOURCE = Kind(
    "MountSource", "a file system source", "a host list, a management endpoint, or a Lustre/WEKA/VAST source "
    "(mgs@tcp:/fsname, backend1,backend2/fs, vip:/path): letters, digits and . _ - @ : , / [ ]",
    "10.2.0.4@tcp:/lustrefs", r"^[A-Za-z0-9_\[][A-Za-z0-9._@:,/\[\]-]*$", 4095,
    "starts with a letter, a digit or '['", r"A-Za-z0-9._@:,/\[\]-")

_NID = r"[A-Za-z0-9_]([A-Za-z0-9_.-]|\[[0-9][0-9,-]*\])*@(tcp|o2ib|kfi|gni|ptl4|ptlf)[0-9]{0,3}"
LUSTRE_SOURCE = Kind(
    "LustreSource", "a Lustre source", "the MGS's LNet NIDs (address@network: 10.0.0.1@o2ib, mgs01@tcp), several "
    "NIDs of one MGS joined by ',' and failover MGSs by ':', or a host list of failover MGSs (10.0.0.[1-2]@o2ib), "
    "optionally followed by :/fsname (at most 8 letters, digits, '_' or '-'): the mount source of mount.lustre(8)",
    "10.0.0.1@o2ib:/lustre",
    rf"^{_NID}([,:]{_NID})*(:/[A-Za-z0-9_-]{{1,8}})?$", 4095,
    "is NID[,NID][:NID][:/fsname], every NID address@network (tcp, o2ib, ...): the LNet NID of the MGS",
    r"A-Za-z0-9._@:,/\[\]-")

APT_REPO_URL = Kind(
    "AptRepoUrl", "an apt repository URL", "an https:// URL without credentials, query or fragment (a package "
    "repository or its signing key)", "https://downloads.whamcloud.com/public/lustre/lustre-2.15.6/ubuntu2204/client",
    r"^https://([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~+/-]*)?$", 2048,
    "is https://host[:port][/path]", r"A-Za-z0-9._~+:/\[\]-")

ENDPOINT = Kind(
    "Endpoint", "an endpoint", "an http(s) URL or host[:port] without credentials, query or fragment",
    "https://s3.example.com",
    r"^(https?://)?([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$",
    2048, "is [http(s)://]host[:port][/path]", r"A-Za-z0-9._~:/\[\]-")

SLURM_TIME = Kind(
    "SlurmTime", "a Slurm time", "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED or INFINITE "
    "(slurm.conf(5) MaxTime)", "7-00:00:00",
    r"^(UNLIMITED|INFINITE|unlimited|infinite|[0-9]{1,9}(:[0-9]{1,9}){0,2}|[0-9]{1,6}-[0-9]{1,2}(:[0-9]{1,2}){0,2})$",
    32, "is minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED or INFINITE", r"A-Za-z0-9:-")

SLURM_FEATURE = Kind(
    "SlurmFeature", "a Slurm feature", "letters, digits, '.', '_' and '-', starting with a letter or digit "
    "(no operators of --constraint: & | , * [ ] ( ))", "h100", r"^[A-Za-z0-9_][A-Za-z0-9._-]*$", 64,
    _NAME_START, r"A-Za-z0-9._-")

_IFNAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}"
INTERFACE_NAME = Kind(
    "InterfaceName", "an interface name", "a Linux interface name: 1-15 letters, digits, '.', '_', '-'",
    "bond0", rf"^{_IFNAME}$", 15, _NAME_START, r"A-Za-z0-9_.-")

NCCL_SOCKET_IFNAME = Kind(
    "NcclSocketIfname", "an NCCL_SOCKET_IFNAME value", "interface names or prefixes (1-15 letters, digits, "
    "'.', '_', '-') joined by commas, optionally after '^' (exclude), '=' (exact) or '^='", "=bond0",
    rf"^(\^=?|=)?{_IFNAME}(,{_IFNAME})*$", 256,
    "is an optional ^ or = and then interface names (at most 15 characters each) joined by commas",
    r"A-Za-z0-9_.,^=-")

HCA_NAME = Kind(
    "HcaName", "an HCA name", "an RDMA device name (letters, digits, '.', '_', '-'), optionally ':port'",
    "mlx5_0", r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(:[0-9]{1,3})?$", 68, "is a device name, optionally :port",
    r"A-Za-z0-9_.:-")

VERSION = Kind(
    "Version", "a version", "a package version: letters, digits, '.', '-', '+', '~', starting with a letter "
    "or digit", "550.90.07", r"^[A-Za-z0-9][A-Za-z0-9.+~-]*$", 64, _NAME_START, r"A-Za-z0-9.+~-")

SLURM_VERSION = Kind(
    "SlurmVersion", "a Slurm version", "a Slurm release as major.minor (quoted: \"24.05\"), optionally .micro",
    "24.05", r"^[0-9]{1,4}\.[0-9]{1,2}(\.[0-9]{1,4})?$", 16, "is major.minor such as \"24.05\"", r"0-9.")

_HTTP_ORIGIN = r"https?://([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?"
"""scheme, host (or [IPv6]) and port of an http(s) URL: no credentials ('@' is no URL character of these kinds)"""
_URL_PATH = r"/[A-Za-z0-9._~+/-]*"
_URL_CHARS = r"A-Za-z0-9._~+:/\[\]-"

APT_URL = Kind(
    "AptUrl", "a package repository URL", "an http(s) URL without credentials, query, fragment or spaces: "
    "scheme, host[:port], then a path of letters, digits and . _ ~ + - / (one line of a deb822 sources file)",
    "https://repo.example.com/slurm/debian", rf"^{_HTTP_ORIGIN}({_URL_PATH})?$", 2048,
    "is http(s)://host[:port][/path]", _URL_CHARS, _no_dot_segments)

APT_KEY = Kind(
    "AptKey", "a repository signing key", "the https:// URL of the repository's OpenPGP key (downloaded to "
    "/etc/apt/keyrings/; never plain http, which anyone on the path could replace) or the absolute path of a "
    "keyring file already on the hosts (then key_fingerprint is required)",
    "https://repo.example.com/slurm/key.asc", rf"^({_HTTP_ORIGIN.replace('https?', 'https')})?{_URL_PATH}$", 2048,
    "is an https:// URL or an absolute path", _URL_CHARS, _no_dot_segments)

APT_SUITE = Kind(
    "AptSuite", "an apt suite", "a suite or codename: letters, digits, '.', '_', '-' and '/', starting with a "
    "letter or digit (bookworm, jammy, stable, 24.05)", "bookworm", r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", 128,
    _NAME_START, r"A-Za-z0-9._/-", _no_dot_segments)

CIDR = Kind(
    "Cidr", "a network prefix", "an IPv4 or IPv6 prefix such as 10.10.0.0/16 or fd00:10::/64",
    "10.10.0.0/16", r"^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$", 64, "is an address and a prefix length",
    r"0-9A-Fa-f.:/", _cidr)

IP_ADDRESS = Kind(
    "IpAddress", "an IP address", "an IPv4 address in dotted-quad form or an IPv6 address", "10.0.0.53",
    r"^[0-9A-Fa-f.:]+$", 64, "is an address", r"0-9A-Fa-f.:", _ip_address)

DNS_DOMAIN = Kind(
    "DnsDomain", "a DNS domain", "lower-case RFC 1035 labels (letters, digits, '-' inside) joined by dots, no "
    "trailing dot", "lab.internal", r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$", 253,
    "is labels joined by dots, each starting and ending with a letter or digit", r"a-z0-9.-", _dns_domain)

DNS_LABEL = Kind(
    "DnsLabel", "a DNS label", "an RFC 1123 label as Kubernetes names a namespace or a queue: lower-case letters, "
    "digits and '-', starting and ending with a letter or digit", "training",
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", 63, "starts and ends with a lower-case letter or digit", r"a-z0-9-")
"""a Kubernetes namespace or object name that must be a DNS label (apimachinery IsDNS1123Label)"""

CLOUD_REGION = Kind(
    "CloudRegion", "a cloud region", "lower-case letters, digits and dashes, starting with a letter "
    "(us-east-2, us-central1, eastus)", "us-east-2", r"^[a-z][a-z0-9-]*$", 64, "starts with a lower-case letter",
    r"a-z0-9-")

CLOUD_ZONE = Kind(
    "CloudZone", "a cloud zone", "lower-case letters, digits and dashes (us-east-2a, us-central1-a, 1)",
    "us-east-2a", r"^[a-z0-9][a-z0-9-]*$", 64, "starts with a lower-case letter or digit", r"a-z0-9-")

RESERVATION = Kind(
    "Reservation", "a reservation name", "a reservation id or name: letters, digits, '.', '_', '-' and '/' "
    "(a GCP shared reservation path)", "cr-0a1b2c3d4e5f60718", r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", 256,
    _NAME_START, r"A-Za-z0-9._/-")

BOOT_FILE = Kind(
    "BootFile", "a boot file name", "a file name under the TFTP root: letters, digits and . _ - + / (no leading '/', "
    "no '.' or '..' segments), as DHCP's boot file name field carries it", "ipxe.efi",
    r"^[A-Za-z0-9_][A-Za-z0-9._+/-]*$", 127, "starts with a letter, digit or '_'", r"A-Za-z0-9._+/-",
    _no_dot_segments)
"""DHCP's ``file`` field (RFC 2131: 128 octets, NUL-terminated): what a PXE client fetches by TFTP"""

OS_NAME = Kind(
    "OsName", "an OS identifier", "distribution and release in lower case, e.g. ubuntu-22.04 or debian-12",
    "ubuntu-22.04", r"^[a-z][a-z0-9._-]*$", 32, "starts with a lower-case letter", r"a-z0-9._-")

_AWS_IDENTITY = r"arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(instance-profile|role)(/[A-Za-z0-9_.@-]+)+"
_GCP_IDENTITY = r"[a-z][a-z0-9-]{4,61}[a-z0-9]@[a-z0-9][a-z0-9.-]*\.gserviceaccount\.com"
_AZURE_IDENTITY = (r"/subscriptions/[0-9A-Fa-f-]{36}/resource[Gg]roups/[A-Za-z0-9_.-]{1,90}/providers/"
                   r"Microsoft\.ManagedIdentity/userAssignedIdentities/[A-Za-z0-9_-]{3,128}")
CLOUD_IDENTITY_PATTERNS = {"aws": _AWS_IDENTITY, "gcp": _GCP_IDENTITY, "azure": _AZURE_IDENTITY}
"""provider -> the shape of an existing identity: an IAM instance profile or role ARN, a service account e-mail, a
user-assigned managed identity's resource id"""

CLOUD_IDENTITY = Kind(
    "CloudIdentity", "a cloud identity", "an existing identity: an AWS IAM instance profile or role ARN "
    "(arn:aws:iam::123456789012:instance-profile/name), a GCP service account e-mail (name@project.iam.gserviceaccount"
    ".com) or an Azure user-assigned managed identity's resource id (/subscriptions/<id>/resourceGroups/<rg>/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/<name>)", "arn:aws:iam::123456789012:instance-profile/gpu-nodes",
    "^(" + "|".join(CLOUD_IDENTITY_PATTERNS.values()) + ")$", 512,
    "is an IAM instance profile or role ARN, a service account e-mail or a managed identity's resource id",
    r"A-Za-z0-9_.@:/-")


def _git_ref(value: str) -> str | None:
    if ".." in value or "//" in value or value.endswith(("/", ".", ".lock")) or "/." in value:
        return "a git ref may not contain '..', '//' or '/.', nor end with '/', '.' or '.lock' (git-check-ref-format)"
    return None


PULL_SOURCE = Kind(
    "PullSource", "a pull source", "a git remote URL without credentials, query or fragment: https://host[:port]/path, "
    "ssh://[user@]host[:port]/path or file:///path", "https://git.example.com/cluster/render.git",
    r"^(https://|ssh://([A-Za-z0-9_][A-Za-z0-9_.-]*@)?)([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?"
    r"/[A-Za-z0-9._~/+-]*$|^file:///[A-Za-z0-9._~/+-]*$", 2048,
    "is https://host[:port]/path, ssh://[user@]host[:port]/path or file:///path", r"A-Za-z0-9._~:/@+\[\]-",
    lambda v: _no_dot_segments(v.split("://", 1)[1]))

GIT_REF = Kind(
    "GitRef", "a git ref", "a branch or tag name: letters, digits, '.', '_', '-' and '/', starting with a letter or "
    "digit", "main", r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", 255, _NAME_START, r"A-Za-z0-9._/-", _git_ref)
_FILE_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9._+@~-]*"
RELATIVE_FILE = Kind(
    "RelativeFile", "a file beside the blueprint", "a path relative to the blueprint's directory: names of letters, "
    "digits and . _ - + @ ~ joined by '/', each starting with a letter, digit or '_' (no '..', no absolute path, "
    "no hidden file)", "lab-ha-inventory.csv", rf"^{_FILE_SEGMENT}(/{_FILE_SEGMENT})*$", 255,
    "is names joined by '/', each starting with a letter, digit or '_' (no '/' first or last, no '//', "
    "no '.' or '..' segment)", r"A-Za-z0-9._+@~/-")
"""a file the loader reads beside the blueprint (an inventory CSV, docs/inventory.md): inside the blueprint's
directory by its shape; the loader also refuses a symlink that leaves it"""


# --- privilege-bearing paths and keys (clusterctl/path_policy.py; docs/security.md, "Privilege-bearing paths") --

def _path_kind(name: str, use: str, example: str) -> Kind:
    """An absolute path the roles act on as root for ``use``: the AbsolutePath shape, then the path policy."""
    return Kind(name, ABSOLUTE_PATH.noun, path_policy.allowed(use), example, ABSOLUTE_PATH.pattern,
                ABSOLUTE_PATH.max_length, ABSOLUTE_PATH.shape, _PATH_CHARS,
                lambda value: path_policy.refusal(value, use))


SHARED_MOUNT_POINT = _path_kind("SharedMountPoint", path_policy.SHARED_MOUNT, "/mnt/data")
LOCAL_DIRECTORY = _path_kind("LocalDirectory", path_policy.LOCAL_DIRECTORY, "/mnt/data")
STATE_DIRECTORY = _path_kind("StateDirectory", path_policy.STATE_DIRECTORY, "/var/spool/slurmctld")
PACKAGE_DIRECTORY = _path_kind("PackageDirectory", path_policy.PACKAGE_DIRECTORY, "/srv/slurm-debs")

OPENPGP_FINGERPRINT = Kind(
    "OpenPgpFingerprint", "an OpenPGP fingerprint", "the primary key's full fingerprint: 40 hexadecimal digits "
    "(v4) or 64 (v5/v6), without spaces, as `gpg --show-keys --with-colons` prints it",
    "0123456789ABCDEF0123456789ABCDEF01234567", r"^([0-9A-Fa-f]{40}|[0-9A-Fa-f]{64})$", 64,
    "is 40 or 64 hexadecimal digits (the full fingerprint: a short key id can be forged)", r"0-9A-Fa-f")

PRIVILEGED_PATH_KINDS = (SHARED_MOUNT_POINT, LOCAL_DIRECTORY, STATE_DIRECTORY, PACKAGE_DIRECTORY, OPENPGP_FINGERPRINT)

SharedMountPoint = Annotated[str, SHARED_MOUNT_POINT]
LocalDirectory = Annotated[str, LOCAL_DIRECTORY]
StateDirectory = Annotated[str, STATE_DIRECTORY]
PackageDirectory = Annotated[str, PACKAGE_DIRECTORY]
OpenPgpFingerprint = Annotated[str, OPENPGP_FINGERPRINT]

FreeText = Annotated[str, FREE_TEXT]
Identifier = Annotated[str, IDENTIFIER]
ObjectName = Annotated[str, OBJECT_NAME]
QosName = Annotated[str, QOS_NAME]
PartitionName = Annotated[str, PARTITION_NAME]
ClusterName = Annotated[str, CLUSTER_NAME]
SlurmClusterName = Annotated[str, SLURM_CLUSTER_NAME]
GroupName = Annotated[str, GROUP_NAME]
FabricName = Annotated[str, FABRIC_NAME]
HostName = Annotated[str, HOST_NAME]
HostList = Annotated[str, HOST_LIST]
AbsolutePath = Annotated[str, ABSOLUTE_PATH]
NfsExport = Annotated[str, NFS_EXPORT]
MountSource = Annotated[str, MOUNT_SOURCE]
Endpoint = Annotated[str, ENDPOINT]
LustreSource = Annotated[str, LUSTRE_SOURCE]
AptRepoUrl = Annotated[str, APT_REPO_URL]
SlurmTime = Annotated[str, SLURM_TIME]
SlurmFeature = Annotated[str, SLURM_FEATURE]
InterfaceName = Annotated[str, INTERFACE_NAME]
NcclSocketIfname = Annotated[str, NCCL_SOCKET_IFNAME]
HcaName = Annotated[str, HCA_NAME]
Version = Annotated[str, VERSION]
SlurmVersion = Annotated[str, SLURM_VERSION]
Cidr = Annotated[str, CIDR]
IpAddress = Annotated[str, IP_ADDRESS]
DnsDomain = Annotated[str, DNS_DOMAIN]
DnsLabel = Annotated[str, DNS_LABEL]
CloudRegion = Annotated[str, CLOUD_REGION]
CloudZone = Annotated[str, CLOUD_ZONE]
Reservation = Annotated[str, RESERVATION]
OsName = Annotated[str, OS_NAME]
BootFile = Annotated[str, BOOT_FILE]
AptUrl = Annotated[str, APT_URL]
AptKey = Annotated[str, APT_KEY]
AptSuite = Annotated[str, APT_SUITE]
PullSource = Annotated[str, PULL_SOURCE]
GitRef = Annotated[str, GIT_REF]
CloudIdentityRef = Annotated[str, CLOUD_IDENTITY]
RelativeFile = Annotated[str, RELATIVE_FILE]

ALL_KINDS: tuple[Kind, ...] = (
    FREE_TEXT, IDENTIFIER, OBJECT_NAME, PARTITION_NAME, QOS_NAME, CLUSTER_NAME, SLURM_CLUSTER_NAME, GROUP_NAME,
    FABRIC_NAME, HOST_NAME, HOST_LIST,
    ABSOLUTE_PATH, NFS_EXPORT, MOUNT_SOURCE, ENDPOINT, SLURM_TIME, SLURM_FEATURE, INTERFACE_NAME,
    NCCL_SOCKET_IFNAME, HCA_NAME, VERSION, SLURM_VERSION, CIDR, IP_ADDRESS, DNS_DOMAIN, DNS_LABEL, CLOUD_REGION,
    CLOUD_ZONE,
    RESERVATION, OS_NAME, BOOT_FILE, APT_URL, APT_KEY, APT_SUITE, PULL_SOURCE, GIT_REF, CLOUD_IDENTITY, RELATIVE_FILE,
    *PRIVILEGED_PATH_KINDS)
"""every kind, for documentation and for the tests that check each one refuses the injection payloads"""


# --- users: the directory client, Slurm accounts and who may log in (clusterctl/blueprint/users.py) -------

UNIX_NAME = Kind(
    "UnixName", "a user or group name", "a POSIX user or group name as useradd(8) accepts it by default: lower-case "
    "letters, digits, '_' and '-', starting with a letter or '_', at most 32 characters (sacctmgr stores user names "
    "in lower case)", "alice", r"^[a-z_][a-z0-9_-]*$", 32, "starts with a lower-case letter or '_'", r"a-z0-9_-")

SLURM_ACCOUNT = Kind(
    "SlurmAccount", "a Slurm account name", "lower-case letters, digits, '.', '_' and '-', starting with a letter or "
    "digit, at most 64 characters (sacctmgr stores account names in lower case: Physics would be re-added on every "
    "converge)", "physics", r"^[a-z0-9][a-z0-9._-]*$", 64, "starts with a lower-case letter or digit", r"a-z0-9._-")

LDAP_URI = Kind(
    "LdapUri", "an LDAP URI", "ldaps://host[:port] or ldap://host[:port] (then start_tls), the host a name, an IPv4 "
    "address or [an IPv6 address]; no path, credentials or extensions (sssd-ldap(5) ldap_uri)",
    "ldaps://ldap01.example.com",
    r"^ldaps?://([A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$", 2048,
    "is ldaps://host[:port] or ldap://host[:port]", r"A-Za-z0-9._:/\[\]-")

DISTINGUISHED_NAME = Kind(
    "DistinguishedName", "an LDAP distinguished name", "attribute=value pairs joined by ',' (RFC 4514), each "
    "attribute a letter then letters, digits and '-', each value letters, digits, '.', '_' and '-' (no spaces, "
    "escapes or multi-valued RDNs)", "ou=people,dc=example,dc=com",
    r"^[A-Za-z][A-Za-z0-9-]*=[A-Za-z0-9._-]+(,[A-Za-z][A-Za-z0-9-]*=[A-Za-z0-9._-]+)*$", 1024,
    "is attribute=value pairs joined by ',' (ou=people,dc=example,dc=com)", r"A-Za-z0-9._=,-")

USER_KINDS = (UNIX_NAME, SLURM_ACCOUNT, LDAP_URI, DISTINGUISHED_NAME)
ALL_KINDS = ALL_KINDS + USER_KINDS
UnixName = Annotated[str, UNIX_NAME]
SlurmAccount = Annotated[str, SLURM_ACCOUNT]
LdapUri = Annotated[str, LDAP_URI]
DistinguishedName = Annotated[str, DISTINGUISHED_NAME]
