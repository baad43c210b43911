"""Which rules exist, and running them.

Every rule module is imported here by name and listed in :data:`RULE_MODULES`; :func:`all_rules` collects
the functions those modules decorate with :func:`clusterctl.rules.base.rule`. A new rule module must be added
to both (tests/test_meta.py fails when a module in this package defines rules and is not listed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from clusterctl.blueprint.load import did_you_mean
from clusterctl.errors import LoadCode
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules import (addressing, cloud, cooling, fabric, naming, nvlink, power, slurm, software, space,
                              storage, workload)
from clusterctl.rules.base import Finding, Hit, Rule, RunResult, Severity

RULE_MODULES = (power, cooling, space, fabric, nvlink, storage, addressing, naming, slurm, software, cloud, workload)


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
    """Run every rule; ``suppress`` maps rule codes to the reason (CLI ones get "--suppress")."""
    rules = tuple(rules) if rules is not None else all_rules()
    known = {r.code for r in rules}
    reasons = {}
    unknown = []
    for i, s in enumerate(plan.blueprint.validation.suppress):
        if s.rule in known:
            reasons[s.rule] = s.reason
        else:
            unknown.append((("validation", "suppress", i, "rule"), s.rule))
    for code, reason in (suppress or {}).items():
        reasons[code] = reason
    findings: list[Finding] = []
    for r in rules:
        for hit in _safely(r, plan):
            findings.append(Finding(r.code, hit.severity if hit.severity is not None else r.severity, hit.path,
                                    hit.message, hit.hint, r.title, reasons.get(r.code) if r.suppressible else None,
                                    hit.subject, hit.summary))
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
                  "report it with the blueprint; suppress the rule to carry on", Severity.ERROR)
