"""clusterctl_cloud_config: the one generator of the cloud-config user data every cluster instance boots with.

Used by clusterctl (``clusterctl.cloud.stack.userdata.user_data``: the Pulumi programs' static instances) and, as
/usr/local/sbin/clusterctl_cloud_config.py, by the power-saving resume program on the controllers (an elastic
instance it creates), so both give an instance the same user data. Standard library only.

    text = cloud_config("aws", "gpu001", bootstrap=settings, program=bootstrap_program_text)

The user data is cloud-config in JSON form: JSON is YAML, and cloud-init reads cloud-config with
``yaml.safe_load`` (cloud-init docs, "User data formats": the ``#cloud-config`` header then YAML), so no
value can change its structure and no YAML emitter is needed on a controller. Keys:

- ``hostname``, ``fqdn``, ``prefer_fqdn_over_hostname: false``, ``preserve_hostname: false``,
  ``manage_etc_hosts: localhost`` (clusterctl.cloud.stack.hostname: why each);
- with bootstrap settings: ``write_files`` - the bootstrap program at /usr/local/sbin/clusterctl-bootstrap
  (``encoding: gz+b64``, 0755) and its settings at /etc/clusterctl/bootstrap.json (0644; they name where the
  config object and each secret are, never a secret's value) - and ``runcmd: [[program]]`` (an argument
  list: cloud-init runs a list without a shell).

Size limits (LIMITS, bytes of the user data as given, before the provider's base64):

- AWS: "User data is limited to 16 KB, in raw form, before it is base64-encoded" (Amazon EC2 User Guide,
  "Work with instance user data", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html).
- GCP: the ``user-data`` metadata value: "their size must be less than or equal to 262144 bytes (256 KiB)"
  (Compute Engine API, Metadata ``items[].value``,
  https://cloud.google.com/compute/docs/reference/rest/v1/instances; all items together under 512 KB).
- Azure: ``osProfile.customData``: "The maximum length of the binary array is 65535 bytes" (Azure REST /
  SDK reference, OSProfile customData, https://learn.microsoft.com/en-us/javascript/api/@azure/arm-compute/osprofile).
"""

from __future__ import annotations

import base64
import gzip
import json
import re

HEADER = "#cloud-config\n"
BOOTSTRAP_PROGRAM = "/usr/local/sbin/clusterctl-bootstrap"
BOOTSTRAP_CONFIG = "/etc/clusterctl/bootstrap.json"
LIMITS = {"aws": 16384, "gcp": 262144, "azure": 65535}
"""bytes of user data each provider accepts, before its own base64 encoding (module docstring: sources)"""
LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
"""a lower-case RFC 1123 label (clusterctl.cloud.stack.hostname.LABEL)"""


class UserDataTooLarge(ValueError):
    pass


def gz_b64(text: str) -> str:
    """``text`` gzip-compressed (mtime 0: the same text gives the same bytes) and base64-encoded."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def cloud_config(provider: str, host: str, bootstrap: dict | None = None, program: str | None = None) -> str:
    """The user data naming the instance ``host`` and, with ``bootstrap`` settings and the bootstrap
    ``program`` text, installing and running it. Raises ValueError for a host name that is not a label or an
    unknown provider, UserDataTooLarge over LIMITS[provider]."""
    if provider not in LIMITS:
        raise ValueError(f"unknown provider {provider!r}")
    if not isinstance(host, str) or not LABEL.fullmatch(host):
        raise ValueError(f"host name {host!r} is not a lower-case RFC 1123 label")
    config: dict = {"hostname": host, "fqdn": host, "prefer_fqdn_over_hostname": False, "preserve_hostname": False,
                    "manage_etc_hosts": "localhost"}
    if bootstrap is not None:
        if not program:
            raise ValueError("bootstrap settings without the bootstrap program")
        settings = {**bootstrap, "host": host}
        config["write_files"] = [
            {"path": BOOTSTRAP_PROGRAM, "permissions": "0755", "owner": "root:root", "encoding": "gz+b64",
             "content": gz_b64(program)},
            {"path": BOOTSTRAP_CONFIG, "permissions": "0644", "owner": "root:root",
             "content": json.dumps(settings, indent=1, sort_keys=True) + "\n"},
        ]
        config["runcmd"] = [[BOOTSTRAP_PROGRAM]]
    text = HEADER + json.dumps(config, indent=1) + "\n"
    size = len(text.encode())
    if size > LIMITS[provider]:
        raise UserDataTooLarge(f"{provider} user data for {host} is {size} bytes; the limit is {LIMITS[provider]}")
    return text
