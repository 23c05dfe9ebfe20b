# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The request handler: the a2a-sdk's ``DefaultRequestHandler``, wrapped (never patched).

Before a message reaches the SDK it is claimed as an operation (see ``operations``):
a message delivered again (a retry, a reconnect, 20 concurrent duplicates) is replayed
from its first delivery, never worked on twice; the same messageId with other content or
another context is refused. A message naming a task that is still working is refused
(only a task waiting for input takes a follow-up), so a late result can never overwrite a
newer one. Past ``max_concurrent`` running turns the answer is "busy", at once.

A cancel is honest: the persona turn is stopped first, and only once it stopped does the
SDK record ``canceled``; a turn that cannot stop in time gets TaskNotCancelable and goes
on. Work cut short by a crash or ``kill -9`` is marked ``failed`` on the next start.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.agent_execution import RequestContextBuilder, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.request_handlers import RequestHandler
from a2a.server.request_handlers.request_handler import validate_request_params
from a2a.server.tasks import TaskStore
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,
                       SubscribeToTaskRequest, Task, TaskState)
from a2a.utils.errors import (InternalError, InvalidParamsError, TaskNotCancelableError, TaskNotFoundError,
                              UnsupportedOperationError)

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.bridge.executor import CALL_MODE, OPERATION_KEY
from ovos_a2a_solver.bridge.operations import Operation, OperationLog, content_digest, operation_key
from ovos_a2a_solver.bridge.turns import TurnRegistry
from ovos_a2a_solver.policy import state_name

LOG = logging.getLogger("ovos_a2a_solver.bridge")

TERMINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                      TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED})
SETTLED = TERMINAL | {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
POLL_SECONDS = 0.25  # how often a replay of another process's operation looks at the database
TASK_ID_KEY = "ovos_a2a.task_id"  # ServerCallContext.state: the id chosen for a new task


class Owner(User):
    """An authenticated caller, as the stores know it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def call_context_for(owner: str) -> ServerCallContext:
    """A call context that reads and writes the stores as ``owner``."""
    return ServerCallContext(user=Owner(owner) if owner else UnauthenticatedUser())


class ChosenTaskIds(RequestContextBuilder):
    """Gives a new task the id the request handler chose (and claimed) for it."""

    def __init__(self) -> None:
        self._inner = SimpleRequestContextBuilder()

    async def build(self, context: ServerCallContext, params=None, task_id=None, context_id=None, task=None):
        chosen = context.state.get(TASK_ID_KEY) if context is not None else None
        return await self._inner.build(context=context, params=params, task_id=task_id or chosen,
                                       context_id=context_id, task=task)


class BridgeRequestHandler(RequestHandler):
    """Replay, supersession, busy and honest cancel around the SDK's request handler."""

    def __init__(self, inner: RequestHandler, operations: OperationLog, turns: TurnRegistry,
                 task_store: TaskStore, settings: BridgeSettings) -> None:
        self.inner = inner
        self.operations = operations
        self.turns = turns
        self.task_store = task_store
        self.settings = settings
        # operations admitted in this process and not finished (set when they finish), and
        # those whose work the executor has started
        self._finished: dict[str, asyncio.Event] = {}
        self._started: set[str] = set()

    # ---- callbacks from the executor ---------------------------------------------------

    def operation_started(self, key: str) -> None:
        self._started.add(key)

    async def operation_finished(self, key: str) -> None:
        await self.operations.finish(key)
        self._started.discard(key)
        event = self._finished.pop(key, None)
        if event is not None:
            event.set()

    # ---- messages ----------------------------------------------------------------------

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        claim = await self._admit(params, context)
        if claim is not None:
            return await self._replay(claim, params, context)
        context.state[CALL_MODE] = "poll" if params.configuration.return_immediately else "block"
        try:
            return await self.inner.on_message_send(params, context)
        finally:
            await self._settle_admission(context)

    @validate_request_params
    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator:
        claim = await self._admit(params, context)
        if claim is not None:
            async for event in self._replay_stream(claim, context):
                yield event
            return
        context.state[CALL_MODE] = "stream"
        try:
            async for event in self.inner.on_message_send_stream(params, context):
                yield event
        finally:
            await self._settle_admission(context)

    async def _admit(self, params: SendMessageRequest, context: ServerCallContext) -> Operation | None:
        """Claim the message; return the earlier claim if it was delivered before."""
        message = params.message
        owner = resolve_user_scope(context)
        task_id = message.task_id or str(uuid.uuid4())
        claim = await self.operations.claim(owner, message, task_id)
        if claim is not None:
            known_context = claim.context_id
            if message.context_id and not known_context:  # the first delivery let the agent choose it
                task = await self.task_store.get(claim.task_id, context)
                known_context = task.context_id if task is not None else None
            same_context = not message.context_id or not known_context or message.context_id == known_context
            if claim.content != content_digest(message) or not same_context:
                raise InvalidParamsError(message=f"messageId {message.message_id!r} was already accepted with "
                                                 f"different content or context")
            return claim
        key = operation_key(owner, message.task_id, message.message_id)
        try:
            if message.task_id:
                task = await self.task_store.get(message.task_id, context)
                if task is not None and task.status.state not in SETTLED:
                    raise UnsupportedOperationError(
                        message=f"Task {message.task_id} is still working on an earlier message; send a "
                                f"follow-up once it is answered, or without taskId in the same context.")
            if len(self._finished) >= self.settings.max_concurrent:
                raise InternalError(message=f"The bridge is busy ({len(self._finished)} messages in progress); "
                                            f"retry later.")
        except BaseException:
            await self.operations.release(key)
            raise
        context.state[OPERATION_KEY] = key
        context.state[TASK_ID_KEY] = task_id
        self._finished[key] = asyncio.Event()
        return None

    async def _settle_admission(self, context: ServerCallContext) -> None:
        """After the SDK returned: a message it refused before any work started is forgotten."""
        key = context.state.get(OPERATION_KEY)
        if key in self._finished and key not in self._started:
            event = self._finished.pop(key)
            event.set()
            await self.operations.release(key)

    async def _stored_task(self, claim: Operation, task_id: str, context: ServerCallContext,
                           settled: bool) -> Task:
        """The operation's task from the store, once it is there (and, with ``settled``, once
        it is final or waits for input; or, if the work ended undecided, as it stands)."""
        event = self._finished.get(claim.key)
        delay, over_since = 0.01, None
        loop = asyncio.get_running_loop()
        while True:
            task = await self.task_store.get(task_id, context)
            if task is not None and (not settled or task.status.state in SETTLED):
                return task
            current = await self.operations.get(claim.key)
            if current is None:
                raise InvalidParamsError(message="the first delivery of this message was refused")
            if current.done:  # the executor is done; give the SDK a moment to store its last events
                over_since = over_since or loop.time()
                if loop.time() - over_since > 1.0:
                    if task is None:
                        raise InternalError(message="the first delivery of this message failed before its "
                                                    "task was stored; send it again with a new messageId")
                    return task
            if event is not None and not event.is_set():
                try:
                    await asyncio.wait_for(event.wait(), POLL_SECONDS)
                except asyncio.TimeoutError:
                    pass
                continue
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_SECONDS)

    async def _replay(self, claim: Operation, params: SendMessageRequest, context: ServerCallContext) -> Task:
        task_id = claim.task_id
        task = await self._stored_task(claim, task_id, context, settled=not params.configuration.return_immediately)
        if params.configuration.HasField("history_length"):
            return await self.inner.on_get_task(
                GetTaskRequest(id=task_id, history_length=params.configuration.history_length), context)
        return task

    async def _replay_stream(self, claim: Operation, context: ServerCallContext) -> AsyncGenerator:
        task_id = claim.task_id
        task = await self._stored_task(claim, task_id, context, settled=False)
        if task.status.state not in SETTLED:
            try:
                async for event in self.inner.on_subscribe_to_task(SubscribeToTaskRequest(id=task_id), context):
                    yield event
                    if _settles(event):
                        return
                return
            except (UnsupportedOperationError, TaskNotFoundError):
                pass  # finished meanwhile: the stored task is the answer
        yield await self._stored_task(claim, task_id, context, settled=True)

    # ---- cancel ------------------------------------------------------------------------

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task = await self.task_store.get(params.id, context)
        if task is None:
            raise TaskNotFoundError(message=f"Task {params.id} not found")
        if task.status.state in TERMINAL:
            raise TaskNotCancelableError(message=f"Task {params.id} is already {_state(task)}")
        turn = self.turns.get(params.id)
        if turn is None or not turn.running:
            elsewhere = await self.operations.running_for_task(params.id)
            if elsewhere is not None and not self.operations.is_mine(elsewhere):
                raise TaskNotCancelableError(
                    message=f"Task {params.id} is being worked on by another bridge process "
                            f"({elsewhere.replica}); send the cancel to the one serving this conversation.")
        if turn is not None and turn.running:
            if not await turn.stop(self.settings.cancel_grace):
                raise TaskNotCancelableError(
                    message=f"The persona could not be stopped within {self.settings.cancel_grace:g} s (it is in "
                            f"a step that cannot be interrupted); the task goes on.")
            if turn.outcome is not None and turn.outcome.kind != "stopped":
                await asyncio.sleep(0.05)  # let the executor record the outcome it reached meanwhile
                task = await self.task_store.get(params.id, context)
                raise TaskNotCancelableError(message=f"Task {params.id} finished before it could be canceled: "
                                                     f"{_state(task)}")
        return await self.inner.on_cancel_task(params, context)

    # ---- start-up recovery -------------------------------------------------------------

    async def recover_interrupted(self) -> int:
        """Mark work cut short by an earlier crash as failed; return how many tasks."""
        count = 0
        for operation in await self.operations.interrupted():
            if operation.task_id:
                context = call_context_for(operation.owner)
                task = await self.task_store.get(operation.task_id, context)
                if task is not None and task.status.state not in SETTLED:
                    task.status.state = TaskState.TASK_STATE_FAILED
                    task.status.message.CopyFrom(_interrupted_message(task))
                    task.status.timestamp.GetCurrentTime()
                    await self.task_store.save(task, context)
                    count += 1
            await self.operations.finish(operation.key)
        if count:
            LOG.warning("%d task(s) were interrupted by a restart and are now failed", count)
        return count

    # ---- everything else: the SDK's own ----------------------------------------------------

    async def on_get_task(self, params, context):
        return await self.inner.on_get_task(params, context)

    async def on_list_tasks(self, params, context):
        return await self.inner.on_list_tasks(params, context)

    async def on_subscribe_to_task(self, params, context):
        async for event in self.inner.on_subscribe_to_task(params, context):
            yield event

    async def on_create_task_push_notification_config(self, params, context):
        return await self.inner.on_create_task_push_notification_config(params, context)

    async def on_get_task_push_notification_config(self, params, context):
        return await self.inner.on_get_task_push_notification_config(params, context)

    async def on_list_task_push_notification_configs(self, params, context):
        return await self.inner.on_list_task_push_notification_configs(params, context)

    async def on_delete_task_push_notification_config(self, params, context):
        return await self.inner.on_delete_task_push_notification_config(params, context)

    async def on_get_extended_agent_card(self, params, context):
        return await self.inner.on_get_extended_agent_card(params, context)


def _state(task: Task | None) -> str:
    return "gone" if task is None else state_name(task.status.state)


def _settles(event) -> bool:
    if isinstance(event, Task):
        return event.status.state in SETTLED
    status = getattr(event, "status", None)
    return status is not None and status.state in SETTLED


def _interrupted_message(task: Task) -> Message:
    return Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex, task_id=task.id, context_id=task.context_id,
                   parts=[Part(text="Interrupted by a restart of the bridge before the persona answered; "
                                    "the answer was lost. Please ask again.")])
