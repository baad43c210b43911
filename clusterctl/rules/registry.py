"""Which rules exist, and running them.

Every rule module is imported here by name and listed in :data:`RULE_MODULES`; :func:`all_rules` collects
the functions those modules decorate with :func:`clusterctl.rules.base.rule`. A new rule module must be added
to both (tests/test_meta.py fails when a module in this package defines rules and is not listed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from clusterctl.blueprint.load import did_you_mean
from clusterctl.catalog.overrides import overrides
from clusterctl.errors import LoadCode
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules import (addressing, cloud, cooling, fabric, ha, infiniband, inventory, kubernetes, monitoring, naming,
                              network, nvlink, power, site_services, slurm, software, space, storage, underlay, users, workload)
from clusterctl.rules import scheduler, weka
from clusterctl.rules.base import Finding, Hit, Rule, RunResult, Severity
from clusterctl.rules.suppression import Policy

RULE_MODULES = (power, cooling, space, fabric, infiniband, underlay, nvlink, network, storage, addressing, naming, slurm,
                software, cloud, workload, inventory, site_services, kubernetes, monitoring, users, scheduler, weka, ha)


def all_rules() -> tuple[Rule, ...]:
    found = []
    for mod in RULE_MODULES:
        for obj in vars(mod).values():
            r = getattr(obj, "__rule__", None)
            if isinstance(r, Rule) and r.func is obj:
                found.append(r)
    return tuple(sorted(found, key=lambda r: r.code))


def run_rules(plan: ClusterPlan, suppress: dict[str, str] | None = None,
              rules: Iterable[Rule] | None = None) -> RunResult:
    """Run every rule; ``suppress`` maps rule codes to the reason (CLI ones get "--suppress").

    Suppressions follow :mod:`clusterctl.rules.suppression`: the blueprint's entries suppress warnings and
    infos, ``suppress`` any finding, and neither a rule declared ``suppressible=False``."""
    rules = tuple(rules) if rules is not None else all_rules()
    known = {r.code for r in rules}
    entries = plan.blueprint.validation.suppress
    unknown = [(("validation", "suppress", i, "rule"), s.rule) for i, s in enumerate(entries) if s.rule not in known]
    policy = Policy.of(entries, suppress, rules)
    findings: list[Finding] = []
    for r in rules:
        for hit in _safely(r, plan):
            severity = hit.severity if hit.severity is not None else r.severity
            kept = policy.kept_hint(r.code, severity)
            hint = f"{hit.hint}; {kept}" if hit.hint and kept else hit.hint or kept
            findings.append(Finding(r.code, severity, hit.path, hit.message, hint, r.title,
                                    policy.reason(r.code, severity), hit.subject, hit.summary))
    findings.extend(policy.notes())
    for o in overrides(plan.catalog):
        findings.append(Finding(LoadCode.CATALOG_OVERRIDE, Severity.INFO, o.path, o.message(),
                                "a reviewer should check the new values against the hardware; give the entry a "
                                "name of its own to add a model instead", LoadCode.CATALOG_OVERRIDE.title))
    for path, code in unknown:
        findings.append(Finding(LoadCode.UNKNOWN_SUPPRESSION, Severity.WARNING, path,
                                f"suppression names unknown rule '{code}'",
                                did_you_mean(code, known) or "see `clusterctl rules list`",
                                LoadCode.UNKNOWN_SUPPRESSION.title))
    return RunResult(tuple(findings), len(rules), tuple(unknown))


def _safely(r: Rule, plan: ClusterPlan) -> Iterator[Hit]:
    try:
        yield from list(r.func(plan) or ())
    except Exception as exc:  # a rule must never take validate down; report the bug instead
        yield Hit((), f"rule {r.code} crashed ({type(exc).__name__}: {exc}); this is a bug in clusterctl",
                  "report it with the blueprint" + (f"; --suppress {r.code} on the command line carries on"
                                                    if r.suppressible else ""), Severity.ERROR)
