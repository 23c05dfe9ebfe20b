# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's Starlette app: cards, JSON-RPC (1.0 and 0.3 on one URL), HTTP+JSON, health.

Routes (``/a2a`` is the path of ``base_url``):

* ``/.well-known/agent-card.json``, ``/.well-known/agent.json`` and the same under ``/a2a``
* with a signing key, ``/.well-known/jwks.json`` (and under ``/a2a``): the card's public key
* with ``personas_dir``, each persona under ``/a2a/NAME``, and its card at
  ``/a2a/.well-known/NAME/agent-card.json`` too (:class:`PersonaBridges`)
* ``POST /a2a`` and ``/a2a/``: JSON-RPC, A2A 1.0 and 0.3
* ``/a2a/rest/...``: HTTP+JSON, A2A 1.0, and ``/a2a/rest/v1/...``: HTTP+JSON, A2A 0.3
* ``GET /health``: ``{"ok": true, ...}``
* with ``metrics`` on, ``GET /metrics``: the Prometheus text format (``observe.metrics``)

With SQLite the bridge is one process, or several workers of one command (``--workers``)
sharing the file and the listening socket: ``siblings`` carries cancels and live events
between them. With PostgreSQL it may be several processes (replicas, or workers: each
worker is a replica) behind one URL, without sticky routing: ``storage.postgres`` shares
tasks and their live events, and ``replicas`` carries cancels between them and watches
their leases.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from a2a.server.cluster import LegacyTaskStoreAdapter
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route, Router

from ovos_a2a_solver.bridge.backends.protocols import Backend
from ovos_a2a_solver.bridge.cluster.peers import Peers
from ovos_a2a_solver.bridge.cluster.replicas import ReplicaGroup
from ovos_a2a_solver.bridge.cluster.siblings import Siblings
from ovos_a2a_solver.bridge.config import CARD_PATHS, JWKS_PATH, BridgeSettings
from ovos_a2a_solver.bridge.edge.access_log import AccessLog
from ovos_a2a_solver.bridge.edge.body_limit import BodyLimit
from ovos_a2a_solver.bridge.edge.busy import BusyAnswers, BusyContextBuilder, answer_busy
from ovos_a2a_solver.bridge.edge.card import (CardEndpoint, build_card, grpc_interface, read_card_signing_key,
                                              sign_card)
from ovos_a2a_solver.bridge.edge.classify import ClassifyRequests
from ovos_a2a_solver.bridge.edge.observer import RequestObserver, RequestSink
from ovos_a2a_solver.bridge.edge.request_metrics import RequestMetrics
from ovos_a2a_solver.bridge.edge.rest_v03 import v03_rest_routes
from ovos_a2a_solver.bridge.edge.security import CredentialsBackend, ScrubCredentials, unauthenticated
from ovos_a2a_solver.bridge.edge.stream_shares import StreamCounts, StreamShares, stream_counts
from ovos_a2a_solver.bridge.edge.versions import VersionCheck, served_versions
from ovos_a2a_solver.bridge.edge.wire import WireCheck
from ovos_a2a_solver.bridge.observe.metrics import Metrics, metrics_for
from ovos_a2a_solver.bridge.observe.tracing import TraceRequests
from ovos_a2a_solver.bridge.push.delivery import WebhookSender
from ovos_a2a_solver.bridge.push.guard import WebhookGuard
from ovos_a2a_solver.bridge.storage.availability import PROBE_SCHEMA, PROBE_WRITE, StoreAvailability, store_unavailable
from ovos_a2a_solver.bridge.storage.call_reads import CallReads
from ovos_a2a_solver.bridge.storage.claim import StoreTaken
from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, StoreUnusable, in_words, open_stores
from ovos_a2a_solver.bridge.storage.new_tasks import NewTasks
from ovos_a2a_solver.bridge.storage.operations import OperationLog
from ovos_a2a_solver.bridge.storage.push_configs import CHANNEL as PUSH_CONFIGS_CHANNEL, PushConfigStore
from ovos_a2a_solver.bridge.storage.retention import keep_deleting
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds
from ovos_a2a_solver.bridge.storage.tasks import BufferedTaskStore, NewTasksUnread
from ovos_a2a_solver.bridge.turns.admission import BusyError, OperationTracker
from ovos_a2a_solver.bridge.turns.executor import PersonaExecutor
from ovos_a2a_solver.bridge.turns.handler import BridgeRequestHandler, ChosenTaskIds
from ovos_a2a_solver.bridge.turns.turn import TurnRegistry
from ovos_a2a_solver.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.jwk import CardKey

