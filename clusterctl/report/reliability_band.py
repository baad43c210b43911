"""The reliability band: low, central and high interruption rates from several published failure logs.

``failure_rates.yaml`` names the logs (``logs``: source, era, GPU generation, size, window, evidence tag and
the rate per 1,000 GPU-days) and which of them sets each point of the band (``band``). The central point is
the per-component model of :mod:`clusterctl.report.reliability` (Llama 3's counts per root cause). Neither
bound's log publishes counts per component class, so at the low and high points every per-component rate is
the central one times ``scale`` = (bound log's rate) / (central log's rate): the class mix stays Llama 3's.
``class_logs`` are rates for one component class from logs that separate it; the report shows them beside
the band's per-class rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

RATES_FILE = Path(__file__).with_name("failure_rates.yaml")
POINTS = ("low", "central", "high")
LOG_USES = ("band", "excluded")
CLASS_LOG_KINDS = ("interruptions", "events")


@dataclass(frozen=True)
class PublishedLog:
    key: str
    name: str
    operator: str
    era: str
    gpu: str
    gpus: int
    days: int | None
    counted: str
    per_1000_gpu_days: float
    per_1000_gpu_days_upper: float | None
    """the top of the log's range when it gives one (BLOOM: 1-2 failures a week)"""
    use: str
    """``band`` (shown against the band) or ``excluded`` (listed, with ``excluded_why``)"""
    excluded_why: str | None
    source: str
    derivation: str

    @property
    def evidence(self) -> str:
        """the evidence tag of the source: P, Q or S"""
        return self.source[1]


@dataclass(frozen=True)
class BandPoint:
    point: str
    """low, central or high"""
    log: PublishedLog
    why: str
    scale: float
    """this point's rate over the central log's: every per-component rate is multiplied by it"""


@dataclass(frozen=True)
class ClassLog:
    key: str
    category: str
    per: str
    kind: str
    log: str
    per_1000_component_days: float
    per_1000_component_days_upper: float | None
    source: str
    derivation: str


@dataclass(frozen=True)
class Band:
    points: tuple[BandPoint, ...]
    logs: tuple[PublishedLog, ...]
    class_logs: tuple[ClassLog, ...]
    not_separated: tuple[str, ...]

    def point(self, name: str) -> BandPoint:
        return next(p for p in self.points if p.point == name)


def _log(key: str, r: dict[str, Any]) -> PublishedLog:
    if r["use"] not in LOG_USES:
        raise ValueError(f"log {key}: use={r['use']!r}, expected one of {LOG_USES}")
    upper = r.get("per_1000_gpu_days_upper")
    return PublishedLog(key, r["name"], r["operator"], str(r["era"]), r["gpu"], int(r["gpus"]), r.get("days"),
                        r["counted"], float(r["per_1000_gpu_days"]), None if upper is None else float(upper),
                        r["use"], r.get("excluded_why"), r["source"], r["derivation"])


def _class_log(key: str, r: dict[str, Any]) -> ClassLog:
    if r["kind"] not in CLASS_LOG_KINDS:
        raise ValueError(f"class log {key}: kind={r['kind']!r}, expected one of {CLASS_LOG_KINDS}")
    upper = r.get("per_1000_component_days_upper")
    return ClassLog(key, r["class"], r["per"], r["kind"], r["log"], float(r["per_1000_component_days"]),
                    None if upper is None else float(upper), r["source"], r["derivation"])


@lru_cache(maxsize=4)
def load_band(path: Path = RATES_FILE) -> Band:
    """The band's logs and points from the failure-rate file (cached)."""
    raw = yaml.safe_load(Path(path).read_text())
    logs = {key: _log(key, r) for key, r in raw["logs"].items()}
    central = logs[raw["band"]["central"]["log"]]
    points = []
    for name in POINTS:
        b = raw["band"][name]
        log = logs[b["log"]]
        if log.use != "band":
            raise ValueError(f"{path}: band.{name} names log {log.key}, which is excluded")
        points.append(BandPoint(name, log, b["why"], log.per_1000_gpu_days / central.per_1000_gpu_days))
    rates = [p.log.per_1000_gpu_days for p in points]
    if rates != sorted(rates):
        raise ValueError(f"{path}: band points are not low <= central <= high: {rates}")
    class_logs = tuple(_class_log(key, r) for key, r in raw["class_logs"].items())
    return Band(tuple(points), tuple(logs.values()), class_logs, tuple(raw["not_separated"]))


def position(log: PublishedLog, band: Band) -> str:
    """Where a log's rate (or its range) lies against the band: a bound it sets, inside, below or above."""
    for p in band.points:
        if p.log.key == log.key:
            return f"sets {p.point}"
    low, high = band.point("low").log.per_1000_gpu_days, band.point("high").log.per_1000_gpu_days
    top = log.per_1000_gpu_days_upper or log.per_1000_gpu_days
    if log.per_1000_gpu_days < low:
        return "below"
    if top > high:
        return "above"
    return "inside"


def rate_text(per_1000: float, upper: float | None) -> str:
    """0.372-0.744 for a range, else the figure (three significant digits)."""
    return f"{per_1000:.3g}-{upper:.3g}" if upper is not None else f"{per_1000:.3g}"


def basis(band: Band) -> str:
    """One sentence per point: which log sets it, and how the per-class rates follow."""
    parts = [f"{p.point} = {p.log.name} ({p.log.operator}, {p.log.gpu}, {p.log.era}), "
             f"{p.log.per_1000_gpu_days:.3g} per 1,000 GPU-days [{p.log.evidence}]" for p in band.points]
    return ("; ".join(parts) + ". The central point is the per-component model; neither bound's log publishes "
            "counts per component class, so at low and high every per-component rate is the central one scaled "
            "by the ratio of the overall rates.")
