# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""PostgreSQL for several bridge replicas, on asyncpg directly.

* :class:`PostgresDatabase`: the bridge's :class:`~.database.Sql` on a pool of asyncpg
  connections. A statement is one round trip (asyncpg prepares it once per connection and
  keeps it), with no transaction around it unless it needs one.
* :class:`PostgresTaskStore`: the tasks, versioned for replicas (the a2a-sdk's
  ``VersionedTaskStore``), one row each in ``bridge_tasks`` as in SQLite, plus a version
  number. A save is one statement: the version check in its ``WHERE`` and the event appended to
  ``bridge_task_events`` in the same statement; a task's progress may wait a few milliseconds
  to go in the statement of its next save. The doorbell rings after the save (:class:`Doorbell`).
* :class:`PostgresEventStream`: the live events of a task running on another replica (the
  a2a-sdk's ``TaskEventStream``): the subscriber reads the event table when the doorbell
  rings, not on a timer.

The doorbell is a ``NOTIFY`` on :data:`EVENTS_CHANNEL` with an empty payload, rung after the
saves commit, once for the saves of a few milliseconds, in a transaction of its own. It carries
nothing (any role that may connect may listen and notify): a ring only makes the
subscribers of this process read the table again, and a forged ring costs one read each.
A ring lost while the listening connection was away is made up for by a read every
:data:`UNRUNG_READ_SECONDS`.

:func:`move_sdk_tasks` moves the tasks an earlier version kept in the a2a-sdk's own tables
(``tasks``, ``task_versions``, ``task_events``) into ``bridge_tasks``, once, at start.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksResponse, StreamResponse, Task, TaskState
from a2a.utils.proto_utils import to_stream_response

from ovos_a2a_solver.bridge.storage.rows import (ADVISORY_LOCK_PREFIX, ENDED_TASKS_INDEX, list_response,
                                                  list_statements, read_task_row, updated_position)
from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds
from ovos_a2a_solver.states import ACTIVE, TERMINAL

LOG = logging.getLogger("ovos_a2a_solver.bridge")

EVENTS_CHANNEL = "ovos_a2a_bridge_events"  # the doorbell of new task events: NOTIFY with an empty payload
UNRUNG_READ_SECONDS = 1.0  # a subscriber reads at least this often, rung or not (a ring can be lost)
#: the longest a connection may take to open, and a statement to answer: a database that is cut
#: off (packets dropped, no reset) would otherwise hold a request, a lease renewal or a sweep for
#: as long as the operating system retries (minutes). A statement past it fails, as when the
#: database is away; the replica then tells callers to try again (see ``storage.availability``).
CONNECT_SECONDS = 5.0
STATEMENT_SECONDS = 10.0
#: the longest closing the pool waits for connections still in use (a statement's time-out and
#: a margin); those are then cut (asyncpg's own close would wait for them without end)
CLOSE_SECONDS = STATEMENT_SECONDS + 2.0
TERMINAL_STATES = "(" + ", ".join(str(int(state)) for state in sorted(TERMINAL)) + ")"
ACTIVE_STATES = "(" + ", ".join(str(int(state)) for state in sorted(ACTIVE)) + ")"


@functools.lru_cache(maxsize=1024)
def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` with its ``:name`` parameters numbered as PostgreSQL wants them (``$1``, ...),
    and the names in that order (``::type`` casts are left alone)."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", number, sql), tuple(names)


def _rowcount(status: str) -> int:
    """The rows a statement changed, from its status ("UPDATE 3", "INSERT 0 1")."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


async def _end_transaction(connection) -> None:
    """What a connection needs when it goes back to the pool: no transaction left open. (The
    bridge sets no session state, takes session locks only on connections of their own, and
    listens on one of its own: asyncpg's full reset would cost one more round trip for each
    statement.)"""
    if connection.is_in_transaction():
        await connection.execute("ROLLBACK")


def asyncpg_dsn(url: str) -> str:
    """The DSN asyncpg takes for a ``postgresql+asyncpg://`` URL."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class RingSenders:
    """Which rings (``NOTIFY``) are heard: any role that may connect to the database may notify
    on any channel, at thousands a second, and a payload proves nothing. The session that sent a
    ring does: PostgreSQL names it (its process id), and ``pg_stat_activity`` its role. A ring
    from a session of the bridge's own role is heard at once; one from another role's is dropped.
    A sender not known yet is looked up, at most :data:`SENDERS_LOOKED_UP_A_SECOND` a second (a
    flood from many new sessions); rings past that wait, and each of their channels is heard once
    a second. A sender that is gone before it is looked up is taken for the bridge's (a ring
    costs its listeners one read; one lost could keep a webhook unsent). What is known of a
    session is kept :data:`SENDER_KNOWN_SECONDS` (process ids are reused), for the last
    :data:`SENDERS_KEPT` senders."""

    def __init__(self, of_this_role: Callable, deliver: Callable) -> None:
        self._of_this_role = of_this_role   # pid -> True, False, None (gone)
        self._deliver = deliver             # (connection, pid, channel, payload)
        self._known: OrderedDict[int, tuple[bool, float]] = OrderedDict()
        # senders being looked up -> their last ring on each channel meanwhile (a flood from one
        # sender while it is looked up is one ring a channel, not a list that grows with it)
        self._asked: dict[int, dict[str, tuple]] = {}
        self._lookups: set[asyncio.Task] = set()
        self._waiting: dict[str, tuple] = {}       # channel -> a ring past the look-ups' budget
        self._window, self._looked_up = 0.0, 0
        self.dropped = 0                           # rings of other roles' sessions

    def heard(self, connection, pid: int, channel: str, payload: str) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        known = self._known.get(pid)
        if known is not None and now - known[1] < SENDER_KNOWN_SECONDS:
            if known[0]:
                self._deliver(connection, pid, channel, payload)
            else:
                self.dropped += 1
            return
        ring = (connection, pid, channel, payload)
        if pid in self._asked:
            self._asked[pid][channel] = ring
            return
        if now - self._window >= 1.0:
            self._window, self._looked_up = now, 0
        if self._looked_up >= SENDERS_LOOKED_UP_A_SECOND:
            if not self._waiting:
                loop.call_later(1.0, self._hear_waiting)
            self._waiting[channel] = ring
            return
        self._looked_up += 1
        self._asked[pid] = {channel: ring}
        lookup = loop.create_task(self._look_up(pid))  # held until done: the loop keeps only a weak reference
        self._lookups.add(lookup)
        lookup.add_done_callback(self._lookups.discard)

    async def _look_up(self, pid: int) -> None:
        try:
            ours = await self._of_this_role(pid)
        except Exception as exc:  # the database is away: hear it (a ring costs a read)
            LOG.debug("could not look up the sender of a ring: %r", exc)
            ours = None
        rings = self._asked.pop(pid, {}).values()
        if ours is not None:
            self._known[pid] = (bool(ours), asyncio.get_running_loop().time())
            self._known.move_to_end(pid)
            while len(self._known) > SENDERS_KEPT:
                self._known.popitem(last=False)
        for ring in rings:
            if ours is False:
                self.dropped += 1
            else:
                self._deliver(*ring)

    def _hear_waiting(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for ring in waiting.values():
            self._deliver(*ring)


#: senders of rings looked up a second at most (see :class:`RingSenders`)
SENDERS_LOOKED_UP_A_SECOND = 20
SENDER_KNOWN_SECONDS = 60.0
SENDERS_KEPT = 1024


class PostgresDatabase:
    """The bridge's :class:`~.database.Sql` on an asyncpg pool, opened at first use: it keeps
    ``min_size`` connections and opens up to ``max_size`` (each kept while in use)."""

    def __init__(self, url: str, min_size: int, max_size: int) -> None:
        self.dsn = asyncpg_dsn(url)
        self.min_size, self.max_size = min(min_size, max_size), max_size
        self._pool = None
        self._opening: asyncio.Lock | None = None
        self._listener = None                                   # the connection that LISTENs
        self._listeners: dict[str, list[Callable]] = {}         # channel -> callbacks
        self._listening: asyncio.Lock | None = None             # held while listening changes
        self._senders = RingSenders(self.of_this_role, self._deliver)

    FINISHED_TASK_IDS = f"SELECT id FROM bridge_tasks WHERE owner = :owner AND state IN {TERMINAL_STATES}"

    async def pool(self):
        """The pool (opened now if it is not yet)."""
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                import asyncpg

                self._pool = await asyncpg.create_pool(self.dsn, min_size=self.min_size, max_size=self.max_size,
                                                       reset=_end_transaction, timeout=CONNECT_SECONDS,
                                                       command_timeout=STATEMENT_SECONDS)
        return self._pool

    async def execute(self, sql: str, params: dict | None = None) -> int:
        text, names = positional(sql)
        return _rowcount(await (await self.pool()).execute(text, *[(params or {})[n] for n in names]))

    async def fetch(self, sql: str, params: dict | None = None) -> list[dict]:
        text, names = positional(sql)
        return [dict(row) for row in await (await self.pool()).fetch(text, *[(params or {})[n] for n in names])]

    async def execute_serialized(self, key: str, sql: str, params: dict | None = None) -> int:
        text, names = positional(sql)
        async with (await self.pool()).acquire() as conn, conn.transaction():
            # a lock held until the transaction ends; taken first, so that ``sql`` reads what
            # the previous holder committed
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", ADVISORY_LOCK_PREFIX + key)
            return _rowcount(await conn.execute(text, *[(params or {})[n] for n in names]))

    @contextlib.asynccontextmanager
    async def schema_lock(self):
        """While held, no other process on this database holds it: a session advisory lock on
        a connection of its own (released when it closes, also when this process dies)."""
        import asyncpg

        conn = await asyncpg.connect(self.dsn, timeout=CONNECT_SECONDS)
        try:
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", ADVISORY_LOCK_PREFIX + "schema")
            yield
        finally:
            # a connection that broke meanwhile took the lock with it: that error is not this one's
            with contextlib.suppress(Exception):
                await conn.close()

    async def listen(self, channel: str, callback: Callable) -> object:
        """Call ``callback(connection, pid, channel, payload)`` at each ``NOTIFY`` on ``channel``
        that a session of the bridge's own role sent (see :class:`RingSenders`). One connection of
        its own listens on every channel of this process; if it was lost, it is opened again here
        (with every channel listened to before). Returns it (see ``is_closed()``)."""
        import asyncpg

        async with self._listen_lock():
            if self._listener is None or self._listener.is_closed():
                self._listener = await asyncpg.connect(self.dsn, timeout=CONNECT_SECONDS,
                                                       command_timeout=STATEMENT_SECONDS)
                for known in self._listeners:
                    await self._listener.add_listener(known, self._senders.heard)
            callbacks = self._listeners.setdefault(channel, [])
            if not callbacks:
                await self._listener.add_listener(channel, self._senders.heard)
            if callback not in callbacks:
                callbacks.append(callback)
            return self._listener

    async def unlisten(self, channel: str, callback: Callable) -> None:
        """Stop calling ``callback`` for ``channel``."""
        async with self._listen_lock():
            callbacks = self._listeners.get(channel, [])
            if callback in callbacks:
                callbacks.remove(callback)
                if not callbacks:
                    del self._listeners[channel]
                    if self._listener is not None and not self._listener.is_closed():
                        with contextlib.suppress(Exception):  # the connection is gone already
                            await self._listener.remove_listener(channel, self._senders.heard)

    def _deliver(self, connection, pid: int, channel: str, payload: str) -> None:
        for callback in list(self._listeners.get(channel, ())):
            callback(connection, pid, channel, payload)

    async def of_this_role(self, pid: int) -> bool | None:
        """Whether the session ``pid`` is of the role this process connects as; None if it is gone."""
        return await (await self.pool()).fetchval(
            "SELECT usename = current_user FROM pg_stat_activity WHERE pid = $1", pid)

    def _listen_lock(self) -> asyncio.Lock:
        if self._listening is None:
            self._listening = asyncio.Lock()
        return self._listening

    async def aclose(self, within: float = CLOSE_SECONDS) -> None:
        """Close the connections: those still in use are waited for ``within`` seconds, then cut
        (a statement that never returns, a connection never given back must not hold a shutdown)."""
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        if self._pool is not None:
            try:
                await asyncio.wait_for(self._pool.close(), within)  # cancelled, asyncpg cuts them all
            except TimeoutError:
                LOG.warning("database connections still in use %g s into the shutdown were cut", within)


class StoreVersion(TaskVersion):
    """A task's version in :class:`PostgresTaskStore`: how many times it was written (the
    a2a-sdk keeps a version's value to itself; the store needs the number back)."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def version_number(version: TaskVersion) -> int:
    """The number of a version this store gave, 0 for ``TaskVersion.MISSING``."""
    if isinstance(version, StoreVersion):
        return version.number
    if version.is_missing:
        return 0
    raise TypeError(f"not a version of the bridge's PostgreSQL task store: {version!r}")


TASKS_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS bridge_tasks (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, context_id TEXT NOT NULL, state INTEGER NOT NULL,
        updated BIGINT NOT NULL, version BIGINT NOT NULL, task BYTEA NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_updated ON bridge_tasks (owner, updated DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_context_updated "
    "ON bridge_tasks (owner, context_id, updated DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS ix_bridge_tasks_owner_state_updated "
    "ON bridge_tasks (owner, state, updated DESC, id DESC)",
    # a task's events by version: what a subscriber on another replica reads; ``at`` (the
    # database's clock) says when the events of a task that ended may go
    """CREATE TABLE IF NOT EXISTS bridge_task_events (
        task_id TEXT NOT NULL, version BIGINT NOT NULL, owner TEXT NOT NULL, event BYTEA NOT NULL,
        at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (task_id, version))""",
    # the tasks that are worked on, by age: what the sweep for stranded tasks reads
    f"CREATE INDEX IF NOT EXISTS ix_bridge_tasks_active ON bridge_tasks (updated) WHERE state IN {ACTIVE_STATES}",
    ENDED_TASKS_INDEX,  # and those that ended: what the retention reads
)
#: the replicas' leases (``cluster.replicas``): each write of a task is fenced by its writer's
#: lease (:data:`LEASE_FENCE`), so the table goes with the tasks'. ``epoch`` counts the times a
#: run took its lease: a run that lost it and took it again writes under the new epoch only.
LEASES_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS a2a_bridge_replicas (
        boot VARCHAR(32) PRIMARY KEY, replica VARCHAR(255) NOT NULL, state VARCHAR(16) NOT NULL,
        expires DOUBLE PRECISION NOT NULL, persona TEXT, epoch BIGINT NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_replicas_state ON a2a_bridge_replicas (state, expires)",
)
#: columns added to the leases' table since an earlier version made it: (column, definition)
ADDED_LEASE_COLUMNS = (("persona", "TEXT"), ("epoch", "BIGINT NOT NULL DEFAULT 0"))


async def make_leases_table(db: PostgresDatabase) -> None:
    """Make the leases' table, or add the columns it lacks (each looked up first: an ``ALTER``
    takes the table's strongest lock, even when there is nothing to add)."""
    for statement in LEASES_SCHEMA:
        await db.execute(statement)
    for column, definition in ADDED_LEASE_COLUMNS:
        if not await db.fetch("SELECT 1 FROM information_schema.columns WHERE table_name = 'a2a_bridge_replicas' "
                              "AND column_name = :column", {"column": column}):
            await db.execute(f"ALTER TABLE a2a_bridge_replicas ADD COLUMN IF NOT EXISTS {column} {definition}")


_RING = "SELECT version FROM saved"
#: the lease a write is made under, checked in the write's own statement: ``$F`` the run (its
#: boot id) and ``$E`` the epoch of its lease, both null for a store that serves no replicas.
#: A run whose lease expired, was taken over or was taken again since (a new epoch) writes
#: nothing, however late its statement reaches the database.
LEASE_FENCE = ("($F::text IS NULL OR EXISTS (SELECT 1 FROM a2a_bridge_replicas WHERE boot = $F AND epoch = $E "
               "AND state = 'live' AND expires > EXTRACT(EPOCH FROM clock_timestamp())))")


def fenced(sql: str, first: int) -> str:
    """``sql`` with its lease fence's parameters numbered from ``first``."""
    return sql.replace("$F", f"${first}").replace("$E", f"${first + 1}")


#: a task's first write ($1 id, $2 owner, $3 context, $4 state, $5 updated, $6 task, $7 its
#: event or null, $8 and $9 the lease): an insert, which loses to a task already there
FIRST_WRITE = fenced("WITH saved AS (INSERT INTO bridge_tasks (id, owner, context_id, state, updated, task, version) "
                     "SELECT $1, $2, $3, $4, $5, $6, 1 WHERE " + LEASE_FENCE + " "
                     "ON CONFLICT (id) DO NOTHING RETURNING version), "
                     "logged AS (INSERT INTO bridge_task_events (task_id, version, owner, event) "
                     "SELECT $1, version, $2, $7 FROM saved WHERE $7::bytea IS NOT NULL) " + _RING, 8)
#: a cancel (the same parameters): overwrites any task not yet final, whatever its version
CANCEL_WRITE = fenced("WITH saved AS (UPDATE bridge_tasks SET context_id = $3, state = $4, updated = $5, task = $6, "
                      f"version = version + 1 WHERE id = $1 AND owner = $2 AND state NOT IN {TERMINAL_STATES} "
                      "AND " + LEASE_FENCE + " RETURNING version), "
                      "logged AS (INSERT INTO bridge_task_events (task_id, version, owner, event) "
                      "SELECT $1, version, $2, $7 FROM saved WHERE $7::bytea IS NOT NULL) " + _RING, 8)
#: one or more later writes at once ($1-$6 as above, $7 the versions of their events, $8 the
#: events, $9 the new version, $10 the version they were read at, $11 and $12 the lease): only
#: that version is updated, and never a task that is final (whatever its version: a final
#: state is never changed)
LATER_WRITES = fenced("WITH saved AS (UPDATE bridge_tasks SET context_id = $3, state = $4, updated = $5, task = $6, "
                      "version = $9 WHERE id = $1 AND owner = $2 AND version = $10 "
                      f"AND state NOT IN {TERMINAL_STATES} AND " + LEASE_FENCE + " RETURNING version), "
                      "logged AS (INSERT INTO bridge_task_events (task_id, version, owner, event) "
                      "SELECT $1, e.version, $2, e.event FROM saved, "
                      "unnest($7::bigint[], $8::bytea[]) AS e(version, event)) " + _RING, 11)

#: how long a ring waits for the saves that follow to go with it
RING_GATHER_SECONDS = 0.002


#: the longest a ring may take (connecting included): a database that hangs must not hold the
#: shutdown, which waits for the ring under way
RING_TIMEOUT_SECONDS = 5.0


class Doorbell:
    """Rings :data:`EVENTS_CHANNEL` after saves committed, in a transaction of its own: the
    saves made while a ring waits (:data:`RING_GATHER_SECONDS`) or is sent ring once more, after it.

    Not in the saves' own statements: PostgreSQL lets one transaction that notified commit at a
    time, in the whole server (a lock held until its commit is on disk), so saves that rang
    waited for each other's disk writes, in one process and across replicas. The ring's own
    connection commits without waiting for the disk (``synchronous_commit`` off): a ring lost
    in a crash costs a subscriber one :data:`UNRUNG_READ_SECONDS` wait, nothing stored."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._connection = None
        self._due = False                       # a save committed that no ring sent yet covers
        self._ringing: asyncio.Task | None = None

    def ring(self) -> None:
        """Ring soon for a save that committed."""
        self._due = True
        if self._ringing is None or self._ringing.done():
            self._ringing = asyncio.get_running_loop().create_task(self._ring_while_due())

    async def _ring_while_due(self) -> None:
        while self._due:
            await asyncio.sleep(RING_GATHER_SECONDS)
            self._due = False
            try:
                if self._connection is None or self._connection.is_closed():
                    import asyncpg

                    self._connection = await asyncpg.connect(self.dsn, timeout=RING_TIMEOUT_SECONDS,
                                                             server_settings={"synchronous_commit": "off"})
                await self._connection.execute(f"NOTIFY {EVENTS_CHANNEL}", timeout=RING_TIMEOUT_SECONDS)
            except Exception as exc:  # the database is away: subscribers read again on their own
                LOG.debug("could not ring for new task events: %r", exc)

    async def aclose(self) -> None:
        if self._ringing is not None:
            await asyncio.gather(self._ringing, return_exceptions=True)
        if self._connection is not None:
            with contextlib.suppress(Exception):
                await self._connection.close()


#: how long a task's progress (a save that neither creates it nor settles it) may wait to be
#: written together with the task's next save: a message's answer and its end are one write
HOLD_SECONDS = 0.005
#: how long held progress waits again when the database could not take it
HOLD_AGAIN_SECONDS = 1.0


class _Held:
    """A task's saves not yet written: its latest snapshot, and the events (with the versions
    they make) of each save since ``base``, the version stored."""

    __slots__ = ("task", "owner", "base", "events", "timer")

    def __init__(self, task: Task, owner: str, base: int) -> None:
        self.task, self.owner, self.base = task, owner, base
        self.events: list[tuple[int, bytes]] = []
        self.timer: asyncio.TimerHandle | None = None

    @property
    def version(self) -> int:
        return self.base + len(self.events)


class PostgresTaskStore(VersionedTaskStore):
    """Tasks in PostgreSQL, one row each (the protobuf ``Task`` as bytes and its version),
    per owner; a save appends its event to ``bridge_task_events`` in the same statement, and
    rings the doorbell after (:class:`Doorbell`).

    A task's progress (a save that neither creates it, nor cancels it, nor settles it: see
    ``ends``, :meth:`StoredEnds.settles`) is held for at most :data:`HOLD_SECONDS`, and written
    with the task's next save if that comes sooner: one statement for both, each event with
    its own version. Reads here see it at once; other replicas see it that much later. Held
    progress that another writer overtook (a cancel from another replica) is dropped, and the
    next save of the task raises :class:`ConcurrentTaskModificationError`, as that save would
    have."""

    def __init__(self, db: PostgresDatabase, ends: StoredEnds | None = None) -> None:
        self.db = db
        self.ends = ends or StoredEnds()  # which saves settle a task (the turns awaiting theirs)
        self._held: dict[str, _Held] = {}
        self._overtaken: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._flushes: set[asyncio.Task] = set()
        self.doorbell = Doorbell(db.dsn)
        #: the lease this process writes under, (boot id, epoch), set by its replica group once
        #: the lease is taken and cleared when it is lost: see :data:`LEASE_FENCE`. ``None``
        #: writes without a fence (a store no replica serves)
        self.lease: tuple[str, int] | None = None
        self.fenced = False  # once a replica group serves it, a write without a lease is refused

    async def initialize(self) -> None:
        for statement in TASKS_SCHEMA:
            await self.db.execute(statement)
        await make_leases_table(self.db)

    def _lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())

    async def save(self, task: Task, *, event, prev, prev_version: TaskVersion,
                   context: ServerCallContext) -> TaskVersion:
        """A first write (``prev_version`` missing) inserts, and loses to a task already
        there; a later one updates only the version it was read at; a cancel overwrites any
        task not yet final (the a2a-sdk's ``VersionedTaskStore`` rules).
        :class:`ConcurrentTaskModificationError` when the task was not written."""
        del prev  # the whole task is written
        number = version_number(prev_version)
        owner = owner_scope(context)
        record = to_stream_response(event).SerializeToString() if event is not None else None
        lock = self._lock(task.id)
        try:
            async with lock:
                if task.id in self._overtaken:
                    self._overtaken.discard(task.id)
                    raise ConcurrentTaskModificationError(task.id)
                held = self._held.get(task.id)
                cancel = task.status.state == TaskState.TASK_STATE_CANCELED
                if held is not None and (cancel or number == 0 or held.owner != owner or number != held.version):
                    try:  # not a continuation of what is held: that is written first
                        await self._write_held(task.id)
                    except ConcurrentTaskModificationError:
                        self._overtaken.discard(task.id)  # refused once: here
                        raise
                    held = None
                if cancel or number == 0:
                    return await self._write_one(CANCEL_WRITE if cancel else FIRST_WRITE, task, owner, record)
                if held is None:
                    held = _Held(task, owner, number)
                held.task = task
                held.events.append((number + 1, record) if record is not None else (number + 1, b""))
                if record is not None and not self.ends.settles(task, context):
                    return self._hold(held)
                if self._held.pop(task.id, None) is not None and held.timer is not None:
                    held.timer.cancel()
                return await self._write_later(held)
        finally:
            if task.status.state not in ACTIVE and not lock.locked() and task.id not in self._held:
                self._locks.pop(task.id, None)

    def _hold(self, held: _Held) -> StoreVersion:
        snapshot = Task()
        snapshot.CopyFrom(held.task)
        held.task = snapshot
        task_id = snapshot.id
        if self._held.setdefault(task_id, held) is held and held.timer is None:
            held.timer = asyncio.get_running_loop().call_later(HOLD_SECONDS, self._write_later_in_background, task_id)
        return StoreVersion(held.version)

    def _write_later_in_background(self, task_id: str) -> None:
        flush = asyncio.get_running_loop().create_task(self._write_held_locked(task_id))
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    async def _write_held_locked(self, task_id: str) -> None:
        async with self._lock(task_id):
            try:
                await self._write_held(task_id)
            except ConcurrentTaskModificationError:
                pass  # recorded: the task's next save is refused
            except Exception as exc:  # the database is unreachable: hold it, and try again later
                held = self._held.get(task_id)
                if held is not None:
                    LOG.warning("could not write the progress of task %s (%s); retrying", task_id, exc)
                    held.timer = asyncio.get_running_loop().call_later(
                        HOLD_AGAIN_SECONDS, self._write_later_in_background, task_id)

    async def _write_held(self, task_id: str) -> None:
        """Write what is held of ``task_id`` now (under its lock); if another writer overtook it,
        drop it, and refuse the task's next save."""
        held = self._held.pop(task_id, None)
        if held is None:
            return
        if held.timer is not None:
            held.timer.cancel()
            held.timer = None
        try:
            await self._write_later(held)
        except ConcurrentTaskModificationError:
            self._overtaken.add(task_id)
            raise
        except BaseException:
            self._held.setdefault(task_id, held)
            raise

    def _fence(self) -> tuple[str | None, int | None]:
        """The lease a write is made under now (the statement's last two parameters): this
        process's, none when no replica group serves the store, and one that no run holds
        once the group lost its lease (the write then changes nothing)."""
        if self.lease is not None:
            return self.lease
        if self.fenced:  # the lease is lost: a run that holds none writes nothing
            return "", 0
        return None, None

    async def _write_one(self, sql: str, task: Task, owner: str, record: bytes | None) -> StoreVersion:
        saved = await (await self.db.pool()).fetchval(sql, task.id, owner, task.context_id, int(task.status.state),
                                                      updated_position(task), task.SerializeToString(), record,
                                                      *self._fence())
        if saved is None:
            raise ConcurrentTaskModificationError(task.id)
        self.doorbell.ring()
        return StoreVersion(saved)

    async def _write_later(self, held: _Held) -> StoreVersion:
        task = held.task
        logged = [(version, record) for version, record in held.events if record]
        saved = await (await self.db.pool()).fetchval(
            LATER_WRITES, task.id, held.owner, task.context_id, int(task.status.state), updated_position(task),
            task.SerializeToString(), [version for version, _ in logged], [record for _, record in logged],
            held.version, held.base, *self._fence())
        if saved is None:
            raise ConcurrentTaskModificationError(task.id)
        self.doorbell.ring()
        return StoreVersion(saved)

    async def write_held(self) -> None:
        """Write all progress held now (before a listing, and at shutdown)."""
        for task_id in list(self._held):
            with contextlib.suppress(ConcurrentTaskModificationError):
                async with self._lock(task_id):
                    await self._write_held(task_id)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        owner = owner_scope(context)
        held = self._held.get(task_id)
        if held is not None and held.owner == owner:
            task = Task()
            task.CopyFrom(held.task)
            return StoredTask(task, StoreVersion(held.version))
        row = await (await self.db.pool()).fetchrow(
            "SELECT task, version FROM bridge_tasks WHERE id = $1 AND owner = $2", task_id, owner)
        return StoredTask(read_task_row(task_id, owner, row[0]), StoreVersion(row[1])) if row else None

    async def list(self, params, context: ServerCallContext) -> ListTasksResponse:
        await self.write_held()
        owner = owner_scope(context)
        count_sql, page_sql, args, size = list_statements(params, owner)
        total = (await self.db.fetch(count_sql, args))[0]["n"]
        rows = await self.db.fetch(page_sql, args)
        return list_response(rows, total, size, owner)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        owner = owner_scope(context)
        async with self._lock(task_id):
            held = self._held.get(task_id)
            if held is not None and held.owner == owner:
                if held.timer is not None:
                    held.timer.cancel()
                del self._held[task_id]
            await (await self.db.pool()).execute(
                "WITH gone AS (DELETE FROM bridge_tasks WHERE id = $1 AND owner = $2 RETURNING id) "
                "DELETE FROM bridge_task_events WHERE task_id IN (SELECT id FROM gone)", task_id, owner)

    async def aclose(self) -> None:
        """Write what is held (at shutdown)."""
        await self.write_held()
        await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.doorbell.aclose()


def _event_of(record: bytes):
    """The event a ``StreamResponse`` record holds."""
    response = StreamResponse.FromString(record)
    return getattr(response, response.WhichOneof("payload"))


class PostgresEventStream(TaskEventStream):
    """The events :class:`PostgresTaskStore` appended, for subscribers on any replica: a
    subscriber reads those after its version when the doorbell rings (or, a ring being
    lost, after :data:`UNRUNG_READ_SECONDS`). The process listens for the doorbell only
    while it has subscribers: the rings of every save of every replica wake no other one."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self._bells: set[asyncio.Event] = set()  # one per subscriber of this process
        self._listening = asyncio.Lock()

    async def initialize(self) -> None:
        """Nothing to prepare: the store made the table."""

    def _rung(self, _connection, _pid, _channel, _payload: str) -> None:
        """A ring: whatever its payload (any role may notify), every subscriber reads again."""
        for bell in self._bells:
            bell.set()

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        """Nothing to do: the store appended the event in the save's own statement, and rang."""
        del task_id, event

    async def _ring_for(self, bell: asyncio.Event) -> None:
        async with self._listening:
            self._bells.add(bell)
            if len(self._bells) == 1:
                await self.db.listen(EVENTS_CHANNEL, self._rung)

    async def _no_ring_for(self, bell: asyncio.Event) -> None:
        async with self._listening:
            self._bells.discard(bell)
            if not self._bells:
                await self.db.unlisten(EVENTS_CHANNEL, self._rung)

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        """The events of ``task_id`` after version ``after``, in order, as they are written."""
        seen = version_number(after)
        bell = asyncio.Event()
        await self._ring_for(bell)  # listening before the first read: no event falls between
        try:
            while True:
                bell.clear()
                try:
                    rows = await (await self.db.pool()).fetch(
                        "SELECT version, event FROM bridge_task_events WHERE task_id = $1 AND version > $2 "
                        "ORDER BY version", task_id, seen)
                except (OSError, asyncio.TimeoutError) as exc:  # the database is away: read again later
                    LOG.debug("could not read the events of task %s: %r", task_id, exc)
                    rows = []
                for version, record in rows:
                    seen = version
                    yield VersionedEvent(event=_event_of(record), version=StoreVersion(version))
                if not rows:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(bell.wait(), UNRUNG_READ_SECONDS)
        finally:
            await asyncio.shield(self._no_ring_for(bell))

    async def destroy(self, task_id: str) -> None:
        """Nothing to release: the events go with the task, or when it ended long ago."""
        del task_id

    async def aclose(self) -> None:
        await self.db.unlisten(EVENTS_CHANNEL, self._rung)


# ---- tasks an earlier version kept in the a2a-sdk's tables ---------------------------------

MOVE_PAGE = 100  # tasks moved per transaction


async def move_sdk_tasks(db: PostgresDatabase) -> int:
    """Move the tasks kept in the a2a-sdk's ``tasks`` table (by an earlier version of the
    bridge) into ``bridge_tasks``, with their owners, at version 1; remove them (and their
    versions and events) from the a2a-sdk's tables. Read through the a2a-sdk's own
    ``DatabaseTaskStore``; safe to run again after an interruption (a task moved twice is
    kept once). Call under the schema lock. Returns how many were moved."""
    present = await db.fetch("SELECT to_regclass('tasks') IS NOT NULL AS tasks, "
                             "to_regclass('task_versions') IS NOT NULL AS versions, "
                             "to_regclass('task_events') IS NOT NULL AS events")
    if not present[0]["tasks"]:
        return 0
    owners = [row["owner"] for row in await db.fetch("SELECT DISTINCT owner FROM tasks")]
    if not owners:
        return 0
    from a2a.server.tasks import DatabaseTaskStore
    from a2a.types import ListTasksRequest
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("postgresql+asyncpg" + db.dsn[len("postgresql"):], pool_size=1)
    sdk = DatabaseTaskStore(engine, create_table=False, owner_resolver=lambda context: context.state["owner"])
    moved = 0
    try:
        for owner in owners:
            context = ServerCallContext(state={"owner": owner})
            while True:
                page = await sdk.list(ListTasksRequest(page_size=MOVE_PAGE), context)
                if not page.tasks:
                    break
                ids = [task.id for task in page.tasks]
                async with (await db.pool()).acquire() as conn, conn.transaction():
                    await conn.executemany(
                        "INSERT INTO bridge_tasks (id, owner, context_id, state, updated, task, version) "
                        "VALUES ($1, $2, $3, $4, $5, $6, 1) ON CONFLICT (id) DO NOTHING",
                        [(task.id, owner, task.context_id, int(task.status.state), updated_position(task),
                          task.SerializeToString()) for task in page.tasks])
                    await conn.execute("DELETE FROM tasks WHERE owner = $1 AND id = ANY($2::text[])", owner, ids)
                    if present[0]["versions"]:
                        await conn.execute("DELETE FROM task_versions WHERE owner = $1 AND task_id = ANY($2::text[])",
                                           owner, ids)
                    if present[0]["events"]:
                        await conn.execute("DELETE FROM task_events WHERE task_id = ANY($1::text[])", ids)
                moved += len(ids)
    finally:
        await engine.dispose()
    if moved:
        LOG.info("moved %d task(s) from the a2a-sdk's tables into the bridge's own", moved)
    return moved
