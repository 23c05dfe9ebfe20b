# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the bridge keeps its state: SQLite by default, PostgreSQL by URL.

SQLite (one bridge process) is the stdlib ``sqlite3``, WAL journal (durable across
crashes, readers never blocked), no ORM: point statements on the event loop (writes
committed in groups), listings on a thread. It holds the tasks (:class:`SqliteTaskStore`,
the a2a-sdk ``TaskStore`` interface) and the operations. A URL such as
``postgresql+asyncpg://...`` (several bridges sharing one database) uses asyncpg and the
bridge's versioned ``PostgresTaskStore`` instead (:mod:`.postgres`).

Both offer the operation log the same small interface, :class:`Sql`: ``execute`` and
``fetch`` of plain SQL with ``:name`` parameters, valid in SQLite and PostgreSQL alike.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksResponse, Task

from ovos_a2a_solver.bridge.storage.database_url import sqlite_path
from ovos_a2a_solver.bridge.storage.rows import (ENDED_TASKS_INDEX, list_response, list_statements, read_task_row,
                                                  updated_position)
from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds
from ovos_a2a_solver.local_state import private_dir, private_sqlite_file, use_wal
from ovos_a2a_solver.states import ACTIVE, TERMINAL

LOG = logging.getLogger("ovos_a2a_solver.bridge")


class Sql(Protocol):
    """Plain SQL against the bridge's database."""

    async def execute(self, sql: str, params: dict | None = None) -> int:
        """Run a statement; return the number of rows it changed."""

    async def fetch(self, sql: str, params: dict | None = None) -> list[dict]:
        """Run a statement that returns rows; return them as dicts. A write that returns
        rows (``UPDATE … RETURNING``) is committed."""

    async def execute_serialized(self, key: str, sql: str, params: dict | None = None) -> int:
        """:meth:`execute`, while no other statement serialized on ``key`` runs, in any
        process (for a check and a write that must be one: a count and an insert)."""

    def schema_lock(self) -> "contextlib.AbstractAsyncContextManager":
        """Held while a process makes or changes the schema, so that processes starting together
        on a new database do not make it twice."""

    async def aclose(self) -> None:
        """Release the connection."""

    #: a subquery of the ids of the finished tasks (completed, failed, canceled, rejected) of
    #: the owner ``:owner``
    FINISHED_TASK_IDS: str


class StoreUnusable(Exception):
    """The task store could not be prepared at start; ``str()`` says why, in the database's
    own words, for a person."""

    status = 1  # a problem of the machine or the network, not of a setting


def in_words(exc: BaseException) -> str:
    """What a database error says, without its wrapping: the driver's message (SQLAlchemy's
    ``orig``), not the class names and the link to SQLAlchemy's error page."""
    cause = getattr(exc, "orig", None) or exc
    text = " ".join(str(cause).split())
    text = re.sub(r"^\([\w.]+\)\s*", "", text)          # "(sqlalchemy.dialects....Error) "
    text = re.sub(r"^<class '[\w.]+'>:\s*", "", text)      # "<class 'asyncpg.exceptions....'>: "
    text = re.sub(r"\s*\(Background on this error at: \S+\)$", "", text)
    return text or type(cause).__name__


async def add_column(db: "Sql", table: str, column: str, definition: str) -> None:
    """Add ``column`` (``definition``: its type and default) to a ``table`` made before it
    existed. Several processes may start on one database at once (workers, replicas): one adds
    it, and the others find it there. On PostgreSQL the column is looked up first: an ``ALTER``
    takes the table's strongest lock, even when there is nothing to add."""
    if isinstance(db, SqliteDatabase):
        columns = {row["name"] for row in await db.fetch(f"SELECT name FROM pragma_table_info('{table}')")}
        if column not in columns:
            try:
                await db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):
                    raise
        return
    columns = {row["name"] for row in await db.fetch(
        "SELECT column_name AS name FROM information_schema.columns WHERE table_name = :table", {"table": table})}
    if column not in columns:
        await db.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {definition}")


BUSY_SECONDS = 30  # how long a statement waits for another process's write to end


