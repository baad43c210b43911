"""Where a blueprint may put a privilege-bearing path: one policy for every directory the roles mount, create,
chown or trust as root on every node (docs/security.md, "Privilege-bearing paths").

A blueprint names directories that the roles act on as root: a storage tier's mount point (an NFS share mounted
there, or a node-local directory created with mode 1777), slurmctld's ``state_save_location`` (created for the
``slurm`` user, mode 0750) and the ``debs`` directory apt trusts without a signature. A well-formed path can
still mean "mount a user's NFS share over ``/etc``" or "hand ``/var/spool`` to the slurm user". This module says,
for each *use*, which paths are refused and why (a ``file://`` pull source, the repository every node applies
as root, is one more):

* **shape**: ``/`` then segments of letters, digits and ``. _ - + @ ~``; no empty segment (``//``, a trailing
  ``/``), no ``.`` or ``..`` segment: one spelling per directory, so two paths that are the same directory are
  also the same text (the nesting check compares text).
* **never ``/``**: a mount over the root replaces the system; ``/`` handed to a user is every file.
* **system trees**, the directory and everything under it (:data:`SYSTEM_TREES`): configuration, programs,
  libraries, the kernel's and systemd's file systems, root's home. A share mounted there is code or
  configuration root runs; a directory created there changes what the system reads. Exception: strictly below
  :data:`ALLOWED_IN_SYSTEM_TREES` (``/var/lib/slurm/...``, Debian's home of Slurm's state).
* **world-writable trees** (:data:`WORLD_WRITABLE_TREES`, ``/tmp``, ``/var/tmp``, ``/dev/shm``), the directory and
  everything under it: any local user can create the path first, as their own directory or as a symlink that a
  mount, a ``chown`` or apt then follows.
* **shared parents**, the directory itself only (:data:`SHARED_PARENTS`: ``/var``, ``/var/spool``, ``/var/log``,
  ``/opt``, ``/srv``, ``/mnt``, ...): mounting over one hides what other packages keep there; a subdirectory is
  fine (``/var/spool/slurmctld``, ``/srv/slurm-debs``, ``/mnt/weka``).
* ``/home`` itself for every use but a shared tier's mount: the usual NFS home is a shared tier; a node-local
  ``/home`` (mode 1777) or a StateSaveLocation at ``/home`` would hand every user's home to others.

The relations between paths (a tier mounted under another tier's mount, a state directory inside a
world-writable local tier) need the whole blueprint: :mod:`clusterctl.blueprint.path_relations` checks them
when it loads, with the same exit 2.
"""

from __future__ import annotations

import re

SHARED_MOUNT = "shared"
"""a shared tier's mount point (nfs, parallel, object): a file server's share mounted there"""
LOCAL_DIRECTORY = "local"
"""a node-local tier's directory: created when missing, mode 1777 (every user's scratch)"""
STATE_DIRECTORY = "state"
"""slurmctld's StateSaveLocation: created for the slurm user, mode 0750"""
PACKAGE_DIRECTORY = "debs"
"""the directory of .deb files apt trusts without a signature (slurm.install.debs.path)"""

EXPORT_DIRECTORY = "export"
"""the directory an NFS server of the blueprint exports to the cluster (the nfs_servers role writes /etc/exports)"""

PULL_REPOSITORY = "pull"
"""the git repository every node applies site.yml from as root (slurm.rollout.pull.source file:///path)"""

USES = {SHARED_MOUNT: "a shared storage tier's mount point", LOCAL_DIRECTORY: "a node-local tier's directory",
        STATE_DIRECTORY: "slurmctld's StateSaveLocation", PACKAGE_DIRECTORY: "the trusted .deb directory",
        PULL_REPOSITORY: "the git repository the nodes pull from", EXPORT_DIRECTORY: "an NFS export's directory"}

SYSTEM_TREES = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc",
                "/sys", "/run", "/var/run", "/var/lock", "/root", "/snap", "/var/lib", "/var/cache/apt",
                "/var/backups", "/lost+found")
"""refused with everything under them, for every use"""
ALLOWED_IN_SYSTEM_TREES = ("/var/lib/slurm",)
"""paths strictly below these are allowed although a system tree holds them (Debian's slurm-wlm keeps
StateSaveLocation at /var/lib/slurm/slurmctld)"""
WORLD_WRITABLE_TREES = ("/tmp", "/var/tmp", "/dev/shm")
"""refused with everything under them, for every use: any local user can create the path first"""
SHARED_PARENTS = ("/var", "/var/spool", "/var/log", "/var/cache", "/var/opt", "/var/mail", "/opt", "/srv", "/mnt",
                  "/media", "/cdrom")
"""refused themselves, for every use; their subdirectories are allowed"""
HOME = "/home"
"""refused itself for every use but a shared tier's mount point"""

_SEGMENT = re.compile(r"[A-Za-z0-9._+@~-]+")


def _within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree + "/")


def refusal(path: str, use: str) -> str | None:
    """Why ``path`` may not be used as ``use`` (one of :data:`USES`), or None when it may."""
    what = USES[use]
    if not path.startswith("/"):
        return f"{what} must be an absolute path"
    if path == "/":
        return f"{what} cannot be / (the root of the system)"
    segments = path[1:].split("/")
    if any(s == "" for s in segments):
        return f"{what} may not contain '//' or end with '/': write the directory once, as /a/b"
    if any(s in (".", "..") for s in segments):
        return f"{what} may not contain '.' or '..' segments: write the path it resolves to"
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        return f"{what} is '/' then names of letters, digits and . _ - + @ ~ joined by '/'"
    for tree in WORLD_WRITABLE_TREES:
        if _within(path, tree):
            return (f"{what} cannot be {tree} or in it, which every user may write: anyone could create {path} first "
                    "(as their own directory, or a symlink the roles would follow as root)")
    for tree in SYSTEM_TREES:
        if _within(path, tree) and not any(path.startswith(a + "/") for a in ALLOWED_IN_SYSTEM_TREES):
            return (f"{what} cannot be {tree} or in it, a system directory: the roles would mount, create or change "
                    f"what the system itself runs or reads")
    if path in SHARED_PARENTS:
        return f"{what} cannot be {path} itself: it would hide or take over what other software keeps there"
    if path == HOME and use not in (SHARED_MOUNT, EXPORT_DIRECTORY):
        return f"{what} cannot be {HOME} itself: it would take over every user's home directory"
    return None


def allowed(use: str) -> str:
    """What ``use`` accepts, in words (the hint of a refusal)."""
    home = "" if use in (SHARED_MOUNT, EXPORT_DIRECTORY) else ", nor /home itself"
    return (f"an absolute POSIX path: '/' then letters, digits and . _ - + @ ~ /; for {USES[use]}, not / and not "
            f"in a system directory "
            f"(/etc, /usr, /root, /var/lib, ...) or a world-writable one (/tmp, /var/tmp), not /var, /var/spool, "
            f"/opt, /srv or /mnt itself{home} (docs/security.md, \"Privilege-bearing paths\")")


def under(path: str, mount: str) -> bool:
    """``path`` is ``mount`` or inside it (both absolute, without '.' or '..' segments; a trailing '/' ignored)."""
    path, mount = path.rstrip("/") or "/", mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount if mount == "/" else mount + "/")
