"""The SQLite store copies its WAL back into the database file on its reader thread, so the
WAL stays small while the event loop writes, and no write on the loop waits for it."""
from __future__ import annotations

import asyncio
import os
import sqlite3

from ovos_a2a_solver.bridge.storage.database import SqliteDatabase

ROW_BYTES = 1024
ROWS = 6000  # 6 MB written: some 40 MB of WAL pages, were they never copied back


def test_the_wal_stays_small_while_the_loop_writes_and_every_row_is_kept(tmp_path):
    path = tmp_path / "bridge.db"

    async def write() -> tuple[int, int]:
        db = SqliteDatabase(path)
        try:
            await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            largest_wal = 0
            for n in range(ROWS):
                await db.execute("INSERT INTO t (id, data) VALUES (:id, :data)",
                                 {"id": n, "data": os.urandom(ROW_BYTES)})
                if n % 100 == 0:
                    largest_wal = max(largest_wal, os.path.getsize(str(path) + "-wal"))
            rows = (await db.fetch("SELECT count(*) AS n FROM t"))[0]["n"]
            return largest_wal, rows
        finally:
            await db.aclose()

    largest_wal, rows = asyncio.run(write())
    assert rows == ROWS
    # the WAL holds what was written since the last checkpoint (about 3 MB here), not all of it
    assert largest_wal < ROWS * ROW_BYTES, f"the WAL reached {largest_wal} bytes"
    # every row is in the database file itself once the store is closed
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM t").fetchone()[0] == ROWS
