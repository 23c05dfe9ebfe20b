# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One bridge process serving: uvicorn on the bound socket, until SIGINT or SIGTERM stops
it gracefully (the command then ends with status 0).
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
import threading
from typing import Callable

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.process.service_manager import notify
from ovos_a2a_solver.bridge.process.startup import LISTEN_QUEUE, StartError, StartupTrap

LOG = logging.getLogger("ovos_a2a_solver.bridge")

#: connections the event loop accepts at each wake-up (uvicorn's ``backlog``, the loop's batch): the
#: connections beyond the limit are closed a few wake-ups later, so a large batch would open many more
#: files than the limit allows during a burst, and run out of them
ACCEPT_BATCH = 32


def _uvicorn_server(config, bridge):
    """A uvicorn server that stops gracefully on SIGINT/SIGTERM, and then lets the command
    end normally: uvicorn would re-raise the signal (a KeyboardInterrupt traceback), and
    take a second Ctrl-C as "force exit", which skips the app's shutdown (the task store's
    last writes) and logs a traceback.

    The first signal starts the bridge's drain (see ``Bridge.drain``) while uvicorn goes on
    serving: new messages are refused with 503, ``/health`` says the bridge is draining (a load
    balancer's probe sees it, also on a connection it keeps open), and callers can still read
    their tasks. Once the drain is over, uvicorn stops listening and waits for the requests in
    flight (``timeout_graceful_shutdown``). A second signal stops the serving at once, still
    gracefully (the drain goes on in the app's shutdown)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        asked_to_stop = False
        stopping: asyncio.Task | None = None  # the drain, then the end of serving

        def _stop(self, sig: int, frame) -> None:
            if self.asked_to_stop or self.should_exit:
                self.should_exit = True  # asked again: stop serving now
                return
            self.asked_to_stop = True
            notify("STOPPING=1")
            # threadsafe: it wakes the loop, which may be waiting for sockets
            asyncio.get_event_loop().call_soon_threadsafe(self._start_stopping)

        def _start_stopping(self) -> None:
            self.stopping = asyncio.ensure_future(self._drain_then_stop())

        async def _drain_then_stop(self) -> None:
            try:
                await bridge.drain()
            finally:
                self.should_exit = True

    return Server(config)


def run_bridge(bridge, sock: socket.socket, ready: Callable | None = None, verbose: bool = False) -> None:
    """Serve ``bridge`` on the listening ``sock`` until SIGINT/SIGTERM (see
    :func:`~ovos_a2a_solver.bridge.process.serve.serve`)."""
    import uvicorn

    settings = bridge.settings
    if settings.tracing:  # here, in the process that serves: a worker starts its own exporter
        from ovos_a2a_solver.bridge.observe.tracing import TracingUnavailable, start_tracing

        try:
            start_tracing()
        except TracingUnavailable as exc:
            raise StartError(f"{names_of('tracing')}: {exc}", 2) from None
    guard = connection_guard(settings)
    config = uvicorn.Config(guard.app(bridge.app), **server_options(settings, guard))
    server = _uvicorn_server(config, bridge)
    trap = StartupTrap(verbose)
    logging.getLogger("uvicorn.error").addFilter(trap)

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(guard.loop_exceptions)
        serving = asyncio.create_task(_serve_quietly(server, sock))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        trap.release()
        if server.started:
            sock.listen(LISTEN_QUEUE)  # the event loop listened with its batch (uvicorn's backlog)
            _keep_out_of_garbage_collection()
        if server.started and ready is not None:
            ready(settings, bridge.served, ())
        await serving

    asyncio.run(run())
    if not server.started:
        raise start_failure(trap.failure)


def start_failure(line: str | None) -> StartError:
    """The :class:`StartError` of a start that failed with ``line`` (the last line of its
    traceback): what the store said for a person (another bridge holds it: status 2; it could
    not be prepared, in the database's words: status 1) is said as it is; anything else as
    what went wrong."""
    from ovos_a2a_solver.bridge.storage.claim import StoreTaken
    from ovos_a2a_solver.bridge.storage.database import StoreUnusable

    for said, status in ((StoreTaken, 2), (StoreUnusable, StoreUnusable.status)):
        prefix = f"{said.__module__}.{said.__qualname__}: "
        if line and line.startswith(prefix):
            return StartError(line[len(prefix):], status)
    return StartError(f"the bridge could not start: {line or 'see the log above'}")


def server_options(settings: BridgeSettings, guard) -> dict:
    """uvicorn's ``Config`` of the bridge's HTTP port, its app aside: the ``guard``'s connections
    (see :func:`connection_guard`); the bridge ends its own requests within ``shutdown_grace`` (+
    the time to write their end); no WebSocket upgrade (the bridge serves none), so every
    connection stays in the guard's protocol; logging is the bridge's own."""
    return {**guard.server_options(), "ws": "none", "log_level": "warning", "log_config": None, "access_log": False,
            "timeout_graceful_shutdown": settings.shutdown_grace + 5, "lifespan": "on", "backlog": ACCEPT_BATCH}


def connection_guard(settings: BridgeSettings):
    """The limits on the HTTP port's connections (see ``bridge.connections``), from ``settings``."""
    from ovos_a2a_solver.bridge.edge.connections import ConnectionGuard

    return ConnectionGuard(limit=settings.connection_limit, header_timeout=settings.header_timeout,
                           body_timeout=settings.body_timeout, idle_timeout=settings.idle_timeout,
                           limit_name=names_of("max_connections"),
                           timeout_names=f"{names_of('header_timeout')}, {names_of('body_timeout')}")


#: allocations (less deallocations) of objects that may hold others after which the garbage
#: collector looks at the youngest ones; Python's own default is 700
YOUNG_COLLECTION_EVERY = 10_000


def _keep_out_of_garbage_collection() -> None:
    """Move what start-up built into the collector's permanent generation, and collect the
    young objects less often.

    The persona, the OVOS modules and the a2a-sdk are some 100,000 objects that live as long
    as the process; left in the generations, every full collection walked them again, which
    took about 6 % of the CPU per message. And a request's objects mostly die young, freed
    as soon as nothing refers to them, while the collector ran every 700 of them: in a burst
    of 500 streams it took a fifth of the bridge's CPU (0.8-0.9 s), every stream's objects
    walked again and again while they lived. Every :data:`YOUNG_COLLECTION_EVERY` it takes
    0.3 s, and a cycle of garbage waits a little longer to be freed (some megabytes at most)."""
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)


async def _serve_quietly(server, sock: socket.socket) -> None:
    """``server.serve``; uvicorn ends a failed start with ``sys.exit``, which here only
    means "not started" (``server.started`` stays False; the cause is in the log)."""
    try:
        await server.serve(sockets=[sock])
    except SystemExit as exc:
        LOG.debug("uvicorn exited with %s during start-up", exc.code)
