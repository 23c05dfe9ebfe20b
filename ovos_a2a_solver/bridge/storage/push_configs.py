# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Webhook configs in the bridge's database (SQLite or PostgreSQL): the a2a-sdk's
``PushNotificationConfigStore``, per owner (caller and tenant), within limits, surviving a
restart. A config's secrets are written, never read back (:func:`without_secrets`).

The SDK asks for a task's webhooks at every event of the task, and most tasks have none:
:class:`TasksWithoutWebhooks` remembers the tasks known to have none, so that their events
cost no query. A config written by another process reaches that record too: workers on one
SQLite file share a generation (:class:`SharedGeneration`), replicas on PostgreSQL are told
by a ``NOTIFY`` on :data:`CHANNEL`.
"""
from __future__ import annotations

import mmap
import os
import secrets
from collections import OrderedDict
from pathlib import Path

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToJson, Parse

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.storage.database import Sql, SqliteDatabase, add_column
from ovos_a2a_solver.bridge.storage.owners import owner_scope
from ovos_a2a_solver.local_state import open_private_file

#: ``live``: 0 once the config's task is known to be finished (it no longer counts towards
#: its owner's webhooks); a column added since the table was first made
LIVE_COLUMN = "SMALLINT NOT NULL DEFAULT 1"
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS a2a_bridge_push_configs (
        task_id VARCHAR(255) NOT NULL, owner VARCHAR(512) NOT NULL, config_id VARCHAR(255) NOT NULL,
        config TEXT NOT NULL, live {LIVE_COLUMN}, PRIMARY KEY (task_id, owner, config_id))""",
)
LIVE_INDEX = "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_push_configs_owner_live ON a2a_bridge_push_configs (owner, live)"

#: one statement: store a config unless its task or its owner has too many (a config that
#: replaces one of the same id always may)
INSERT_WITHIN_LIMITS = """
    INSERT INTO a2a_bridge_push_configs (task_id, owner, config_id, config, live)
    SELECT CAST(:task_id AS VARCHAR(255)), CAST(:owner AS VARCHAR(512)), CAST(:config_id AS VARCHAR(255)),
           CAST(:config AS TEXT), 1
    WHERE EXISTS (SELECT 1 FROM a2a_bridge_push_configs
                  WHERE task_id = :task_id AND owner = :owner AND config_id = :config_id)
       OR ((SELECT COUNT(*) FROM a2a_bridge_push_configs WHERE task_id = :task_id AND owner = :owner) < :per_task
           AND (SELECT COUNT(*) FROM a2a_bridge_push_configs WHERE owner = :owner AND live = 1) < :per_owner)
    ON CONFLICT (task_id, owner, config_id) DO UPDATE SET config = excluded.config"""


#: the PostgreSQL channel on which a process says it wrote a config: with an empty payload, for
#: any role that may connect may listen (it would learn which tasks have webhooks) and notify (a
#: payload proves nothing). A notice makes each replica forget which tasks it knew to have none.
CHANNEL = "ovos_a2a_bridge_push_configs"
#: on PostgreSQL: store a config and say so on :data:`CHANNEL` in one statement, so the notice
#: goes out when the config is committed, and only then, even if this process dies at once
INSERT_AND_ANNOUNCE = (f"WITH written AS ({INSERT_WITHIN_LIMITS} RETURNING task_id) "
                       f"SELECT pg_notify('{CHANNEL}', '') FROM written")
#: next to a SQLite file: the generation of its configs, which a worker changes when it writes one
GENERATION_SUFFIX = ".push-configs"
#: the most tasks a process remembers to have no config (the least recently used is forgotten:
#: its next event asks the database again)
KNOWN_WITHOUT_WEBHOOKS = 10_000


class SharedGeneration:
    """Eight bytes in a file next to a SQLite store, mapped into the memory of every worker on
    it: a worker that writes a config puts new random bytes there, and the others, reading
    them at the next event (a read of memory, no system call), learn that their record is out
    of date. Random bytes, not a count: two workers writing at once need no lock, since any
    change is news."""

    @classmethod
    def beside(cls, database: Path | str) -> "SharedGeneration":
        """The generation of the configs in the SQLite file ``database``."""
        return cls(Path(str(database) + GENERATION_SUFFIX))

    def __init__(self, path: Path) -> None:
        descriptor = open_private_file(path)  # 0600; a link planted in its place is not followed
        try:
            if os.fstat(descriptor).st_size < 8:
                os.ftruncate(descriptor, 8)
            self._map = mmap.mmap(descriptor, 8)
        finally:
            os.close(descriptor)

    def read(self) -> bytes:
        return self._map[:8]

    def change(self) -> None:
        self._map[:8] = secrets.token_bytes(8)


