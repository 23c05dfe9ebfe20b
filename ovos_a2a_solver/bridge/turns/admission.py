# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Admission: which messages this process works on, at most ``max_concurrent`` at once.

A message is admitted when its operation is claimed (see ``operations``) and a slot is
free. The :class:`Admission` travels from the request handler to the executor in the
call context, under one key (:data:`ADMISSION`). Two parties hold it:

* the request handler, from the claim until its call returns or raises;
* the executor, from the first line of its work until the persona turn has ended
  (a late answer after the deadline included).

The slot is free again when the last holder lets go, exactly once, whichever way the
call ended: a refusal by the SDK, an error anywhere in the executor, a client that went
away, a cancel, the deadline, a shutdown. A message the executor never started is
forgotten (its claim deleted: a retry may deliver it again); one it started is marked
done when the executor lets go. :class:`OperationTracker` is the one owner of all this;
``/health`` reports its count, and "busy" is decided on the same count.
"""
from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from a2a.server.context import ServerCallContext
from a2a.utils.errors import InternalError

from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.bridge.storage.operations import Operation, OperationLog
from ovos_a2a_solver.bridge.turns.turn import Flag

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ADMISSION = "ovos_a2a.admission"  # the ServerCallContext.state key of the message's Admission


class CallMode(enum.Enum):
    """How the caller waits for the answer."""

    STREAM = "stream"   # SendStreamingMessage: every event as it happens
    POLL = "poll"       # SendMessage with returnImmediately: the task at once, then GetTask
    BLOCK = "block"     # SendMessage: only the end


@dataclass(eq=False)
class Admission:
    """One message let in, and who still holds it."""

    operation: Operation
    mode: CallMode
    handler_holds: bool = True
    executor_holds: bool = False
    started: bool = False          # the executor began its work
    ended: Flag = field(default_factory=Flag)   # set once nobody holds it

    @property
    def key(self) -> str:
        return self.operation.key

    @property
    def task_id(self) -> str:
        """The task the message works in: the one it continues, or the id chosen for a new one."""
        return self.operation.task_id

    @property
    def holds_slot(self) -> bool:
        return self.handler_holds or self.executor_holds

    @staticmethod
    def of(context: ServerCallContext | None) -> "Admission | None":
        """The admission the request handler put in ``context``, if any."""
        return context.state.get(ADMISSION) if context is not None else None

    def put_in(self, context: ServerCallContext) -> None:
        context.state[ADMISSION] = self


#: the seconds a caller refused for now is asked to wait (a slot frees as soon as a turn ends)
RETRY_AFTER = 1


class BusyError(InternalError):
    """Every slot is taken (or the bridge shuts down): the caller should try again in
    ``retry_after`` seconds. A2A has no code of its own for this; the bindings say it with
    their statuses (see ``edge.busy``)."""

    def __init__(self, message: str, *, shutting_down: bool = False, retry_after: int = RETRY_AFTER) -> None:
        super().__init__(message=message)
        self.shutting_down, self.retry_after = shutting_down, retry_after

    @property
    def unavailable(self) -> bool:
        """Whether the answer says "unavailable" (HTTP 503, gRPC ``UNAVAILABLE``) rather than
        "too many at once" (HTTP 429, gRPC ``RESOURCE_EXHAUSTED``)."""
        return self.shutting_down

    @property
    def jsonrpc_code(self) -> int | None:
        """The JSON-RPC error code the answer's body has in place of ``-32603``, if any."""
        return None


#: the seconds a caller is asked to wait while the task store is away (a database restarts in a few)
STORE_RETRY_AFTER = 3
#: what a caller is told while the task store is away: nothing of the database's own words
STORE_UNAVAILABLE = "The task store is unavailable; try again shortly."
#: JSON-RPC 2.0's "server error", the code it leaves to implementations (A2A's own begin at -32001)
SERVER_ERROR = -32000


