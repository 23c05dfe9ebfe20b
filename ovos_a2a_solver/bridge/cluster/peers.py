# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The other processes of one bridge on the same store, as the rest of the bridge sees them.

A task's turn runs in one process; a request about it may reach another (replicas behind one
URL, or workers sharing one listening socket). :class:`Peers` is what that other process
needs from the group: ask the process doing a task to cancel it, and, where the store
carries no live events, follow them through that process. Two implementations:

* :class:`~ovos_a2a_solver.bridge.cluster.replicas.ReplicaGroup`: replicas on PostgreSQL
  (leases, a lost replica's work failed, cancels as rows of a table; the a2a-sdk's shared
  event log carries live events);
* :class:`~ovos_a2a_solver.bridge.cluster.siblings.Siblings`: the workers of one command on
  one SQLite file (a socket each; live events relayed).

In turn a process offers its peers what it does for its own turns (:class:`LocalTurns`,
which the request handler implements).
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from ovos_a2a_solver.bridge.storage.operations import Operation


class PeerUnreachable(Exception):
    """The process working on a task is gone, or did not answer in time; ``str()`` names it."""


class LocalTurns(Protocol):
    """What this process does for the turns it runs, when a peer asks."""

    async def cancel_here(self, task_id: str, owner: str) -> str | None:
        """Stop the turn of ``task_id`` for ``owner``: ``None`` once stopped, else why not."""

    def follow_here(self, task_id: str, owner: str) -> AsyncIterator:
        """The live events of ``task_id``'s turn here, as ``owner`` sees them."""

    async def fail_lost(self, operations: list[Operation]) -> int:
        """Fail the tasks of a lost peer's ``operations``; how many were failed."""

    async def fail_stranded(self, live_runs: str | None, older_than: float) -> int:
        """Fail the tasks still submitted or working, untouched for ``older_than`` seconds, that
        no operation of a live run works on (``live_runs``: a query of their boot ids, where a run
        whose lease expired stays live until it was taken over; None: every run with work not ended
        is live); how many were failed."""

    async def give_up_turns(self) -> int:
        """Stop every turn running here (this process lost the right to write them); how many."""


class Peers(Protocol):
    """The other processes on this store (see the module's docstring)."""

    #: whether a subscription to a task running elsewhere is relayed by that process
    #: (otherwise the store's shared event log carries the events)
    relays_streams: bool
    #: whether the a2a-sdk may keep a task waiting for input parked in this process's memory
    #: (it must not where a peer may take the follow-up and write what this process would not see)
    keeps_parked_tasks: bool
    #: whether this process may be made to give up the turns running here (a lease that ends):
    #: only then do the calls waiting for those turns watch for it (see ``handler``)
    gives_up_turns: bool

    async def start(self, here: LocalTurns) -> None:
        """Join the group; answer the peers' requests with ``here``."""

    async def stop(self) -> None:
        """Leave the group (at shutdown, once this run's unfinished work was failed)."""

    async def ask_to_cancel(self, operation: Operation, timeout: float) -> str | None:
        """Ask the process doing ``operation`` to stop its task's turn: ``None`` once it
        stopped (and recorded ``canceled``), else why it could not. Raises
        :class:`PeerUnreachable` when it is gone or silent for ``timeout`` seconds."""

    def follow(self, operation: Operation) -> AsyncIterator:
        """The live events of ``operation``'s task, relayed by the process doing it (only
        where :attr:`relays_streams`). Raises :class:`PeerUnreachable` when it is gone."""
