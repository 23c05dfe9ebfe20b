# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Task rows whose stored copy cannot be read, for the operator (``ovos-a2a store check``).

The bridge answers such a task as unreadable wherever a caller meets it (see :mod:`.rows`).
Here an operator finds them all (:func:`find_unreadable`: a scan of the whole task table, in
batches by id, which the bridge never does on its own) and moves each into
:data:`SIDE_TABLE`, with its bytes, the time and the parse error (:func:`move_aside`): one
transaction each, and only if its bytes are still those found damaged (a row the bridge wrote
again meanwhile is readable now, and stays). Nothing stored is lost, and the task is then
simply not found.

Both work while the bridge runs (SQLite's WAL lets a second process read and write; on
PostgreSQL each move is one statement).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass

from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, Sql
from ovos_a2a_solver.bridge.storage.rows import TaskRowUnreadable, parse_task_row

#: where rows that cannot be read are moved
SIDE_TABLE = "bridge_tasks_unreadable"

#: the side table: a task row as it was (``task`` its raw bytes), when it was moved, and why
SQLITE_SIDE_TABLE = (f"CREATE TABLE IF NOT EXISTS {SIDE_TABLE} (id TEXT NOT NULL, owner TEXT NOT NULL, "
                     "context_id TEXT NOT NULL, state INTEGER NOT NULL, updated INTEGER NOT NULL, task BLOB NOT NULL, "
                     "moved_at TEXT NOT NULL, error TEXT NOT NULL)")
POSTGRES_SIDE_TABLE = (f"CREATE TABLE IF NOT EXISTS {SIDE_TABLE} (id TEXT NOT NULL, owner TEXT NOT NULL, "
                       "context_id TEXT NOT NULL, state INTEGER NOT NULL, updated BIGINT NOT NULL, "
                       "task BYTEA NOT NULL, moved_at TIMESTAMPTZ NOT NULL DEFAULT now(), error TEXT NOT NULL)")

#: rows read per statement while scanning
SCAN_BATCH = 500


@dataclass(frozen=True)
class UnreadableRow:
    """A row of ``bridge_tasks`` whose bytes are not its task."""

    task_id: str
    owner: str
    size: int
    error: str
    raw: bytes

    def as_dict(self) -> dict:
        """What a person or a script is shown of it (not its bytes)."""
        return {"id": self.task_id, "owner": self.owner, "size": self.size, "error": self.error}


async def has_task_table(db: Sql) -> bool:
    """Whether the database holds the bridge's task table (a bridge ever started on it)."""
    if isinstance(db, SqliteDatabase):
        rows = await db.fetch("SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'bridge_tasks'")
        return bool(rows)
    rows = await db.fetch("SELECT to_regclass('bridge_tasks') IS NOT NULL AS present")
    return bool(rows[0]["present"])


async def find_unreadable(db: Sql) -> tuple[int, list[UnreadableRow]]:
    """How many task rows there are, and those that cannot be read, in the order of their ids."""
    found: list[UnreadableRow] = []
    after, scanned = "", 0
    while True:
        rows = await db.fetch("SELECT id, owner, task FROM bridge_tasks WHERE id > :after ORDER BY id LIMIT :n",
                              {"after": after, "n": SCAN_BATCH})
        for row in rows:
            raw = bytes(row["task"])
            try:
                parse_task_row(row["id"], raw)
            except TaskRowUnreadable as exc:
                found.append(UnreadableRow(row["id"], row["owner"], len(raw), str(exc), raw))
        scanned += len(rows)
        if len(rows) < SCAN_BATCH:
            return scanned, found
        after = rows[-1]["id"]


def _move_in_sqlite(conn, row: UnreadableRow, moved_at: str) -> int:
    """The move of :func:`move_aside` in the write transaction of ``conn``, undone as a whole if
    either half fails."""
    conn.execute("SAVEPOINT move_aside")
    try:
        moved = conn.execute(
            f"INSERT INTO {SIDE_TABLE} (id, owner, context_id, state, updated, task, moved_at, error) "
            "SELECT id, owner, context_id, state, updated, task, ?, ? FROM bridge_tasks "
            "WHERE id = ? AND owner = ? AND task = ?", (moved_at, row.error, row.task_id, row.owner, row.raw)).rowcount
        if moved:
            conn.execute("DELETE FROM bridge_tasks WHERE id = ? AND owner = ? AND task = ?",
                         (row.task_id, row.owner, row.raw))
    except BaseException:
        conn.execute("ROLLBACK TO move_aside")
        conn.execute("RELEASE move_aside")
        raise
    conn.execute("RELEASE move_aside")
    return moved


async def move_aside(db: Sql, row: UnreadableRow) -> bool:
    """Move ``row`` from ``bridge_tasks`` into :data:`SIDE_TABLE` in one transaction, if its
    bytes are still those found; whether it was moved."""
    if isinstance(db, SqliteDatabase):
        await db.execute(SQLITE_SIDE_TABLE)
        moved_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        return bool(await db.write(_move_in_sqlite, row, moved_at))
    await db.execute(POSTGRES_SIDE_TABLE)
    return bool(await db.execute(
        "WITH gone AS (DELETE FROM bridge_tasks WHERE id = :id AND owner = :owner AND task = :raw "
        "RETURNING id, owner, context_id, state, updated, task) "
        f"INSERT INTO {SIDE_TABLE} (id, owner, context_id, state, updated, task, error) "
        "SELECT id, owner, context_id, state, updated, task, :error FROM gone",
        {"id": row.task_id, "owner": row.owner, "raw": row.raw, "error": row.error}))
