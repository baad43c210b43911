"""Naming: host names unique and valid, counts matching host lists, section names unique.

Host checks run over every expanded name (50,000+ on large plans), so they use sets and dicts and
report one finding per group (or pair of groups) with a count and a few examples, never one per host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from clusterctl import hostlist
from clusterctl.names import HINT, ansible_group_name, suspect, why_not_a_name
from clusterctl.plan.inventory_groups import group_name_clashes
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.site_records import name_refusals
from clusterctl.rules.base import Hit, Severity, rule

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
"""RFC 1123 host name label: letters, digits and hyphens, no hyphen at either end, 1-63 characters"""

EXAMPLES = 3


def _examples(names: list[str], total: int) -> str:
    shown = ", ".join(names[:EXAMPLES])
    return shown + (f", ... ({total:,} in all)" if total > EXAMPLES else "")


def _switch_tiers(plan: ClusterPlan) -> Iterator[tuple[int, str, str, list[str]]]:
    """(fabric index, fabric name, tier role, switch names) for every switch tier of every fabric."""
    for fp in plan.fabrics:
        for tier in fp.tiers:
            try:
                names = hostlist.expand(tier.names) if tier.names else []
            except hostlist.HostlistError:
                continue
            yield fp.index, fp.name, tier.role, names


@rule("NAME001", "naming", Severity.ERROR, "duplicate host name")
def unique_hosts(plan: ClusterPlan) -> Iterator[Hit]:
    """Every host name must be unique across all node groups (and within one group's host list), and no
    host may share a name with a switch the plan creates (``<fabric>-leaf01``...). Slurm refuses
    duplicate NodeNames, DHCP and DNS hand one name two addresses, and inventory tools silently merge
    the two machines. One finding per pair of groups, with the count and a few of the names."""
    owner: dict[str, int] = {}
    group_name = {g.index: g.name for g in plan.groups}
    for g in plan.groups:
        seen_here: set[str] = set()
        counts: dict[int, int] = {}
        examples: dict[int, list[str]] = {}
        for h in g.hosts:
            if h in seen_here:
                first = g.index
            else:
                seen_here.add(h)
                first = owner.setdefault(h, g.index)
                if first == g.index:
                    continue
            counts[first] = counts.get(first, 0) + 1
            ex = examples.setdefault(first, [])
            if len(ex) < EXAMPLES:
                ex.append(h)
        for first, n in counts.items():
            if first == g.index:
                msg = f"node group {g.name} names {n:,} host(s) more than once ({_examples(examples[first], n)})"
            else:
                msg = (f"{n:,} host name(s) of node group {g.name} are already used by node group "
                       f"{group_name[first]} ({_examples(examples[first], n)})")
            yield Hit(g.path + ("hostnames",), msg, "give each group its own prefix or number range")
    for fi, fname, role, switches in _switch_tiers(plan):
        taken = [s for s in switches if s in owner]
        if taken:
            yield Hit(("fabrics", fi, "name"),
                      f"{len(taken):,} {role} switch name(s) of fabric {fname} are also host names "
                      f"(node group {group_name[owner[taken[0]]]}: {_examples(taken, len(taken))})",
                      "rename the fabric (its switch names start with it) or the node group's hosts")


def _bad_names(names: Iterable[str]) -> tuple[list[str], int, list[str], int]:
    """(invalid examples, invalid count, upper-case examples, upper-case count)."""
    bad, n_bad, upper, n_upper = [], 0, [], 0
    match = _LABEL.fullmatch
    for h in names:
        if not match(h):
            n_bad += 1
            if len(bad) < EXAMPLES:
                bad.append(h)
        elif h != h.lower():
            n_upper += 1
            if len(upper) < EXAMPLES:
                upper.append(h)
    return bad, n_bad, upper, n_upper


def _why(example: str) -> str:
    if len(example) > 63:
        return f"'{example[:20]}...' is {len(example)} characters, over the 63 of a DNS label"
    if "_" in example:
        return f"'{example}' has an underscore"
    if "." in example:
        return f"'{example}' has a dot (write the short name; the domain comes from DNS)"
    if example.startswith("-") or example.endswith("-"):
        return f"'{example}' starts or ends with a hyphen"
    return f"'{example}' has characters other than letters, digits and hyphens"


@rule("NAME002", "naming", Severity.ERROR, "invalid host name")
def valid_hosts(plan: ClusterPlan) -> Iterator[Hit]:
    """Host names must be RFC 1123 labels: letters, digits and hyphens, no hyphen at either
    end, at most 63 characters, no underscore and no dot (a dot makes the name an FQDN, which Slurm's
    NodeName and most provisioning tools treat differently from the short name). Upper-case letters are
    a warning: DNS is case-insensitive but Slurm compares node names case-sensitively, so ``GPU01`` in
    one file and ``gpu01`` in another are two different nodes to Slurm and one to the resolver. Switch
    names are derived from fabric names, which the schema already restricts to such labels."""
    targets: list[tuple[tuple, str, Iterable[str]]] = [
        (g.path + ("hostnames",), f"node group {g.name}", g.hosts) for g in plan.groups]
    for path, what, names in targets:
        bad, n_bad, upper, n_upper = _bad_names(names)
        if n_bad:
            yield Hit(path, f"{n_bad:,} name(s) of {what} are not valid host names: {_why(bad[0])}"
                            + (f" (also {_examples(bad[1:], n_bad - 1)})" if n_bad > 1 else ""),
                      "use lower-case letters, digits and hyphens, e.g. gpu[0001-0128]")
        if n_upper:
            yield Hit(path, f"{n_upper:,} name(s) of {what} have upper-case letters ({_examples(upper, n_upper)})",
                      "use lower case: Slurm compares node names case-sensitively, DNS does not",
                      Severity.WARNING)


@rule("NAME003", "naming", Severity.ERROR, "host list does not match the group's count")
def count_matches_hostnames(plan: ClusterPlan) -> Iterator[Hit]:
    """A node group's ``hostnames`` must name exactly ``count`` hosts. The plan (racks, power, fabric,
    Slurm) is built from the names, so a mismatch means either the count the user budgeted or the
    host list they will provision is wrong."""
    for g in plan.groups:
        declared = plan.blueprint.node_groups[g.index].count
        if declared != g.count:
            yield Hit(g.path + ("hostnames",),
                      f"node group {g.name} has count: {declared:,} but hostnames "
                      f"'{plan.blueprint.node_groups[g.index].hostnames}' names {g.count:,} host(s)",
                      f"make the host list name {declared:,} hosts or set count: {g.count:,}")


def _dupes(items: Iterable[tuple[tuple, str]], what: str) -> Iterator[Hit]:
    first: dict[str, tuple] = {}
    for path, name in items:
        if name in first:
            yield Hit(path, f"{what} name '{name}' is used twice (first at {_where(first[name])})",
                      f"give each {what} a distinct name")
        else:
            first[name] = path


def _where(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


@rule("NAME004", "naming", Severity.ERROR, "duplicate name")
def unique_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Node groups, fabrics, storage tiers and CDUs are referred to by name (fabric attachments, Slurm
    partitions, rack profiles, generated files), so each name must be unique within its kind; a second
    entry with the same name is silently shadowed. A rack name may appear in only one ``racks[]``
    entry, or the two entries' profiles fight over one rack. (Partition names: SLURM007.)"""
    bp = plan.blueprint
    yield from _dupes(((("node_groups", i, "name"), g.name) for i, g in enumerate(bp.node_groups)), "node group")
    yield from _dupes(((("fabrics", i, "name"), f.name) for i, f in enumerate(bp.fabrics)), "fabric")
    yield from _dupes(((("storage", i, "name"), s.name) for i, s in enumerate(bp.storage)), "storage tier")
    yield from _dupes(((("cooling", "cdus", i, "name"), c.name) for i, c in enumerate(bp.cooling.cdus)), "CDU")
    entry_of: dict[str, int] = {}
    for i, rr in enumerate(bp.racks):
        try:
            names = hostlist.expand(rr.names)
        except hostlist.HostlistError:
            continue
        clashes: dict[int, list[str]] = {}
        seen_here: set[str] = set()
        for n in names:
            if n in seen_here:
                first = i
            else:
                seen_here.add(n)
                first = entry_of.setdefault(n, i)
                if first == i:
                    continue
            clashes.setdefault(first, []).append(n)
        for first, dup in clashes.items():
            where = "itself" if first == i else f"racks[{first}] ({bp.racks[first].names})"
            yield Hit(("racks", i, "names"),
                      f"{len(dup):,} rack name(s) of racks[{i}] ({rr.names}) are already named by {where}: "
                      f"{_examples(dup, len(dup))}",
                      "name every rack once; split the range instead of repeating it")


