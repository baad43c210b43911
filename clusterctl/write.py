"""One writer for every command that writes files (render, report, inventory).

The output directory stays where it is; only the files a render owns are replaced, each atomically, under a
lock and a journal, so that no file clusterctl did not write is ever moved or deleted, even for a moment.

Protocol (docs/render-layout.md, "How the writer changes the directory"):

1. **Lock.** ``DIR/.clusterctl-lock`` is ``flock``-ed exclusively for the whole write (shared for
   ``--check``). The lock file lives inside ``DIR`` because ``DIR`` is never replaced, so every path that
   reaches the directory (a symlink, a relative path) locks the same file; the holder unlinks it before
   releasing it, so no lock file remains after a write. A second writer waits up to
   ``CLUSTERCTL_LOCK_TIMEOUT`` seconds (default 10) and then fails with the holder's pid (exit 2).
2. **Recover.** A journal left by an interrupted writer is completed first: rolled back if it was still
   staging, rolled forward if it had committed (see 4).
3. **Stage.** The journal (state ``staging``: the new manifest, the files to install, remove and chmod, the
   directories it will create) is written first; then each new or changed file goes to a temporary file
   ``.<name>.clusterctl-new`` beside its destination, written and chmod-ed, then all flushed. Nothing visible has
   changed yet; an interruption here is rolled back (temporary files and created empty directories removed).
4. **Commit and apply.** The journal is replaced by one in state ``apply`` (the commit point), then each
   temporary file is renamed over its destination, executable bits are fixed, files the previous render
   wrote and this one does not are deleted, the new manifest is renamed into place and the journal removed.
   SIGINT/SIGTERM/SIGHUP are held back during this step; after a SIGKILL the next writer rolls it forward.
   The journal records the sha256 of every file it replaces or deletes, and applying it checks it again, so
   a journal read back from disk cannot delete or overwrite a file that does not hold the recorded bytes.

So, once the journal is resolved, the directory holds the complete old or the complete new render (exactly
what ``.clusterctl-manifest`` lists) plus every file clusterctl did not write. A reader that does not take
the lock can see a mix of old and new files while a render is applying (milliseconds) or after a SIGKILL
until the next render; ``--check`` reports such a directory as interrupted.

Other rules:

- Files whose bytes did not change are not touched (same bytes, same timestamps).
- A non-empty directory without a manifest is refused, so a typo'd ``-o`` cannot write into someone else's
  files; a path the render would write that exists but was not written by clusterctl is refused too.
- The manifest (``clusterctl.manifest``) is read from disk and not trusted: a file it lists is replaced or
  deleted only if it is a regular file that still holds the bytes whose sha256 it records. A rendered file
  changed since is never overwritten (the write is refused, exit 2) and, when no longer rendered, is left in
  place with a warning and dropped from the manifest; a listed directory, link or special file is never
  removed; lines that do not name a normalised path inside ``DIR`` with a sha256 are ignored with a warning.
- No symbolic link below ``DIR`` is followed when writing, deleting or changing modes, even one swapped in
  after a check: every path is resolved through directory file descriptors (``clusterctl.outdir``); ``DIR``
  itself may be a symlink to a directory and is written through (it is opened once). Modes are set only on
  files the render writes (0644, or 0755 for the executable ones) and directories are created with the
  process umask; nothing else is chmod-ed.
"""

from __future__ import annotations

import ctypes
import fcntl
import fnmatch
import json
import os
import signal
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.manifest import (JOURNAL, LOCK, MANIFEST, PART, RESERVED, STAGED, Manifest, digest,
                                 parse_manifest, safe_path)
from clusterctl.manifest import manifest_text as _manifest_text
from clusterctl.outdir import OutDir, ancestors, parent

__all__ = ["JOURNAL", "LOCK", "MANIFEST", "RESERVED", "STAGED", "OutputDirError", "OutputLockedError",
           "WriteResult", "compare", "recover", "update_files", "write_tree"]

