# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The one background asyncio loop that every synchronous call runs on.

OVOS calls plugins from ordinary threads; the a2a-sdk client is async. Rather than
start a loop per call (slow, and it breaks httpx/gRPC connection reuse), one daemon
thread owns one loop for the whole process, and sync code submits coroutines to it.
"""
from __future__ import annotations

import asyncio
import os
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_DONE = object()
CLOSE_WAIT = 10.0  # seconds an iterator closed early waits for its async side to clean up (e.g. cancel a task)

class BackgroundLoop:
    """A daemon thread running an asyncio loop, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = -1

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop; (re)started lazily, also after a fork."""
        with self._lock:
            if self._loop is None or self._pid != os.getpid() or self._loop.is_closed():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                threading.Thread(target=run, name="ovos-a2a-loop", daemon=True).start()
                ready.wait()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread (blocking there would deadlock)."""
        loop = self._loop
        if loop is None:
            return False
        try:
            return asyncio.get_running_loop() is loop
        except RuntimeError:
            return False

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and block until it finishes."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("blocking A2AClient call made from its own event loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def iterate(self, make_agen: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
        """Drive an async iterator on the loop and yield its items here, as they come.

        Closing the returned generator early cancels the async side.
        """
        items: queue.SimpleQueue = queue.SimpleQueue()

        async def pump() -> None:
            try:
                async for item in make_agen():
                    items.put((item, None))
            except BaseException as exc:  # forwarded to the consumer, re-raised there
                items.put((_DONE, exc))
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
            else:
                items.put((_DONE, None))

        future = asyncio.run_coroutine_threadsafe(pump(), self.loop)
        ended = False
        try:
            while True:
                item, exc = items.get()
                if item is _DONE:
                    ended = True
                    if exc is not None and not isinstance(exc, asyncio.CancelledError):
                        raise exc
                    return
                yield item
        finally:
            if not ended:  # left early: cancel the async side and let it finish its cleanup
                future.cancel()
                _wait_for_end(items, CLOSE_WAIT)


def _wait_for_end(items: queue.SimpleQueue, seconds: float) -> None:
    """Drop items until the pump reports its end, or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            item, _ = items.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return
        if item is _DONE:
            return


BACKGROUND = BackgroundLoop()
