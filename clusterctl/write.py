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

So, once the journal is resolved, the directory holds the complete old or the complete new render (exactly
what ``.clusterctl-manifest`` lists) plus every file clusterctl did not write. A reader that does not take
the lock can see a mix of old and new files while a render is applying (milliseconds) or after a SIGKILL
until the next render; ``--check`` reports such a directory as interrupted.

Other rules:

- Files whose bytes did not change are not touched (same bytes, same timestamps).
- A non-empty directory without a manifest is refused, so a typo'd ``-o`` cannot write into someone else's
  files; a path the render would write that exists but was not written by clusterctl is refused too.
- No symbolic link below ``DIR`` is followed when writing, deleting or changing modes; ``DIR`` itself may be a
  symlink to a directory and is written through. Modes are set only on files the render writes (0644, or 0755
  for the executable ones) and directories are created with the process umask; nothing else is chmod-ed.
"""

from __future__ import annotations

import ctypes
import fcntl
import fnmatch
import hashlib
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

MANIFEST = ".clusterctl-manifest"
LOCK = ".clusterctl-lock"
JOURNAL = ".clusterctl-journal"
STAGED = ".clusterctl-new"
"""suffix of the temporary file a changed file is written to, beside its destination"""
_PART = ".part"
RESERVED = frozenset({MANIFEST, LOCK, JOURNAL, MANIFEST + _PART, JOURNAL + _PART})
"""names the writer itself keeps in the output directory"""

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
    manifest_missing: bool = False
    interrupted: bool = False
    """``compare`` found the journal of an unfinished write"""
    recovered: str = ""
    """'rolled back' or 'rolled forward' when the write first completed an interrupted one"""
    warnings: list[str] = field(default_factory=list)
    executable: frozenset[str] = frozenset()

    @property
    def drift(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.modes or self.extra
                    or self.manifest_missing or self.interrupted)

    @property
    def drift_count(self) -> int:
        return (len(self.added) + len(self.changed) + len(self.removed) + len(self.modes) + len(self.extra)
                + int(self.manifest_missing) + int(self.interrupted))

    def drift_lines(self, out: Path) -> list[str]:
        """One ``kind: path`` line per difference, for ``render --check``."""
        lines = [f"changed: {out / p}" for p in self.changed]
        lines += [f"missing: {out / p}" for p in self.added]
        lines += [f"extra: {out / p}" for p in self.removed]
        lines += [f"extra: {out / p} (not rendered, in a directory clusterctl renders)" for p in self.extra]
        lines += [f"mode: {out / p} (should {'' if p in self.executable else 'not '}be executable)"
                  for p in self.modes]
        if self.manifest_missing:
            lines.append(f"missing: {out / MANIFEST} (the list of rendered files)")
        if self.interrupted:
            lines.append(f"interrupted: {out} (a write stopped before it finished; render again to complete it)")
        return lines


# --- paths ------------------------------------------------------------------------------------------------

def _bytes(content: str | bytes) -> bytes:
    """File content as bytes: text is UTF-8; pictures (PNG) come as bytes."""
    return content if isinstance(content, bytes) else content.encode()


def _safe(path: str) -> str:
    """``path`` if it names a file strictly inside the output directory that is not one of the writer's own."""
    parts = path.split("/") if isinstance(path, str) else []
    if (not parts or path.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 32 or c == "\x7f" for c in path)
            or any(p in RESERVED or p.endswith(STAGED) for p in parts)):
        raise ValueError(f"target produced an unsafe path: {path!r}")
    return path


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _ancestors(rel: str) -> Iterator[str]:
    """Directories above ``rel`` inside the output directory, nearest first ('' is the directory itself)."""
    while "/" in rel:
        rel = _parent(rel)
        yield rel


def _staged(out: Path, rel: str) -> Path:
    head, _, name = rel.rpartition("/")
    return out / head / f".{name}{STAGED}"


