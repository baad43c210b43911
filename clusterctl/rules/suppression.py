"""Who may suppress what: the policy the rule runner applies to suppressions.

A blueprint is a file a half-trusted pull request can change, so its ``validation.suppress`` may switch off
a rule's *warnings and infos* only. The decision is per finding, because one rule can yield hits of
several severities (POWER004 warns at 95 % and errs over 100 %): a blueprint entry suppresses the
rule's warnings and infos, never its errors. An error finding is suppressed only by ``--suppress CODE``
on the command line, by whoever runs clusterctl, and every output prints it (docs/cli.md, "Suppression").
A rule declared ``suppressible=False`` (:attr:`clusterctl.rules.base.Rule.suppressible`) is suppressed by
nothing: a blueprint entry naming it is a located error (exit 2), and so is ``--suppress`` of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterctl.errors import LoadCode, Problem
from clusterctl.rules.base import Finding, Rule, Severity

CLI_REASON = "--suppress"
"""the reason recorded for a command-line suppression (SARIF reports it as an ``external`` suppression)"""


def unsuppressible_entries(entries: Sequence, rules: Iterable[Rule]) -> list[Problem]:
    """A located problem for every blueprint suppression entry that names a rule nothing may suppress."""
    locked = {r.code: r for r in rules if not r.suppressible}
    return [Problem(("validation", "suppress", i, "rule"),
                    f"validation.suppress[{i}] names {s.rule} ({locked[s.rule].title}), a rule that cannot be "
                    f"suppressed: ignoring it would hand over the cluster",
                    hint=f"remove the entry and fix what {s.rule} reports (clusterctl rules explain {s.rule})",
                    code=LoadCode.SCHEMA)
            for i, s in enumerate(entries) if s.rule in locked]


def cli_refusal(code: str, rules: Iterable[Rule]) -> str | None:
    """Why ``--suppress code`` is refused, or None when it may be suppressed."""
    for r in rules:
        if r.code == code and not r.suppressible:
            return f"--suppress {code}: rule {code} ({r.title}) cannot be suppressed"
    return None


@dataclass
class Policy:
    """The suppressions of one run, decided per finding."""

    blueprint: dict[str, tuple[int, str]]
    """rule code -> (index of its ``validation.suppress`` entry, reason)"""
    cli: dict[str, str]
    """rule code -> reason, from the command line"""
    locked: frozenset[str]
    """codes of rules that cannot be suppressed"""
    errors_kept: dict[str, int] = field(default_factory=dict)
    """rule code -> error findings a blueprint entry named but could not suppress"""

    @classmethod
    def of(cls, entries: Sequence, cli: dict[str, str] | None, rules: Iterable[Rule]) -> "Policy":
        rules = tuple(rules)
        known = {r.code for r in rules}
        blueprint: dict[str, tuple[int, str]] = {}
        for i, s in enumerate(entries):
            if s.rule in known:
                blueprint.setdefault(s.rule, (i, s.reason))
        return cls(blueprint, dict(cli or {}), frozenset(r.code for r in rules if not r.suppressible))

    def reason(self, code: str, severity: Severity) -> str | None:
        """The reason a finding of rule ``code`` at ``severity`` is suppressed, or None when it is active."""
        if code in self.locked:
            return None
        if code in self.cli:
            return self.cli[code]
        if code in self.blueprint:
            if severity < Severity.ERROR:
                return self.blueprint[code][1]
            self.errors_kept[code] = self.errors_kept.get(code, 0) + 1
        return None

    def kept_hint(self, code: str, severity: Severity) -> str:
        """What an active error finding's hint adds when a blueprint entry names its rule."""
        if severity >= Severity.ERROR and code in self.blueprint and code not in self.cli and code not in self.locked:
            i = self.blueprint[code][0]
            return (f"validation.suppress[{i}] does not apply to errors; suppress an error on the command line "
                    f"with --suppress {code}")
        return ""

    def notes(self) -> list[Finding]:
        """A warning at each blueprint entry that named errors it could not suppress."""
        out = []
        for code, n in sorted(self.errors_kept.items()):
            i = self.blueprint[code][0]
            out.append(Finding(LoadCode.ERROR_SUPPRESSION, Severity.WARNING, ("validation", "suppress", i, "rule"),
                               f"validation.suppress[{i}] names {code}, whose {n} error finding(s) it does not "
                               f"suppress: errors can be suppressed only on the command line with --suppress",
                               f"fix what {code} reports, or run clusterctl with --suppress {code} where you "
                               f"decide it; the entry still suppresses {code}'s warnings and infos",
                               LoadCode.ERROR_SUPPRESSION.title))
        return out
