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
        self.path = Path(str(store_file) + OWNER_SUFFIX)
        self.holder = holder
        self._file = None

    def take(self) -> "SqliteStoreLock":
        """Take the lock, or raise :class:`StoreTaken` naming the bridge that has it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = open(self.path, "a+", encoding="utf-8")
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
        other = read_holder(file.read())
        who = other.describe() if other else "another bridge"
        return (f"the task store {self.path.with_suffix('')} is in use by {who}: bridges share a SQLite store only as "
                f"--workers of one serve; give this one its own with --state-dir DIR (or stop that one)")


def read_holder(text: str) -> Holder | None:
    """The holder a lock file names, or None when it names none (being written, or damaged)."""
    try:
        data = json.loads(text)
        return Holder(str(data["persona"]), str(data["url"]), int(data["pid"]))
    except (ValueError, KeyError, TypeError):
        return None


def this_bridge(persona: str, url: str) -> Holder:
    return Holder(persona, url, os.getpid())