RENDER_SEALED = ("slurm", "nccl", "hosts", "ansible/roles/*")
"""directories ``render`` writes wholly: a file in them that the render does not produce is reported by
``--check`` as extra. Other directories (pulumi/ with its venv and stack files, ansible/ and group_vars/
where operators add vault or host files, tests/ with __pycache__) legitimately hold users' files."""

LOCK_TIMEOUT_ENV = "CLUSTERCTL_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 10.0
FILE_MODE = 0o644
EXEC_MODE = 0o755
_DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DURABLE = True
"""fsync/syncfs so that the old or new render also survives a power cut. Only tests that interrupt the
process (where the page cache survives) turn it off, to run faster."""
_MAX_STATE_BYTES = 64 << 20
"""largest manifest or journal the writer reads (both are one line per rendered file)"""
CHANGED = "changed since clusterctl wrote it"
"""why a listed file is neither overwritten nor deleted: its sha256 is not the one the manifest records"""


class OutputDirError(Exception):
    """The output directory cannot be used (not ours, not writable, locked). ``hint`` says what to do."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class OutputLockedError(OutputDirError):
    """Another clusterctl process holds the output directory's lock."""


@dataclass
class WriteResult:
    """What a write changed, or what ``compare`` found different (paths relative to the directory)."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    """rendered files whose executable bit differs from what the render wants"""
    extra: list[str] = field(default_factory=list)
    """files in a wholly rendered directory (``sealed``) that the render does not produce; never deleted"""
    edited: list[str] = field(default_factory=list)
    """(``compare``) rendered files changed since clusterctl wrote them: a write refuses to overwrite them"""
    kept: list[str] = field(default_factory=list)
    """files the manifest lists and this render does not produce, left in place because they are not what
    clusterctl wrote (changed since, a directory, a link, ...): dropped from the manifest"""
    kept_reasons: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    """``MANIFEST:N: ignored: why``, one per manifest line that names no file of ours"""
    manifest_missing: bool = False
    interrupted: bool = False
    """``compare`` found the journal of an unfinished write"""
    recovered: str = ""
    """'rolled back' or 'rolled forward' when the write first completed an interrupted one"""
    warnings: list[str] = field(default_factory=list)
    executable: frozenset[str] = frozenset()

    @property
    def drift(self) -> bool:
        return self.drift_count > 0

    @property
    def drift_count(self) -> int:
        return (len(self.added) + len(self.changed) + len(self.removed) + len(self.modes) + len(self.extra)
                + len(self.kept) + len(self.ignored) + int(self.manifest_missing) + int(self.interrupted))

    def drift_lines(self, out: Path) -> list[str]:
        """One ``kind: path`` line per difference, for ``render --check``."""
        lines = [f"changed: {out / p}" + (f" ({CHANGED}: render will not overwrite it)" if p in self.edited else "")
                 for p in self.changed]
        lines += [f"missing: {out / p}" for p in self.added]
        lines += [f"extra: {out / p}" for p in self.removed]
        lines += [f"extra: {out / p} ({self.kept_reasons[p]}: render keeps it)" for p in self.kept]
        lines += [f"extra: {out / p} (not rendered, in a directory clusterctl renders)" for p in self.extra]
        lines += [f"mode: {out / p} (should {'' if p in self.executable else 'not '}be executable)"
                  for p in self.modes]
        lines += [f"manifest: {out / MANIFEST}:{line} (render drops it)" for line in self.ignored]
        if self.manifest_missing:
            lines.append(f"missing: {out / MANIFEST} (the list of rendered files)")
        if self.interrupted:
            lines.append(f"interrupted: {out} (a write stopped before it finished; render again to complete it)")
        return lines


# --- paths ------------------------------------------------------------------------------------------------

def _bytes(content: str | bytes) -> bytes:
    """File content as bytes: text is UTF-8; pictures (PNG) come as bytes."""
    return content if isinstance(content, bytes) else content.encode()


def _staged(rel: str) -> str:
    head, _, name = rel.rpartition("/")
    return f"{head}/.{name}{STAGED}" if head else f".{name}{STAGED}"


def _normalise(files: dict[str, str | bytes]) -> dict[str, bytes]:
    return {safe_path(path): _bytes(content) for path, content in files.items()}


# --- manifest and journal ----------------------------------------------------------------------------------

def _read_manifest(tree: OutDir) -> Manifest | None:
    """The manifest (``clusterctl.manifest``: only valid lines count), or None when there is none."""
    try:
        text = tree.read(MANIFEST, _MAX_STATE_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputDirError(f"{tree.path(MANIFEST)}: cannot read the manifest: {exc.strerror or exc}",
                             "it must be the regular file clusterctl wrote; remove it and render into a new "
                             "directory if it is not") from None
    return parse_manifest(text)


def _hash_map(raw: object, *, allow_empty: bool) -> dict[str, str]:
    """path -> sha256 read from a journal; every path is checked again (never trust a path read from disk)."""
    if not isinstance(raw, dict):
        raise TypeError("expected path -> sha256")
    out = {}
    for path, sha in raw.items():
        if not isinstance(sha, str) or not (len(sha) == 64 and set(sha) <= set("0123456789abcdef")
                                            or allow_empty and sha == ""):
            raise ValueError(f"not a sha256: {sha!r}")
        out[safe_path(path)] = sha
    return out


@dataclass
class _Journal:
    """What a write is about to do; enough to undo it (state 'staging') or finish it (state 'apply')."""

    state: str
    manifest: str
    install: dict[str, str]
    """path -> sha256 of the file it replaces ('' when there was no regular file)"""
    chmod: dict[str, int]
    remove: dict[str, str]
    """path -> sha256 the file must still have to be deleted"""
    mkdirs: list[str]
    rmdirs: list[str]

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "_Journal":
        """Parse a journal read from disk; every path is checked again (never trust a path read from disk)."""
        raw = json.loads(text)
        if raw["state"] not in ("staging", "apply") or not isinstance(raw["manifest"], str):
            raise ValueError("unknown state")

        def paths(key: str) -> list[str]:
            return [safe_path(p) for p in raw[key]]

        return cls(raw["state"], raw["manifest"], _hash_map(raw["install"], allow_empty=True),
                   {safe_path(p): int(m) & 0o777 for p, m in raw["chmod"].items()},
                   _hash_map(raw["remove"], allow_empty=False), paths("mkdirs"), paths("rmdirs"))

    def is_empty(self) -> bool:
        return not (self.install or self.chmod or self.remove or self.mkdirs)


def _read_journal(tree: OutDir) -> _Journal | None:
    where = tree.path(JOURNAL)
    try:
        text = tree.read(JOURNAL, _MAX_STATE_BYTES).decode()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputDirError(f"{where}: cannot read the journal of an interrupted write: {exc}",
                             "it must be the regular file clusterctl wrote") from None
    try:
        return _Journal.from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OutputDirError(f"{where}: not a journal clusterctl wrote ({exc})",
                             f"remove {where} and render again; compare the directory with "
                             f"`clusterctl render --check` first") from None


# --- durable small steps ------------------------------------------------------------------------------------

def _libc_syncfs():
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _libc_syncfs()


def _sync_all(tree: OutDir, files: Iterable[str], dirs: Iterable[str]) -> None:
    """Make everything written under the directory durable: one syncfs(2) of its file system where there is
    one (a render writes hundreds of files; one fsync each costs about a second), else fsync every path."""
    if not DURABLE:
        return
    if _SYNCFS is not None and _SYNCFS(tree.fd) == 0:
        return
    for rel in files:
        if tree.dir_state(parent(rel)) == "dir":
            tree.fsync_file(rel)
    for rel in dirs:
        tree.fsync_dir(rel)


def _fsync_root(tree: OutDir) -> None:
    if DURABLE:
        tree.fsync_dir("")


def _replace_small(tree: OutDir, name: str, text: str) -> None:
    """Atomically put one of the writer's own files (manifest, journal) in place."""
    tree.write(name + PART, text.encode(), FILE_MODE, fsync=DURABLE)
    tree.replace(name + PART, name)
    _fsync_root(tree)


