# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Run the bridge: bind, build, serve until a signal."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import sys

from ovos_a2a_solver.bridge.config import BridgeSettings

LOG = logging.getLogger("ovos_a2a_solver.bridge")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; ``proto`` is set so that asyncio turns on TCP_NODELAY
    (without it every keep-alive response waits ~40 ms for a delayed ACK)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def load_backend(settings: BridgeSettings, kind: str = "persona"):
    """The backend named by ``kind``: ``persona`` (the settings' persona file) or ``echo``."""
    from ovos_a2a_solver.bridge.backends import EchoBackend, PersonaBackend

    if kind == "echo":
        import os
        return EchoBackend(call_log=os.environ.get("OVOS_A2A_ECHO_LOG"))
    return PersonaBackend.from_file(settings.persona)


def _draining_server_class():
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn's server; on SIGTERM or Ctrl-C the bridge starts draining at once, while
        uvicorn stops listening and waits for the requests in flight."""

        def __init__(self, config, bridge) -> None:
            super().__init__(config)
            self.bridge = bridge
            self.loop: asyncio.AbstractEventLoop | None = None

        async def serve(self, sockets=None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets=sockets)

        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            if self.loop is not None and self.bridge.draining is None:
                self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.bridge.drain()))

    return DrainingServer


def serve(settings: BridgeSettings, backend_kind: str = "persona", ready=None) -> None:
    """Serve until SIGINT/SIGTERM. ``ready(settings)`` is called once the port accepts."""
    import uvicorn

    from ovos_a2a_solver.bridge.app import Bridge

    settings.check_exposure()
    sock = bind(settings.host, settings.port)
    settings = dataclasses.replace(settings, port=sock.getsockname()[1])
    if settings.grpc_port == 0:  # gRPC binds inside its own server: find it a free port first
        with bind(settings.host, 0) as probe:
            settings = dataclasses.replace(settings, grpc_port=probe.getsockname()[1])
    backend = load_backend(settings, backend_kind)
    bridge = Bridge(settings, backend)
    # the bridge ends its own requests within shutdown_grace (+ the time to write their end)
    config = uvicorn.Config(bridge.app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=settings.shutdown_grace + 5)
    server = _draining_server_class()(config, bridge)

    async def run() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started and ready is not None:
            ready(settings, bridge)
        await serving

    asyncio.run(run())
    if not server.started:
        sys.exit(1)
