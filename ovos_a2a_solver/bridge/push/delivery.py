# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Push notifications: webhook configs kept in the bridge's database, events delivered with
retries, and never to an address the operator did not allow.

* :class:`WebhookGuard` decides where a webhook may point. Only ``http``/``https`` URLs whose
  host resolves to public addresses: loopback, private, link-local (cloud metadata), shared
  (CGNAT), multicast, reserved, unspecified and IPv6 site-local addresses are refused, an
  IPv6 address that carries IPv4 ones (IPv4-mapped, 6to4, Teredo) as those IPv4 addresses
  (see :func:`forbidden`), and a host that does not resolve too. ``push_allow`` (host
  names, addresses or networks) lets trusted internal receivers through. A URL is checked
  when it is registered and again at every delivery, and the delivery connects to the very
  address that was checked (TLS still verifies the host name), so DNS cannot change the
  answer in between.
* :class:`PushConfigStore` is the a2a-sdk's ``PushNotificationConfigStore`` on the bridge's
  own database (SQLite or PostgreSQL), per owner (caller and tenant): configs survive a
  restart.
* :class:`WebhookSender` is the SDK's ``PushNotificationSender``. It never holds up the task:
  each event is queued for each of the task's webhooks and delivered in order by a worker of
  that webhook, POSTing the ``StreamResponse`` JSON with the configured token
  (``X-A2A-Notification-Token``) and credentials (``Authorization``), and up to ``attempts``
  tries with exponential backoff and full jitter on connection errors, timeouts, 408, 429
  and 5xx. Deliveries take slots (:class:`DeliverySlots`): ``push_in_flight`` at once,
  ``push_in_flight_per_caller`` for one caller, ``push_in_flight_per_host`` for one
  caller's host; the others wait in their queues, costing nothing. One delivery, from the
  name's resolution to the answer's status, has ``push_timeout`` seconds, and at most
  :data:`ANSWER_READ` bytes of the answer's body are read. Every event is attempted, the
  final one included; at shutdown the queued ones get the bridge's shutdown grace.
* :class:`PushConfigStore` limits the configs (see its docstring).
"""
from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import random
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore, PushNotificationSender
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict, MessageToJson, Parse

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.storage.database import Sql, SqliteDatabase
from ovos_a2a_solver.bridge.storage.tasks import caller_of, owner_scope

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ANSWER_READ = 4096  # bytes of a webhook's answer read at most (the status is all that counts)
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class WebhookRefused(ValueError):
    """A webhook URL the bridge will not call; ``str()`` says why."""


@dataclass(frozen=True)
class Target:
    """Where one delivery goes: the URL as registered, and the address checked for it."""

    url: str
    host: str
    address: str

    @property
    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address (the ``Host`` header keeps the name)."""
        parts = urlsplit(self.url)
        address = f"[{self.address}]" if ":" in self.address else self.address
        netloc = address + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def embedded_ipv4(ip) -> list:
    """The IPv4 addresses an IPv6 address carries to: the one inside an IPv4-mapped
    (``::ffff:0:0/96``) or 6to4 (``2002::/16``) address, the server and the client of a Teredo
    (``2001::/32``) one; nothing for any other address."""
    if ip.version != 6:
        return []
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    return list(ip.teredo) if ip.teredo is not None else []