def _unlink_if_there(tree: OutDir, rel: str) -> None:
    try:
        tree.unlink(rel)
    except FileNotFoundError:
        pass


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then deliver them (only in the main thread, where
    Python handles signals). The block is the short apply step, which should not stop half-way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in _DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)


# --- lock ---------------------------------------------------------------------------------------------------

def _lock_timeout(value: float | None) -> float:
    if value is not None:
        return value
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "")
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86400:
        raise OutputDirError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected a number of seconds from 0 to 86400")
    return seconds


def _holder(fd: int) -> str:
    try:
        pid = int(os.pread(fd, 32, 0).decode().strip() or "0")
        os.kill(pid, 0)
    except (ValueError, UnicodeDecodeError, ProcessLookupError, PermissionError, OSError):
        return "another clusterctl process"
    return f"another clusterctl process (pid {pid})"


def _open_locked(tree: OutDir, exclusive: bool, deadline: float, seconds: float) -> int | None:
    """An fd holding the lock on the lock file that ``DIR/.clusterctl-lock`` names *now*; None for a shared
    lock when there is no lock file (no write in progress). A released lock file is unlinked by its holder,
    so a waiter that got the lock on an unlinked file tries again on the current one."""
    flags = os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY
    while True:
        try:
            fd = tree.open(LOCK, flags, FILE_MODE)
        except FileNotFoundError:
            if exclusive:
                raise
            return None
        except OSError as exc:
            raise OutputDirError(f"{tree.path(LOCK)}: cannot open the lock file: {exc.strerror or exc}",
                                 "it must be a regular file in a directory you can write") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OutputLockedError(
                            f"{tree.root}: {_holder(fd)} is writing this directory (waited {seconds:g} s)",
                            f"wait for it to finish and run again, or set {LOCK_TIMEOUT_ENV} to wait longer"
                        ) from None
                    time.sleep(0.02)
            try:
                current = tree.lstat(LOCK).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            return fd
        os.close(fd)


