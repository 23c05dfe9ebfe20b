# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Ports and servers for tests: :func:`free_port` finds a TCP port nothing listens on;
:func:`serving` runs an ASGI app under uvicorn on a loopback port, in a thread."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import Iterator


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago: another process may take it before the
    caller binds it, so a caller that must have it retries with another."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(app, force_exit: bool = False, listener: socket.socket | None = None, start_within: float = 10,
            stop_within: float = 10, **options) -> Iterator[int]:
    """Serve ``app`` with uvicorn on a loopback port (``options``: more of uvicorn's ``Config``) in a
    thread, until the block ends; its port. ``listener``: the bound socket to serve on (closed at the
    end), else one of its own. Starting is waited for ``start_within`` seconds and stopping
    ``stop_within``, and a server that does not start or stop fails the test. ``force_exit``: stop without waiting for
    the requests still open (a hostile agent's endless replies)."""
    import uvicorn

    if listener is None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, **{"log_level": "warning", **options}))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[listener])), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_within
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        server.force_exit = force_exit
        thread.join(stop_within)
        listener.close()
        assert not thread.is_alive(), "the server did not stop"
