# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the package keeps its files on this machine, how it keeps them private, and how it
opens the SQLite ones.

A shared leaf module: the plugin half (its conversation store), the bridge (its task
database) and the RiveScript engine (its session file) all take these rules from here,
and it imports nothing of any of them.

* :func:`package_state_dir`: ``$XDG_STATE_HOME/ovos_a2a_solver`` (``~/.local/state/ovos_a2a_solver``
  when ``XDG_STATE_HOME`` is unset).
* :func:`private_dir`, :func:`open_private_file`, :func:`private_sqlite_file`: the user's files
  are the user's alone, whatever the umask: directories 0700, files 0600, a directory that
  another user owns or may write to refused (:class:`NotPrivate`), no link followed to a file
  the package writes.
* :func:`use_wal`: switch a SQLite file to WAL while other processes may be opening it too.
* :class:`SharedJsonFile`: one JSON object of the user's, in a file that several processes share
  (the plugin's conversation store and its sign-in tokens).
"""
from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:  # POSIX advisory locks; elsewhere the thread lock alone guards the file
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

if TYPE_CHECKING:  # pragma: no cover
    import sqlite3

LOG = logging.getLogger("ovos_a2a_solver")

PACKAGE_DIR_NAME = "ovos_a2a_solver"
WAL_RETRY_SECONDS = 0.01

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
#: the files SQLite keeps beside a database in WAL mode
SQLITE_SIDE_SUFFIXES = ("-wal", "-shm")


def package_state_dir() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver`` (``~/.local/state/ovos_a2a_solver`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / PACKAGE_DIR_NAME


class NotPrivate(PermissionError):
    """A place the package will not keep the user's files in: a directory that belongs to
    another user or that other users may write to (they could read what is written there, or
    plant links that make the package overwrite other files), a link where a file should be,
    or a file of another user. ``str()`` is one line for a person."""


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def private_dir(path: str | os.PathLike) -> Path:
    """The directory ``path``, made if missing (with its missing parents) mode 0700 whatever the
    umask, and checked to be this user's alone; returned as a ``Path``.

    Raises :class:`NotPrivate` when it belongs to another user or when others (its group or
    anyone) may write to it. An existing directory of the package's own (under
    :func:`package_state_dir`) that others may read is made 0700, and the log says so; one
    the user chose elsewhere is left as it is (the files in it are 0600)."""
    path = Path(path)
    missing = []
    for each in (path, *path.parents):
        if each.exists():
            break
        missing.append(each)
    for each in reversed(missing):
        try:
            os.mkdir(each, PRIVATE_DIR_MODE)
        except FileExistsError:  # made meanwhile, by another process (checked below, for the last)
            continue
        os.chmod(each, PRIVATE_DIR_MODE)  # the umask may have taken bits away
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.geteuid():
        raise NotPrivate(f"{path} belongs to user {_user_name(st.st_uid)}, not to {_user_name(os.geteuid())}")
    if mode & 0o022:
        raise NotPrivate(f"other users may write to {path} (mode {mode:04o})")
    if mode & 0o077 and _is_own(path):
        os.chmod(path, PRIVATE_DIR_MODE)
        LOG.warning("%s was open to other users (mode %04o); it is this user's alone now (0700)", path, mode)
    return path


def _is_own(path: Path) -> bool:
    """Whether ``path`` is the package's own state directory or one in it."""
    own = package_state_dir()
    return path == own or own in path.parents