@contextmanager
def _locked(tree: OutDir, *, exclusive: bool, timeout: float | None) -> Iterator[None]:
    """Hold the directory's lock: exclusive to write, shared to compare (skipped when no write is in
    progress). The lock file exists only while a writer holds it (it names the writer's pid) or after one
    was killed."""
    seconds = _lock_timeout(timeout)
    fd = _open_locked(tree, exclusive, time.monotonic() + seconds, seconds)
    if fd is None:
        yield
        return
    try:
        if exclusive:  # the holder's pid, for the message of a writer that gives up
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if exclusive:  # while still holding it: a waiter then retries on a new file
            try:
                tree.unlink(LOCK)
            except OSError:
                pass
        os.close(fd)


# --- recovery -------------------------------------------------------------------------------------------------

def _roll_back(tree: OutDir, journal: _Journal) -> None:
    for rel in journal.install:
        if tree.dir_state(parent(rel)) == "dir":
            _unlink_if_there(tree, _staged(rel))
    for d in sorted(journal.mkdirs, key=lambda d: -d.count("/")):
        if tree.dir_state(parent(d)) == "dir":
            tree.rmdir(d)  # only if still empty: never a user's file
    _unlink_if_there(tree, JOURNAL)
    _fsync_root(tree)


def _holds(tree: OutDir, rel: str, sha: str) -> bool:
    """``rel`` is a regular file holding the bytes whose sha256 is ``sha``."""
    kind, current, _ = tree.look(rel)
    return kind == "file" and digest(current) == sha


