"""What a blueprint's catalog entries change in the shipped catalog.

A blueprint's ``catalog:`` entry with the name of a shipped entry replaces it for that blueprint (a site's
own firmware limits, a vendor's variant). That is allowed, but a reviewer must see it: ``h100-sxm`` with
``tdp_w: 1`` makes the power rules pass. The rule runner turns each override into a ``META003`` info at
the blueprint's entry, listing the fields that differ with their old and new values.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.catalog import Catalog

MAX_CHANGES = 8
"""fields listed in one notice; the rest are counted"""
MAX_VALUE = 60
"""characters of one old or new value shown"""


@dataclass(frozen=True, slots=True)
class Override:
    section: str
    name: str
    changes: tuple[tuple[str, object, object], ...]
    """(dotted field, shipped value, blueprint value), in field order"""

    @property
    def path(self) -> tuple:
        """The blueprint's entry, at its first changed field."""
        first = tuple(self.changes[0][0].split(".")) if self.changes else ()
        return ("catalog", self.section, self.name) + first

    def message(self) -> str:
        shown = ", ".join(f"{f} {_short(old)} → {_short(new)}" for f, old, new in self.changes[:MAX_CHANGES])
        more = len(self.changes) - MAX_CHANGES
        return (f"catalog entry {self.section}.{self.name} replaces the shipped entry of that name: {shown}"
                + (f" (+{more} more field(s))" if more > 0 else ""))


def overrides(catalog: Catalog) -> list[Override]:
    """Every shipped entry a blueprint entry replaced with different values, with what differs."""
    out = []
    for (section, name), shipped in sorted(catalog.replaced.items()):
        mine = catalog.section(section)[name]
        old = shipped.model_dump(mode="json")
        new = mine.model_dump(mode="json")
        changes = tuple(_diff(old, new, ""))
        if changes:  # a copy with the shipped values changes nothing
            out.append(Override(section, name, changes))
    return out


def _diff(old: object, new: object, prefix: str):
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            yield from _diff(old.get(key), new.get(key), f"{prefix}.{key}" if prefix else str(key))
    elif old != new:
        yield prefix, old, new


def _short(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = "(none)" if value is None else str(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."