def _normalise(files: dict[str, str | bytes]) -> dict[str, bytes]:
    return {_safe(path): _bytes(content) for path, content in files.items()}


class _Tree:
    """Looks at paths under ``out`` without following any symbolic link below it (``out`` itself may be one)."""

    def __init__(self, out: Path):
        self.out = out
        self._dirs: dict[str, str] = {"": "dir"}

    def dir_state(self, rel: str) -> str:
        """'dir', 'missing', or why files cannot be put in the directory ``rel``."""
        if rel not in self._dirs:
            up = self.dir_state(_parent(rel))
            if up != "dir":
                state = up
            else:
                try:
                    mode = os.lstat(self.out / rel).st_mode
                except FileNotFoundError:
                    state = "missing"
                else:
                    state = ("dir" if stat.S_ISDIR(mode) else
                             f"{self.out / rel} is a symbolic link" if stat.S_ISLNK(mode) else
                             f"{self.out / rel} is not a directory")
            self._dirs[rel] = state
        return self._dirs[rel]

    def look(self, rel: str) -> tuple[str, bytes, int]:
        """('file', bytes, mode) for a regular file; ('missing'|'link'|'dir'|'special'|why-blocked, b'', mode)."""
        where = self.dir_state(_parent(rel))
        if where != "dir":
            return ("missing" if where == "missing" else where), b"", 0
        path = self.out / rel
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return "missing", b"", 0
        if stat.S_ISLNK(mode):
            return "link", b"", mode
        if stat.S_ISDIR(mode):
            return "dir", b"", mode
        if not stat.S_ISREG(mode):
            return "special", b"", mode
        return "file", _read_nofollow(path), mode


