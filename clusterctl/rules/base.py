"""What a rule is, what it yields, and what running the rules gives.

A rule is a small function of the plan, decorated with :func:`rule`, that yields :class:`Hit` s. The
decorator only attaches metadata (no registry is mutated at import);
:func:`clusterctl.rules.registry.all_rules` collects the decorated functions of the rule modules it imports.
Its runner, :func:`clusterctl.rules.registry.run_rules`, turns hits into :class:`Finding` s with the rule's
code and severity, applies suppressions, and turns a crashing rule into an error finding naming it.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from clusterctl.plan.model import ClusterPlan, RackPlan


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



def profiled_racks(plan: ClusterPlan) -> Iterator[tuple[RackPlan, object]]:
    """Each rack with its blueprint profile, for the rules that judge a rack against its profile's budgets; a
    rack whose profile did not resolve is left out (expansion reported the broken reference)."""
    for rack in plan.racks:
        prof = plan.rack_profile(rack)
        if prof is not None:
            yield rack, prof


def rack_budget_hit(rack: RackPlan, field_name: str, message: str, hint: str, summary: str) -> Hit:
    """A rack over its profile's ``field_name`` budget: located at that field of the profile, grouped per rack
    in text output."""
    return Hit(rack.profile_path + (field_name,), message, hint, subject=("rack", rack.name), summary=summary)

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
    suppressible: bool = True
    """False for rules whose findings hand over the cluster when ignored (a host name that is an address):
    neither a blueprint nor ``--suppress`` can switch them off"""

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")


def rule(code: str, area: str, severity: Severity, title: str, *, suppressible: bool = True):
    """Mark ``func`` as rule ``code``. The docstring says what is checked and why."""

    def mark(func):
        func.__rule__ = Rule(code, area, severity, title, func, suppressible)
        return func

    return mark


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
