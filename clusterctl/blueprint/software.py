"""Scheduler intent, software versions, the optional cloud target and validation settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from clusterctl import path_policy
from clusterctl.blueprint.accounting import AccountingRecords
from clusterctl.kinds import (KIND_ERROR, AbsolutePath, AptKey, AptSuite, AptUrl, Cidr, CloudIdentityRef, CloudRegion,
                              CloudZone, FreeText, GitRef, HostList, HostName, Identifier, OpenPgpFingerprint, OsName,
                              PackageDirectory, PartitionName, PullSource, QosName, Reservation, SlurmAccount,
                              SlurmClusterName, SlurmTime, SlurmVersion, StateDirectory, Version)
from clusterctl.strict import StrictModel, listed_once


class Partition(StrictModel):
    """A Slurm partition made of whole node groups."""

    name: PartitionName
    groups: list[Identifier] = Field(min_length=1, max_length=1024)
    default: bool = False
    max_time: SlurmTime = "UNLIMITED"
    """Slurm time limit (minutes, HH:MM:SS, D-HH:MM:SS or UNLIMITED)"""
    allow_accounts: list[SlurmAccount] = Field(default_factory=list, max_length=1024)
    """AllowAccounts: only jobs of these accounts (users.accounts) and their sub-accounts run here; empty: ALL"""


class Qos(StrictModel):
    """A Slurm QOS the roles create with sacctmgr (docs/slurm.md, "QOS"); slurm.conf enforces it
    (AccountingStorageEnforce=associations,limits,qos)."""

    name: QosName
    """lower case: sacctmgr stores QOS names in lower case"""
    priority: int = Field(default=0, ge=0, le=4_294_967_294)  # sacctmgr: a 32-bit priority
    """the QOS's priority factor (slurm.conf PriorityWeightQOS weighs it)"""
    max_wall: SlurmTime | None = None
    """longest time limit of a job in this QOS (MaxWall)"""
    max_gpus_per_user: int | None = Field(default=None, ge=1, le=10_000_000)
    """GPUs one user's running jobs may hold in this QOS (MaxTRESPerUser=gres/gpu=N)"""


class Pull(StrictModel):
    """Pull mode (docs/ansible.md, "Pull mode"): every node applies site.yml to itself from a git remote holding
    the rendered tree, on a timer and on demand (``systemctl start clusterctl-pull``); ``rollout.yml`` at the
    tip of ``ref`` says which batch may apply which version."""

    source: PullSource
    """git remote of the rendered tree (the render directory committed as it is): https://, ssh:// or file://"""
    ref: GitRef = "main"
    """branch (or tag) whose tip holds the newest render and rollout.yml"""

    @field_validator("source")
    @classmethod
    def _trusted_repository(cls, value: str) -> str:
        """Every node applies what a ``file://`` repository holds as root: its path passes the path policy
        (docs/security.md, "Privilege-bearing paths"), so no user can create it first in /tmp."""
        if value.startswith("file://"):
            reason = path_policy.refusal(value.removeprefix("file://"), path_policy.PULL_REPOSITORY)
            if reason is not None:
                raise PydanticCustomError(KIND_ERROR, "{reason}", {
                    "reason": reason, "allowed": path_policy.allowed(path_policy.PULL_REPOSITORY),
                    "example": "file:///srv/clusterctl/render.git"})
        return value
    interval_minutes: int = Field(default=30, ge=1, le=10_080)  # a week
    """how often the timer runs the pull on each node (systemd OnUnitActiveSec)"""
    splay_minutes: int = Field(default=15, ge=0, le=1_440)
    """random delay added to every timer run (systemd RandomizedDelaySec), so nodes do not fetch at once"""


