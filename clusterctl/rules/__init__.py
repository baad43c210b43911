"""Validation rules, one module per concern. See :mod:`clusterctl.rules.base` for the framework and
:mod:`clusterctl.rules.registry` for the list of rule modules and the runner."""

from clusterctl.rules.base import Finding, Hit, Rule, RunResult, Severity, rule
from clusterctl.rules.registry import all_rules, run_rules

__all__ = ["Finding", "Hit", "Rule", "RunResult", "Severity", "all_rules", "rule", "run_rules"]
