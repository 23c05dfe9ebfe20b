# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What each outcome of a turn does to the conversation. One table, applied in one place.

Errors a caller sees are the a2a-sdk's own (``AgentCardResolutionError``,
``A2AClientTimeoutError``, ``A2AClientError`` and the protocol errors of
``a2a.utils.errors``), plus :class:`AgentTaskError` for a task the agent ended without
an answer.
"""
from __future__ import annotations

import enum

import httpx
from a2a.client import A2AClientError
from a2a.types import TaskState
from a2a.utils.errors import (A2AError, InvalidParamsError, MethodNotFoundError, TaskNotFoundError,
                              UnsupportedOperationError, VersionNotSupportedError)


class AgentTaskError(A2AError):
    """The agent ended the task as failed, rejected or canceled; ``reason`` is its own words."""

    def __init__(self, state: str, reason: str = "", task_id: str = "", context_id: str = "") -> None:
        self.state, self.reason, self.task_id, self.context_id = state, reason, task_id, context_id
        super().__init__(f"the agent {state} the task" + (f": {reason}" if reason else ""))


class IncompleteAnswerError(A2AClientError):
    """The agent's reply ended while its task was still running (no final state)."""


class Effect(enum.Enum):
    """What a turn's outcome does to the session's conversation."""

    KEEP = "keep"                          # same context, same open task (if any)
    FORGET_TASK = "forget_task"            # the task is gone; the next message starts a new task in the same context
    NEW_CONVERSATION = "new_conversation"  # the context was refused or expired: drop it and never send it again


# (protocol errors, effect when the message named a task, effect when it named only a context)
ERROR_EFFECTS: tuple[tuple[tuple[type[A2AError], ...], Effect, Effect], ...] = (
    ((TaskNotFoundError, UnsupportedOperationError), Effect.FORGET_TASK, Effect.NEW_CONVERSATION),
    ((InvalidParamsError,), Effect.NEW_CONVERSATION, Effect.NEW_CONVERSATION),
)

# Final task states and what they mean for the session (the waiting states: ``states.WAITING_FOR_USER``).
ANSWERED = frozenset({TaskState.TASK_STATE_COMPLETED})
ENDED_WITHOUT_ANSWER = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
}


def effect_of_error(exc: BaseException, named_task: bool, named_context: bool) -> Effect:
    """The conversation effect of an error raised by a send.

    Timeouts, transport and server errors keep the conversation: the agent may still
    hold it, and the user's next utterance should continue there.
    """
    if not (named_task or named_context):
        return Effect.KEEP
    for errors, with_task, with_context in ERROR_EFFECTS:
        if isinstance(exc, errors):
            return with_task if named_task else with_context
    return Effect.KEEP


def never_delivered(exc: BaseException) -> bool:
    """True when the request provably never reached the agent (connection refused/failed).

    Such a send is safe to retry (after resolving the card again: the agent may have
    moved), and is what makes the cached card stale.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return True
        if type(exc).__name__ == "AioRpcError":  # gRPC, without importing grpc here
            code = getattr(exc, "code", lambda: None)()
            if getattr(code, "name", "") == "UNAVAILABLE":
                return True
        exc = exc.__cause__ or exc.__context__
    return False


def interface_gone(exc: BaseException) -> bool:
    """True when the cached interface no longer speaks what the card said: method not
    found, version not supported, HTTP 404 or gRPC UNIMPLEMENTED. The agent refused the
    request without processing it; it was upgraded or moved in place, so its card is stale.
    """
    if isinstance(exc, (MethodNotFoundError, VersionNotSupportedError)):
        return True
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 404:
            return True
        if type(exc).__name__ == "AioRpcError":
            code = getattr(exc, "code", lambda: None)()
            if getattr(code, "name", "") == "UNIMPLEMENTED":
                return True
        exc = exc.__cause__ or exc.__context__
    return False