def _apply(tree: OutDir, journal: _Journal) -> None:
    """Finish a committed write; every step may already have happened (idempotent). A destination that is
    not what the journal expects (changed by someone else since) is neither replaced nor deleted."""
    touched = {""}
    for rel, before in journal.install.items():
        if tree.dir_state(parent(rel)) != "dir" or not tree.exists(_staged(rel)):
            continue  # installed before the interruption
        kind, current, _ = tree.look(rel)
        if kind == "file" and digest(current) != before:
            tree.unlink(_staged(rel))  # not the file the write planned to replace: kept
            continue
        tree.replace(_staged(rel), rel)
        touched.add(parent(rel))
    for rel, mode in journal.chmod.items():
        if tree.dir_state(parent(rel)) == "dir":
            tree.set_mode(rel, mode)
    for rel, sha in journal.remove.items():
        if _holds(tree, rel, sha):
            tree.unlink(rel)
            touched.add(parent(rel))
    for d in journal.rmdirs:  # deepest first; one holding something clusterctl did not write is kept
        if tree.dir_state(d) == "dir":
            tree.rmdir(d)
    _sync_all(tree, (), sorted(touched))
    _replace_small(tree, MANIFEST, journal.manifest)
    tree.unlink(JOURNAL)
    _fsync_root(tree)


def _recover_locked(tree: OutDir) -> str:
    for name in (JOURNAL + PART, MANIFEST + PART):
        _unlink_if_there(tree, name)
    journal = _read_journal(tree)
    if journal is None:
        return ""
    with _signals_deferred():
        if journal.state == "staging":
            _roll_back(tree, journal)
            return "rolled back"
        _apply(tree, journal)
        return "rolled forward"


def recover(out: Path, *, lock_timeout: float | None = None) -> str:
    """Complete an interrupted write of ``out`` (what every write does first): '' when there was none,
    else 'rolled back' (the old render is complete again) or 'rolled forward' (the new one is)."""
    out = Path(out)
    if not (out / JOURNAL).exists() and not (out / (JOURNAL + PART)).exists():
        return ""
    try:
        with OutDir(out) as tree, _locked(tree, exclusive=True, timeout=lock_timeout):
            return _recover_locked(tree)
    except OSError as exc:
        raise OutputDirError(f"cannot complete the interrupted write of {out}: {exc}") from None


# --- the write -------------------------------------------------------------------------------------------------

def _check_dir(out: Path) -> None:
    if out.is_symlink() and not out.exists():
        raise OutputDirError(f"{out} is a symbolic link to {os.readlink(out)}, which does not exist",
                             "create the directory it points to, or pass another directory")
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out} exists and is not a directory", "pass a directory")


def _foreign(out: Path | OutDir) -> bool:
    """The directory holds files but no trace of clusterctl (manifest or journal). Asked of the path first
    (before creating it), then again of the directory actually opened."""
    if isinstance(out, OutDir):
        names = set(out.listdir())
    elif out.is_dir():
        names = set(os.listdir(out))
    else:
        return False
    return not names & {MANIFEST, JOURNAL} and bool(names - RESERVED)


def _not_ours(out: Path) -> OutputDirError:
    return OutputDirError(f"{out} is not empty and was not rendered by clusterctl (no {MANIFEST})",
                          "choose an empty or new directory, or one clusterctl wrote before")


def _legacy_leftovers(out: Path) -> list[str]:
    """Temporary directories of the writer before this one (it swapped whole trees beside ``out``); an
    interrupted render could strand users' files in them, so they are pointed out, never deleted."""
    found = set()
    for parent_dir in {out.absolute().parent, out.resolve().parent}:
        try:
            names = os.listdir(parent_dir)
        except OSError:
            continue
        for name in names:
            if name.startswith((f".{out.name}.render-", f".{out.name}.old-")) and (parent_dir / name).is_dir():
                found.add(str(parent_dir / name))
    return [f"{d} was left by an interrupted render of an older clusterctl; it may hold files of yours "
            f"(check, then delete it)" for d in sorted(found)]