#: rows written on the event loop after which the WAL is copied into the database file (a
#: checkpoint). Rows written by triggers count too (a message writes about seven, with the
#: task counts'): some 3 MB of WAL between checkpoints, under SQLite's own default of 4 MB.
CHECKPOINT_CHANGES = 500

#: how large the WAL file may grow before writes wait for a checkpoint to copy all of it, so that
#: the next write starts it again from its beginning, and cuts the file back to this size (see
#: :class:`SqliteDatabase`)
MOST_WAL_BYTES = 32 * 1024 * 1024


class SqliteDatabase:
    """SQLite in WAL mode, three connections: point statements run right on the event loop
    (a commit without fsync takes tens of microseconds, far less than a hop to another
    thread), long reads (listings) on a thread of their own, and checkpoints on a third.

    Writes are committed in groups (:meth:`write`): those asked for in one turn of the event
    loop go into one transaction at the start of the next, and each caller hears of its
    write once it is committed. Under load a commit then holds the writes of several
    messages: the pages they share (the task counts, the ends of the indexes) go into the WAL
    once, and the file's locks are taken once. With 16 callers, one process answered 1.14x
    the messages a second it did with a commit for each write.

    A checkpoint copies the WAL back into the database file (two fsyncs and a few megabytes
    written). It runs on its thread after every :data:`CHECKPOINT_CHANGES` rows written,
    never in a statement on the event loop: SQLite's own automatic checkpoint would run inside
    whichever write crossed its threshold, and stall every request for the milliseconds (on a
    slow disk, a tenth of a second) it takes. Nor does it wait for a listing to end.

    Writes go on while a checkpoint copies (SQLite's passive checkpoint lets them); what they
    add is copied by the next one. The WAL starts again from its beginning only at a write
    that finds all of it copied, so under a steady load its file grows; once it is larger than
    ``most_wal_bytes``, writes wait for the next checkpoint (the loop serves everything else
    meanwhile), which then copies it whole, and the next write starts it again and cuts the
    file back to that size. Making every write wait for every checkpoint would keep the WAL
    smaller, but with thousands of requests at work an event loop notices the end of a
    checkpoint late: a third of the writes of a burst of 500 streams waited a fifth of a
    second each."""

    def __init__(self, path: str | Path, most_wal_bytes: int = MOST_WAL_BYTES) -> None:
        self.path = Path(path)
        private_dir(self.path.parent)   # 0700, this user's alone, or refused
        private_sqlite_file(self.path)  # 0600 before SQLite makes it by the umask; its -wal, -shm follow
        self._wal = Path(str(self.path) + "-wal")
        self._most_wal_bytes = most_wal_bytes
        self._now = self._connect()
        self._now.execute("PRAGMA wal_autocheckpoint = 0")  # see the class: the thread checkpoints
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ovos-a2a-sqlite")
        self._reader = self._connect()
        self._checkpointer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ovos-a2a-sqlite-checkpoint")
        self._copier = self._connect()
        self._wal_outgrown = False         # the WAL file was past its bound at the last checkpoint
        self._checkpointed_at = 0          # the loop connection's total_changes at the last checkpoint asked
        self._checkpoint: Future | None = None
        self._writes_wait: asyncio.Future | None = None  # the checkpoint writes wait for, if any
        self._writes: list | None = None   # the writes of this turn of the loop, to be committed together

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_SECONDS)
        conn.row_factory = sqlite3.Row
        use_wal(conn, BUSY_SECONDS)
        conn.execute("PRAGMA synchronous=NORMAL")  # in WAL: durable across a process crash
        conn.execute(f"PRAGMA journal_size_limit = {int(self._most_wal_bytes)}")  # the WAL file, once started again
        return conn

    FINISHED_TASK_IDS = ("SELECT id FROM bridge_tasks WHERE owner = :owner AND state IN ("
                         + ", ".join(str(int(state)) for state in sorted(TERMINAL)) + ")")

    def on_loop(self, fn, *args) -> Any:
        """``fn(connection, *args)`` right here on the event loop's thread, for short statements."""
        result = fn(self._now, *args)
        self._checkpoint_when_due()
        return result

    async def call(self, fn, *args) -> Any:
        """``fn(connection, *args)`` on the reader thread, for long reads."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, self._reader, *args)

    async def writable(self) -> None:
        """Return once no checkpoint that writes wait for is under way (at once, almost
        always): see the class."""
        waiting = self._writes_wait
        if waiting is not None and not waiting.done():
            await asyncio.wait((waiting,))

    async def write(self, fn, *args) -> Any:
        """``fn(connection, *args)``, a write, committed in one transaction with every other
        write asked for in the same turn of the event loop (a group commit); its result, once
        committed. A write whose caller gave up (was cancelled) before its turn came is not made."""
        await self.writable()
        loop = asyncio.get_running_loop()
        if self._writes is None:
            self._writes = []
            loop.call_soon(self._commit_writes)
        committed = loop.create_future()
        self._writes.append((fn, args, committed))
        return await committed

    def _commit_writes(self) -> None:
        """Make the writes asked for since the last turn, in one transaction; hand each its
        result or its error. A statement that fails fails alone (a constraint, say), unless the
        transaction cannot go on after it (a full disk: SQLite may have rolled back the whole
        of it): then every write of it fails, none is said to be committed."""
        writes, self._writes = self._writes, None
        if not writes:  # made already, by a close
            return
        conn, made = self._now, []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, args, committed in writes:
                if committed.cancelled():
                    continue
                try:
                    made.append((committed, fn(conn, *args), None))
                except Exception as exc:  # noqa: BLE001 - this write's own error, handed to it
                    if not conn.in_transaction or _ends_transaction(exc):
                        raise
                    made.append((committed, None, exc))
            conn.execute("COMMIT")
        except BaseException as exc:
            for _fn, _args, committed in writes:
                if not committed.done():
                    committed.set_exception(exc)
            with contextlib.suppress(sqlite3.Error):  # the error said already; the next BEGIN would say this one
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            if not isinstance(exc, Exception):
                raise
            return
        for committed, result, exc in made:
            if committed.done():
                continue
            if exc is None:
                committed.set_result(result)
            else:
                committed.set_exception(exc)
        self._checkpoint_when_due()

    async def execute(self, sql: str, params: dict | None = None) -> int:
        return await self.write(_row_count, sql, params or {})

    async def fetch(self, sql: str, params: dict | None = None) -> list[dict]:
        rows = [dict(r) for r in self._now.execute(sql, params or {}).fetchall()]
        self._checkpoint_when_due()  # a fetch may write (UPDATE … RETURNING)
        return rows

    def _checkpoint_when_due(self) -> None:
        """Start a checkpoint on its thread once :data:`CHECKPOINT_CHANGES` rows were written
        here since the last one, unless one is under way; writes wait for it when the WAL
        has grown past its bound."""
        if self._now.total_changes - self._checkpointed_at < CHECKPOINT_CHANGES:
            return
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        self._checkpointed_at = self._now.total_changes
        writes_wait = self._wal_outgrown
        self._checkpoint = self._checkpointer.submit(self._copy_back, writes_wait)
        self._writes_wait = asyncio.wrap_future(self._checkpoint) if writes_wait else None

    def _copy_back(self, writes_wait: bool) -> None:
        """A passive checkpoint, on the checkpoint thread, and whether the WAL has outgrown
        its bound; a failure is logged (the next one tries again)."""
        try:
            _busy, frames, copied = self._copier.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if writes_wait and frames == copied:  # all of it (nothing was written meanwhile): it starts again
                self._wal_outgrown = False
            else:
                self._wal_outgrown = self._wal.stat().st_size > self._most_wal_bytes
        except Exception as exc:  # noqa: BLE001 - a checkpoint that failed leaves everything as it was
            LOG.warning("could not copy the SQLite WAL into the database file: %s", exc)

    def schema_lock(self) -> contextlib.AbstractAsyncContextManager:
        """Nothing to take: SQLite's own locks (and the WAL switch's retries) serialize the schema."""
        return contextlib.nullcontext()

    async def execute_serialized(self, key: str, sql: str, params: dict | None = None) -> int:
        # a writing statement holds the file's write lock from its start to its end, whatever
        # it reads first: every writer of every process waits for it
        return await self.execute(sql, params)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._reader.close)
        await loop.run_in_executor(self._checkpointer, self._copier.close)
        self._thread.shutdown(wait=True)
        self._checkpointer.shutdown(wait=True)
        self._commit_writes()  # any asked for meanwhile, before their connection is gone
        self._now.close()


TERMINAL_STATES = ", ".join(str(int(state)) for state in sorted(TERMINAL))
ACTIVE_STATES = ", ".join(str(int(state)) for state in sorted(ACTIVE))

TASKS_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS bridge_tasks (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, context_id TEXT NOT NULL, state INTEGER NOT NULL,
        updated INTEGER NOT NULL, task BLOB NOT NULL)""",
    # the tasks that are worked on, by age: what the sweep for stranded tasks reads
    f"CREATE INDEX IF NOT EXISTS ix_bridge_tasks_active ON bridge_tasks (updated) WHERE state IN ({ACTIVE_STATES})",
    ENDED_TASKS_INDEX,  # and those that ended: what the retention reads
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_updated ON bridge_tasks (owner, updated DESC, id DESC)",
    # (context, order) in one index: ListTasks by context then reads just its page
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_context_updated "
    "ON bridge_tasks (owner, context_id, updated DESC, id DESC)",
    # and (state, order): ListTasks by status reads its page, not every task of the owner
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_state_updated "
    "ON bridge_tasks (owner, state, updated DESC, id DESC)",
)

