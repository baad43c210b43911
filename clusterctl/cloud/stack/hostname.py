"""How each cloud instance gets its blueprint host name, and which names a provider can give.

Slurm's ``slurmd`` finds its ``NodeName`` line by the node's host name (slurm.conf(5), NodeName: "typically be
the string that "/bin/hostname -s" returns"). Every program creates one
resource per blueprint host, so each instance is named where it is created:

- **AWS**: EC2 names an instance ``ip-10-0-0-5`` (IP name) or ``i-0123...`` (resource name); neither can be a
  chosen name (EC2 User Guide, "EC2 instance hostname types"). The name is set by cloud-init from the
  instance's user data (:func:`aws_user_data`): ``hostname`` and ``fqdn`` (cloud-init docs, module "Set
  Hostname": the user-data values take precedence over the data source's ``local-hostname``; "Update
  Hostname" re-applies them on every boot), ``prefer_fqdn_over_hostname: false`` (else distributions whose
  default is the FQDN, RHEL among them, set the FQDN), ``manage_etc_hosts: localhost`` (module "Update Etc
  Hosts": only the ``127.0.1.1`` line of the host name is kept up to date, the rest of ``/etc/hosts`` - the
  common role's block mapping every host to its in-band address - is left alone; ``true`` would rewrite the
  whole file from a template on every boot). The ``Name`` tag carries the host name too.
- **GCP**: the instance name is the host name. Compute Engine gives a VM the host name ``NAME`` and the
  internal DNS name ``NAME.ZONE.c.PROJECT.internal``, resolvable by the short name inside the VPC (Compute
  Engine docs, "Internal DNS"); the ``hostname`` field takes only a custom FQDN of at least two labels, so it
  is left unset. Instance names are ``[a-z]([-a-z0-9]*[a-z0-9])?``, at most 63 characters (Compute Engine API,
  instances resource, ``name``).
- **Azure**: ``os_profile.computer_name`` is the host name the provisioning agent (cloud-init on the
  Ubuntu images) sets, and the VNet's Azure-provided DNS resolves it (Azure docs, "Name resolution for
  resources in Azure virtual networks"). Linux computer names: at most 64 characters, no ``.`` or ``_``.

Every name reaching a program is checked here (:func:`check`) when the spec is made from the plan and again
when the program loads ``cluster.json``; the user data is written by the one generator
(clusterctl/cloud/node/cloud_config.py: cloud-config in JSON form, which is YAML), never by concatenation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clusterctl.cloud.node.cloud_config import LABEL, cloud_config

# LABEL: a lower-case RFC 1123 label, what every provider can name an instance and what slurmd finds unchanged;
# defined once in the user-data generator (the node programs, which run alone on an instance, keep a copy)
GCP_NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")
"""Compute Engine resource names (RFC 1035): a lower-case letter first"""

CLOUD_CONFIG_HEADER = "#cloud-config\n"
"""the first line cloud-init requires of cloud-config user data"""


def problem(provider: str, host: str) -> str | None:
    """Why ``provider`` cannot give an instance the host name ``host`` as it is, or None."""
    if not LABEL.fullmatch(host):
        return (f"host name {host!r} is not a lower-case RFC 1123 label (letters a-z, digits and '-', no '-' at "
                f"either end, 1-63 characters)")
    if provider == "gcp" and not GCP_NAME.fullmatch(host):
        return f"host name {host!r} does not start with a letter, which a Compute Engine instance name must"
    return None


def check(provider: str, hosts: Iterable[str]) -> None:
    """Raise ValueError naming the first host name ``provider`` cannot give an instance."""
    for host in hosts:
        why = problem(provider, host)
        if why is not None:
            raise ValueError(f"{provider}: {why}")


def aws_user_data(host: str) -> str:
    """cloud-config user data naming an EC2 instance ``host`` (module docstring)."""
    check("aws", [host])
    return cloud_config("aws", host)
