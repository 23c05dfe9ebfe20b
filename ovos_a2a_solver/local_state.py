# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the package keeps its files on this machine, and how it opens the SQLite ones.

A shared leaf module: the plugin half (its conversation store), the bridge (its task
database) and the RiveScript engine (its session file) all take these two rules from here,
and it imports nothing of any of them.

* :func:`package_state_dir`: ``$XDG_STATE_HOME/ovos_a2a_solver`` (``~/.local/state/ovos_a2a_solver``
  when ``XDG_STATE_HOME`` is unset).
* :func:`use_wal`: switch a SQLite file to WAL while other processes may be opening it too.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import sqlite3

PACKAGE_DIR_NAME = "ovos_a2a_solver"
WAL_RETRY_SECONDS = 0.01


def package_state_dir() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver`` (``~/.local/state/ovos_a2a_solver`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / PACKAGE_DIR_NAME


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