def _sweep_staged(tree: OutDir, paths: set[str]) -> None:
    """Remove staged files no journal accounts for (the journal is always written before them, so these
    exist only if someone removed a journal by hand); only clusterctl's own names, never through a link."""
    for rel in paths:
        if tree.dir_state(parent(rel)) == "dir":
            try:
                if not stat.S_ISDIR(tree.lstat(_staged(rel)).st_mode):
                    tree.unlink(_staged(rel))
            except FileNotFoundError:
                pass


def _sealed_roots(paths: Iterable[str], sealed: Iterable[str]) -> list[str]:
    patterns = tuple(sealed)
    dirs = {d for p in paths for d in ancestors(p) if d}
    hits = sorted(d for d in dirs if any(fnmatch.fnmatchcase(d, pat) for pat in patterns))
    return [d for d in hits if not any(d.startswith(h + "/") for h in hits)]


def _untracked(tree: OutDir, roots: list[str], known: set[str]) -> list[str]:
    """Files (and links) in the wholly rendered directories ``roots`` that are not in ``known``."""
    found = []
    stack = [r for r in roots if tree.dir_state(r) == "dir"]
    while stack:
        d = stack.pop()
        if tree.dir_state(d) != "dir":
            continue
        with tree.scandir(d) as entries:
            for entry in entries:
                rel = f"{d}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif rel not in known and not entry.name.endswith(STAGED):
                    found.append(rel)
    return sorted(found)


def _refusal(problems: list[tuple[str, str]]) -> OutputDirError:
    """One error for every rendered path the write may not replace (``problems``: path, why)."""
    shown = "; ".join(f"{path} {why}" for path, why in problems[:5])
    more = f" (and {len(problems) - 5} more: `clusterctl render --check` lists them)" if len(problems) > 5 else ""
    if any(CHANGED in why for _, why in problems):
        hint = ("this render writes that path and your changes would be lost: move it away (or delete it), then "
                "run again; `clusterctl render --check` lists every such file")
    else:
        hint = "this render produces that file: move yours away, then run again"
    return OutputDirError(shown + more, hint)


def _survey(data: dict[str, bytes], tree: OutDir, previous: dict[str, str], executable: set[str],
            writing: bool) -> tuple[WriteResult, dict[str, str], dict[str, int]]:
    """Classify every rendered path: (result, path to install -> sha256 of the file it replaces, path -> mode
    to fix). When ``writing``, a path the writer must not touch raises OutputDirError: a file that is not the
    one clusterctl wrote there (not in the manifest, or changed since); ``compare`` reports it as changed."""
    result = WriteResult(executable=frozenset(executable))
    install: dict[str, str] = {}
    chmod: dict[str, int] = {}
    refused: list[tuple[str, str]] = []
    for rel in sorted(data):
        kind, current, mode = tree.look(rel)
        want = EXEC_MODE if rel in executable else FILE_MODE
        path = tree.path(rel)
        if kind == "file" and current == data[rel]:
            result.unchanged.append(rel)
            if bool(mode & 0o111) != (want == EXEC_MODE):
                result.modes.append(rel)
                chmod[rel] = want
            continue
        if kind == "missing":
            result.added.append(rel)
            install[rel] = ""
            continue
        if writing:
            if kind not in ("file", "link", "special", "dir"):  # a symlinked or non-directory parent
                raise OutputDirError(f"cannot write {path}: {kind}",
                                     "clusterctl writes only inside the output directory and follows no link "
                                     "below it: replace the link by a directory, or remove it")
            if kind == "dir":
                raise OutputDirError(f"cannot write {path}: it is a directory",
                                     "clusterctl renders a file there: move the directory away")
            if rel not in previous:
                refused.append((str(path), f"exists and was not written by clusterctl (it is not in {MANIFEST})"))
            elif kind == "file" and digest(current) != previous[rel]:
                refused.append((str(path), f"was {CHANGED} (its sha256 is not the one in {MANIFEST})"))
        elif kind == "file" and rel in previous and digest(current) != previous[rel]:
            result.edited.append(rel)
        result.changed.append(rel)
        install[rel] = digest(current) if kind == "file" else ""
    if refused:
        raise _refusal(refused)
    return result, install, chmod


