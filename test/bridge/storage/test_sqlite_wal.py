"""The SQLite store copies its WAL back into the database file on a thread of its own: the WAL
stays within its bound while the event loop writes, and no write on the loop waits for a
checkpoint (nor for a long read) until the WAL outgrew that bound."""
from __future__ import annotations

import asyncio
import os
import sqlite3
import threading

from ovos_a2a_solver.bridge.storage.database import CHECKPOINT_CHANGES, SqliteDatabase

ROW_BYTES = 1024
ROWS = 6000  # 6 MB written: some 40 MB of WAL pages, were they never copied back
WAL_BOUND = 2 * 1024 * 1024
#: what the WAL may hold beyond its bound: the writes of two checkpoints' intervals (the one that
#: found it past its bound, and the one that copies it whole), a page or two each
SLACK = 2 * CHECKPOINT_CHANGES * 2 * 4120
WRITE_WITHIN = 10.0  # seconds; a write takes well under a millisecond


def test_the_wal_stays_within_its_bound_while_the_loop_writes_and_every_row_is_kept(tmp_path):
    path = tmp_path / "bridge.db"

    async def write() -> tuple[list[int], int]:
        db = SqliteDatabase(path, most_wal_bytes=WAL_BOUND)
        try:
            await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            sizes = []
            for n in range(ROWS):
                await db.execute("INSERT INTO t (id, data) VALUES (:id, :data)",
                                 {"id": n, "data": os.urandom(ROW_BYTES)})
                await asyncio.sleep(0)  # as a server does between requests
                if n % 100 == 0:
                    sizes.append(os.path.getsize(str(path) + "-wal"))
            rows = (await db.fetch("SELECT count(*) AS n FROM t"))[0]["n"]
            return sizes, rows
        finally:
            await db.aclose()

    sizes, rows = asyncio.run(write())
    assert rows == ROWS
    assert max(sizes) <= WAL_BOUND + SLACK, f"the WAL reached {max(sizes)} bytes"
    # past its bound, it was started again and its file cut back
    assert any(later < earlier for earlier, later in zip(sizes, sizes[1:])), f"the WAL only grew: {sizes}"
    # every row is in the database file itself once the store is closed
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM t").fetchone()[0] == ROWS


def test_writes_go_on_while_a_long_read_runs_and_checkpoints_fall_due(tmp_path):
    """A listing that reads for a long time holds the reader thread; the checkpoints that fall due
    meanwhile run on their own thread, and the loop's writes wait for neither."""
    path = tmp_path / "bridge.db"
    release = threading.Event()

    async def write_during_a_long_read() -> tuple[int, bool]:
        db = SqliteDatabase(path)
        try:
            await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            reading = asyncio.ensure_future(db.call(lambda conn: release.wait(60)))
            await asyncio.sleep(0.05)
            for n in range(CHECKPOINT_CHANGES * 4):  # four checkpoints fall due
                await asyncio.wait_for(db.execute("INSERT INTO t (id, data) VALUES (:id, :data)",
                                                  {"id": n, "data": os.urandom(ROW_BYTES)}), WRITE_WITHIN)
                await asyncio.sleep(0)
            still_reading = not reading.done()
            release.set()
            await asyncio.wait_for(reading, WRITE_WITHIN)
            return (await db.fetch("SELECT count(*) AS n FROM t"))[0]["n"], still_reading
        finally:
            release.set()
            await db.aclose()

    rows, still_reading = asyncio.run(write_during_a_long_read())
    assert still_reading, "the long read ended before the writes did: the test proved nothing"
    assert rows == CHECKPOINT_CHANGES * 4
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM t").fetchone()[0] == CHECKPOINT_CHANGES * 4
