# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Whose a task store is: one bridge at a time, so two bridges never continue each other's tasks.

A SQLite store is shared only by the workers of one ``serve --workers N`` (they coordinate
through ``cluster.siblings``); any other bridge that runs on the same file would take the
first one's running work for an earlier run's and fail it, and would answer its tasks with
another persona. So the process that serves it (the parent, with workers) holds a lock
next to the file, ``bridge.sqlite3.owner``, which names its persona, its address and its
process id; a second bridge is refused at start with one line that says which bridge holds
it and how to choose another store. The lock goes with the process, also on ``kill -9``.

The lock file is the bridge user's alone (0600, in a directory of that user's alone; a link
in its place is not followed). What it names is only what the last bridge wrote: when the
lock is held by a process other than the one named (a process of another user that opened
the file while it was still readable, say), the refusal names the process that holds it, as
Linux's ``/proc/locks`` tells, and never a bridge that has ended.

On PostgreSQL, replicas of one bridge share the store by design; a replica of another
persona is refused while a live replica (an unexpired lease, see ``cluster.replicas``)
serves a different one.
"""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ovos_a2a_solver.local_state import open_private_file, private_dir, private_sqlite_file

#: where Linux lists the file locks held, with the process that took each
PROC_LOCKS = "/proc/locks"

#: next to the SQLite file: the lock its bridge holds, and who that is
OWNER_SUFFIX = ".owner"


class StoreTaken(Exception):
    """The store is in use by another live bridge; ``str()`` is one line for a person."""


@dataclass(frozen=True)
class Holder:
    """The bridge that holds a store: its persona, its public URL, its process id."""

    persona: str
    url: str
    pid: int

    def describe(self) -> str:
        return f'the bridge of persona "{self.persona}" at {self.url} (process {self.pid})'


class SqliteStoreLock:
    """Holds the lock of a SQLite store for this process (and its forked workers) until
    :meth:`release` or the process ends."""

    def __init__(self, store_file: Path, holder: Holder) -> None:
        self.store_file = Path(store_file)
        self.path = Path(str(store_file) + OWNER_SUFFIX)
        self.holder = holder
        self._file = None

    def take(self) -> "SqliteStoreLock":
        """Take the lock, or raise :class:`StoreTaken` naming the bridge that has it. Raises
        ``local_state.NotPrivate`` for a directory that is not this user's alone, or a link or
        another user's file in the place of the lock file or of the store's (which is made
        private here, before anything opens it)."""
        private_dir(self.path.parent)
        private_sqlite_file(self.store_file)
        file = os.fdopen(open_private_file(self.path), "r+", encoding="utf-8")
        try:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreTaken(self._refusal(file)) from None
            file.seek(0)
            file.truncate()
            file.write(json.dumps({"persona": self.holder.persona, "url": self.holder.url, "pid": self.holder.pid}))
            file.flush()
        except BaseException:
            file.close()
            raise
        self._file = file
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the lock
            self._file = None

    def _refusal(self, file) -> str:
        file.seek(0)
        named = read_holder(file.read())
        holders = lock_holders(os.fstat(file.fileno()))
        if named is not None and (named.pid in holders if holders else process_exists(named.pid)):
            who = named.describe()
        elif holders:
            who = f"another process ({', '.join(map(describe_process, holders))})"
            who += ", not the bridge the lock file names" if named is not None else ""
        elif named is not None:
            who = "another process (not the bridge named in the file)"
        else:
            who = "another process"
        return (f"the task store {self.path.with_suffix('')} is in use by {who}: bridges share a SQLite store only as "
                f"--workers of one serve; give this one its own with --state-dir DIR (or stop that one)")


def read_holder(text: str) -> Holder | None:
    """The holder a lock file names, or None when it names none (being written, or damaged)."""
    try:
        data = json.loads(text)
        return Holder(str(data["persona"]), str(data["url"]), int(data["pid"]))
    except (ValueError, KeyError, TypeError):
        return None


def lock_holders(file: os.stat_result) -> list[int] | None:
    """The processes that hold a ``flock`` on the file ``file`` (its ``stat``), as
    :data:`PROC_LOCKS` lists them; None when it cannot be read. A lock whose taker has ended
    (its descriptor lives on in a child) is listed with no process, so it is left out."""
    try:
        with open(PROC_LOCKS, encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return None
    device = f"{os.major(file.st_dev):02x}:{os.minor(file.st_dev):02x}:{file.st_ino}"
    on_file, on_inode = [], []
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a waiter's line has "->" after the number
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            pid = int(fields[4])
        except ValueError:
            continue
        if pid <= 0:
            continue
        if fields[5] == device:
            on_file.append(pid)
        elif fields[5].rsplit(":", 1)[-1] == str(file.st_ino):
            on_inode.append(pid)  # the same inode on a device named otherwise (an overlay file system)
    return sorted(set(on_file or on_inode))


def process_exists(pid: int) -> bool:
    """Whether a process ``pid`` runs (of any user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_process(pid: int) -> str:
    """``process 4242 of user nobody`` (its user, when ``/proc`` tells it)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            uid = next(int(line.split()[2]) for line in status if line.startswith("Uid:"))  # the effective one
    except (OSError, StopIteration, ValueError, IndexError):
        return f"process {pid}"
    try:
        import pwd

        return f"process {pid} of user {pwd.getpwuid(uid).pw_name}"
    except (ImportError, KeyError):
        return f"process {pid} of uid {uid}"


def this_bridge(persona: str, url: str) -> Holder:
    return Holder(persona, url, os.getpid())
