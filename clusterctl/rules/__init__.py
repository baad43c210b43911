"""Validation rules, one module per concern. See :mod:`clusterctl.rules.base` for the framework."""

from clusterctl.rules.base import Finding, Hit, Rule, RunResult, Severity, all_rules, rule, run_rules

__all__ = ["Finding", "Hit", "Rule", "RunResult", "Severity", "all_rules", "rule", "run_rules"]
