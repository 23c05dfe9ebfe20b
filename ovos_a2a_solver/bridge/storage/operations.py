# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Operations: one per inbound message, durable, so a message is worked on at most once.

An operation's identity is a digest of (caller, taskId as sent, messageId, contextId as
sent, content) with unambiguous framing: the same messageId with other content or in
another context is another message, with work of its own. The first delivery claims it
(an insert on the primary key, atomic in SQLite and PostgreSQL alike); every later
delivery of the same message finds the claim and is replayed instead of starting a
second persona turn. Claims live in the same database as the tasks.

A delivery is a retry only while its sender may not have seen the answer. Once it
evidently has (the request handler decides: the caller continued or canceled the
task), the same message sent again is new work: it claims the next generation of its
identity. (Clients that reuse one messageId for every test run, as the A2A
conformance kit does, get a new task each time instead of a replay of a finished one.)
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from a2a.types import Message

from ovos_a2a_solver.bridge.storage.database import Sql
from ovos_a2a_solver.states import ACTIVE



class OperationState(str, enum.Enum):
    """Where a message's operation stands (the ``state`` column)."""

    RUNNING = "running"  # its turn runs (or ran, in a run that is gone: its work is lost)
    DONE = "done"        # its turn ended; a replay of the message answers with its task

FINISH_DELAY = 0.5  # seconds within which a finished operation is written
STRANDED_PAGE = 200  # stranded tasks failed per sweep at most (the next sweep takes the rest)
ACTIVE_STATES = ", ".join(str(int(state)) for state in sorted(ACTIVE))

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS a2a_bridge_operations (
        key VARCHAR(64) PRIMARY KEY, owner VARCHAR(255) NOT NULL, message_id VARCHAR(255) NOT NULL,
        sent_task_id VARCHAR(255) NOT NULL, content VARCHAR(64) NOT NULL, context_id VARCHAR(255),
        task_id VARCHAR(255) NOT NULL, state VARCHAR(16) NOT NULL, replica VARCHAR(255) NOT NULL,
        boot VARCHAR(32) NOT NULL, created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_operations_task ON a2a_bridge_operations (task_id)",
    "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_operations_state ON a2a_bridge_operations (state, replica)",
)
COLUMNS = ("key", "owner", "message_id", "sent_task_id", "content", "context_id", "task_id", "state", "replica",
           "boot", "created", "updated")
CLAIM = (f"INSERT INTO a2a_bridge_operations ({', '.join(COLUMNS)}) VALUES ({', '.join(':' + c for c in COLUMNS)}) "
         f"ON CONFLICT (key) DO NOTHING")
_FRAMING = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # json.dumps(..., these options), made once


def operation_key(owner: str, task_id: str, message_id: str, context_id: str = "", content: str = "",
                  generation: int = 0) -> str:
    """Digest of (caller, taskId, messageId, contextId, content digest[, generation]); JSON
    framing keeps ("a:b","c") apart from ("a","b:c")."""
    fields = [owner, task_id, message_id, context_id, content] + ([generation] if generation else [])
    framed = _FRAMING.encode(fields)
    return hashlib.sha256(framed.encode("utf-8")).hexdigest()


def content_digest(message: Message) -> str:
    """Digest of what a message says, ids aside (a resend may or may not carry them): its
    deterministic protobuf bytes (map entries, as in ``metadata``, sorted by key)."""
    # the ids cleared for a moment and put back (no copy of the whole message): nothing else
    # runs meanwhile, and a cleared string field serializes as one never set
    ids = message.message_id, message.task_id, message.context_id
    message.message_id = message.task_id = message.context_id = ""
    try:
        return hashlib.sha256(message.SerializeToString(deterministic=True)).hexdigest()
    finally:
        message.message_id, message.task_id, message.context_id = ids


@dataclass(frozen=True)
class Operation:
    key: str
    owner: str
    message_id: str
    sent_task_id: str
    content: str
    context_id: str | None
    task_id: str
    state: str
    replica: str
    boot: str

    @property
    def done(self) -> bool:
        return self.state == OperationState.DONE


