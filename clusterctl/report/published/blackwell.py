"""Published rows: blackwell (see clusterctl/report/published/__init__.py for what a row and a family are)."""

from __future__ import annotations

from clusterctl.report.published import Family, Row

FAMILIES: list[Family] = []
ROWS: list[Row] = []
