"""An ASGI app's lifespan, run in the caller's event loop: what a test (or a benchmark) that
calls the app through ``httpx.ASGITransport``, which runs none, starts and ends around its calls.

    async with lifespan(bridge.app), httpx.AsyncClient(transport=httpx.ASGITransport(app=bridge.app),
                                                        base_url="http://bridge.test") as client:
        ...
"""
from __future__ import annotations

import asyncio
import contextlib

from support.waiting import WAIT


@contextlib.asynccontextmanager
async def lifespan(app, timeout: float = WAIT):
    """``app``'s lifespan started (its start-up complete within ``timeout`` s) and, on the way
    out, ended (its shutdown complete, its lifespan call returned)."""
    to_app, from_app = asyncio.Queue(), asyncio.Queue()
    await to_app.put({"type": "lifespan.startup"})
    running = asyncio.get_running_loop().create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, to_app.get, from_app.put))
    started = await asyncio.wait_for(from_app.get(), timeout)
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await to_app.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(from_app.get(), timeout)
        await asyncio.wait_for(running, timeout)
