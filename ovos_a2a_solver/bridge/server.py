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


def load_backend(settings: BridgeSettings):
    """The backend the settings name: the persona file's persona, or the echo backend."""
    from ovos_a2a_solver.bridge.backends import EchoBackend, PersonaBackend

    if settings.backend == "echo":
        return EchoBackend(call_log=settings.echo_log)
    return PersonaBackend.from_file(settings.persona)


def serve(settings: BridgeSettings, ready=None) -> None:
    """Serve until SIGINT/SIGTERM. ``ready(settings)`` is called once the port accepts."""
    import uvicorn

    from ovos_a2a_solver.bridge.app import Bridge

    settings.check_exposure()
    sock = bind(settings.host, settings.port)
    settings = dataclasses.replace(settings, port=sock.getsockname()[1])
    if settings.grpc_port == 0:  # gRPC binds inside its own server: find it a free port first
        with bind(settings.host, 0) as probe:
            settings = dataclasses.replace(settings, grpc_port=probe.getsockname()[1])
    backend = load_backend(settings)
    bridge = Bridge(settings, backend)
    config = uvicorn.Config(bridge.app, log_level="warning", access_log=False, timeout_graceful_shutdown=5,
                            lifespan="on")
    server = uvicorn.Server(config)

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