def _removals(tree: OutDir, previous: dict[str, str], data: dict[str, bytes], result: WriteResult) -> dict[str, str]:
    """Files the previous render wrote and this one does not: path -> sha256 of those to delete (regular files
    that still hold the recorded bytes). The others stay where they are, in ``result.kept`` with the reason."""
    remove = {}
    for rel in sorted(set(previous) - set(data)):
        kind, current, _ = tree.look(rel)
        if kind == "missing":
            continue
        if kind == "file" and digest(current) == previous[rel]:
            remove[rel] = previous[rel]
            continue
        result.kept.append(rel)
        result.kept_reasons[rel] = (CHANGED if kind == "file" else
                                    f"listed in {MANIFEST} but a symbolic link" if kind == "link" else
                                    f"listed in {MANIFEST} but a directory" if kind == "dir" else
                                    f"listed in {MANIFEST} but not a regular file" if kind == "special" else
                                    f"listed in {MANIFEST} but {kind}")
    result.removed = sorted(remove)
    return remove


def _notices(tree: OutDir, manifest: Manifest | None, result: WriteResult) -> None:
    """Ignored manifest lines and files kept rather than deleted, as ``result.ignored`` and warnings."""
    result.ignored = list(manifest.ignored) if manifest else []
    result.warnings += [f"{tree.path(MANIFEST)}:{line}" for line in result.ignored]
    result.warnings += [f"{tree.path(rel)}: {result.kept_reasons[rel]}: left in place, and no longer listed in "
                        f"{MANIFEST} (it is yours now)" for rel in result.kept]


def _plan(tree: OutDir, data: dict[str, bytes], executable: set[str], previous: dict[str, str],
          partial: bool) -> tuple[WriteResult, _Journal]:
    result, install, chmod = _survey(data, tree, previous, executable, writing=True)
    remove = {} if partial else _removals(tree, previous, data, result)
    needed = {d for rel in install for d in ancestors(rel) if d}
    mkdirs = sorted((d for d in needed if tree.dir_state(d) == "missing"), key=lambda d: (d.count("/"), d))
    keep = {d for rel in data for d in ancestors(rel)}
    rmdirs = sorted({d for rel in remove for d in ancestors(rel) if d and d not in keep},
                    key=lambda d: (-d.count("/"), d))
    hashes = dict(previous) if partial else {}
    hashes.update((rel, digest(content)) for rel, content in data.items())
    return result, _Journal("staging", _manifest_text(hashes), install, chmod, remove, mkdirs, rmdirs)


def _stage(tree: OutDir, journal: _Journal, data: dict[str, bytes], executable: set[str]) -> None:
    _replace_small(tree, JOURNAL, journal.to_json())
    for d in journal.mkdirs:
        tree.mkdir(d)
    for rel in journal.install:
        tree.write(_staged(rel), data[rel], EXEC_MODE if rel in executable else FILE_MODE, fsync=False)
    _sync_all(tree, [_staged(rel) for rel in journal.install], sorted({parent(rel) for rel in journal.install}))


def _commit(tree: OutDir, journal: _Journal, data: dict[str, bytes], executable: set[str]) -> None:
    try:
        _stage(tree, journal, data, executable)
    except BaseException:
        with _signals_deferred():
            _roll_back(tree, journal)
        raise
    with _signals_deferred():
        journal.state = "apply"
        try:
            _replace_small(tree, JOURNAL, journal.to_json())  # the commit point
        except OSError:
            journal.state = "staging"
            _roll_back(tree, journal)
            raise
        try:
            _apply(tree, journal)
        except OSError as exc:
            raise OutputDirError(f"the write of {tree.root} stopped half-way: {exc.strerror or exc} "
                                 f"({exc.filename})",
                                 "fix the cause and run the command again: it completes the write first") from None