#: How many tasks each owner has in each state, kept right by the database itself: triggers
#: count every insert, change of state and delete of a task row, whichever process or statement
#: makes it. ListTasks' ``total_size`` is then a lookup, not a count of all of an owner's tasks.
#: (A statement that replaces rows, ``INSERT OR REPLACE``, would delete without its trigger:
#: the bridge uses none.) Made once, in one transaction with the counts of the rows already
#: there (a store made before the counts existed).
TASK_COUNTS_SCHEMA = (
    """CREATE TABLE bridge_task_counts (
        owner TEXT NOT NULL, state INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (owner, state)) WITHOUT ROWID""",
    "INSERT INTO bridge_task_counts (owner, state, n) "
    "SELECT owner, state, count(*) FROM bridge_tasks GROUP BY owner, state",
    """CREATE TRIGGER bridge_task_counts_insert AFTER INSERT ON bridge_tasks BEGIN
        INSERT INTO bridge_task_counts (owner, state, n) VALUES (new.owner, new.state, 1)
        ON CONFLICT (owner, state) DO UPDATE SET n = n + 1;
    END""",
    """CREATE TRIGGER bridge_task_counts_update AFTER UPDATE OF owner, state ON bridge_tasks
    WHEN old.owner IS NOT new.owner OR old.state IS NOT new.state BEGIN
        UPDATE bridge_task_counts SET n = n - 1 WHERE owner = old.owner AND state = old.state;
        INSERT INTO bridge_task_counts (owner, state, n) VALUES (new.owner, new.state, 1)
        ON CONFLICT (owner, state) DO UPDATE SET n = n + 1;
    END""",
    """CREATE TRIGGER bridge_task_counts_delete AFTER DELETE ON bridge_tasks BEGIN
        UPDATE bridge_task_counts SET n = n - 1 WHERE owner = old.owner AND state = old.state;
    END""",
)


