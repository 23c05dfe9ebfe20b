# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""An async iterator read ahead by a task of its own, so that its reader can wait for the
next item a while only, and do something when none came (say a sentence whose end was
unsure: ``answers.sentences.SENTENCE_GRACE``).

Waiting on the iterator itself with a timeout would cancel it mid-read (an HTTP stream, an
agent's task), and an async generator must be run by one task from start to end: its
deadline and its cancellation belong to the task that started it. So one task reads it
all, and the reader waits on what that task has read.
"""
from __future__ import annotations

import asyncio
from contextlib import aclosing
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

T = TypeVar("T")


class _Quiet:
    __slots__ = ()

    def __repr__(self) -> str:
        return "QUIET"


#: What :func:`read_ahead` gives when its patience ran out before the next item came.
QUIET = _Quiet()


async def read_ahead(items: AsyncIterator[T], patience: Callable[[], float | None]) -> AsyncIterator[T | _Quiet]:
    """The items of ``items`` in order, read by a task of their own; :data:`QUIET` each time
    ``patience()`` seconds (asked anew after each item or QUIET; ``None``: no limit) pass
    before the next item. Its error is raised here; leaving early cancels the reading task
    and waits for it to end (the iterator's cleanup runs)."""
    ready: asyncio.Queue = asyncio.Queue()

    async def read() -> None:
        async with aclosing(items):
            async for item in items:
                ready.put_nowait(item)

    reader = asyncio.ensure_future(read())
    waiting: asyncio.Future | None = None
    try:
        while True:
            taken = waiting is not None and waiting.done()  # an item taken while the caller was away
            if reader.done() and ready.empty() and not taken:  # read to the end, and every item given
                reader.result()   # its error, if any, is the caller's
                return
            if waiting is None:
                waiting = asyncio.ensure_future(ready.get())
            # once the task has read to the end, only what it left comes (at once): the task may end
            # in the loop turn that puts its last item, before the waiting get has taken it
            watched = (waiting,) if reader.done() else (waiting, reader)
            done, _ = await asyncio.wait(watched, timeout=patience(), return_when=asyncio.FIRST_COMPLETED)
            if waiting in done:
                item, waiting = waiting.result(), None
                yield item
            elif not reader.done():
                yield QUIET
    finally:
        if waiting is not None:
            waiting.cancel()
        if not reader.done():
            reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
