"""Serve an ASGI app with uvicorn on a free loopback port: the start-up shared by the peer agents
that run in interpreters of their own (``test/support/legacy/v03_agent.py``, ``test/support/peers/adk_agent.py``).
It needs only uvicorn and imports nothing from this project.
"""
from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any, Callable

import uvicorn


def serve(build_app: Callable[[str, int], Any], host: str = "127.0.0.1", lifespan: str = "off") -> None:
    """Bind ``host`` port 0, build the app for that host and port, and serve it until
    SIGTERM/SIGINT. Once uvicorn serves, print one JSON line ``{"url": "http://HOST:PORT"}`` on
    stdout (what ``test/support/interop.py:PeerAgentProcess`` waits for)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # proto set: asyncio then enables TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(host, port), log_level="warning", lifespan=lifespan))

    async def run() -> None:
        async def announce() -> None:
            while not server.started:
                await asyncio.sleep(0.02)
            sys.stdout.write(json.dumps({"url": f"http://{host}:{port}"}) + "\n")
            sys.stdout.flush()

        watcher = asyncio.ensure_future(announce())
        try:
            await server.serve(sockets=[sock])  # uvicorn handles SIGTERM/SIGINT itself
        finally:
            watcher.cancel()

    asyncio.run(run())
