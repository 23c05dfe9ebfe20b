# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The ids of the tasks that messages are about to create, reserved until each task is
first saved (the stores answer reads of them without the database)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ovos_a2a_solver.bridge.storage.ids import time_ordered_id


class NewTasks:
    """The tasks that messages are about to create, until each is first saved.

    The a2a-sdk reads a message's task three times before it first saves it: when it sets
    up the active task, in its producer, and at the first event. For a new task, whose id
    the request handler has only just made up (:meth:`make`), each of those reads can only
    miss. The stores answer them "not found" at once, without the database, until the
    task's first save; the handler holds the id for as long as its message is at work
    (:meth:`reserved`), and lets go of it on every way out.
    ``made(task_id)``, if given, hears of each new id (what else a new task cannot have yet)."""

    def __init__(self, made: Callable[[str], None] | None = None) -> None:
        self._unsaved: set[str] = set()
        self._made = made

    def make(self) -> str:
        """A new task id, not stored anywhere yet."""
        task_id = time_ordered_id()
        self._unsaved.add(task_id)
        if self._made is not None:
            self._made(task_id)
        return task_id

    @contextlib.contextmanager
    def reserved(self, needed: bool = True) -> Iterator[str | None]:
        """A new task id (:meth:`make`) for the block, let go of (:meth:`discard`) on every way
        out of it: returned, raised or canceled; ``None`` when no new task is ``needed`` (the
        message names its task)."""
        task_id = self.make() if needed else None
        try:
            yield task_id
        finally:
            self.discard(task_id)

    def discard(self, task_id: str | None) -> None:
        """``task_id`` is saved, or its message is done: reads go to the store again."""
        self._unsaved.discard(task_id)

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._unsaved
