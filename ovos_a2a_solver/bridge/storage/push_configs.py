# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Webhook configs in the bridge's database (SQLite or PostgreSQL): the a2a-sdk's
``PushNotificationConfigStore``, per owner (caller and tenant), within limits, surviving a
restart. A config's secrets are written, never read back (:func:`without_secrets`).
"""
from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToJson, Parse

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.storage.database import Sql, add_column
from ovos_a2a_solver.bridge.storage.tasks import owner_scope

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


class PushConfigStore(PushNotificationConfigStore):
    """Webhook configs in the bridge's database, one row each, per owner, within the
    settings' limits: ``push_configs_per_task`` on one task, ``push_configs_per_owner`` on
    an owner's unfinished tasks, ``push_config_size`` bytes each. The limits are counted in
    the database, in the statement that stores the config (serialized per owner), so they
    hold across workers and replicas; one more is an ``InvalidParamsError`` that names the
    limit and its setting."""

    def __init__(self, db: Sql, settings: BridgeSettings) -> None:
        self.db = db
        self.per_task = settings.push_configs_per_task
        self.per_owner = settings.push_configs_per_owner
        self.size = settings.push_config_size

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
        if not await self.db.execute_serialized(owner, INSERT_WITHIN_LIMITS, row):
            if await self._retire_finished(owner):  # at the limit: what was counted may be over
                if await self.db.execute_serialized(owner, INSERT_WITHIN_LIMITS, row):
                    return stored
            raise await self._refusal(task_id, owner)
        return stored

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
        """Every config of ``task_id``, whoever its owner, with that owner (for delivery)."""
        rows = await self.db.fetch("SELECT owner, config FROM a2a_bridge_push_configs WHERE task_id = :task_id "
                                   "ORDER BY owner, config_id", {"task_id": task_id})
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