class TasksWithoutWebhooks:
    """The tasks this process knows to have no push config: learnt from a lookup that found
    none, or when a task is made (no config can name a task before its first save). At most
    ``size``, the least recently used forgotten first.

    A config written here removes its task at once. One written by another process removes
    what that process says: workers on one SQLite file change their ``shared`` generation
    (every worker then forgets all it knew), replicas on PostgreSQL notify (:meth:`heard`).
    A lookup answers for the moment it began (:meth:`mark`): a config written or announced
    while it ran makes its answer unusable (:meth:`add` ignores it). Deleting configs never
    makes an entry wrong, so deletes need no news."""

    def __init__(self, size: int = KNOWN_WITHOUT_WEBHOOKS, shared: SharedGeneration | None = None) -> None:
        self.size = size
        self.shared = shared
        self._tasks: OrderedDict[str, None] = OrderedDict()
        self._generation = shared.read() if shared is not None else b""
        self._changes = 0  # configs written or announced since start: a lookup's answer is for one of them

    def _catch_up(self) -> None:
        if self.shared is not None:
            generation = self.shared.read()
            if generation != self._generation:
                self._generation = generation
                self.forget_all()

    def __contains__(self, task_id: str) -> bool:
        self._catch_up()
        if task_id in self._tasks:
            self._tasks.move_to_end(task_id)
            return True
        return False

    def mark(self) -> int:
        """Taken before a lookup: what :meth:`add` needs to tell whether its answer still holds."""
        self._catch_up()
        return self._changes

    def add(self, task_id: str, mark: int) -> None:
        """``task_id`` had no config at ``mark``; remembered unless a config was written since."""
        self._catch_up()
        if mark != self._changes:
            return
        self._tasks[task_id] = None
        self._tasks.move_to_end(task_id)
        if len(self._tasks) > self.size:
            self._tasks.popitem(last=False)

    def forget(self, task_id: str) -> None:
        """A config was written for ``task_id``."""
        self._changes += 1
        self._tasks.pop(task_id, None)

    def forget_all(self) -> None:
        """Configs were written elsewhere, for tasks unknown (or news may have been lost)."""
        self._changes += 1
        self._tasks.clear()

    def heard(self, _payload: str | None) -> None:
        """A notice on :data:`CHANNEL` (a config was written, for a task it does not say), or
        ``None``: notices may have been missed (the process listens again after its connection
        broke). Either way, every task may have a config now."""
        self.forget_all()


