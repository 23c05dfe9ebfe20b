# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Operations: one per inbound message, durable, so a message is worked on at most once.

An operation's identity is a digest of (caller, taskId as sent, messageId) with
unambiguous framing. The first delivery claims it (a primary-key insert, atomic in
SQLite and PostgreSQL alike); every later delivery of the same message finds the claim
and is replayed instead of starting a second persona turn. Claims live in the same
database as the a2a-sdk task store.
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass

from google.protobuf.json_format import MessageToDict
from sqlalchemy import Column, Float, MetaData, String, Table, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

RUNNING, DONE = "running", "done"

METADATA = MetaData()
OPERATIONS = Table(
    "a2a_bridge_operations", METADATA,
    Column("key", String(64), primary_key=True),
    Column("owner", String(255), nullable=False),
    Column("message_id", String(255), nullable=False),
    Column("sent_task_id", String(255), nullable=False),
    Column("content", String(64), nullable=False),
    Column("context_id", String(255), nullable=True),
    Column("task_id", String(255), nullable=False, index=True),
    Column("state", String(16), nullable=False),
    Column("replica", String(255), nullable=False),
    Column("boot", String(32), nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
)


def operation_key(owner: str, task_id: str, message_id: str) -> str:
    """Digest of (caller, taskId, messageId); JSON framing keeps ("a:b","c") apart from ("a","b:c")."""
    framed = json.dumps([owner, task_id, message_id], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(framed.encode("utf-8")).hexdigest()


def content_digest(message) -> str:
    """Digest of what a message says, ids aside (a resend may or may not carry them)."""
    body = MessageToDict(message)
    for key in ("messageId", "taskId", "contextId"):
        body.pop(key, None)
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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
        return self.state == DONE


class OperationLog:
    """The durable table of operations."""

    def __init__(self, engine: AsyncEngine, replica: str) -> None:
        self.engine = engine
        self.replica = replica
        self.boot = uuid.uuid4().hex  # this process's run: operations of older runs were interrupted

    async def initialize(self) -> None:
        async with self.engine.begin() as conn:
            await conn.run_sync(METADATA.create_all)

    async def claim(self, owner: str, message, task_id: str) -> Operation | None:
        """Claim ``message`` for this caller, its work to be done in task ``task_id``.

        ``None`` if this call won the claim, else the existing claim.
        """
        now = time.time()
        row = dict(key=operation_key(owner, message.task_id, message.message_id), owner=owner,
                   message_id=message.message_id, sent_task_id=message.task_id, content=content_digest(message),
                   context_id=message.context_id or None, task_id=task_id, state=RUNNING,
                   replica=self.replica, boot=self.boot, created=now, updated=now)
        try:
            async with self.engine.begin() as conn:
                await conn.execute(OPERATIONS.insert().values(**row))
            return None
        except IntegrityError:
            existing = await self.get(row["key"])
            if existing is None:  # released in between: try once more
                return await self.claim(owner, message, task_id)
            return existing

    async def get(self, key: str) -> Operation | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(OPERATIONS).where(OPERATIONS.c.key == key))).mappings().first()
        return _operation(row) if row else None

    async def finish(self, key: str) -> None:
        """The operation's work is over (its task is final, waits for input, or its deadline passed)."""
        await self._update(key, state=DONE)

    async def release(self, key: str) -> None:
        """Forget a claim whose message was refused before any work started."""
        async with self.engine.begin() as conn:
            await conn.execute(delete(OPERATIONS).where(OPERATIONS.c.key == key))

    async def interrupted(self) -> list[Operation]:
        """This replica's operations left running by an earlier run (it crashed or was killed)."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(OPERATIONS).where(
                OPERATIONS.c.state == RUNNING, OPERATIONS.c.replica == self.replica,
                OPERATIONS.c.boot != self.boot))).mappings().all()
        return [_operation(r) for r in rows]

    async def running_for_task(self, task_id: str) -> Operation | None:
        """The operation still working on ``task_id``, if any (in any process)."""
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(OPERATIONS).where(
                OPERATIONS.c.task_id == task_id, OPERATIONS.c.state == RUNNING)
                .order_by(OPERATIONS.c.created.desc()).limit(1))).mappings().first()
        return _operation(row) if row else None

    def is_mine(self, operation: Operation) -> bool:
        """Whether this process is the one doing ``operation``'s work."""
        return operation.replica == self.replica and operation.boot == self.boot

    async def _update(self, key: str, **values) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(update(OPERATIONS).where(OPERATIONS.c.key == key).values(updated=time.time(), **values))


def _operation(row) -> Operation:
    return Operation(**{k: row[k] for k in Operation.__dataclass_fields__})
