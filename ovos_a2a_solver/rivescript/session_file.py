# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One SQLite file (WAL) that keeps each conversation's variables across restarts.

One row per session: its variables as JSON and when it was last used (seconds since the
epoch). The file is private to the user (0600, in a 0700 directory).

Failure contract: nothing here ever raises to the caller.

* A file that is not a database, or fails SQLite's ``quick_check``, is moved aside
  (``<name>.corrupt-<time>``) with a warning, and a fresh file takes its place.
* A file that cannot be opened or written (permissions, full disk, locked too long)
  switches the file off with a warning; ``enabled`` is then False and every call is a
  no-op, so the caller keeps its memory in RAM only.
* A row whose JSON is unreadable is deleted with a warning; the session starts afresh.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from ovos_a2a_solver.local_state import private_dir, private_sqlite_file, use_wal

LOG = logging.getLogger("ovos_a2a_solver.rivescript")

BUSY_TIMEOUT_MS = 5000
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions ("
    " session_id TEXT PRIMARY KEY,"
    " variables TEXT NOT NULL,"
    " used REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sessions_by_use ON sessions (used)",
)


class SessionFile:
    """Session variables on disk: ``load``, ``save`` (with pruning), ``forget``, ``close``.

    Not thread-safe by itself: the caller serialises calls (``SessionMemory`` holds a lock).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open()
        except sqlite3.OperationalError as exc:  # cannot open or write: not corrupt
            self._switch_off("cannot be opened", exc)
        except sqlite3.DatabaseError as exc:     # not a database, or damaged
            if self._move_aside(exc):
                try:
                    self._db = self._open()
                except (sqlite3.Error, OSError) as again:
                    self._switch_off("cannot be recreated", again)
        except OSError as exc:
            self._switch_off("cannot be created", exc)

    @property
    def enabled(self) -> bool:
        """Whether sessions reach the file (False after an error: RAM only)."""
        return self._db is not None

    def load(self, session_id: str) -> tuple[dict[str, Any], float] | None:
        """The session's (variables, last use), or ``None`` if the file does not have it."""
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT variables, used FROM sessions WHERE session_id = ?",
                                   (session_id,)).fetchone()
        except sqlite3.Error as exc:
            self._switch_off("cannot be read", exc)
            return None
        if row is None:
            return None
        try:
            variables = json.loads(row[0])
            if not isinstance(variables, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            LOG.warning("session %r in %s was unreadable (%s); it starts afresh", session_id, self.path, exc)
            self.forget(session_id)
            return None
        return variables, float(row[1])

    def save(self, session_id: str, variables: dict[str, Any], used: float, *,
             idle_before: float, keep: int) -> None:
        """Store the session, then forget sessions last used before ``idle_before`` and all
        but the ``keep`` most recently used ones, in one transaction."""
        if self._db is None:
            return
        try:
            payload = json.dumps(variables, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            LOG.warning("session %r has variables that cannot be stored (%s); kept in memory only",
                        session_id, exc)
            return
        try:
            with self._db:
                self._db.execute("INSERT INTO sessions (session_id, variables, used) VALUES (?, ?, ?) "
                                 "ON CONFLICT (session_id) DO UPDATE SET variables = excluded.variables, "
                                 "used = excluded.used", (session_id, payload, used))
                self._db.execute("DELETE FROM sessions WHERE used < ?", (idle_before,))
                self._db.execute("DELETE FROM sessions WHERE session_id NOT IN "
                                 "(SELECT session_id FROM sessions ORDER BY used DESC LIMIT ?)", (keep,))
        except sqlite3.Error as exc:
            self._switch_off("cannot be written", exc)

    def forget(self, session_id: str) -> None:
        """Delete the session from the file."""
        if self._db is None:
            return
        try:
            with self._db:
                self._db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        except sqlite3.Error as exc:
            self._switch_off("cannot be written", exc)

    def forget_all(self) -> None:
        """Delete every session from the file."""
        if self._db is None:
            return
        try:
            with self._db:
                self._db.execute("DELETE FROM sessions")
        except sqlite3.Error as exc:
            self._switch_off("cannot be written", exc)

    def close(self) -> None:
        """Close the file; later calls are no-ops. May be called twice."""
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):  # closing: nothing left to lose
                db.close()

    # ---- internals ------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        private_dir(self.path.parent)
        private_sqlite_file(self.path)  # private before SQLite makes it (0644 by the umask)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                             isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            check = db.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {check[0] if check else 'no result'}")
            use_wal(db, BUSY_TIMEOUT_MS / 1000)
            db.execute("PRAGMA synchronous = NORMAL")
            for statement in SCHEMA:
                db.execute(statement)
        except BaseException:
            db.close()
            raise
        db.isolation_level = ""  # deferred transactions for ``with db:`` blocks
        return db

    def _move_aside(self, exc: Exception) -> bool:
        """Move the damaged file and its journal aside; False (and RAM only) if that fails."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        try:
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):  # a stale journal must never be replayed onto a new file
                if os.path.exists(f"{self.path}{suffix}"):
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        except OSError as move_error:
            LOG.warning("session file %s is damaged (%s) and cannot be moved aside (%s); "
                        "conversations are kept in memory only until restart", self.path, exc, move_error)
            return False
        LOG.warning("session file %s was damaged (%s); moved to %s, conversations start afresh",
                    self.path, exc, aside)
        return True

    def _switch_off(self, what: str, exc: Exception) -> None:
        LOG.warning("session file %s %s (%s); conversations are kept in memory only until restart",
                    self.path, what, exc)
        self.close()