def _count_tasks(conn: sqlite3.Connection) -> None:
    """Make :data:`TASK_COUNTS_SCHEMA` unless it is there. The write lock is taken first, so
    that no task is written between the first count and the triggers, and so that processes
    starting together make it once."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'bridge_task_counts'"
                        ).fetchone() is None:
            for statement in TASK_COUNTS_SCHEMA:
                conn.execute(statement)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


#: errors after which SQLite asks that the transaction be rolled back, whether or not it already was
#: ("Response To Errors Within A Transaction" in SQLite's documentation)
_TRANSACTION_ENDING = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_NOMEM}


def _ends_transaction(exc: Exception) -> bool:
    primary_code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF  # SQLITE_IOERR_WRITE is an SQLITE_IOERR
    return isinstance(exc, sqlite3.Error) and primary_code in _TRANSACTION_ENDING


def _row_count(conn: sqlite3.Connection, sql: str, params: dict) -> int:
    return conn.execute(sql, params).rowcount


class SqliteTaskStore(TaskStore):
    """Tasks in SQLite, one row each (the protobuf ``Task`` as bytes), per owner."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def initialize(self) -> None:
        for statement in TASKS_SCHEMA:
            await self.db.execute(statement)
        self.db.on_loop(_count_tasks)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Write ``task``: a new one, or over the owner's task not yet final. A final task is never
        changed (whoever writes late: a turn given up, a worker that was thought lost), nor another
        owner's: :class:`ConcurrentTaskModificationError`, and the writer reads the task again."""
        row = (task.id, owner_scope(context), task.context_id, int(task.status.state), updated_position(task),
               task.SerializeToString())
        written = await self.db.write(lambda conn: conn.execute(
            "INSERT INTO bridge_tasks (id, owner, context_id, state, updated, task) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, state = excluded.state, "
            "updated = excluded.updated, task = excluded.task WHERE bridge_tasks.owner = excluded.owner "
            f"AND bridge_tasks.state NOT IN ({TERMINAL_STATES})", row).rowcount)
        if not written:
            raise ConcurrentTaskModificationError(task.id)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        owner = owner_scope(context)
        row = self.db.on_loop(lambda conn: conn.execute(
            "SELECT task FROM bridge_tasks WHERE id = ? AND owner = ?", (task_id, owner)).fetchone())
        return read_task_row(task_id, owner, row[0]) if row else None

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        owner = owner_scope(context)
        await self.db.write(lambda conn: conn.execute(
            "DELETE FROM bridge_tasks WHERE id = ? AND owner = ?", (task_id, owner)))

    async def list(self, params, context: ServerCallContext) -> ListTasksResponse:
        """A page of the owner's tasks, newest first, and how many there are in all (the
        filters applied to both; the total read from :data:`TASK_COUNTS_SCHEMA`'s counts where
        it can be, see :func:`list_statements`)."""
        owner = owner_scope(context)
        count_sql, page_sql, args, size = list_statements(params, owner, counted=True)

        def query(conn):
            # one read transaction: the total and the page see the same tasks
            conn.execute("BEGIN")
            try:
                return conn.execute(count_sql, args).fetchone()[0], conn.execute(page_sql, args).fetchall()
            finally:
                conn.execute("COMMIT")

        total, rows = await self.db.call(query)
        return list_response(rows, total, size, owner)