class Rollout(StrictModel):
    """How the rendered site.yml changes a cluster that runs jobs (docs/ansible.md, "Rolling changes")."""

    batch_percent: int = Field(default=10, ge=1, le=100)
    """compute nodes changed at a time: the compute play's ``serial`` (override one run with
    ``-e clusterctl_rolling_batch=100%``, e.g. for the first bring-up)"""
    max_fail_percent: int = Field(default=0, ge=0, le=100)
    """failed hosts a batch may have before the run stops (0: the first failure stops the rollout)"""
    drain_timeout_minutes: int = Field(default=60, ge=1, le=44_640)  # 31 days: above any job time limit
    """how long a change that needs an idle node (driver, DOCA-OFED, NIC firmware, IMEX peers) waits for the
    drained node's jobs; after that the node stays drained and pending, the run goes on, and the next run applies
    the change (slurmd restarts never drain: docs/ansible.md, "Rolling changes")"""
    pull: Pull | None = None
    """pull mode as well as push: nodes apply the rendered tree themselves (optional)"""


class SlurmInstallDistro(StrictModel):
    """Slurm from the distribution's own archive (Debian/Ubuntu slurm-wlm: slurmctld, slurmd, slurm-client,
    slurmdbd). Its release is the one software.os ships (SW005 warns when that is not slurm.version)."""

    kind: Literal["distro"]
    version: Version | None = None
    """package version to install and pin (e.g. "22.05.8-4+deb12u3"); default: the archive's candidate"""
    gpu_nvml: bool = False
    """also install slurm-wlm-nvml-plugin (Debian contrib / Ubuntu multiverse, which the hosts' apt sources must
    enable): the main archive's slurm-wlm is built without NVML, so gres.conf gets no AutoDetect=nvml without it"""