def forbidden(address: str) -> bool:
    """Whether ``address`` is not a public unicast destination. An IPv6 address that carries
    IPv4 addresses (IPv4-mapped, 6to4, Teredo) is judged by them: it is refused if one of
    them would be, and passes if all are public, as the IPv4 addresses would. Site-local
    (``fec0::/10``, deprecated but still routed by some networks) is refused."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    embedded = embedded_ipv4(ip)
    if embedded:
        return any(forbidden(str(inner)) for inner in embedded)
    return (not ip.is_global or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified or getattr(ip, "is_site_local", False))


def without_secrets(config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """A copy of ``config`` without its secrets (``token``, ``authentication.credentials``),
    for answers: once stored they are only ever sent to the webhook."""
    shown = TaskPushNotificationConfig()
    shown.CopyFrom(config)
    shown.ClearField("token")
    if shown.HasField("authentication"):
        shown.authentication.ClearField("credentials")
    return shown


class WebhookGuard:
    """Which webhook URLs may be called (see the module's docstring)."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allowed_hosts: set[str] = set()
        self.allowed_networks: list = []
        for entry in (a.strip() for a in allow if a.strip()):
            try:
                self.allowed_networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.allowed_hosts.add(entry.lower().rstrip("."))

    def _allowed(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        return any(ip in network for network in self.allowed_networks if ip.version == network.version)

    async def target(self, url: str) -> Target:
        """The checked address to deliver ``url`` to, or :class:`WebhookRefused`. Of the host's
        addresses the first allowed one is taken (a public one, or one on the allow-list)."""
        parts, host, port = self._parse(url)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:  # no such host, or a name no resolver can encode
            raise WebhookRefused(f"the webhook host {host} does not resolve ({exc})") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        usable = addresses if host in self.allowed_hosts else \
            [a for a in addresses if not forbidden(a) or self._allowed(a)]
        if not usable:
            raise WebhookRefused(f"the webhook host {host} is a private, loopback, link-local or reserved "
                                 f"address, or an IPv6 one that carries such an IPv4 address (6to4, Teredo, "
                                 f"IPv4-mapped) ({', '.join(addresses)}); an operator may allow it with "
                                 f"OVOS_A2A_PUSH_ALLOW")
        return Target(url, host if parts.port is None else f"{host}:{parts.port}", usable[0])

    @staticmethod
    def _parse(url: str):
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise WebhookRefused(f"not a URL: {url!r}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebhookRefused(f"a webhook must be an http(s) URL with a host, not {url!r}")
        return parts, parts.hostname.lower().rstrip("."), port

    async def accepts(self, url: str) -> bool:
        """For the SDK's ``push_url_validator``: True if ``url`` may be registered, else an
        ``InvalidParamsError`` that says why (the SDK's own refusal would not). A host on the
        allow-list by name is taken as it is (it is resolved and checked at delivery)."""
        try:
            if self._parse(url)[1] not in self.allowed_hosts:
                await self.target(url)
            return True
        except WebhookRefused as refusal:
            LOG.warning("push notification config refused: %s", refusal)
            raise InvalidParamsError(message=f"webhook refused: {refusal}") from None


SCHEMA = (
    """CREATE TABLE IF NOT EXISTS a2a_bridge_push_configs (
        task_id VARCHAR(255) NOT NULL, owner VARCHAR(512) NOT NULL, config_id VARCHAR(255) NOT NULL,
        config TEXT NOT NULL, PRIMARY KEY (task_id, owner, config_id))""",
)
#: the column added since: 0 once the config's task is known to be finished (it no longer
#: counts towards its owner's webhooks)
LIVE_COLUMN = "live SMALLINT NOT NULL DEFAULT 1"
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
        columns = {row["name"] for row in await self.db.fetch(
            "SELECT name FROM pragma_table_info('a2a_bridge_push_configs')")} if isinstance(self.db, SqliteDatabase) \
            else {row["name"] for row in await self.db.fetch(
                "SELECT column_name AS name FROM information_schema.columns "
                "WHERE table_name = 'a2a_bridge_push_configs'")}
        if "live" not in columns:
            await self.db.execute(f"ALTER TABLE a2a_bridge_push_configs ADD COLUMN {LIVE_COLUMN}")
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
                                      "WHERE task_id = :task_id AND owner = :owner", {"task_id": task_id, "owner": owner})
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


class Slots:
    """A counting limit per key (a caller, a caller's host), made when first asked for and
    dropped once nobody holds or awaits it, so that keys never pile up."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._limits: dict[object, list] = {}  # key -> [semaphore, holders and waiters]

    @contextlib.asynccontextmanager
    async def held(self, key: object):
        entry = self._limits.setdefault(key, [asyncio.Semaphore(self.size), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._limits[key]


class DeliverySlots:
    """Deliveries in flight: at most ``total``, ``per_caller`` of them for one caller, and
    ``per_host`` for one caller's webhook host (and port). A delivery takes its host's
    slot first (a slow host's queue then waits there, holding none of its caller's slots
    that the caller's other hosts could use), then its caller's, then one of the total: a
    caller waits on its own slots, and never holds more than ``per_caller`` of the total,
    so another caller's delivery finds one free (with ``total`` larger than ``per_caller``)."""

    def __init__(self, total: int, per_caller: int, per_host: int) -> None:
        self._callers = Slots(per_caller)
        self._hosts = Slots(per_host)
        self._total = asyncio.Semaphore(total)

    @contextlib.asynccontextmanager
    async def held(self, caller: str, host: str):
        async with self._hosts.held((caller, host)), self._callers.held(caller), self._total:
            yield


class WebhookSender(PushNotificationSender):
    """Queues each event for each webhook of its task; one worker per webhook delivers in
    order, each delivery within :class:`DeliverySlots` and one overall deadline, reading
    no more of the webhook's answer than its status, headers (h11's bound) and
    :data:`ANSWER_READ` bytes of body."""

    def __init__(self, store: PushConfigStore, guard: WebhookGuard, settings: BridgeSettings, attempts: int = 4,
                 backoff: float = 0.5) -> None:
        import httpx

        self.store, self.guard, self.attempts, self.backoff = store, guard, attempts, backoff
        self.timeout = settings.push_timeout
        self.slots = DeliverySlots(settings.push_in_flight, settings.push_in_flight_per_caller,
                                   settings.push_in_flight_per_host)
        # never more connections than deliveries in flight: none waits inside the client's pool
        limits = httpx.Limits(max_connections=settings.push_in_flight,
                              max_keepalive_connections=settings.push_in_flight)
        self._http = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, limits=limits)
        self._queues: dict[tuple, asyncio.Queue] = {}
        self._workers: set[asyncio.Task] = set()

    async def send_notification(self, task_id: str, event) -> None:
        webhooks = await self.store.webhooks_of(task_id)
        if not webhooks:
            return
        body = json.dumps(MessageToDict(to_stream_response(event))).encode()
        for owner, config in webhooks:
            key = (task_id, owner, config.id, config.url)
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = asyncio.Queue()
                worker = asyncio.get_running_loop().create_task(self._work(key, caller_of(owner), queue))
                self._workers.add(worker)
                worker.add_done_callback(self._workers.discard)
            queue.put_nowait((config, body))

    async def _work(self, key: tuple, caller: str, queue: asyncio.Queue) -> None:
        try:
            while not queue.empty():
                config, body = queue.get_nowait()
                try:
                    await self.deliver(config, body, caller)
                except Exception as exc:  # one broken delivery must not stop the ones queued after it
                    LOG.warning("push notification for task %s not sent: %s: %s", config.task_id,
                                type(exc).__name__, exc)
        finally:
            if self._queues.get(key) is queue and queue.empty():
                del self._queues[key]

    async def deliver(self, config: TaskPushNotificationConfig, body: bytes, caller: str = "") -> bool:
        """POST ``body`` to the config's webhook, retried; True once it answered 2xx."""
        import httpx

        headers = {"Content-Type": "application/json"}
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        if config.HasField("authentication") and config.authentication.scheme and config.authentication.credentials:
            headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        parts = urlsplit(config.url)
        host = f"{parts.hostname}:{parts.port}"
        for attempt in range(self.attempts):
            try:
                async with self.slots.held(caller, host):
                    async with asyncio.timeout(self.timeout):
                        target = await self.guard.target(config.url)
                        status = await self._post(target, body, headers)
                if status < 300:
                    return True
                if status not in RETRIED_STATUSES:
                    LOG.warning("push notification for task %s refused by %s: HTTP %d", config.task_id,
                                target.host, status)
                    return False
            except WebhookRefused as refusal:
                LOG.warning("push notification for task %s not sent: %s", config.task_id, refusal)
                return False
            except (httpx.HTTPError, TimeoutError) as exc:
                LOG.info("push notification for task %s to %s failed (%s); retrying", config.task_id,
                         parts.hostname, type(exc).__name__)
            if attempt + 1 < self.attempts:
                await asyncio.sleep(random.uniform(0, self.backoff * 2 ** attempt))
        LOG.warning("push notification for task %s to %s not delivered after %d attempts", config.task_id,
                    parts.hostname, self.attempts)
        return False

    async def _post(self, target: Target, body: bytes, headers: dict[str, str]) -> int:
        """POST to the checked address; the answer's status. Of its body at most
        :data:`ANSWER_READ` bytes are read: a longer one closes the connection."""
        extensions = {"sni_hostname": target.host.split(":")[0]} if target.url.startswith("https") else {}
        async with self._http.stream("POST", target.pinned_url, content=body,
                                     headers={**headers, "Host": target.host}, extensions=extensions) as response:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read > ANSWER_READ:
                    break
            return response.status_code

    async def aclose(self, grace: float) -> None:
        """Give queued deliveries up to ``grace`` seconds, then close the HTTP client."""
        if self._workers:
            await asyncio.wait(set(self._workers), timeout=grace)
        for worker in list(self._workers):
            worker.cancel()
        await self._http.aclose()
