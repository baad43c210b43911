"""Where the files shipped beside the package live: in a checkout, the repository's top-level folders;
in an installed wheel, ``clusterctl/_data/`` (see pyproject's force-include)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """``templates``, ``roles`` or ``blueprints``."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def shipped_blueprints() -> dict[str, Path]:
    return {p.stem: p for p in sorted(data_dir("blueprints").glob("*.yaml"))}