class StoreUnavailableError(BusyError):
    """The task store is away for now (unreachable, restarting, read-only, full): the call is
    answered "unavailable, retry in ``retry_after`` seconds", as a busy one is, and nothing of
    it was done. Its ``data`` (an A2A ``ErrorInfo``'s metadata) says when to retry, for a
    stream that had begun before the store went away and ends with this error."""

    def __init__(self, retry_after: int = STORE_RETRY_AFTER) -> None:
        super().__init__(STORE_UNAVAILABLE, retry_after=retry_after)
        self.data = {"retryAfterSeconds": str(retry_after)}

    @property
    def unavailable(self) -> bool:
        return True

    @property
    def jsonrpc_code(self) -> int | None:
        return SERVER_ERROR


def _available() -> str | None:
    return None


class OperationTracker:
    """The messages this process has admitted: slots, claims, and their ends."""

    def __init__(self, log: OperationLog, max_concurrent: int, metrics: Metrics = NO_METRICS) -> None:
        self.log = log
        self.max_concurrent = max_concurrent
        self.metrics = metrics
        self._live: dict[str, Admission] = {}
        self.accepting = True
        #: why this process takes no message now (a replica that may have lost its lease), or None
        self.unavailable: Callable[[], str | None] = _available

    @property
    def running(self) -> int:
        """Messages holding a slot now (what ``/health`` reports and "busy" counts): the live
        admissions, since one leaves ``_live`` as soon as nobody holds it (see ``_settle``). A count,
        not a scan: it is asked at every message, with thousands at work."""
        return len(self._live)

    def get(self, key: str) -> Admission | None:
        """The live admission of an operation, if this process holds one."""
        return self._live.get(key)

    async def admit(self, owner: str, message, task_id: str, mode: CallMode,
                    answer_seen: Callable[[Operation], Awaitable[bool]] | None = None) -> Admission | Operation:
        """Claim ``message`` and take a slot for it.

        Returns the :class:`Admission`, or the earlier :class:`Operation` when the message
        was delivered before and its answer may not have been seen (the caller replays
        it; see :meth:`OperationLog.claim`). Raises :class:`BusyError` when every slot is
        taken; the claim is then forgotten.
        """
        reason = self.unavailable()
        if reason is not None:  # before the claim: nothing is written for a message refused
            self.metrics.refused_busy(True)
            raise BusyError(reason, shutting_down=True)
        operation, first = await self.log.claim(owner, message, task_id, answer_seen)
        if not first:
            return operation
        if not self.accepting or self.running >= self.max_concurrent:
            await self.log.release(operation.key)
            self.metrics.refused_busy(not self.accepting)
            if not self.accepting:
                raise BusyError("The bridge is shutting down; retry on another replica or later.", shutting_down=True)
            raise BusyError(f"The bridge is busy ({self.running} messages in progress); retry later.")
        admission = Admission(operation, mode)
        self._live[operation.key] = admission
        self.metrics.message_began()
        return admission

    async def refuse(self, admission: Admission) -> None:
        """The handler refused the admitted message itself (before the SDK saw it)."""
        admission.handler_holds = False
        await self._settle(admission)

    async def handler_done(self, admission: Admission) -> None:
        """The request handler's call returned or raised."""
        admission.handler_holds = False
        await self._settle(admission)

    async def executor_started(self, admission: Admission) -> None:
        """The executor begins the message's work; it holds the admission until
        :meth:`executor_done`."""
        admission.started = True
        admission.executor_holds = True
        if admission.key not in self._live:  # the handler gave up first (its caller went away): claim again
            self._live[admission.key] = admission
            self.metrics.message_began()
            admission.ended.clear()
            await self.log.reclaim(admission.operation)

    async def executor_done(self, admission: Admission) -> None:
        """The message's work is over: its task is final, waits for input, or its turn ended
        after the deadline."""
        admission.executor_holds = False
        await self._settle(admission)

    async def _settle(self, admission: Admission) -> None:
        if admission.holds_slot or self._live.get(admission.key) is not admission:
            return
        del self._live[admission.key]
        self.metrics.message_ended()
        if admission.started:
            await self.log.finish(admission.key)
        else:
            await self.log.release(admission.key)
        admission.ended.set()

    async def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until no admitted message holds a slot; True if none does."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.running and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return not self.running

    async def wait_ended(self, key: str, timeout: float) -> bool:
        """Wait up to ``timeout`` s for this process's admission of ``key`` to end; True if
        it has (or this process holds none)."""
        admission = self._live.get(key)
        if admission is None:
            return True
        try:
            await asyncio.wait_for(admission.ended.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False
