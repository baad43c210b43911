"""What a rule is, what it yields, and how rules are run.

A rule is a small function of the plan, decorated with :func:`rule`, that yields :class:`Hit` s. The
decorator only attaches metadata (no registry is mutated at import); :func:`all_rules` collects the
decorated functions of the rule modules. The runner turns hits into :class:`Finding` s with the rule's
code and severity, applies suppressions, and turns a crashing rule into an error finding naming it.
"""

from __future__ import annotations

import enum
import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from clusterctl.errors import LoadCode
from clusterctl.plan.model import ClusterPlan

RULE_MODULES = ("power", "cooling", "space", "fabric", "nvlink", "storage", "addressing", "naming", "slurm",
                "software", "cloud", "workload")


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        return cls[text.upper()]


@dataclass(frozen=True, slots=True)
class Hit:
    """What a rule yields: where, what (with the numbers), and how to fix it."""

    path: tuple
    message: str
    hint: str = ""
    severity: Severity | None = None
    """overrides the rule's default severity (e.g. a warning threshold below an error threshold)"""
    subject: tuple[str, str] | None = None
    """(kind, name) of what the hit is about when a rule repeats it per rack or host, e.g. ("rack", "c01"):
    text output groups the hits of one rule at one location into one block over a host list"""
    summary: str = ""
    """the figures of the hit without its subject ("41.1 kW of 38.0 kW"), for that grouped line"""


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    path: tuple
    message: str
    hint: str = ""
    title: str = ""
    suppressed: str | None = None
    """the reason, when suppressed"""
    subject: tuple[str, str] | None = None
    """as :attr:`Hit.subject`"""
    summary: str = ""


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    area: str
    severity: Severity
    title: str
    func: Callable[[ClusterPlan], Iterable[Hit]]

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")


def rule(code: str, area: str, severity: Severity, title: str):
    """Mark ``func`` as rule ``code``. The docstring says what is checked and why."""

    def mark(func):
        func.__rule__ = Rule(code, area, severity, title, func)
        return func

    return mark


def all_rules() -> tuple[Rule, ...]:
    found = []
    for name in RULE_MODULES:
        mod = importlib.import_module(f"clusterctl.rules.{name}")
        for obj in vars(mod).values():
            r = getattr(obj, "__rule__", None)
            if isinstance(r, Rule) and r.func is obj:
                found.append(r)
    return tuple(sorted(found, key=lambda r: r.code))


@dataclass(frozen=True)
class RunResult:
    findings: tuple[Finding, ...]
    rules_run: int
    unknown_suppressions: tuple[tuple[tuple, str], ...] = field(default=())

    def active(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.suppressed is None)

    def worst(self) -> Severity | None:
        act = self.active()
        return max((f.severity for f in act), default=None)


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
                                    hit.message, hit.hint, r.title, reasons.get(r.code), hit.subject, hit.summary))
    for path, code in unknown:
        from clusterctl.blueprint.load import did_you_mean
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
