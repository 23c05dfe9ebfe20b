# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Switching a SQLite file to WAL when other processes may be opening it at the same moment."""
from __future__ import annotations

import sqlite3
import time

RETRY_SECONDS = 0.01


def use_wal(connection: sqlite3.Connection, timeout: float) -> str:
    """Put the file of ``connection`` in WAL mode (a setting kept in the file); return the
    journal mode it has now ("wal", unless the file system cannot do it).

    The switch needs the file to itself, and SQLite answers "database is locked" at once,
    without waiting for its busy timeout, while another connection holds it: two worker
    processes that open a new file together would see one of them fail. So the switch is
    tried again until ``timeout`` seconds have passed (once another process has made the
    switch there is nothing left to do). Raises ``sqlite3.OperationalError`` after that.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(RETRY_SECONDS)
            continue
        return str(mode[0]).lower() if mode else ""