class SlurmInstallRepo(StrictModel):
    """Slurm from a package repository (a site mirror of packages built from SchedMD's debian/ directory, or a
    vendor's), written as a deb822 sources file with Signed-By and pinned to ``version``."""

    kind: Literal["repo"]
    url: AptUrl
    """the repository's base URL (deb822 URIs)"""
    key: AptKey
    """its signing key: an https:// URL downloaded to /etc/apt/keyrings/, or a keyring path on the hosts
    (deb822 Signed-By; then key_fingerprint is required)"""
    key_fingerprint: OpenPgpFingerprint | None = Field(default=None, validate_default=True)
    """the full fingerprint of the key's primary key: the slurm_preflight role refuses a key file holding any
    other key before apt uses it (required when ``key`` is a path; recommended with a URL)"""
    suite: AptSuite
    """deb822 Suites, e.g. bookworm or jammy"""
    components: list[Identifier] = Field(default_factory=lambda: ["main"], min_length=1, max_length=16)
    """deb822 Components"""
    version: Version
    """package version to install and pin (e.g. "24.05.4-1"); its major.minor must be slurm.version"""
    packages: Literal["schedmd", "debian"] = "schedmd"
    """package names: schedmd (slurm-smd-slurmctld, slurm-smd-slurmd, slurm-smd-client, slurm-smd-slurmdbd, as
    SchedMD's debian/ directory builds them since 23.11) or debian (slurmctld, slurmd, slurm-client, slurmdbd)"""
    gpu_nvml: bool = True
    """the packages carry the gpu/nvml plugin (built where NVML was found); false: gres.conf lists the GPUs
    instead of AutoDetect=nvml"""

    @field_validator("key_fingerprint")
    @classmethod
    def _pinned_key_file(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A keyring file on the hosts is whatever is there when the role runs: apt trusts it only with the
        fingerprint pinned here (docs/security.md, "Privilege-bearing paths")."""
        key = info.data.get("key")
        if value is None and isinstance(key, str) and key.startswith("/"):
            raise PydanticCustomError(KIND_ERROR, "{reason}", {
                "reason": f"key {key} is a file on the hosts, so apt would trust whatever key is there when the role "
                          "runs: key_fingerprint must pin the one it holds",
                "allowed": "key_fingerprint: the key's full primary fingerprint (gpg --show-keys --with-colons FILE, "
                           "the fpr line after pub), or key: an https:// URL",
                "example": "key_fingerprint: 0123456789ABCDEF0123456789ABCDEF01234567"})
        return value


class SlurmInstallDebs(StrictModel):
    """Slurm from a directory of .deb files on every target host, served to apt as a local flat repository
    (a Packages index written next to the files) and pinned to ``version``."""

    kind: Literal["debs"]
    path: PackageDirectory
    """the directory holding the .deb files on each host: root-owned and writable by root only (apt trusts it
    without a signature; the slurm_preflight role checks it before writing the sources file)"""
    version: Version
    """package version to install and pin (e.g. "24.05.4-1"); its major.minor must be slurm.version"""
    packages: Literal["schedmd", "debian"] = "schedmd"
    """package names: schedmd (slurm-smd-*, SchedMD's debian/ directory) or debian (slurmd, slurmctld, ...)"""
    gpu_nvml: bool = True
    """the packages carry the gpu/nvml plugin (built where NVML was found); false: gres.conf lists the GPUs
    instead of AutoDetect=nvml"""


SlurmInstall = Annotated[SlurmInstallDistro | SlurmInstallRepo | SlurmInstallDebs, Field(discriminator="kind")]


SLURM_UINT16_MAX = 65533
"""ResumeTimeout, SuspendTimeout, ResumeRate and SuspendRate are 16-bit in slurmctld (slurm.h: uint16_t
resume_timeout, suspend_timeout, resume_rate, suspend_rate; 65534 and 65535 mean INFINITE and NO_VAL)"""


class PowerSave(StrictModel):
    """Slurm power saving for the elastic node groups (``node_groups[].cloud.elastic``): when idle nodes are deleted
    and how long a created instance may take to register (slurm.conf(5), power_save.html; docs/slurm.md, "Power
    saving")."""

    suspend_time_s: int = Field(default=600, ge=60, le=604_800)  # a week: above it, keep the group static
    """SuspendTime: seconds a node is idle before SuspendProgram deletes its instance; default 600, ParallelCluster's
    ScaledownIdletime default (10 minutes)"""
    resume_timeout_s: int = Field(default=1800, ge=60, le=SLURM_UINT16_MAX)
    """ResumeTimeout: seconds from ResumeProgram to a registered slurmd before the node is marked DOWN and its job
    requeued; default 1800, ParallelCluster's ComputeNodeBootstrapTimeout and CycleCloud's resume_timeout: a GPU
    instance's boot plus the bootstrap's Ansible run (CLOUD013 warns below the estimate for the instance)"""
    suspend_timeout_s: int = Field(default=300, ge=30, le=SLURM_UINT16_MAX)
    """SuspendTimeout: seconds SuspendProgram has to delete an instance before the node may be resumed again;
    default 300 (slurm-gcp's value; instance deletion takes one to a few minutes)"""
    resume_rate_per_min: int = Field(default=0, ge=0, le=SLURM_UINT16_MAX)
    """ResumeRate: nodes created per minute at most, 0 = no limit (slurm-gcp's value: a 256-node job should not
    wait for Slurm's default of 300 a minute; the provider's API limits are the program's to respect)"""
    suspend_rate_per_min: int = Field(default=0, ge=0, le=SLURM_UINT16_MAX)
    """SuspendRate: nodes deleted per minute at most, 0 = no limit (Slurm's default 60 keeps idle GPU instances
    billing for minutes after a large job)"""


class Scheduler(StrictModel):
    """Overrides of the scheduler parameters the plan sizes (``clusterctl.plan.scheduler``; docs/slurm.md,
    "Scheduler parameters"): each field left out keeps the planned value. Bounds are slurm.conf(5)'s."""

    bf_window_minutes: int | None = Field(default=None, ge=1, le=43_200)
    """SchedulerParameters bf_window: minutes backfill looks ahead (Min 1, Max 43200 = 30 days); planned: the
    longest partition MaxTime (SCHED001 warns when an override is shorter)"""
    bf_resolution_s: int | None = Field(default=None, ge=1, le=3_600)
    """bf_resolution: seconds per backfill time slot (Min 1, Max 3600); planned: sized with bf_window"""
    bf_max_job_test: int | None = Field(default=None, ge=1, le=1_000_000)
    """bf_max_job_test: jobs the backfill scheduler tests per cycle (Min 1, Max 1,000,000)"""
    bf_interval_s: int | None = Field(default=None, ge=1, le=10_800)
    """bf_interval: seconds between backfill cycles (Min 1, Max 10800)"""
    max_rpc_cnt: int | None = Field(default=None, ge=0, le=1_000)
    """max_rpc_cnt: active slurmctld threads at which scheduling defers to RPCs (0 disables; Max 1000)"""
    max_job_count: int | None = Field(default=None, ge=1, le=10_000_000)
    """MaxJobCount: jobs slurmctld keeps in memory; planned: sized from the node count"""
    max_array_size: int | None = Field(default=None, ge=0, le=4_000_001)
    """MaxArraySize: one more than the highest array index (0 disables arrays; "may not exceed 4000001")"""
    exclusive_partitions: list[PartitionName] | None = Field(default=None, max_length=1024)
    """partitions given OverSubscribe=EXCLUSIVE (whole nodes per job); planned: every GPU partition with a time
    limit over a day. [] makes none exclusive"""


SYSTEM_ID_MAX = 65533
"""highest UID/GID accepted for the Slurm and MUNGE accounts: 65534 is nobody/nogroup, 65535 the 16-bit (uid_t)-1"""


class SystemAccount(StrictModel):
    """A daemon's system user and its group, the same numbers on every Slurm host (docs/ansible.md, "Slurm and
    MUNGE accounts"). The name is the packages': SchedMD's and Debian trixie's slurmctld.service and slurmdbd.service
    run ``User=slurm``, every munge.service ``User=munge``; only the numbers are the site's."""

    uid: int = Field(ge=1, le=SYSTEM_ID_MAX)
    """user id (not 0: a daemon is never root); below 1000 is a system id, what a distribution package would pick"""
    gid: int = Field(ge=1, le=SYSTEM_ID_MAX)
    """id of the account's own group, of the same name"""


SLURM_ACCOUNT_DEFAULT = {"uid": 401, "gid": 401}
MUNGE_ACCOUNT_DEFAULT = {"uid": 402, "gid": 402}
"""AWS ParallelCluster's numbers (aws-parallelcluster-cookbook attributes/default.rb: reserved_base_uid 400, slurm
user_id and group_id base + 1, munge base + 2): system ids below 1000, the same on every node it builds"""


class Slurm(StrictModel):
    """Slurm intent; slurm.conf, gres.conf and topology.conf are rendered from it and the plan."""

    version: SlurmVersion
    """Slurm release, e.g. "24.05" (quote it: YAML reads 24.10 as the number 24.1)"""
    cluster_name: SlurmClusterName | None = None
    """Slurm ClusterName (at most 40 characters: slurm.conf(5)); default: the blueprint name"""
    controllers: HostList
    """host list of slurmctld hosts: first primary, the rest backups"""
    state_save_location: StateDirectory = "/var/spool/slurmctld"
    """slurmctld's StateSaveLocation; with a backup controller it must be on storage every controller reads and
    writes (slurm.conf(5)): a directory under the mount of an nfs or parallel storage tier"""
    accounting_host: HostName | None = None
    """slurmdbd host; default: the first controller"""
    accounting_backup_host: HostName | None = None
    """backup slurmdbd host (AccountingStorageBackupHost, DbdBackupHost); the database it uses is set by
    accounting_database"""
    database_host: HostName | None = None
    """the site's own MySQL/MariaDB server for slurmdbd (StorageHost); default: MariaDB installed by the slurmdbd
    role on accounting_host. Requires ``database_ca``: the password is never sent to a server outside the plan
    without TLS (SLURM010)"""
    database_ca: AbsolutePath | None = None
    """with ``database_host``: the CA certificate (PEM, on the slurmdbd hosts) that signed the database server's
    certificate; slurmdbd connects over TLS checked against it (slurmdbd.conf ``StorageParameters=SSL_CA=...``)"""
    accounting_database: Literal["replicated", "primary"] = "replicated"
    """with accounting_backup_host and no database_host: ``replicated`` (each slurmdbd host runs MariaDB, the two
    replicating each other: MariaDB GTID primary/primary, docs/slurm.md "Accounting database") or ``primary`` (both
    slurmdbd use the database on accounting_host: the backup stops with that host; rule HA001 warns)"""
    accounting_records: AccountingRecords = Field(default_factory=AccountingRecords)
    """how long slurmdbd keeps records (Purge*After), archives before purging (Archive*), nightly dumps"""
    partitions: list[Partition] = Field(min_length=1, max_length=1024)
    topology: Literal["tree", "block", "yaml", "none"] = "tree"
    block_sizes: list[Annotated[int, Field(gt=0, le=1_000_000)]] = Field(default_factory=list, max_length=64)
    """topology/block BlockSizes (Slurm >= 24.05): base block size in nodes, then power-of-two multiples"""
    gres_autodetect: Literal["nvml", "nvidia", "rsmi", "off"] = "nvml"
    """gres.conf AutoDetect: nvml (NVIDIA, Slurm built with NVML), nvidia (24.11+, no NVML needed), rsmi (AMD)"""
    memory_reserve_gb: float | None = Field(default=None, gt=0, le=1_000_000)  # 1 PB: above any node's memory
    """memory kept back from RealMemory for the OS and daemons; default 3 % of the node, at least 16 GB"""
    qos: list[Qos] = Field(default_factory=list, max_length=256)
    """QOS created and kept by sacctmgr on the primary controller (names unique; "normal" exists already)"""

    @field_validator("qos")
    @classmethod
    def _unique_qos(cls, value: list[Qos]) -> list[Qos]:
        """sacctmgr keeps one QOS per name: a second entry would fight the first on every converge."""
        listed_once([q.name for q in value], "QOS ")
        return value
    rollout: Rollout = Field(default_factory=Rollout)
    """how site.yml restarts daemons on a running cluster: batches, failures allowed, drain timeout"""
    install: SlurmInstall = Field(default_factory=lambda: SlurmInstallDistro(kind="distro"))
    """where the Slurm packages come from: distro (default), repo (URL, signing key, suite) or debs (a directory
    of .deb files on the hosts), each with the package version to pin (docs/ansible.md, "Slurm install source")"""
    power_save: PowerSave = Field(default_factory=PowerSave)
    """Slurm power saving of the elastic node groups (node_groups[].cloud.elastic): rendered only when a group is
    elastic"""
    user: SystemAccount = Field(default_factory=lambda: SystemAccount(**SLURM_ACCOUNT_DEFAULT))
    """SlurmUser ``slurm``: created with these ids on every Slurm host before any Slurm package ("The SlurmUser must
    exist prior to starting Slurm and must exist on all nodes", quickstart_admin.html; SchedMD's packages create
    no user; controllers sharing StateSaveLocation need one UID). Default 401/401 (AWS ParallelCluster's)"""
    munge_user: SystemAccount = Field(default_factory=lambda: SystemAccount(**MUNGE_ACCOUNT_DEFAULT))
    """the ``munge`` account munged runs as, created with these ids before the munge package. Default 402/402"""
    scheduler: Scheduler = Field(default_factory=Scheduler)
    """overrides of the planned SchedulerParameters, MaxJobCount, MaxArraySize and exclusive partitions"""
    hardware_preflight: Literal["stop", "drain"] = "stop"
    """what a compute node does when its sockets, cores, threads, memory, GPUs or NICs differ from its NodeName and
    gres.conf lines (checked before slurmd starts: docs/ansible.md, "Hardware preflight"): stop (the host fails, slurmd
    is not started) or drain (slurmd starts and the node is drained with the difference as reason)"""

    @field_validator("munge_user")
    @classmethod
    def _distinct_accounts(cls, value: SystemAccount, info: ValidationInfo) -> SystemAccount:
        """slurm and munge are two accounts: one id for both would let slurmctld read the MUNGE key and munged the
        controller's state."""
        user = info.data.get("user")
        if isinstance(user, SystemAccount):
            same = [f for f in ("uid", "gid") if getattr(user, f) == getattr(value, f)]
            if same:
                raise ValueError(f"slurm.munge_user has the {' and '.join(same)} of slurm.user "
                                 f"({', '.join(str(getattr(value, f)) for f in same)}): give each account its own")
        return value


class Software(StrictModel):
    """Versions installed on the nodes."""

    os: OsName = "ubuntu-22.04"
    driver: Version
    """NVIDIA driver branch or full version ("550" or "550.90.07")"""
    cuda: Version
    nccl: Version | None = None
    doca: Version | None = None
    containers: Literal["enroot", "apptainer", "none"] = "enroot"
    image_stack: Literal["keep", "replace"] | None = None
    """a driver / DOCA-OFED stack the OS image already has: keep it when it satisfies the pins above, or remove
    it first as NVIDIA documents and install the pinned one (default: keep on cloud blueprints, else replace)"""


Capability = Literal["read-config", "read-secrets", "manage-instances", "pass-identity", "write-dns"]
"""what a node's cloud identity may do (clusterctl.cloud.stack.identity.CAPABILITIES)"""


class CloudIdentity(StrictModel):
    """An identity the site already has, used for one node role instead of the one the Pulumi program creates."""

    existing: CloudIdentityRef
    """an AWS IAM instance profile ARN, a GCP service account e-mail or an Azure user-assigned managed identity's
    resource id"""
    grants: list[Capability] = Field(default_factory=list, max_length=8)
    """what its policies allow: read-config, read-secrets, manage-instances, pass-identity, write-dns (CLOUD011
    compares them with what the role needs)"""

    @field_validator("grants")
    @classmethod
    def _unique_grants(cls, value: list[str]) -> list[str]:
        listed_once(value)
        return value


class CloudIdentities(StrictModel):
    """Existing identities by node role (``node_groups[].role``); a role not named gets the identity the Pulumi
    program creates with exactly what it needs (clusterctl.cloud.stack.identity.needs)."""

    compute: CloudIdentity | None = None
    head: CloudIdentity | None = None
    login: CloudIdentity | None = None
    storage: CloudIdentity | None = None
    service: CloudIdentity | None = None

    def items(self) -> list[tuple[str, CloudIdentity]]:
        """(role, identity) of the roles that name one, in field order."""
        return [(r, i) for r in type(self).model_fields if (i := getattr(self, r)) is not None]


class Cloud(StrictModel):
    """Cloud target for node types given as instance types."""

    provider: Literal["aws", "gcp", "azure"]
    region: CloudRegion
    zone: CloudZone | None = None
    placement_group: bool = True
    """cluster placement group / compact placement policy / proximity placement group"""
    reservation: Reservation | None = None
    """capacity reservation, Capacity Block or GCP reservation name"""
    admin_cidr: Cidr = "0.0.0.0/32"
    """where SSH to the head node may come from: private space, or at most a public IPv4 /16 or IPv6 /48 (CLOUD005;
    the Pulumi programs refuse wider ranges, also from ``clusterctl:adminCidr``)"""
    hourly_budget_usd: float | None = Field(default=None, gt=0, le=1_000_000_000)  # $1bn an hour
    """rule CLOUD016 warns when the instances' on-demand list price per hour (clusterctl/catalog/prices.yaml)
    exceeds it: static groups, and with elastic groups at full size"""
    identities: CloudIdentities = Field(default_factory=lambda: CloudIdentities())
    """per node role, an existing identity and what it grants, checked against what the role needs (CLOUD011,
    CLOUD015; docs/cloud.md "Existing identities": the programs do not attach it yet)"""


class Suppression(StrictModel):
    """A rule whose warnings and infos do not apply to this blueprint, and why. Its error findings stay errors:
    only ``--suppress`` on the command line suppresses an error (docs/cli.md, "Suppression")."""

    rule: Identifier
    reason: FreeText = Field(min_length=1)
    """why the finding does not apply here: shown in reports, required"""


class Validation(StrictModel):
    """Validation settings kept with the blueprint."""

    suppress: list[Suppression] = Field(default_factory=list, max_length=1024)
    max_blast_radius: float = Field(default=0.25, gt=0, le=1)
    """the share of the cluster's GPUs one component's failure (a rack, its feed, a CDU, a switch) may take out of
    service; ``clusterctl report --whatif`` lists every component above it as a single point of failure
    (docs/whatif.md)"""
