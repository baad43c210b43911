"""``python -m clusterctl.perf.published``: print the calibration and validation tables (docs/report.md)."""

from clusterctl.perf.published.tables import markdown

print(markdown(), end="")
