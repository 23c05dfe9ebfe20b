"""The SQLite store commits the writes asked for in one turn of the event loop together (a
group commit): one transaction for all of them, each write's own error handed to it alone, no
write said to be committed when its transaction was lost, and a write whose caller gave up
before its turn not made. What is committed is read back on a connection of its own."""
from __future__ import annotations

import asyncio
import sqlite3

import pytest

from ovos_a2a_solver.bridge.storage.database import SqliteDatabase

WRITES = 20


def rows_on_disk(path) -> list[int]:
    """The table's rows, as another process would read them."""
    conn = sqlite3.connect(path)
    try:
        return sorted(row[0] for row in conn.execute("SELECT id FROM t"))
    finally:
        conn.close()


def insert(n: int):
    return "INSERT INTO t (id) VALUES (:id)", {"id": n}


def run(path, scenario):
    async def main():
        db = SqliteDatabase(path)
        try:
            await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB)")
            return await scenario(db)
        finally:
            await db.aclose()

    return asyncio.run(main())


def test_the_writes_of_one_turn_are_one_transaction(tmp_path):
    path = tmp_path / "bridge.db"

    async def scenario(db):
        statements: list[str] = []
        await db.write(lambda conn: conn.set_trace_callback(statements.append))
        statements.clear()
        counts = await asyncio.gather(*(db.execute(*insert(n)) for n in range(WRITES)))
        seen = list(statements)
        await db.write(lambda conn: conn.set_trace_callback(None))
        return counts, seen

    counts, statements = run(path, scenario)
    assert counts == [1] * WRITES
    assert statements.count("BEGIN IMMEDIATE") == 1 and statements.count("COMMIT") == 1, statements
    assert rows_on_disk(path) == list(range(WRITES))


def test_a_write_that_fails_fails_alone(tmp_path):
    path = tmp_path / "bridge.db"

    async def scenario(db):
        return await asyncio.gather(db.execute(*insert(1)), db.execute(*insert(1)), db.execute(*insert(2)),
                                    return_exceptions=True)

    first, again, other = run(path, scenario)
    assert first == 1 and other == 1
    assert isinstance(again, sqlite3.IntegrityError), again
    assert rows_on_disk(path) == [1, 2]


def test_no_write_is_said_to_be_committed_when_its_transaction_was_lost(tmp_path):
    """A full disk rolls back the whole transaction: every write of it fails, the one that
    filled the disk and the one before it alike, and the next turn's writes are made."""
    path = tmp_path / "bridge.db"

    def fill_the_disk(conn):
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        try:
            conn.execute("INSERT INTO t (id, data) VALUES (99, randomblob(1000000))")
        finally:
            conn.execute("PRAGMA max_page_count = 1073741823")

    async def scenario(db):
        lost = await asyncio.gather(db.execute(*insert(1)), db.write(fill_the_disk), return_exceptions=True)
        after = await db.execute(*insert(2))
        return lost, after

    (before, filling), after = run(path, scenario)
    assert isinstance(filling, sqlite3.OperationalError) and filling.sqlite_errorcode == sqlite3.SQLITE_FULL
    assert before is filling, f"a write of a lost transaction was answered {before!r}"
    assert after == 1
    assert rows_on_disk(path) == [2]


@pytest.mark.parametrize("given_up", [1, WRITES // 2])
def test_a_write_given_up_before_its_turn_is_not_made(tmp_path, given_up):
    path = tmp_path / "bridge.db"

    async def scenario(db):
        writes = [asyncio.create_task(db.execute(*insert(n))) for n in range(WRITES)]
        await asyncio.sleep(0)  # each has asked for its write; their turn comes next
        for write in writes[:given_up]:
            write.cancel()
        results = await asyncio.gather(*writes, return_exceptions=True)
        return results

    results = run(path, scenario)
    assert all(isinstance(r, asyncio.CancelledError) for r in results[:given_up]), results
    assert results[given_up:] == [1] * (WRITES - given_up)
    assert rows_on_disk(path) == list(range(given_up, WRITES))

