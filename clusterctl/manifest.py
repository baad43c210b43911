"""The record of what clusterctl wrote into an output directory: ``.clusterctl-manifest``, one ``path sha256``
line per file (docs/render-layout.md, "How the writer changes the directory").

The manifest is what makes a file *ours*, and it is read from disk, so it is not trusted: an entry counts only
when its path is a normalised relative path strictly inside the directory (no ``..``, no ``.``, not absolute,
none of the writer's own names) followed by a 64-hex-digit sha256. Any other line is ignored and reported
with its line number. Even a valid entry only says which bytes clusterctl wrote there: the writer removes or
replaces the file only while it still holds exactly those bytes (``clusterctl.write``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

MANIFEST = ".clusterctl-manifest"
LOCK = ".clusterctl-lock"
JOURNAL = ".clusterctl-journal"
STAGED = ".clusterctl-new"
"""suffix of the temporary file a changed file is written to, beside its destination"""
PART = ".part"
"""suffix of the manifest or journal being written, before it is renamed into place"""
RESERVED = frozenset({MANIFEST, LOCK, JOURNAL, MANIFEST + PART, JOURNAL + PART})
"""names the writer itself keeps in the output directory"""

_HEADER = "# files rendered by clusterctl into this directory: path sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def safe_path(path: str) -> str:
    """``path`` if it names a file strictly inside the output directory that is not one of the writer's own."""
    parts = path.split("/") if isinstance(path, str) else []
    if (not parts or path.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 32 or c == "\x7f" for c in path)
            or any(p in RESERVED or p.endswith(STAGED) for p in parts)):
        raise ValueError(f"target produced an unsafe path: {path!r}")
    return path


def digest(data: bytes) -> str:
    """The sha256 the manifest records for a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def manifest_text(hashes: dict[str, str]) -> str:
    """The manifest listing ``hashes`` (path -> sha256), sorted, so equal renders give equal bytes."""
    lines = [_HEADER] + [f"{path} {sha}" for path, sha in sorted(hashes.items())]
    return "\n".join(lines) + "\n"


@dataclass
class Manifest:
    """A manifest as read: the entries that count, and one message per line that was ignored."""

    hashes: dict[str, str]
    """path -> sha256 of the bytes clusterctl wrote there"""
    text: str
    ignored: list[str] = field(default_factory=list)
    """``N: ignored: why`` for each line that is not a valid entry (N is the line number)"""


def parse_manifest(text: str) -> Manifest:
    """Read a manifest's text. A line without a sha256 (hand-written, or from no clusterctl) names no file of
    ours: the writer then neither deletes that file nor overwrites it unless it already holds the rendered
    bytes, exactly as for a file the manifest does not list."""
    hashes: dict[str, str] = {}
    ignored: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        path, _, sha = line.rpartition(" ")
        if not _SHA256.fullmatch(sha):
            path, sha = line, ""
        try:
            safe_path(path)
        except ValueError:
            ignored.append(f"{number}: ignored: {path!r} is not a path inside the directory")
            continue
        if not sha:
            ignored.append(f"{number}: ignored: {line!r} has no sha256 after the path (a file clusterctl did "
                           f"not write: never deleted or overwritten)")
            continue
        hashes[path] = sha
    return Manifest(hashes, text, ignored)