def _named(plan: ClusterPlan) -> Iterator[tuple[tuple, str, Iterable[str]]]:
    """(blueprint path, what, names) of every expanded name a resolver, Ansible or Slurm reads: the hosts of each
    node group, the switches of each fabric tier, the racks of each racks[] entry."""
    for g in plan.groups:
        yield g.path + ("hostnames",), f"node group {g.name}", g.hosts
    for fi, fname, role, switches in _switch_tiers(plan):
        yield ("fabrics", fi, "name"), f"{role} switches of fabric {fname}", switches
    for i, racks in _racks_per_entry(plan).items():
        yield ("racks", i, "names"), f"racks[{i}]", racks


@rule("NAME005", "naming", Severity.ERROR, "name that is an address or a reserved word", suppressible=False)
def names_not_addresses(plan: ClusterPlan) -> Iterator[Hit]:
    """Host, switch and rack names (as host lists expand them) may not read as an IP address nor be a word the
    resolver, Slurm or Ansible reserves (clusterctl/names.py). ``getaddrinfo`` and ``inet_aton`` read
    ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1`` and ``10.1.2`` as addresses, so ssh, Ansible and
    Slurm connect there without asking DNS, and the MUNGE key and root plays go to whatever the number encodes;
    ``localhost*`` and ``ip6-*`` are loopback names of every ``/etc/hosts``; ``all`` and ``default`` (any case)
    are Slurm keywords and ``all`` and ``ungrouped`` Ansible's implicit groups. Not suppressible: such a name
    hands the cluster to another machine. One finding per host list, with the count and a few examples.
    (Names written out in a host list, and node group, partition, QOS and node type names, are refused the same
    way when the blueprint is read: this rule sees the names ranges make, ``[2130706433-2130706434]``.)"""
    for path, what, names in _named(plan):
        bad = [n for n in names if suspect(n) and why_not_a_name(n)]
        if bad:
            yield Hit(path, f"{len(bad):,} name(s) of {what} cannot be names: {why_not_a_name(bad[0])}"
                            + (f" (also {_examples(bad[1:], len(bad) - 1)})" if len(bad) > 1 else ""), HINT)