LOG = logging.getLogger("ovos_a2a_solver.bridge")

PROBE_SECONDS = 2  # how long /health waits for the store's answer


def redirect_nowhere(router: Router) -> None:
    """No redirect to a path with(out) its trailing slash, in ``router`` and every router mounted
    in it (the a2a-sdk's per-tenant routes too): Starlette builds that redirect from the request's
    ``Host`` header, which the caller chose (an open redirect). Such a path is not found instead."""
    router.redirect_slashes = False
    for route in router.routes:
        if isinstance(route, Mount) and isinstance(route.app, Router):
            redirect_nowhere(route.app)


async def _say_busy(context, busy: BusyError) -> None:
    """A message refused for now: the binding says "retry later" (``edge.busy``)."""
    await answer_busy(context, busy.message, busy.retry_after, busy.unavailable, busy.jsonrpc_code)


class Bridge:
    """Everything one bridge process serves; ``app`` is the ASGI application.

    ``signing_key`` is the key read from ``settings.card_signing_key`` (read here when not
    given); the card is signed with it once, here. ``worker`` is this process's number
    among the workers of one ``serve --workers N`` (1..N), ``None`` when it serves alone.
    ``metrics`` are what it counts in (by default its own, when ``settings.metrics`` is on);
    ``streams`` the streams it counts per caller (by default its own).
    """

    def __init__(self, settings: BridgeSettings, backend: Backend, signing_key: "CardKey | None" = None,
                 worker: int | None = None, metrics: Metrics | None = None,
                 streams: StreamCounts | None = None) -> None:
        self.settings = settings
        # the streams open per caller: one count for every persona of the process
        self.streams = streams if streams is not None else stream_counts(settings)
        self.worker = worker
        self.metrics = metrics if metrics is not None else metrics_for(settings.metrics)
        self.backend = backend
        self.signing_key = signing_key if signing_key is not None else read_card_signing_key(settings)
        self.card = build_card(settings, backend)
        if self.signing_key is not None:
            self.card = sign_card(self.card, self.signing_key, settings.jwks_url)
        ends = StoredEnds()  # the settled saves of tasks that finished turns wait for
        self.db, self.database_store = open_stores(settings.database_url, settings.max_concurrent, ends)
        # PostgreSQL: a store that replicas share, with its event log between them
        self.shared_store = shared = not isinstance(self.db, SqliteDatabase)
        self.peers: Peers | None
        # alone on a SQLite file, every earlier run's unfinished work is this process's to fail at
        # start; a worker fails only its own earlier runs' (the parent failed the rest, see ``workers``)
        self.operations = OperationLog(self.db, settings.replica, single_process=not shared and worker is None)
        self.push_configs = PushConfigStore(self.db, settings, among_workers=worker is not None)
        self.new_tasks = NewTasks(made=self.push_configs.none_yet)
        self.call_reads = CallReads()  # a message's call reads the task it continues once
        if shared:  # every save versioned and logged at once, for the other replicas
            from ovos_a2a_solver.bridge.storage.postgres import PostgresEventStream

            self.buffered_store = None
            sdk_store = self.task_store = NewTasksUnread(self.database_store, self.new_tasks, ends,
                                                          forget=self.push_configs.delete_info, reads=self.call_reads)
            self.event_stream = PostgresEventStream(self.db)
            self.peers = ReplicaGroup(self.db, self.operations, settings.replica_lease, settings.persona_name,
                                      notices={PUSH_CONFIGS_CHANNEL: self.push_configs.without_webhooks.heard},
                                      store=self.database_store)
            self.peers.metrics = self.metrics
        else:  # one process: progress is written behind (see store.BufferedTaskStore)
            sdk_store = self.buffered_store = BufferedTaskStore(self.database_store, self.new_tasks, ends,
                                                                forget=self.push_configs.delete_info,
                                                                reads=self.call_reads)
            self.task_store = LegacyTaskStoreAdapter(self.buffered_store)
            self.event_stream = None
            self.peers = Siblings(self.operations) if worker is not None else None
        self.tracker = OperationTracker(self.operations, settings.max_concurrent, self.metrics)
        if isinstance(self.peers, ReplicaGroup):  # a replica that may have lost its lease takes no message
            self.tracker.unavailable = self.peers.unavailable
        self.turns = TurnRegistry()
        self.executor = PersonaExecutor(backend, settings, self.turns, self.task_store, self.tracker, self.metrics,
                                        stored_ends=ends)
        guard = WebhookGuard(settings.push_allow)
        self.push_sender = WebhookSender(self.push_configs, guard, settings, metrics=self.metrics)
        # a task waiting for input is parked in memory by the SDK; after 10 idle minutes it is
        # released (it stays in the store, and a follow-up brings it back). Sibling workers on
        # SQLite release it at once (10 ms): the follow-up may reach another worker, and the task parked
        # here would not see what that one wrote.
        parked = 600 if self.peers is None or self.peers.keeps_parked_tasks else 0.01
        self.sdk_handler = DefaultRequestHandler(agent_executor=self.executor, task_store=sdk_store,
                                                 event_stream=self.event_stream,
                                                 agent_card=self.card, interrupted_task_timeout=parked,
                                                 request_context_builder=ChosenTaskIds(self.task_store),
                                                 push_config_store=self.push_configs, push_sender=self.push_sender,
                                                 push_url_validator=guard.accepts)
        # what was last seen of the task store: calls refused while it is away, /health, the log
        self.store_availability = StoreAvailability()
        self.handler = BridgeRequestHandler(self.sdk_handler, self.tracker, self.turns, self.task_store, settings,
                                            self.new_tasks, self.peers, on_busy=_say_busy,
                                            availability=self.store_availability, call_reads=self.call_reads)
        self.draining: asyncio.Future | None = None
        served = Starlette(routes=self._routes(), lifespan=self._lifespan)
        redirect_nowhere(served.router)
        self.app = self._middleware(served)

    @property
    def served(self) -> tuple[tuple[str, BridgeSettings], ...]:
        """(the agent's name, its settings) of each persona this serves: one."""
        return ((self.card.name, self.settings),)

    @property
    def _path(self) -> str:
        return urlsplit(self.settings.public_url).path.rstrip("/")

    def _sinks(self) -> list[RequestSink]:
        """Where each answered request goes: the access log and the request metrics (each when on)."""
        sinks: list[RequestSink] = []
        if self.settings.access_log:
            sinks.append(AccessLog())
        if self.metrics.enabled:
            sinks.append(RequestMetrics(self.metrics))
        return sinks

    def _middleware(self, app):
        """Outermost first: what the request is (its binding, version and method, read once and
        read by every layer inside), the request's span (when on), the observer of its answer
        for the access log and the metrics (when on), the size of the body, who calls, what of
        their credentials travels on, whether the request is well-formed (a JSON-RPC request's
        method and id then join what it is), which A2A version it speaks, and the status of an
        answer that says "busy" (and a caller's stream past its share, refused)."""
        path = self._path
        app = StreamShares(BusyAnswers(app), self.streams)
        app = VersionCheck(app, served=served_versions(self.card.supported_interfaces))
        app = WireCheck(app, max_parts=self.settings.max_parts, max_values=self.settings.max_values)
        app = ScrubCredentials(app)
        app = AuthenticationMiddleware(app, backend=CredentialsBackend(self.settings), on_error=unauthenticated())
        app = BodyLimit(app, max_body=self.settings.max_body)
        sinks = self._sinks()
        if sinks:
            app = RequestObserver(app, sinks=sinks)
        if self.settings.tracing:
            app = TraceRequests(app)
        card_paths = [prefix + card_path for prefix in dict.fromkeys(["", path]) for card_path in (*CARD_PATHS,
                                                                                                    JWKS_PATH)]
        return ClassifyRequests(app, rpc_paths={path or "/", path + "/"}, rest_prefix=path + "/rest",
                                card_paths=card_paths)

    def _routes(self) -> list:
        path = self._path
        routes: list = [Route("/health", self._health, methods=["GET"])]
        if self.metrics.enabled:
            routes.append(Route("/metrics", self._metrics, methods=["GET"]))
        signing = (self.signing_key, self.settings.jwks_url) if self.signing_key is not None else None
        # the pure 1.0 card or the hybrid one, by the A2A-Version asked; each signed as served
        card = CardEndpoint(self.card, signing=signing)
        for prefix in dict.fromkeys(["", path]):
            for card_path in CARD_PATHS:
                routes.append(Route(prefix + card_path, card.serve, methods=["GET"]))
            if self.signing_key is not None:
                routes.append(Route(prefix + JWKS_PATH, self._key_set, methods=["GET"]))
        streams_grace = self.settings.shutdown_grace + 1  # open streams get to carry the last events
        for rpc_url in dict.fromkeys([path or "/", path + "/"]):
            routes += create_jsonrpc_routes(self.handler, rpc_url=rpc_url, enable_v0_3_compat=True,
                                            context_builder=BusyContextBuilder(), shutdown_grace_period=streams_grace)
        # HTTP+JSON under /a2a/rest, and per tenant under /a2a/rest/{tenant} (A2A: the tenant follows the
        # interface URL; the SDK's own prefix would put it before the whole path); A2A 0.3's under /a2a/rest/v1
        contexts = BusyContextBuilder()
        routes.append(Mount(path + "/rest", routes=[
            *v03_rest_routes(self.handler, contexts, streams_grace),
            *create_rest_routes(self.handler, context_builder=contexts, shutdown_grace_period=streams_grace)]))
        return routes

    @contextlib.asynccontextmanager
    async def _lifespan(self, _app):
        try:
            # one process at a time makes the schema: replicas started together on a new database
            # would each create the same tables, and all but one fail
            async with self.db.schema_lock():
                await self._prepare_store()
        except StoreTaken:
            raise
        except Exception as exc:  # the database's own words, not a traceback's last line
            raise StoreUnusable(f"cannot prepare the task store ({self.settings.store}): {in_words(exc)}") from exc
        grpc_server = await self._start_grpc() if self.settings.grpc_port else None
        loop = asyncio.get_running_loop()
        background = [] if self.shared_store else [loop.create_task(self._sweep_stranded())]
        if self.settings.retention_days is not None:
            background.append(loop.create_task(keep_deleting(self.db, self.settings.retention_days,
                                                             events=self.shared_store)))
        try:
            yield
        finally:
            for job in background:
                job.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.drain()  # already begun at the signal; here for a shutdown without one
            if grpc_server is not None:
                await grpc_server.stop(grace=1)
            await self.handler.fail_unfinished_at_shutdown()
            if self.peers is not None:
                await self.peers.stop()
            await self.sdk_handler.aclose()
            await self.push_sender.aclose(self.settings.shutdown_grace)
            if self.buffered_store is not None:
                await self.buffered_store.aclose()
            if self.event_stream is not None:
                await self.database_store.aclose()  # progress held for a moment
                await self.event_stream.aclose()
            await self.operations.flush()
            await self.db.aclose()

    async def _prepare_store(self) -> None:
        await self.database_store.initialize()
        if self.shared_store:  # tasks an earlier version kept in the a2a-sdk's tables
            from ovos_a2a_solver.bridge.storage.postgres import move_sdk_tasks

            await move_sdk_tasks(self.db)
        await self.operations.initialize()
        await self.db.execute(PROBE_SCHEMA)
        await self.push_configs.initialize()
        await self.handler.recover_interrupted()
        if self.shared_store:
            await self.event_stream.initialize()
        if self.peers is not None:
            await self.peers.start(self.handler)

    async def _sweep_stranded(self) -> None:
        """On SQLite, once a lease (``replica_lease``), from the start: fail the tasks still
        submitted or working that no turn works on (replicas sweep as they renew their leases)."""
        every = self.settings.replica_lease
        while True:
            try:
                await self.handler.fail_stranded(None, every)
            except Exception as exc:  # the store is away: the next round sweeps again
                LOG.warning("could not sweep for stranded tasks (%s); trying again in %g s", exc, every)
            await asyncio.sleep(every)

    async def drain(self) -> None:
        """Shut down gently: take no more messages, give running turns ``shutdown_grace``
        seconds, then give up the rest (their tasks end ``failed``, "interrupted by a
        shutdown"). Safe to call more than once."""
        if self.draining is None:
            self.draining = asyncio.ensure_future(self._drain())
        await asyncio.shield(self.draining)

    async def _drain(self) -> None:
        self.tracker.accepting = False
        if not await self.tracker.wait_idle(self.settings.shutdown_grace):
            count = self.turns.interrupt_all()
            LOG.info("shutdown: gave up %d running turn(s) after %g s", count, self.settings.shutdown_grace)
            await self.tracker.wait_idle(2.0)

    async def _start_grpc(self):
        """gRPC (A2A 1.0) on ``grpc_port``, same handler, same store, within :func:`grpc_limits`;
        RPCs beyond ``max_connections`` at once are answered RESOURCE_EXHAUSTED."""
        import grpc
        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        from ovos_a2a_solver.bridge.edge.grpc_rules import A2AStatusRules, GrpcCallEnds, grpc_limits
        from ovos_a2a_solver.bridge.edge.observer import grpc_call_ended
        from ovos_a2a_solver.bridge.edge.stream_shares import grpc_stream_shares

        handler = GrpcHandler(self.handler)
        # what the gRPC interface serves, whether the card names it or not (grpc_unlisted)
        rules = A2AStatusRules(handler, served_versions([grpc_interface(self.settings)]).get("GRPC", ()),
                               self.settings.max_values)
        # a caller's streams past its share refused: the gRPC port counts its own
        interceptors = [grpc_stream_shares(stream_counts(self.settings)), rules]
        sinks = self._sinks()
        if sinks:  # the access log and the metrics see each call as they see HTTP requests
            interceptors.insert(0, GrpcCallEnds(grpc_call_ended(sinks)))
        server = grpc.aio.server(interceptors=interceptors, options=grpc_limits(self.settings),
                                 maximum_concurrent_rpcs=self.settings.connection_limit)
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(handler, server)
        server.add_insecure_port(f"{self.settings.host}:{self.settings.grpc_port}")
        await server.start()
        return server

    async def _key_set(self, _request):
        """The JWK Set of the card's signature: the public key only."""
        from ovos_a2a_solver.jwk import key_set

        return JSONResponse(key_set([self.signing_key]), media_type="application/jwk-set+json",
                            headers={"Cache-Control": "max-age=300"})

    async def _metrics(self, _request):
        body, media_type = self.metrics.exposition()
        return Response(body, media_type=media_type, headers={"Cache-Control": "no-store"})

    async def _store_state(self) -> str:
        """``"ok"``, ``"unavailable"`` while the store is away (the probe fails, or failures were
        seen and a write still fails: reads may work while writes do not, on a full disk), or
        ``"error: KIND"`` for any other failure of the probe."""
        availability = self.store_availability
        try:
            await asyncio.wait_for(self.db.fetch("SELECT 1 AS ok"), PROBE_SECONDS)
            if not availability.available:
                await asyncio.wait_for(self.db.execute(PROBE_WRITE, {"checked": time.time()}), PROBE_SECONDS)
                availability.works()
        except Exception as exc:  # any database failure is reported, not raised
            if not store_unavailable(exc):
                return f"error: {type(exc).__name__}"
            availability.failed(exc)
        return "ok" if availability.available else "unavailable"

    async def _health(self, _request):
        store = await self._store_state()
        lease = {}
        if isinstance(self.peers, ReplicaGroup):
            lease = {"lease": "held" if self.peers.lease_held else "at risk"}
            if not self.peers.lease_held and store == "ok":
                store = "unavailable"
        ok = store == "ok" and self.draining is None
        return JSONResponse({"ok": ok, "version": __version__, "store": store, **lease, "persona": self.card.name,
                             "running": self.tracker.running, "accepting": self.tracker.accepting,
                             "backend": self.executor.breaker.report(),
                             **({"worker": self.worker} if self.worker is not None else {})},
                            status_code=200 if ok else 503)