def _read_nofollow(path: Path, limit: int | None = None) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputDirError(f"{path} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if limit is not None and sum(map(len, chunks)) > limit:
                raise OutputDirError(f"{path} is larger than {limit >> 20} MiB: not a file clusterctl wrote",
                                     "remove it")
        return b"".join(chunks)
    finally:
        os.close(fd)


# --- manifest and journal ----------------------------------------------------------------------------------

def _manifest_text(hashes: dict[str, str]) -> str:
    lines = ["# files rendered by clusterctl into this directory: path sha256"]
    lines += [f"{path} {digest}" for path, digest in sorted(hashes.items())]
    return "\n".join(lines) + "\n"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(out: Path) -> tuple[dict[str, str] | None, str]:
    """(path -> sha256, raw text) of the manifest, or (None, '') when there is none. Lines that do not name
    a safe path are ignored, so a tampered manifest cannot make the writer delete outside the directory."""
    try:
        text = _read_nofollow(out / MANIFEST, _MAX_STATE_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        raise OutputDirError(f"{out / MANIFEST}: cannot read the manifest: {exc.strerror or exc}",
                             "it must be the regular file clusterctl wrote; remove it and render into a new "
                             "directory if it is not") from None
    hashes = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and " " in line:
            path, digest = line.rsplit(" ", 1)
            try:
                hashes[_safe(path)] = digest
            except ValueError:
                continue
    return hashes, text


@dataclass
class _Journal:
    """What a write is about to do; enough to undo it (state 'staging') or finish it (state 'apply')."""

    state: str
    manifest: str
    install: list[str]
    chmod: dict[str, int]
    remove: list[str]
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
            return [_safe(p) for p in raw[key]]

        return cls(raw["state"], raw["manifest"], paths("install"),
                   {_safe(p): int(m) & 0o777 for p, m in raw["chmod"].items()},
                   paths("remove"), paths("mkdirs"), paths("rmdirs"))

    def is_empty(self) -> bool:
        return not (self.install or self.chmod or self.remove or self.mkdirs)


def _read_journal(out: Path) -> _Journal | None:
    try:
        text = _read_nofollow(out / JOURNAL, _MAX_STATE_BYTES).decode()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputDirError(f"{out / JOURNAL}: cannot read the journal of an interrupted write: {exc}",
                             "it must be the regular file clusterctl wrote") from None
    try:
        return _Journal.from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OutputDirError(f"{out / JOURNAL}: not a journal clusterctl wrote ({exc})",
                             f"remove {out / JOURNAL} and render again; compare the directory with "
                             f"`clusterctl render --check` first") from None


# --- durable small steps ------------------------------------------------------------------------------------

def _write_file(path: Path, data: bytes, mode: int, *, sync: bool = True) -> None:
    """Create or truncate ``path`` (never through a symlink), write ``data``, set ``mode``, fsync if asked."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync and DURABLE:
            os.fsync(fd)
    finally:
        os.close(fd)


def _libc_syncfs():
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _libc_syncfs()


def _sync_all(out: Path, paths: Iterable[Path]) -> None:
    """Make everything written under ``out`` durable: one syncfs(2) of its file system where there is one
    (a render writes hundreds of files; one fsync each costs about a second), else fsync every path."""
    if not DURABLE:
        return
    if _SYNCFS is not None:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if _SYNCFS(fd) == 0:
                return
        finally:
            os.close(fd)
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone (an emptied directory) or a link: nothing of ours to flush
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_dir(path: Path) -> None:
    if not DURABLE:
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_small(out: Path, name: str, text: str) -> None:
    """Atomically put one of the writer's own files (manifest, journal) in place."""
    part = out / (name + _PART)
    _write_file(part, text.encode(), FILE_MODE)
    os.replace(part, out / name)
    _fsync_dir(out)


def _set_mode(path: Path, mode: int) -> None:
    """chmod a rendered regular file; a symlink or anything else there is left alone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


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


def _open_locked(out: Path, exclusive: bool, deadline: float, seconds: float) -> int | None:
    """An fd holding the lock on the lock file that ``out/.clusterctl-lock`` names *now*; None for a shared
    lock when there is no lock file (no write in progress). A released lock file is unlinked by its holder,
    so a waiter that got the lock on an unlinked file tries again on the current one."""
    path = out / LOCK
    flags = (os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileNotFoundError:
            if exclusive:
                raise
            return None
        except OSError as exc:
            raise OutputDirError(f"{path}: cannot open the lock file: {exc.strerror or exc}",
                                 "it must be a regular file in a directory you can write") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OutputLockedError(
                            f"{out}: {_holder(fd)} is writing this directory (waited {seconds:g} s)",
                            f"wait for it to finish and run again, or set {LOCK_TIMEOUT_ENV} to wait longer"
                        ) from None
                    time.sleep(0.02)
            try:
                current = os.lstat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            return fd
        os.close(fd)


@contextmanager
def _locked(out: Path, *, exclusive: bool, timeout: float | None) -> Iterator[None]:
    """Hold ``out``'s lock: exclusive to write, shared to compare (skipped when no write is in progress).
    The lock file exists only while a writer holds it (it names the writer's pid) or after one was killed."""
    seconds = _lock_timeout(timeout)
    fd = _open_locked(out, exclusive, time.monotonic() + seconds, seconds)
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
                os.unlink(out / LOCK)
            except OSError:
                pass
        os.close(fd)


# --- recovery -------------------------------------------------------------------------------------------------

def _roll_back(out: Path, journal: _Journal) -> None:
    tree = _Tree(out)
    for rel in journal.install:
        if tree.dir_state(_parent(rel)) == "dir":
            _staged(out, rel).unlink(missing_ok=True)
    for d in sorted(journal.mkdirs, key=lambda d: -d.count("/")):
        if tree.dir_state(_parent(d)) == "dir":
            try:
                os.rmdir(out / d)  # only if still empty: never a user's file
            except OSError:
                pass
    (out / JOURNAL).unlink(missing_ok=True)
    _fsync_dir(out)


def _apply(out: Path, journal: _Journal) -> None:
    """Finish a committed write; every step may already have happened (idempotent)."""
    tree = _Tree(out)
    touched = {""}
    for rel in journal.install:
        if tree.dir_state(_parent(rel)) != "dir":
            continue
        try:
            os.replace(_staged(out, rel), out / rel)
        except FileNotFoundError:
            pass  # installed before the interruption
        touched.add(_parent(rel))
    for rel, mode in journal.chmod.items():
        if tree.dir_state(_parent(rel)) == "dir":
            _set_mode(out / rel, mode)
    for rel in journal.remove:
        if tree.dir_state(_parent(rel)) != "dir":
            continue
        try:
            if stat.S_ISDIR(os.lstat(out / rel).st_mode):
                continue  # a directory where a rendered file was: not clusterctl's
        except FileNotFoundError:
            continue
        os.unlink(out / rel)
        touched.add(_parent(rel))
    for d in journal.rmdirs:  # deepest first
        if tree.dir_state(d) == "dir":
            try:
                os.rmdir(out / d)
            except OSError:
                pass  # holds something clusterctl did not write: kept
    _sync_all(out, [out / d for d in sorted(touched) if tree.dir_state(d) == "dir"])
    _replace_small(out, MANIFEST, journal.manifest)
    (out / JOURNAL).unlink()
    _fsync_dir(out)


def _recover_locked(out: Path) -> str:
    for name in (JOURNAL + _PART, MANIFEST + _PART):
        (out / name).unlink(missing_ok=True)
    journal = _read_journal(out)
    if journal is None:
        return ""
    with _signals_deferred():
        if journal.state == "staging":
            _roll_back(out, journal)
            return "rolled back"
        _apply(out, journal)
        return "rolled forward"


def recover(out: Path, *, lock_timeout: float | None = None) -> str:
    """Complete an interrupted write of ``out`` (what every write does first): '' when there was none,
    else 'rolled back' (the old render is complete again) or 'rolled forward' (the new one is)."""
    out = Path(out)
    if not (out / JOURNAL).exists() and not (out / (JOURNAL + _PART)).exists():
        return ""
    try:
        with _locked(out, exclusive=True, timeout=lock_timeout):
            return _recover_locked(out)
    except OSError as exc:
        raise OutputDirError(f"cannot complete the interrupted write of {out}: {exc}") from None


# --- the write -------------------------------------------------------------------------------------------------

def _check_dir(out: Path) -> None:
    if out.is_symlink() and not out.exists():
        raise OutputDirError(f"{out} is a symbolic link to {os.readlink(out)}, which does not exist",
                             "create the directory it points to, or pass another directory")
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out} exists and is not a directory", "pass a directory")


def _foreign(out: Path) -> bool:
    """``out`` holds files but no trace of clusterctl (manifest or journal)."""
    if not out.is_dir():
        return False
    names = set(os.listdir(out))
    return not names & {MANIFEST, JOURNAL} and bool(names - RESERVED)


def _legacy_leftovers(out: Path) -> list[str]:
    """Temporary directories of the writer before this one (it swapped whole trees beside ``out``); an
    interrupted render could strand users' files in them, so they are pointed out, never deleted."""
    found = set()
    for parent in {out.absolute().parent, out.resolve().parent}:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if name.startswith((f".{out.name}.render-", f".{out.name}.old-")) and (parent / name).is_dir():
                found.add(str(parent / name))
    return [f"{d} was left by an interrupted render of an older clusterctl; it may hold files of yours "
            f"(check, then delete it)" for d in sorted(found)]


def _sweep_staged(tree: _Tree, paths: set[str]) -> None:
    """Remove staged files no journal accounts for (the journal is always written before them, so these
    exist only if someone removed a journal by hand); only clusterctl's own names, never through a link."""
    for rel in paths:
        if tree.dir_state(_parent(rel)) == "dir":
            staged = _staged(tree.out, rel)
            try:
                if not stat.S_ISDIR(os.lstat(staged).st_mode):
                    os.unlink(staged)
            except FileNotFoundError:
                pass


def _sealed_roots(paths: Iterable[str], sealed: Iterable[str]) -> list[str]:
    patterns = tuple(sealed)
    dirs = {d for p in paths for d in _ancestors(p) if d}
    hits = sorted(d for d in dirs if any(fnmatch.fnmatchcase(d, pat) for pat in patterns))
    return [d for d in hits if not any(d.startswith(h + "/") for h in hits)]


def _untracked(tree: _Tree, roots: list[str], known: set[str]) -> list[str]:
    """Files (and links) in the wholly rendered directories ``roots`` that are not in ``known``."""
    found = []
    stack = [r for r in roots if tree.dir_state(r) == "dir"]
    while stack:
        d = stack.pop()
        with os.scandir(tree.out / d) as entries:
            for entry in entries:
                rel = f"{d}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif rel not in known and not entry.name.endswith(STAGED):
                    found.append(rel)
    return sorted(found)


def _survey(data: dict[str, bytes], tree: _Tree, previous: dict[str, str], executable: set[str],
            writing: bool) -> tuple[WriteResult, list[str], dict[str, int]]:
    """Classify every rendered path: (result, paths to install, path -> mode to fix). When ``writing``,
    a path the writer must not touch raises OutputDirError; ``compare`` reports it as changed instead."""
    result = WriteResult(executable=frozenset(executable))
    install: list[str] = []
    chmod: dict[str, int] = {}
    for rel in sorted(data):
        kind, current, mode = tree.look(rel)
        want = EXEC_MODE if rel in executable else FILE_MODE
        path = tree.out / rel
        if kind == "file" and current == data[rel]:
            result.unchanged.append(rel)
            if bool(mode & 0o111) != (want == EXEC_MODE):
                result.modes.append(rel)
                chmod[rel] = want
            continue
        if kind == "missing":
            result.added.append(rel)
            install.append(rel)
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
                raise OutputDirError(f"{path} exists and was not written by clusterctl (it is not in {MANIFEST})",
                                     "this render produces that file: move yours away, then run again")
        result.changed.append(rel)
        install.append(rel)
    return result, install, chmod


def _plan(out: Path, data: dict[str, bytes], executable: set[str], previous: dict[str, str], tree: _Tree,
          partial: bool) -> tuple[WriteResult, _Journal]:
    result, install, chmod = _survey(data, tree, previous, executable, writing=True)
    remove = [] if partial else sorted(set(previous) - set(data))
    result.removed = [r for r in remove if tree.dir_state(_parent(r)) == "dir" and os.path.lexists(out / r)]
    needed = {d for rel in install for d in _ancestors(rel) if d}
    mkdirs = sorted((d for d in needed if tree.dir_state(d) == "missing"), key=lambda d: (d.count("/"), d))
    keep = {d for rel in data for d in _ancestors(rel)}
    rmdirs = sorted({d for rel in remove for d in _ancestors(rel) if d and d not in keep},
                    key=lambda d: (-d.count("/"), d))
    hashes = dict(previous) if partial else {}
    hashes.update((rel, _digest(content)) for rel, content in data.items())
    return result, _Journal("staging", _manifest_text(hashes), install, chmod, result.removed, mkdirs, rmdirs)


def _stage(out: Path, journal: _Journal, data: dict[str, bytes], executable: set[str]) -> None:
    _replace_small(out, JOURNAL, journal.to_json())
    for d in journal.mkdirs:
        try:
            os.mkdir(out / d)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(out / d).st_mode):
                raise OutputDirError(f"cannot write into {out / d}: it is not a directory") from None
    for rel in journal.install:
        _write_file(_staged(out, rel), data[rel], EXEC_MODE if rel in executable else FILE_MODE, sync=False)
    dirs = sorted({_parent(rel) for rel in journal.install})
    _sync_all(out, [_staged(out, rel) for rel in journal.install] + [out / d for d in dirs])


def _commit(out: Path, journal: _Journal, data: dict[str, bytes], executable: set[str]) -> None:
    try:
        _stage(out, journal, data, executable)
    except BaseException:
        with _signals_deferred():
            _roll_back(out, journal)
        raise
    with _signals_deferred():
        journal.state = "apply"
        try:
            _replace_small(out, JOURNAL, journal.to_json())  # the commit point
        except OSError:
            journal.state = "staging"
            _roll_back(out, journal)
            raise
        try:
            _apply(out, journal)
        except OSError as exc:
            raise OutputDirError(f"the write of {out} stopped half-way: {exc.strerror or exc} ({exc.filename})",
                                 "fix the cause and run the command again: it completes the write first") from None


def _write(files: dict[str, str | bytes], out: Path, executable: Iterable[str] | None, sealed: Iterable[str],
           lock_timeout: float | None, partial: bool) -> WriteResult:
    data = _normalise(files)
    execs = set(executable or ()) & set(data)
    try:
        _check_dir(out)
        if _foreign(out):
            raise OutputDirError(f"{out} is not empty and was not rendered by clusterctl (no {MANIFEST})",
                                 "choose an empty or new directory, or one clusterctl wrote before")
        if partial and not (out / MANIFEST).exists() and not (out / JOURNAL).exists():
            raise OutputDirError(f"{out} has no {MANIFEST}: it is not a directory clusterctl rendered",
                                 "render into it first")
        warnings = _legacy_leftovers(out)
        out.mkdir(parents=True, exist_ok=True)
        with _locked(out, exclusive=True, timeout=lock_timeout):
            recovered = _recover_locked(out)
            previous, text = _read_manifest(out)
            if partial and previous is None:
                raise OutputDirError(f"{out} has no {MANIFEST}: it is not a directory clusterctl rendered",
                                     "render into it first")
            tree = _Tree(out)
            _sweep_staged(tree, set(data) | set(previous or {}))
            result, journal = _plan(out, data, execs, previous or {}, tree, partial)
            known = set(data) | set(previous or {})
            result.extra = _untracked(tree, _sealed_roots(data, sealed), known)
            result.recovered, result.warnings = recovered, warnings
            if not (journal.is_empty() and text == journal.manifest):
                _commit(out, journal, data, execs)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise OutputDirError(f"cannot write {out}: {exc.strerror or exc}{where}",
                             "nothing was changed: the previous files are as they were") from None
    return result


def write_tree(files: dict[str, str | bytes], out: Path, *, executable: Iterable[str] | None = None,
               sealed: Iterable[str] = (), lock_timeout: float | None = None) -> WriteResult:
    """Make ``out`` hold exactly ``files`` among the files clusterctl writes (see the module doc): new and
    changed files are installed, files the previous render wrote and this one does not are deleted, every
    other file is left alone. ``executable`` files get mode 0755, the others 0644. Files in ``sealed``
    directories that the render does not produce are listed in ``extra`` (and kept)."""
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
        with _locked(out, exclusive=False, timeout=lock_timeout):
            previous, _ = _read_manifest(out)
            tree = _Tree(out)
            result, _, _ = _survey(data, tree, previous or {}, execs, writing=False)
            result.removed = sorted(r for r in set(previous or {}) - set(data)
                                    if tree.dir_state(_parent(r)) == "dir" and os.path.lexists(out / r))
            result.extra = _untracked(tree, _sealed_roots(data, sealed), set(data) | set(previous or {}))
            result.manifest_missing = previous is None
            result.interrupted = (out / JOURNAL).exists()
    except OSError as exc:
        raise OutputDirError(f"cannot read {out}: {exc.strerror or exc}") from None
    return result