class OperationLog:
    """The durable table of operations."""

    def __init__(self, db: Sql, replica: str, single_process: bool) -> None:
        self.db = db
        self.replica = replica
        self.single_process = single_process
        self.boot = uuid.uuid4().hex  # this process's run: operations of older runs were interrupted
        self._finished: set[str] = set()  # finished here, not yet written
        self._writer: asyncio.Task | None = None

    async def initialize(self) -> None:
        for statement in SCHEMA:
            await self.db.execute(statement)

    async def claim(self, owner: str, message, task_id: str,
                    answer_seen: Callable[[Operation], Awaitable[bool]] | None = None) -> tuple[Operation, bool]:
        """Claim ``message`` for this caller, its work to be done in task ``task_id``.

        Returns the operation and whether this call made the claim (an atomic insert);
        if not, the operation is the earlier claim of the same message, to be replayed.
        An earlier claim whose answer the caller has seen (``answer_seen``) is not
        replayed: the message claims its next generation instead.
        """
        content = content_digest(message)
        generation = 0
        while True:
            operation = Operation(
                key=operation_key(owner, message.task_id, message.message_id, message.context_id, content,
                                  generation),
                owner=owner, message_id=message.message_id, sent_task_id=message.task_id, content=content,
                context_id=message.context_id or None, task_id=task_id, state=OperationState.RUNNING,
                replica=self.replica, boot=self.boot)
            if await self._insert(operation, time.time()):
                return operation, True
            existing = await self.get(operation.key)
            if existing is None:  # released meanwhile: claim it again
                continue
            if answer_seen is None or not await answer_seen(existing):
                return existing, False
            generation += 1

    async def continued(self, operation: Operation) -> bool:
        """Whether the same caller sent a later message to ``operation``'s task."""
        rows = await self.db.fetch(
            "SELECT 1 FROM a2a_bridge_operations WHERE task_id = :task AND owner = :owner AND key <> :key "
            "AND created > (SELECT created FROM a2a_bridge_operations WHERE key = :key) LIMIT 1",
            {"task": operation.task_id, "owner": operation.owner, "key": operation.key})
        return bool(rows)

    async def reclaim(self, operation: Operation) -> None:
        """Write ``operation``'s claim again after it was released (its work started late)."""
        self._finished.discard(operation.key)
        await self._insert(operation, time.time())

    async def _insert(self, operation: Operation, now: float) -> bool:
        row = dict(operation.__dict__, created=now, updated=now)
        return bool(await self.db.execute(CLAIM, row))

    async def get(self, key: str) -> Operation | None:
        rows = await self.db.fetch("SELECT * FROM a2a_bridge_operations WHERE key = :key", {"key": key})
        if not rows:
            return None
        operation = _operation(rows[0])
        return replace(operation, state=OperationState.DONE) if key in self._finished else operation

    async def finish(self, key: str) -> None:
        """The operation's work is over (its task is final, waits for input, or its deadline passed).

        Written within ``FINISH_DELAY`` seconds, many at once: nothing depends on it sooner
        (this process knows; a restart finds the task itself settled).
        """
        self._finished.add(key)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_finished_later())

    async def _write_finished_later(self) -> None:
        await asyncio.sleep(FINISH_DELAY)
        await self.flush()

    async def flush(self) -> None:
        """Write the finished operations now."""
        keys, self._finished = list(self._finished), set()
        for start in range(0, len(keys), 500):
            chunk = {f"k{n}": key for n, key in enumerate(keys[start:start + 500])}
            await self.db.execute(f"UPDATE a2a_bridge_operations SET state = :state, updated = :now "
                                  f"WHERE key IN ({', '.join(':' + k for k in chunk)})",
                                  {"state": OperationState.DONE, "now": time.time(), **chunk})

    async def release(self, key: str) -> None:
        """Forget a claim whose message was refused before any work started."""
        self._finished.discard(key)
        await self.db.execute("DELETE FROM a2a_bridge_operations WHERE key = :key", {"key": key})

    async def interrupted(self) -> list[Operation]:
        """Operations an earlier run left running (it crashed, was killed, or shut down
        before they ended). With ``single_process`` (SQLite: one bridge per file), every
        earlier run's; with a shared database, only this replica's."""
        sql = "SELECT * FROM a2a_bridge_operations WHERE state = :state AND boot <> :boot"
        if not self.single_process:
            sql += " AND replica = :replica"
        rows = await self.db.fetch(sql, {"state": OperationState.RUNNING, "replica": self.replica, "boot": self.boot})
        return [_operation(r) for r in rows]

    async def running_here(self) -> list[Operation]:
        """This run's operations whose work has not ended."""
        rows = await self.db.fetch("SELECT * FROM a2a_bridge_operations WHERE state = :state AND boot = :boot",
                                   {"state": OperationState.RUNNING, "boot": self.boot})
        return [_operation(r) for r in rows if r["key"] not in self._finished]

    async def running_in(self, boot: str) -> list[Operation]:
        """The operations the run ``boot`` (of any replica) left unfinished."""
        rows = await self.db.fetch("SELECT * FROM a2a_bridge_operations WHERE state = :state AND boot = :boot",
                                   {"state": OperationState.RUNNING, "boot": boot})
        return [_operation(r) for r in rows]

    async def running_for_task(self, task_id: str) -> Operation | None:
        """The operation still working on ``task_id``, if any (in any process; one that
        finished here and is not written yet is not)."""
        rows = await self.db.fetch(
            "SELECT * FROM a2a_bridge_operations WHERE task_id = :task AND state = :state "
            "ORDER BY created DESC LIMIT 1", {"task": task_id, "state": OperationState.RUNNING})
        return _operation(rows[0]) if rows and rows[0]["key"] not in self._finished else None

    async def stranded(self, live_runs: str | None, updated_before_ns: int, limit: int = STRANDED_PAGE
                       ) -> list[tuple[str, str]]:
        """(task id, owner) of tasks still submitted or working, last updated before
        ``updated_before_ns``, that no operation of a live run works on: ``live_runs`` is a query
        of the boot ids of the runs alive (None: every run whose work has not ended is)."""
        live = f" AND o.boot IN ({live_runs})" if live_runs else ""
        rows = await self.db.fetch(
            f"SELECT t.id AS id, t.owner AS owner FROM bridge_tasks t WHERE t.state IN ({ACTIVE_STATES}) "
            f"AND t.updated < :before AND NOT EXISTS (SELECT 1 FROM a2a_bridge_operations o "
            f"WHERE o.task_id = t.id AND o.state = :running{live}) LIMIT :limit",
            {"before": updated_before_ns, "running": OperationState.RUNNING, "limit": limit})
        return [(row["id"], row["owner"]) for row in rows]

    def is_mine(self, operation: Operation) -> bool:
        """Whether this process is the one doing ``operation``'s work."""
        return operation.replica == self.replica and operation.boot == self.boot


def _operation(row) -> Operation:
    return Operation(**{k: row[k] for k in Operation.__dataclass_fields__})
