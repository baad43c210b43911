"""``python -m clusterctl.report.published``: print the calibration and validation tables (docs/report.md)."""

from clusterctl.report.published.tables import markdown

print(markdown(), end="")
