"""Bridge: a task's webhooks are looked up only while it may have some.

The a2a-sdk asks for a task's push configs at every event of the task. A task known to have
none costs no query: one made by this process, or one a lookup found without. A config
written for it ends that, in this process at once, and in the others on the same store
through what they share: the generation of workers on one SQLite file, a ``NOTIFY`` between
replicas on PostgreSQL. The lookups are counted on a real SQLite store; across processes, a
config registered on one worker (replica) must be used when the task's events happen on the
other.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys

import pytest
from google.protobuf.json_format import MessageToJson
from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.push.delivery import WebhookSender
from ovos_a2a_solver.bridge.push.guard import WebhookGuard
from ovos_a2a_solver.bridge.storage.database import SqliteDatabase
from ovos_a2a_solver.bridge.storage.push_configs import PushConfigStore
from ovos_a2a_solver.bridge.storage.new_tasks import NewTasks

from support.bridge_process import BridgeProcess
from support.bridge_rpc import OwnerCalls, Worker, message, state
from support.replicas import replica
from support.waiting import wait_until
from support.webhooks import Webhook, quick

HOOK = "https://hooks.example.org/a2a"
TOKEN = "push-lookups-owner-5Tq"
POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")


class CountedDatabase(SqliteDatabase):
    """A SQLite database that counts the lookups of push configs."""

    lookups = 0

    async def fetch(self, sql: str, params: dict | None = None) -> list[dict]:
        if "FROM a2a_bridge_push_configs WHERE task_id" in sql:
            self.lookups += 1
        return await super().fetch(sql, params)


def event(task_id: str) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))


async def open_configs(path, among_workers: bool = False) -> tuple[CountedDatabase, PushConfigStore]:
    db = CountedDatabase(path)
    configs = PushConfigStore(db, BridgeSettings(), among_workers=among_workers)
    await configs.initialize()
    return db, configs


def test_the_events_of_a_task_without_webhooks_look_them_up_once_and_a_new_tasks_never(tmp_path):
    async def scenario():
        db, configs = await open_configs(tmp_path / "bridge.sqlite3")
        sender = WebhookSender(configs, WebhookGuard(""), BridgeSettings())
        try:
            new_tasks = NewTasks(made=configs.none_yet)
            new = new_tasks.make()
            for _ in range(5):
                await sender.send_notification(new, event(new))
            after_new = db.lookups
            for _ in range(5):
                await sender.send_notification("older", event("older"))
            after_older = db.lookups
            await configs.set_info("older", TaskPushNotificationConfig(id="w", url=HOOK), ServerCallContext())
            found = await configs.webhooks_of("older")
            return after_new, after_older, [config.url for _owner, config in found], db.lookups
        finally:
            await sender.aclose(0)
            await db.aclose()

    after_new, after_older, found, lookups = asyncio.run(scenario())
    assert after_new == 0, "the events of a task this process made looked its webhooks up"
    assert after_older == 1, "the events of a task without webhooks looked them up more than once"
    assert found == [HOOK] and lookups == 2, "a config written for the task was not looked up again"


def test_a_config_written_by_one_worker_is_found_by_the_other_that_knew_the_task_without(tmp_path):
    """Two stores on one SQLite file, as two workers have them (each its own connection and
    its own mapping of the shared generation)."""
    async def scenario():
        (db_a, a), (db_b, b) = [await open_configs(tmp_path / "bridge.sqlite3", among_workers=True)
                                for _ in range(2)]
        try:
            assert await b.webhooks_of("t") == [] and await b.webhooks_of("t") == []
            known_without = db_b.lookups
            await a.set_info("t", TaskPushNotificationConfig(id="w", url=HOOK), ServerCallContext())
            found = [config.url for _owner, config in await b.webhooks_of("t")]
            return known_without, found
        finally:
            await db_a.aclose()
            await db_b.aclose()

    known_without, found = asyncio.run(scenario())
    assert known_without == 1
    assert found == [HOOK], "a worker kept believing the task had no webhook"


def registered_elsewhere_is_delivered(here: OwnerCalls, there: OwnerCalls, webhook: Webhook) -> None:
    """A task waiting for input on ``there`` (its events looked its webhooks up there) gets a
    config through ``here``; the follow-up, on ``there``, is delivered to it."""
    asked = there.send(message("ask:Which city?"))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
    here.task("CreateTaskPushNotificationConfig", {"taskId": asked["id"], "url": webhook.url, "id": "c1"})
    done = there.send(message("Paris", task_id=asked["id"], context_id=asked["contextId"]))
    assert state(done) == "TASK_STATE_COMPLETED", done
    wait_until(lambda: asked["id"] in webhook.completed, "the completed event to reach the webhook registered "
                                                         "on the other process")


@pytest.fixture
def webhook():
    hook = Webhook(quick)
    yield hook
    hook.close()


PUSH_ENV = {"OVOS_A2A_PUSH_ALLOW": "127.0.0.1", "OVOS_A2A_TOKENS": TOKEN}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SQLite workers need Linux")
def test_a_config_registered_on_one_worker_is_used_for_the_events_on_the_other(webhook):
    with BridgeProcess("--workers", "2", env=PUSH_ENV) as bridge:
        one, two = Worker(bridge, 1, TOKEN), Worker(bridge, 2, TOKEN)
        try:
            registered_elsewhere_is_delivered(one, two, webhook)
        finally:
            one.close()
            two.close()


def store_config_as_a_worker_would(state_dir, task_id: str, url: str) -> None:
    """Store a push config for ``task_id`` in the bridge's SQLite file, in its owner's name, as a worker
    does before it tells the others (which one killed at that moment never does)."""
    with contextlib.closing(sqlite3.connect(state_dir / "bridge.sqlite3", isolation_level=None)) as db:
        (owner,) = db.execute("SELECT owner FROM bridge_tasks WHERE id = ?", (task_id,)).fetchone()
        config = MessageToJson(TaskPushNotificationConfig(task_id=task_id, id="c1", url=url), indent=None)
        db.execute("INSERT INTO a2a_bridge_push_configs (task_id, owner, config_id, config, live) "
                   "VALUES (?, ?, 'c1', ?, 1)", (task_id, owner, config))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SQLite workers need Linux")
def test_a_config_stored_by_a_worker_killed_before_it_told_the_others_is_used_once_it_is_restarted(webhook, tmp_path):
    state_dir = tmp_path / "state"
    with BridgeProcess("--workers", "2", state_dir=state_dir, env=PUSH_ENV) as bridge:
        two = Worker(bridge, 2, TOKEN)
        try:
            asked = two.send(message("ask:Which city?"))  # worker 2 made the task: it knows it has no webhook
            assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
            store_config_as_a_worker_would(state_dir, asked["id"], webhook.url)
            os.kill(bridge.worker_ids()[0], signal.SIGKILL)  # worker 1 wrote it, and died before it told
            wait_until(lambda: "worker 1 ended (signal SIGKILL); started it again" in bridge.stderr_text(),
                       "the bridge to start worker 1 again")
            done = two.send(message("Paris", task_id=asked["id"], context_id=asked["contextId"]))
            assert state(done) == "TASK_STATE_COMPLETED", done
            wait_until(lambda: asked["id"] in webhook.completed, "the completed event to reach the webhook")
        finally:
            two.close()


@pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"), reason="set OVOS_A2A_TEST_POSTGRES to a database URL")
def test_a_config_registered_on_one_replica_is_used_for_the_events_on_the_other(webhook):
    assert POSTGRES, "CI must provide OVOS_A2A_TEST_POSTGRES (see .ci/run)"

    with replica("a", env=PUSH_ENV) as a, replica("b", env=PUSH_ENV) as b:
        registered_elsewhere_is_delivered(OwnerCalls(a, TOKEN), OwnerCalls(b, TOKEN), webhook)
