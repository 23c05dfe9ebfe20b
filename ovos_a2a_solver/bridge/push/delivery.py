# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Push notifications: task events delivered to webhooks, with retries, within bounds.

:class:`WebhookSender` is the a2a-sdk's ``PushNotificationSender``. It never holds up the
task: each event is queued for each of the task's webhooks and delivered in order by a worker
of that webhook, POSTing the ``StreamResponse`` JSON with the configured token
(``X-A2A-Notification-Token``) and credentials (``Authorization``), and up to ``attempts``
tries with exponential backoff and full jitter on connection errors, timeouts, 408, 429 and
5xx. Deliveries take slots (:class:`DeliverySlots`): ``push_in_flight`` at once,
``push_in_flight_per_caller`` for one caller, ``push_in_flight_per_host`` for one caller's
host; the others wait in their queues, costing nothing. One delivery, from the name's
resolution (by :class:`~ovos_a2a_solver.bridge.push.guard.WebhookGuard`) to the answer's
status, has ``push_timeout`` seconds, and at most :data:`ANSWER_READ` bytes of the answer's
body are read. Every event is attempted, the final one included; at shutdown the queued ones
get the bridge's shutdown grace. The configs are in
:class:`~ovos_a2a_solver.bridge.storage.push_configs.PushConfigStore`.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from urllib.parse import urlsplit

from a2a.server.tasks import PushNotificationSender
from a2a.types import TaskPushNotificationConfig
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.bridge.push.guard import Target, WebhookGuard, WebhookRefused
from ovos_a2a_solver.bridge.storage.push_configs import PushConfigStore
from ovos_a2a_solver.bridge.storage.owners import caller_of
from ovos_a2a_solver.resilience import tried_again

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ANSWER_READ = 4096  # bytes of a webhook's answer read at most (the status is all that counts)
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


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
                 backoff: float = 0.5, metrics: Metrics = NO_METRICS) -> None:
        import httpx

        self.store, self.guard, self.attempts, self.backoff = store, guard, attempts, backoff
        self.metrics = metrics
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
                    self.metrics.push_delivery("not_sent")
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

        async def attempt(may_retry: bool) -> bool | None:
            """One try: True when delivered, False when refused or not sent (never tried
            again), ``None`` when it failed and may be tried again."""
            try:
                async with self.slots.held(caller, host):
                    async with asyncio.timeout(self.timeout):
                        target = await self.guard.target(config.url)
                        status = await self._post(target, body, headers)
                if status < 300:
                    self.metrics.push_delivery("delivered")
                    return True
                if status not in RETRIED_STATUSES:
                    LOG.warning("push notification for task %s refused by %s: HTTP %d", config.task_id,
                                target.host, status)
                    self.metrics.push_delivery("refused")
                    return False
            except WebhookRefused as refusal:
                LOG.warning("push notification for task %s not sent: %s", config.task_id, refusal)
                self.metrics.push_delivery("not_sent")
                return False
            except (httpx.HTTPError, TimeoutError) as exc:
                LOG.info("push notification for task %s to %s failed (%s); retrying", config.task_id,
                         parts.hostname, type(exc).__name__)
            if may_retry:
                self.metrics.push_attempt_failed()
            return None

        if self.attempts > 0:
            delivered = await tried_again(attempt, lambda outcome: outcome is None, self.attempts - 1, self.backoff)
            if delivered is not None:
                return delivered
        self.metrics.push_delivery("undeliverable")
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