_UPPER = re.compile(r"[A-Z]")


def _case_clashes(named: Iterable[tuple[tuple, str, Iterable[str]]], fold, differ: str, hint: str) -> Iterator[Hit]:
    """One finding per (later list, earlier list) pair whose names are distinct spellings of one ``fold``."""
    named = [(path, what, tuple(names)) for path, what, names in named]
    if fold is str.lower and not any(_UPPER.search(n) for _, _, names in named for n in names):
        return  # the common case: all lower case, nothing can differ only in case
    first: dict[str, tuple[str, str]] = {}  # folded -> (spelling, what)
    for path, what, names in named:
        clashes: dict[str, list[str]] = {}
        for n in names:
            seen = first.setdefault(fold(n), (n, what))
            if seen[0] != n:
                clashes.setdefault(seen[1], []).append(f"{n} / {seen[0]}")
        for other, pairs in clashes.items():
            where = "each other" if other == what else other
            yield Hit(path, f"{len(pairs):,} name(s) of {what} differ only in {differ} from names of {where} "
                            f"({_examples(pairs, len(pairs))})", hint)


@rule("NAME006", "naming", Severity.ERROR, "names that differ only in case", suppressible=False)
def names_distinct_in_any_case(plan: ClusterPlan) -> Iterator[Hit]:
    """Names of one namespace may not differ only in case: host and switch names (a login node ``HEAD01``
    listed before ``head01``: glibc resolves ``head01`` from ``/etc/hosts`` to the first line, so slurmctld
    traffic, the ``/home`` mount and chrony follow the impostor), rack names (each becomes the Ansible group
    ``rack_<name>``, where ``-`` and ``.`` become ``_``: ``r-1`` and ``r.1`` are one group, which render
    refuses; a node group named like one is NAME008's), partitions and node types (file names
    ``nccl/<type>.conf``, which overwrite each other on a case-insensitive disk). QOS names are lower case when the blueprint is read (sacctmgr stores them so: ``Urgent``
    would be added again on every converge). Exact repeats are NAME001, NAME004, SLURM007. Not suppressible: the
    second name takes the first's place."""
    yield from _case_clashes(_named_hosts(plan), str.lower, "case",
                             "give each host one lower-case name: DNS and glibc read both spellings as one host")
    yield from _case_clashes(((("racks", i, "names"), f"racks[{i}]", racks)
                              for i, racks in _racks_per_entry(plan).items()),
                             lambda n: ansible_group_name(n).lower(), "case, '-', '.' or '_'",
                             "each rack becomes the Ansible group rack_<name> with '-' and '.' as '_': give the racks "
                             "names that stay distinct, e.g. r01, r02")
    bp = plan.blueprint
    yield from _single_clashes([(("node_types", name), name) for name in bp.node_types], "node type")
    if bp.slurm is not None:
        yield from _single_clashes([(("slurm", "partitions", i, "name"), p.name)
                                    for i, p in enumerate(bp.slurm.partitions)], "partition")


