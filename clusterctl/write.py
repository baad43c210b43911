"""One writer for all targets: render into a temporary directory, then swap it into place.

- A failed or interrupted render leaves the previous output as it was (the new tree is complete before
  the swap; the swap is two renames).
- Files whose bytes did not change keep their bytes *and* timestamps (they are hard-linked or copied with
  their metadata from the previous output), so ``make``-style tools and Ansible see no change.
- ``check`` compares without writing and reports drift: changed, missing and extra files.
- The output directory is owned by clusterctl: a manifest (``.clusterctl-manifest``) lists what was
  rendered. A non-empty directory without a manifest is refused, so a typo'd ``-o`` cannot replace a
  directory of someone else's files.
- Files clusterctl did not render (a Pulumi venv and stack file, ``outputs.json``, a vault file next to
  the playbook) are carried over into the new tree before the swap: a re-render never deletes them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = ".clusterctl-manifest"


class OutputDirError(Exception):
    """The output directory cannot be used (not ours, not writable)."""


@dataclass
class WriteResult:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def _bytes(content: str | bytes) -> bytes:
    """File content as bytes: text is UTF-8; pictures (PNG) come as bytes."""
    return content if isinstance(content, bytes) else content.encode()


def _manifest_text(files: dict[str, str | bytes]) -> str:
    lines = ["# files rendered by clusterctl into this directory: path sha256"]
    for path, text in sorted(files.items()):
        lines.append(f"{path} {hashlib.sha256(_bytes(text)).hexdigest()}")
    return "\n".join(lines) + "\n"


def _previous(out: Path) -> set[str] | None:
    """Paths the previous render wrote, or None when ``out`` is not a clusterctl output directory."""
    manifest = out / MANIFEST
    if not manifest.is_file():
        return None
    paths = set()
    for line in manifest.read_text().splitlines():
        if line and not line.startswith("#"):
            paths.add(line.rsplit(" ", 1)[0])
    return paths


def _safe(path: str) -> str:
    p = Path(path)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"target produced an unsafe path: {path!r}")
    return p.as_posix()


def _carry_unmanaged(old: Path, new: Path, managed: set[str]) -> None:
    """Move what clusterctl does not manage from ``old`` into ``new`` (whole subtrees where possible)."""
    prefixes = {p.rsplit("/", i)[0] for p in managed for i in range(1, p.count("/") + 1)}

    def visit(rel: str) -> None:
        src = old / rel if rel else old
        for entry in sorted(src.iterdir()):
            r = f"{rel}/{entry.name}" if rel else entry.name
            if r == MANIFEST or r in managed:
                continue
            if entry.is_dir() and not entry.is_symlink() and r in prefixes:
                visit(r)  # holds rendered files: look inside
            elif not (new / r).exists():
                (new / r).parent.mkdir(parents=True, exist_ok=True)
                entry.rename(new / r)

    visit("")


def compare(files: dict[str, str | bytes], out: Path) -> WriteResult:
    result = WriteResult()
    previous = _previous(out) or set()
    for path, text in sorted(files.items()):
        target = out / _safe(path)
        if not target.is_file():
            result.added.append(path)
        elif target.read_bytes() != _bytes(text):
            result.changed.append(path)
        else:
            result.unchanged.append(path)
    result.removed = sorted(previous - set(files))
    return result


def write_tree(files: dict[str, str | bytes], out: Path, *, executable: set[str] | None = None) -> WriteResult:
    """Write ``files`` under ``out`` atomically (see module doc). Returns what changed."""
    out = Path(out)
    executable = executable or set()
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and _previous(out) is None:
        raise OutputDirError(f"{out} is not empty and was not rendered by clusterctl (no {MANIFEST})")
    result = compare(files, out)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.render-", dir=parent))
    try:
        unchanged = set(result.unchanged)
        for path, text in files.items():
            dest = tmp / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            if path in unchanged:
                shutil.copy2(out / path, dest)  # same bytes, same timestamps
            else:
                dest.write_bytes(_bytes(text))
                if path in executable:
                    dest.chmod(0o755)
        (tmp / MANIFEST).write_text(_manifest_text(files))
        if out.is_dir():
            _carry_unmanaged(out, tmp, (_previous(out) or set()) | set(files))
        # mkdtemp makes 0700 directories; give the tree ordinary permissions
        for root, dirs, _ in os.walk(tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        tmp.chmod(0o755)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
            old.rmdir()
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result
