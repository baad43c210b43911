"""The three files a design question writes (``clusterctl compare``, ``clusterctl whatif``): Markdown that shows
the picture, the JSON, and the SVG, atomically with the writer ``render`` uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_forms(stem: str, data: dict[str, Any], markdown: str, svg: str, out_dir: Path) -> list[str]:
    """``<stem>.md``, ``<stem>.json`` and ``<stem>.svg`` into ``out_dir``; the file names."""
    from clusterctl.output import finite_json
    from clusterctl.write import write_tree

    files = {f"{stem}.md": markdown.encode(),
             f"{stem}.json": (finite_json.dumps(data, indent=2, sort_keys=False) + "\n").encode(),
             f"{stem}.svg": svg.encode()}
    write_tree(files, out_dir)
    return sorted(files)