class PushConfigStore(PushNotificationConfigStore):
    """Webhook configs in the bridge's database, one row each, per owner, within the
    settings' limits: ``push_configs_per_task`` on one task, ``push_configs_per_owner`` on
    an owner's unfinished tasks, ``push_config_size`` bytes each. The limits are counted in
    the database, in the statement that stores the config (serialized per owner), so they
    hold across workers and replicas; one more is an ``InvalidParamsError`` that names the
    limit and its setting.

    ``among_workers``: other workers share the SQLite file (see :class:`SharedGeneration`).
    On PostgreSQL a written config is announced on :data:`CHANNEL`; the replicas' listener
    hands what it hears to ``without_webhooks.heard``."""

    def __init__(self, db: Sql, settings: BridgeSettings, among_workers: bool = False) -> None:
        self.db = db
        self.per_task = settings.push_configs_per_task
        self.per_owner = settings.push_configs_per_owner
        self.size = settings.push_config_size
        self.on_sqlite = isinstance(db, SqliteDatabase)
        shared = SharedGeneration.beside(db.path) if among_workers and self.on_sqlite else None
        self.without_webhooks = TasksWithoutWebhooks(shared=shared)

    def none_yet(self, task_id: str) -> None:
        """``task_id`` was just made up for a new task: it has no config (see ``new_tasks.NewTasks``)."""
        self.without_webhooks.add(task_id, self.without_webhooks.mark())

    async def initialize(self) -> None:
        for statement in SCHEMA:
            await self.db.execute(statement)
        await add_column(self.db, "a2a_bridge_push_configs", "live", LIVE_COLUMN)
        await self.db.execute(LIVE_INDEX)

    async def set_info(self, task_id: str, notification_config: TaskPushNotificationConfig,
                       context: ServerCallContext) -> TaskPushNotificationConfig:
        stored = normalize_push_notification_config(task_id, notification_config)
        text = MessageToJson(stored, indent=None)
        size = len(text.encode())
        if size > self.size:
            raise InvalidParamsError(message=f"the push config is {size} bytes, more than the {self.size} one may "
                                             f"have ({names_of('push_config_size')})")
        owner = owner_scope(context)
        row = {"task_id": task_id, "owner": owner, "config_id": stored.id, "config": text,
               "per_task": self.per_task, "per_owner": self.per_owner}
        insert = INSERT_WITHIN_LIMITS if self.on_sqlite else INSERT_AND_ANNOUNCE
        if not await self.db.execute_serialized(owner, insert, row):
            if not await self._retire_finished(owner) or \
                    not await self.db.execute_serialized(owner, insert, row):
                raise await self._refusal(task_id, owner)  # at the limit, even once finished tasks no longer count
        self._announce(task_id)
        return stored

    def _announce(self, task_id: str) -> None:
        """Tell this process, and the other workers on the SQLite file, that ``task_id`` has a
        config now. (Replicas on PostgreSQL were told by the statement that stored it.)"""
        self.without_webhooks.forget(task_id)
        if self.without_webhooks.shared is not None:
            self.without_webhooks.shared.change()

    async def _retire_finished(self, owner: str) -> int:
        """Stop counting the owner's configs of tasks that finished; return how many. Only
        the configs still counted are looked at (no more than ``push_configs_per_owner``)."""
        return await self.db.execute(
            f"UPDATE a2a_bridge_push_configs SET live = 0 WHERE owner = :owner AND live = 1 "
            f"AND task_id IN ({self.db.FINISHED_TASK_IDS})", {"owner": owner})

    async def _refusal(self, task_id: str, owner: str) -> InvalidParamsError:
        on_task = await self.db.fetch("SELECT COUNT(*) AS n FROM a2a_bridge_push_configs "
                                      "WHERE task_id = :task_id AND owner = :owner",
                                      {"task_id": task_id, "owner": owner})
        if on_task[0]["n"] >= self.per_task:
            return InvalidParamsError(message=f"task {task_id} has {on_task[0]['n']} push configs, the most one task "
                                              f"may have ({names_of('push_configs_per_task')}); delete one first, "
                                              f"or replace one by its id")
        return InvalidParamsError(message=f"the caller has {self.per_owner} push configs on unfinished tasks, the "
                                          f"most one caller may have ({names_of('push_configs_per_owner')}); "
                                          f"delete one first, or wait for a task to finish")

    async def get_info(self, task_id: str, context: ServerCallContext) -> list[TaskPushNotificationConfig]:
        rows = await self.db.fetch("SELECT config FROM a2a_bridge_push_configs WHERE task_id = :task_id "
                                   "AND owner = :owner ORDER BY config_id",
                                   {"task_id": task_id, "owner": owner_scope(context)})
        return [Parse(row["config"], TaskPushNotificationConfig()) for row in rows]

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [config for _owner, config in await self.webhooks_of(task_id)]

    async def webhooks_of(self, task_id: str) -> list[tuple[str, TaskPushNotificationConfig]]:
        """Every config of ``task_id``, whoever its owner, with that owner (for delivery); none,
        without a lookup, for a task known to have none (:class:`TasksWithoutWebhooks`)."""
        if task_id in self.without_webhooks:
            return []
        mark = self.without_webhooks.mark()
        rows = await self.db.fetch("SELECT owner, config FROM a2a_bridge_push_configs WHERE task_id = :task_id "
                                   "ORDER BY owner, config_id", {"task_id": task_id})
        if not rows:
            self.without_webhooks.add(task_id, mark)
        return [(row["owner"], Parse(row["config"], TaskPushNotificationConfig())) for row in rows]

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        params = {"task_id": task_id, "owner": owner_scope(context)}
        sql = "DELETE FROM a2a_bridge_push_configs WHERE task_id = :task_id AND owner = :owner"
        if config_id is not None:
            sql += " AND config_id = :config_id"
            params["config_id"] = config_id
        await self.db.execute(sql, params)


def without_secrets(config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """A copy of ``config`` without its secrets (``token``, ``authentication.credentials``),
    for answers: once stored they are only ever sent to the webhook."""
    shown = TaskPushNotificationConfig()
    shown.CopyFrom(config)
    shown.ClearField("token")
    if shown.HasField("authentication"):
        shown.authentication.ClearField("credentials")
    return shown
