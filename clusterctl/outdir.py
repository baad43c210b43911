"""The output directory as directory file descriptors: no symbolic link below it is ever followed.

``OutDir`` opens the directory once (it may itself be a link: it is resolved then, and only then). Every path
below it is reached one component at a time, each directory opened with ``O_DIRECTORY | O_NOFOLLOW``
relative to its parent's descriptor, and every file operation (open, rename, unlink, mkdir, rmdir, stat,
chmod) names a single component relative to the descriptor of the directory holding it, files opened with
``O_NOFOLLOW``. So a directory that is checked and then swapped for a link to somewhere else before the write
cannot redirect the write: the writer keeps writing into the directory it checked (the descriptor it holds),
and a link found where a directory should be stops the path there. Descriptors are kept for the life of the
``OutDir`` (a render has about a hundred directories) and closed with it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def parent(rel: str) -> str:
    """The directory holding ``rel`` ('' is the output directory itself)."""
    return rel.rpartition("/")[0]


def name(rel: str) -> str:
    return rel.rpartition("/")[2]


def ancestors(rel: str) -> Iterator[str]:
    """Directories above ``rel`` inside the output directory, nearest first ('' is the directory itself)."""
    while "/" in rel:
        rel = parent(rel)
        yield rel


class NotRegularFile(OSError):
    """A path that was to be read as a file is something else (a FIFO, a device, a directory)."""


class OutDir:
    """Paths below ``root``, resolved through directory descriptors without following any link (module doc)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._fds: dict[str, int] = {"": self.fd}
        self._states: dict[str, str] = {"": "dir"}

    def __enter__(self) -> "OutDir":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds, self._states = {}, {}

    def forget(self) -> None:
        """Drop what is known below the root (after another step changed the tree, e.g. a recovery)."""
        for rel, fd in list(self._fds.items()):
            if rel:
                os.close(fd)
        self._fds, self._states = {"": self.fd}, {"": "dir"}

    def path(self, rel: str) -> Path:
        """For messages only: the writer never opens this path by name."""
        return self.root / rel if rel else self.root

    # --- directories ------------------------------------------------------------------------------------------

    def dir_state(self, rel: str) -> str:
        """'dir', 'missing', or why files cannot be put in the directory ``rel`` (a link, not a directory)."""
        if rel not in self._states:
            up = self.dir_state(parent(rel))
            if up != "dir":
                self._states[rel] = up
            else:
                self._open_dir(rel)
        return self._states[rel]

    def _open_dir(self, rel: str) -> None:
        try:
            self._fds[rel] = os.open(name(rel), _DIR_FLAGS, dir_fd=self._fds[parent(rel)])
            self._states[rel] = "dir"
        except FileNotFoundError:
            self._states[rel] = "missing"
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            mode = self.lstat(rel).st_mode
            self._states[rel] = (f"{self.path(rel)} is a symbolic link" if stat.S_ISLNK(mode) else
                                 f"{self.path(rel)} is not a directory")

    def dir_fd(self, rel: str) -> int:
        """The descriptor of directory ``rel``; OSError(ENOTDIR) naming why when it cannot hold files."""
        state = self.dir_state(rel)
        if state != "dir":
            raise OSError(errno.ENOENT if state == "missing" else errno.ENOTDIR, state, str(self.path(rel)))
        return self._fds[rel]

    def _at(self, rel: str) -> tuple[int, str]:
        """(descriptor of the directory holding ``rel``, ``rel``'s last component)."""
        return self.dir_fd(parent(rel)), name(rel)

    def mkdir(self, rel: str) -> None:
        """Create directory ``rel`` (its parent must be one) and hold it; an existing directory is used,
        anything else there is an error."""
        fd, leaf = self._at(rel)
        try:
            os.mkdir(leaf, dir_fd=fd)
        except FileExistsError:
            pass
        self._states.pop(rel, None)
        if self.dir_state(rel) != "dir":
            raise OSError(errno.ENOTDIR, self.dir_state(rel), str(self.path(rel)))

    def rmdir(self, rel: str) -> bool:
        """Remove directory ``rel`` if it is empty; False when it holds something (kept)."""
        fd, leaf = self._at(rel)
        try:
            os.rmdir(leaf, dir_fd=fd)
        except OSError:
            return False
        old = self._fds.pop(rel, None)
        if old is not None:
            os.close(old)
        self._states[rel] = "missing"
        return True

    def scandir(self, rel: str):
        return os.scandir(self.dir_fd(rel))

    def listdir(self, rel: str = "") -> list[str]:
        return os.listdir(self.dir_fd(rel))

    # --- files --------------------------------------------------------------------------------------------------

    def lstat(self, rel: str) -> os.stat_result:
        fd, leaf = self._at(rel)
        return os.stat(leaf, dir_fd=fd, follow_symlinks=False)

    def exists(self, rel: str) -> bool:
        """Something (a file, a link, a directory) is at ``rel``, in a directory reachable without links."""
        if self.dir_state(parent(rel)) != "dir":
            return False
        try:
            self.lstat(rel)
        except FileNotFoundError:
            return False
        return True

    def open(self, rel: str, flags: int, mode: int = 0o644) -> int:
        fd, leaf = self._at(rel)
        return os.open(leaf, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)

    def read(self, rel: str, limit: int | None = None) -> bytes:
        """The bytes of regular file ``rel`` (NotRegularFile for anything else; ``limit`` in bytes)."""
        fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegularFile(errno.EINVAL, "not a regular file", str(self.path(rel)))
            chunks, size = [], 0
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
                size += len(chunk)
                if limit is not None and size > limit:
                    raise NotRegularFile(errno.EFBIG, f"larger than {limit >> 20} MiB", str(self.path(rel)))
            return b"".join(chunks)
        finally:
            os.close(fd)

    def look(self, rel: str) -> tuple[str, bytes, int]:
        """('file', bytes, mode) for a regular file; ('missing'|'link'|'dir'|'special'|why-blocked, b'', mode)."""
        where = self.dir_state(parent(rel))
        if where != "dir":
            return ("missing" if where == "missing" else where), b"", 0
        try:
            mode = self.lstat(rel).st_mode
        except FileNotFoundError:
            return "missing", b"", 0
        if stat.S_ISLNK(mode):
            return "link", b"", mode
        if stat.S_ISDIR(mode):
            return "dir", b"", mode
        if not stat.S_ISREG(mode):
            return "special", b"", mode
        return "file", self.read(rel), mode

    def write(self, rel: str, data: bytes, mode: int, *, fsync: bool) -> None:
        """Create or truncate ``rel`` (never through a link), write ``data``, set ``mode``, fsync if asked."""
        fd = self.open(rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` over ``dst`` (both resolved through their directories' descriptors)."""
        src_fd, src_leaf = self._at(src)
        dst_fd, dst_leaf = self._at(dst)
        os.replace(src_leaf, dst_leaf, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def unlink(self, rel: str) -> None:
        fd, leaf = self._at(rel)
        os.unlink(leaf, dir_fd=fd)

    def set_mode(self, rel: str, mode: int) -> None:
        """chmod regular file ``rel``; a link or anything else there is left alone."""
        try:
            fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fchmod(fd, mode)
        finally:
            os.close(fd)

    def fsync_dir(self, rel: str = "") -> None:
        """fsync directory ``rel`` ('' the output directory); one that is gone or blocked has nothing to flush."""
        if self.dir_state(rel) == "dir":
            os.fsync(self._fds[rel])

    def fsync_file(self, rel: str) -> None:
        """fsync file ``rel``; one that is gone, or a link, has nothing of ours to flush."""
        try:
            fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