class PersonaBridges:
    """Several personas in one process (``--personas-dir``), as ovos-persona-server serves a
    directory of them: each a :class:`Bridge` of its own (its card, persona, memory, task
    store and middleware) at ``BASE_URL/NAME``. A request goes to the bridge whose path it
    is under; ``GET /health`` answers for all of them (ok when every one is), and ``GET
    /metrics`` (on) shows the metrics they share, behind the same credentials.

    Each persona's card is also at ``BASE_URL/.well-known/NAME/agent-card.json``, where
    clients that name an agent by its id look for it: that request is served by the persona's
    bridge as a request for its own card (the access log keeps the path as sent)."""

    def __init__(self, settings: BridgeSettings, bridges: list[Bridge]) -> None:
        self.settings = settings
        self.bridges = bridges
        self.draining: asyncio.Future | None = None
        # the longest path first, so that /a2a/bob-2 is not taken for /a2a/bob
        self._by_path = sorted(((bridge._path, bridge) for bridge in bridges), key=lambda item: -len(item[0]))
        # BASE/.well-known/NAME/agent-card.json -> the card of the persona at BASE/NAME
        base = urlsplit(settings.public_url).path.rstrip("/")
        self._card_aliases = {f"{base}/.well-known/{bridge._path[len(base) + 1:]}/agent-card.json": bridge
                              for bridge in bridges}
        routes = [Route("/health", self._health, methods=["GET"])]
        if bridges[0].metrics.enabled:  # they count in one (see ``serve``)
            routes.append(Route("/metrics", bridges[0]._metrics, methods=["GET"]))
        rest = Starlette(routes=routes, lifespan=self._lifespan)
        redirect_nowhere(rest.router)
        self._rest = AuthenticationMiddleware(rest,
                                              backend=CredentialsBackend(settings), on_error=unauthenticated())

    @property
    def served(self) -> tuple[tuple[str, BridgeSettings], ...]:
        return tuple(item for bridge in self.bridges for item in bridge.served)

    async def app(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            path = scope["path"]
            named = self._card_aliases.get(path)
            if named is not None:  # its own card, for its own middleware (credentials, versions, caching)
                return await named.app(dict(scope, path=named._path + CARD_PATHS[0]), receive, send)
            for prefix, bridge in self._by_path:
                if path == prefix or path.startswith(prefix + "/"):
                    return await bridge.app(scope, receive, send)
        await self._rest(scope, receive, send)

    @contextlib.asynccontextmanager
    async def _lifespan(self, _app):
        async with contextlib.AsyncExitStack() as stack:
            for bridge in self.bridges:
                await stack.enter_async_context(bridge._lifespan(None))
            yield

    async def drain(self) -> None:
        if self.draining is None:
            self.draining = asyncio.ensure_future(asyncio.gather(*(bridge.drain() for bridge in self.bridges)))
        await asyncio.shield(self.draining)

    async def _health(self, request):
        reports = [(await bridge._health(request)) for bridge in self.bridges]
        personas = [json.loads(report.body) for report in reports]
        ok = all(report.status_code == 200 for report in reports)
        return JSONResponse({"ok": ok, "version": __version__, "personas": personas}, status_code=200 if ok else 503)
