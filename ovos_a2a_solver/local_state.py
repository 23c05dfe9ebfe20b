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
"""
from __future__ import annotations

import errno
import logging
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

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