def open_private_file(path: str | os.PathLike, flags: int = os.O_RDWR, create: bool = True) -> int:
    """A descriptor of the file ``path`` (``flags``: how to open it; made if missing, unless not
    ``create``), mode 0600 whatever the umask. A link in its place is not followed, a file of
    another user not used (:class:`NotPrivate`); an existing file that others may read is made
    0600, and the log says so. The descriptor is not inherited by programs this process runs."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        descriptor = os.open(path, flags, PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPrivate(f"{path} is a symbolic link, which is not followed to a file of this user's") from None
        raise
    try:
        st = os.fstat(descriptor)
        if not stat.S_ISREG(st.st_mode):
            raise NotPrivate(f"{path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise NotPrivate(f"{path} belongs to user {_user_name(st.st_uid)}, not to {_user_name(os.geteuid())}")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            os.fchmod(descriptor, PRIVATE_FILE_MODE)
            LOG.warning("%s was open to other users (mode %04o); it is this user's alone now (0600)", path, mode)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def private_sqlite_file(path: str | os.PathLike) -> None:
    """Make the SQLite file ``path`` private before ``sqlite3`` opens it: create it 0600 (SQLite
    would make it by the umask, 0644 as a rule), make an existing one, and its ``-wal`` and
    ``-shm`` files, 0600 if they were open to others. SQLite makes its ``-wal`` and ``-shm``
    files with the mode of the database file, so they come out 0600 too. A link in the place
    of any of them is refused (:class:`NotPrivate`)."""
    os.close(open_private_file(path, os.O_RDONLY))
    for suffix in SQLITE_SIDE_SUFFIXES:
        try:
            os.close(open_private_file(f"{os.fspath(path)}{suffix}", os.O_RDONLY, create=False))
        except FileNotFoundError:
            continue


def use_wal(connection: "sqlite3.Connection", timeout: float) -> str:
    """Put the file of ``connection`` in WAL mode (a setting kept in the file); return the
    journal mode it has now ("wal", unless the file system cannot do it).

    The switch needs the file to itself, and SQLite answers "database is locked" at once,
    without waiting for its busy timeout, while another connection holds it: two worker
    processes that open a new file together would see one of them fail. So the switch is
    tried again until ``timeout`` seconds have passed (once another process has made the
    switch there is nothing left to do). Raises ``sqlite3.OperationalError`` after that.
    """
    import sqlite3

    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_SECONDS)
            continue
        return str(mode[0]).lower() if mode else ""


class SharedJsonFile:
    """One JSON object of the user's, ``{"version": V, FIELD: data}``, kept in a file that several
    processes share (the plugin inside ovos-core and the ``ovos-a2a`` command line), or in memory
    only when there is no path.

    Read again only when another process replaced it; changed in a :meth:`transaction`, under an
    advisory lock (``<name>.lock``), and written whole and atomically (temp file, fsync, rename),
    mode 0600 in a private directory. A file that cannot be read (not JSON, another version, what
    ``validated`` refuses) is moved aside to ``<name>.corrupt-<time>`` and logged, never fatal; one
    that cannot be written (a read-only or missing directory) is logged once, and the data lives on
    in memory. ``what`` names the file in those lines ("conversation file").
    """

    def __init__(self, path: str | os.PathLike | None, what: str, field: str, version: int,
                 validated: Callable[[Any], dict]) -> None:
        """``validated``: the data of a file's ``field``, checked (raise ``ValueError`` or
        ``TypeError`` for a file to set aside)."""
        self.path = Path(path) if path is not None else None
        self.what, self.field, self.version, self._validated = what, field, version, validated
        self.lock = threading.RLock()  # the threads of this process; hold it around every use of ``data``
        self.data: dict = {}
        self._stamp: tuple[int, int, int] | None = None
        self._unwritable: str | None = None  # why the file cannot be written, once logged

    def current(self) -> dict:
        """The data as the file has it now (read again if another process replaced it); hold :attr:`lock`."""
        if self.path is None:
            return self.data
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return self.data
        self._stamp = stamp
        if stamp is None:
            self.data = {}
            return self.data
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict) or raw.get("version") != self.version \
                    or not isinstance(raw.get(self.field), dict):
                raise ValueError("unexpected layout")
            self.data = self._validated(raw[self.field])
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            self._set_aside(exc)  # RecursionError: JSON nested too deep to read
        return self.data

    @contextlib.contextmanager
    def transaction(self) -> Iterator[dict]:
        """The current data to change; written back when the block ends (unless it raised)."""
        with self.lock, self._file_lock():
            yield self.current()
            try:
                self._write()
            except OSError as exc:
                self._cannot_write(exc)
            else:
                if self._unwritable is not None:
                    LOG.warning("%s %s is written again", self.what, self.path)
                    self._unwritable = None

    def _cannot_write(self, exc: OSError) -> None:
        """Keep the data in memory; say so once (not on every change)."""
        reason = f"{type(exc).__name__}: {exc}"
        if self._unwritable is None:
            LOG.warning("cannot write %s %s (%s); it is kept in memory only until it can be written",
                        self.what, self.path, reason)
        self._unwritable = reason

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        if self.path is None or fcntl is None:
            yield
            return
        try:
            private_dir(self.path.parent)
            lock_file = os.fdopen(open_private_file(self.path.with_name(self.path.name + ".lock")), "a")
        except OSError as exc:
            self._cannot_write(exc)
            yield  # the thread lock alone guards the data
            return
        with lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _file_stamp(self) -> tuple[int, int, int] | None:
        """What identifies one version of the file: every write replaces it, so a new inode."""
        try:
            st = self.path.stat()
        except OSError:  # missing, or in a directory that cannot be read
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _set_aside(self, exc: Exception) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        try:
            os.replace(self.path, aside)
            LOG.warning("%s %s was unreadable (%s); moved to %s and started afresh", self.what, self.path, exc, aside)
        except OSError as move_error:
            LOG.warning("%s %s was unreadable (%s) and could not be moved aside (%s)", self.what, self.path, exc,
                        move_error)
        self.data = {}
        self._stamp = self._file_stamp()

    def _write(self) -> None:
        if self.path is None:
            return
        private_dir(self.path.parent)
        payload = json.dumps({"version": self.version, self.field: self.data}, separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, PRIVATE_FILE_MODE)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._stamp = self._file_stamp()