def _write(files: dict[str, str | bytes], out: Path, executable: Iterable[str] | None, sealed: Iterable[str],
           lock_timeout: float | None, partial: bool) -> WriteResult:
    data = _normalise(files)
    execs = set(executable or ()) & set(data)
    try:
        _check_dir(out)
        if _foreign(out):
            raise _not_ours(out)
        if partial and not (out / MANIFEST).exists() and not (out / JOURNAL).exists():
            raise OutputDirError(f"{out} has no {MANIFEST}: it is not a directory clusterctl rendered",
                                 "render into it first")
        warnings = _legacy_leftovers(out)
        out.mkdir(parents=True, exist_ok=True)
        with OutDir(out) as tree, _locked(tree, exclusive=True, timeout=lock_timeout):
            if _foreign(tree):  # the path now names another directory than the one checked above
                raise _not_ours(out)
            recovered = _recover_locked(tree)
            tree.forget()
            manifest = _read_manifest(tree)
            if partial and manifest is None:
                raise OutputDirError(f"{out} has no {MANIFEST}: it is not a directory clusterctl rendered",
                                     "render into it first")
            previous = manifest.hashes if manifest else {}
            _sweep_staged(tree, set(data) | set(previous))
            result, journal = _plan(tree, data, execs, previous, partial)
            result.extra = _untracked(tree, _sealed_roots(data, sealed), set(data) | set(previous))
            result.recovered, result.warnings = recovered, warnings
            _notices(tree, manifest, result)
            if not (journal.is_empty() and manifest is not None and manifest.text == journal.manifest):
                _commit(tree, journal, data, execs)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise OutputDirError(f"cannot write {out}: {exc.strerror or exc}{where}",
                             "nothing was changed: the previous files are as they were") from None
    return result


def write_tree(files: dict[str, str | bytes], out: Path, *, executable: Iterable[str] | None = None,
               sealed: Iterable[str] = (), lock_timeout: float | None = None) -> WriteResult:
    """Make ``out`` hold exactly ``files`` among the files clusterctl writes (see the module doc): new and
    changed files are installed, files the previous render wrote and this one does not are deleted (if they
    still hold the bytes clusterctl wrote), every other file is left alone. ``executable`` files get mode
    0755, the others 0644. Files in ``sealed`` directories that the render does not produce are listed in
    ``extra`` (and kept)."""
    return _write(files, Path(out), executable, sealed, lock_timeout, partial=False)


def update_files(files: dict[str, str | bytes], out: Path, *, executable: Iterable[str] | None = None,
                 lock_timeout: float | None = None) -> WriteResult:
    """Replace some of a rendered directory's files (``clusterctl inventory``), by the same protocol; the
    manifest keeps its other entries and no file is deleted. ``out`` must hold a manifest."""
    return _write(files, Path(out), executable, (), lock_timeout, partial=True)


def compare(files: dict[str, str | bytes], out: Path, *, executable: Iterable[str] | None = None,
            sealed: Iterable[str] = (), lock_timeout: float | None = None) -> WriteResult:
    """What ``write_tree`` would change, without writing anything (``render --check``). Takes the lock
    shared when the directory has one, so it never reads a write half-way; reports an interrupted write."""
    out = Path(out)
    data = _normalise(files)
    execs = set(executable or ()) & set(data)
    _check_dir(out)
    if not out.is_dir():
        return WriteResult(added=sorted(data), manifest_missing=True, executable=frozenset(execs))
    try:
        with OutDir(out) as tree, _locked(tree, exclusive=False, timeout=lock_timeout):
            manifest = _read_manifest(tree)
            previous = manifest.hashes if manifest else {}
            result, _, _ = _survey(data, tree, previous, execs, writing=False)
            _removals(tree, previous, data, result)
            result.extra = _untracked(tree, _sealed_roots(data, sealed), set(data) | set(previous))
            _notices(tree, manifest, result)
            result.manifest_missing = manifest is None
            result.interrupted = tree.exists(JOURNAL)
    except OSError as exc:
        raise OutputDirError(f"cannot read {out}: {exc.strerror or exc}") from None
    return result