def _single_clashes(items: list[tuple[tuple, str]], what: str) -> Iterator[Hit]:
    first: dict[str, tuple[tuple, str]] = {}
    for path, name in items:
        seen = first.setdefault(name.lower(), (path, name))
        if seen[1] != name:
            yield Hit(path, f"{what} name '{name}' differs only in case from '{seen[1]}' (at {_where(seen[0])})",
                      f"give each {what} a distinct lower-case name")


def _named_hosts(plan: ClusterPlan) -> Iterator[tuple[tuple, str, Iterable[str]]]:
    return (item for item in _named(plan) if item[0][0] != "racks")


def _racks_per_entry(plan: ClusterPlan) -> dict[int, list[str]]:
    per_entry: dict[int, list[str]] = {}
    for r in plan.racks:
        per_entry.setdefault(r.path[1], []).append(r.name)
    return per_entry


_GRANT_HOST = re.compile(r"[A-Za-z0-9.-]+")


@rule("NAME007", "naming", Severity.ERROR, "accounting host name with a MySQL wildcard", suppressible=False)
def accounting_hosts_literal(plan: ClusterPlan) -> Iterator[Hit]:
    """The slurmdbd hosts (``accounting_host``, ``accounting_backup_host``, or the first controller) become the
    host part of the MariaDB account the slurmdbd role creates (``'slurm'@'<host>'``) when a backup slurmdbd
    shares the database. MySQL and MariaDB read ``_`` and ``%`` there as LIKE wildcards: ``'slurm'@'acct_01'``
    also admits ``acctx01``, any machine whose name fits the pattern. So those names are letters, digits,
    ``-`` and ``.`` only (NAME002 says the same of every host name, but can be suppressed; this cannot)."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    primary = slurm_roles(plan).primary_accounting
    if primary is None:
        return  # SLURM002 reports the controllers
    for key, name in (("accounting_host", primary),
                      ("accounting_backup_host", slurm.accounting_backup_host)):
        if name is not None and not _GRANT_HOST.fullmatch(name):
            path = ("slurm", key if getattr(slurm, key) is not None else "controllers")
            yield Hit(path, f"slurmdbd host {name} has a character MariaDB reads as a wildcard in the account "
                            f"'slurm'@'{name}' ('_' is any one character, '%' any string)",
                      "name the slurmdbd hosts with letters, digits and '-' only")


@rule("NAME008", "naming", Severity.ERROR, "node group named like another Ansible inventory group",
      suppressible=False)
def inventory_group_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Every node group becomes the Ansible inventory group of its name, next to the groups the render adds: one
    per node role with nodes (a node group may share only its own role's name, like ``head`` of role head), the
    Slurm groups (slurm_controllers, slurm_accounting, slurm_cluster), nfs_servers, gpu_nodes, ``rack_<rack>``,
    ``su_<fabric>_<n>`` and ``nvlink_<group>_<n>``. Ansible keeps one group per name, so a node group named like
    one of them would take its hosts and variables: the ansible target refuses it, and this reports it first
    (:func:`clusterctl.plan.inventory_groups.group_name_clashes`, which both ask)."""
    for g, what in group_name_clashes(plan):
        yield Hit(g.path + ("name",), f"node group {g.name} has the name of the Ansible group of {what}",
                  "rename the node group")


@rule("NAME009", "naming", Severity.ERROR, "planned DNS name that is no label or names two addresses",
      suppressible=False)
def dns_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Every planned address gets a DNS name (docs/network.md, "Names": ``gpu01``, ``gpu01-bmc``, ``gpu01-ib0``,
    ``gpu01-rail0``, ``gpu01-stor0``, switch names, ``<switch>-lo``, ``<rack>-pdu<k>``, CDU names), written into
    the zone files the head nodes serve. A name that is no RFC 1035 label (a 60-character host name plus ``-bmc``;
    a rack's or CDU's '.' and '_' are written as '-') cannot be written, and one name for two addresses (a host
    named ``gpu01-bmc`` next to gpu01's BMC; compared ignoring case, as DNS does) would answer for the wrong
    device. The dns target refuses the same (:func:`clusterctl.plan.site_records.name_refusals`, which both ask)."""
    for refusal in name_refusals(plan):
        if not refusal.host_name_invalid:  # a host name that is itself no label is NAME002's finding, once
            yield Hit(refusal.path, refusal.message, refusal.hint)