#: PostgreSQL connections a process keeps open beyond those of its messages in progress: for
#: the lease, the shared event log's readers, and reads such as GetTask and ``/health``
SPARE_CONNECTIONS = 4
#: the most it keeps open (more messages at once share them, or open extra ones briefly)
MOST_KEPT_CONNECTIONS = 32


def open_stores(url: str, messages_at_once: int = 0, ends: StoredEnds | None = None):
    """(sql, task store) for a database URL: a SQLite file on the stdlib ``sqlite3``
    (whichever SQLite driver the URL names), with the bridge's own ``SqliteTaskStore``; a
    PostgreSQL database on asyncpg, with the bridge's ``PostgresTaskStore`` (versioned tasks
    and a shared event log: what several replicas need), which asks ``ends`` which saves settle
    a task (the others it holds back a moment). An in-memory SQLite URL raises
    ``SettingsError``.

    On PostgreSQL the pool keeps :data:`SPARE_CONNECTIONS` connections open, and opens up to
    one and a half for each of ``messages_at_once`` messages in progress (a message's events
    are saved while its request reads; ``--max-concurrent``, or 0 for a process that serves
    none), at most :data:`MOST_KEPT_CONNECTIONS`; those it opened stay open while in use, so
    that a steady load does not log in again and prepare its statements again."""
    path = sqlite_path(url)
    if path is not None:
        db = SqliteDatabase(path)
        return db, SqliteTaskStore(db)
    from ovos_a2a_solver.bridge.storage.postgres import PostgresDatabase, PostgresTaskStore

    kept = min(messages_at_once * 3 // 2 + SPARE_CONNECTIONS, MOST_KEPT_CONNECTIONS)
    db = PostgresDatabase(url, min_size=SPARE_CONNECTIONS, max_size=kept)
    return db, PostgresTaskStore(db, ends)
