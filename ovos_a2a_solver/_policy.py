# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What each outcome of a turn does to the conversation. One table, applied in one place.

Errors a caller sees are the a2a-sdk's own (``AgentCardResolutionError``,
``A2AClientTimeoutError``, ``A2AClientError`` and the protocol errors of
``a2a.utils.errors``), plus :class:`AgentTaskError` for a task the agent ended without
an answer, :class:`CardSignatureError` for a card whose required signature is not
valid, :class:`StillWorkingError` for a turn whose deadline passed while the agent
went on working, and the client's own errors below (incomplete answer, open circuit,
missing credential).
"""
from __future__ import annotations

import enum
import logging
from collections.abc import Callable

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError
from a2a.client.errors import AgentCardResolutionError
from a2a.types import TaskState
from a2a.utils.errors import (A2AError, InvalidParamsError, MethodNotFoundError, TaskNotFoundError,
                              UnsupportedOperationError, VersionNotSupportedError)


LOG = logging.getLogger("ovos_a2a_solver")


class AgentTaskError(A2AError):
    """The agent ended the task as failed, rejected or canceled; ``reason`` is its own words."""

    def __init__(self, state: str, reason: str = "", task_id: str = "", context_id: str = "") -> None:
        self.state, self.reason, self.task_id, self.context_id = state, reason, task_id, context_id
        super().__init__(f"the agent {state} the task" + (f": {reason}" if reason else ""))


class StillWorkingError(A2AClientTimeoutError):
    """The turn's deadline passed while the agent's task was still working.

    The task is not canceled: it stays bound to the session, and its answer is delivered
    before the session's next one. ``task_id`` and ``context_id`` name it (``task_id`` is
    ``""`` when a blocking exchange ended before the agent named its task: it is then
    looked up by the message that started it).
    """

    def __init__(self, message: str, task_id: str, context_id: str = "") -> None:
        super().__init__(message)
        self.task_id, self.context_id = task_id, context_id


class IncompleteAnswerError(A2AClientError):
    """The agent's reply ended while its task was still running (no final state)."""


class CardSignatureError(AgentCardResolutionError):
    """A signed card was required, and the agent's card has no valid signature: nothing is
    sent to the agent. ``reason`` is one of the constants below; the message says more."""

    UNSIGNED = "unsigned"                # the card carries no signature
    INVALID = "invalid signature"        # checked with a known key and wrong: tampered, or another key
    UNKNOWN_KEY = "unknown key"          # no key with the signature's kid where keys are looked up
    FOREIGN_KEY_SET = "jku not on the agent's origin"  # the card names keys elsewhere (and none are configured)
    NO_KEY_SET = "key set unavailable"   # the keys could not be read (unreachable, not a JWK Set)

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MissingCredentialError(A2AClientError):
    """The agent's card requires a security scheme that no configured credential satisfies;
    nothing was sent. ``schemes`` names the schemes of every requirement the card lists."""

    def __init__(self, message: str, schemes: tuple[str, ...] = ()) -> None:
        self.schemes = schemes
        super().__init__(message)


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


def _chain(exc: BaseException | None):
    """``exc`` and the exceptions behind it (its cause, else its context), each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _grpc_status(exc: BaseException) -> str:
    """The gRPC status name of a failed gRPC call (without importing grpc here); '' otherwise."""
    if type(exc).__name__ != "AioRpcError":
        return ""
    return getattr(getattr(exc, "code", lambda: None)(), "name", "")


def http_status(exc: BaseException) -> int | None:
    """The HTTP status a failed request got back (a card fetch or a call), if it got one."""
    for cause in _chain(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            return cause.response.status_code
        if isinstance(cause, AgentCardResolutionError) and cause.status_code:
            return cause.status_code
    return None


def never_delivered(exc: BaseException) -> bool:
    """True when the request provably never reached the agent (connection refused/failed).

    Such a send is safe to retry (after resolving the card again: the agent may have
    moved), and is what makes the cached card stale.
    """
    return any(isinstance(cause, (httpx.ConnectError, httpx.ConnectTimeout)) or _grpc_status(cause) == "UNAVAILABLE"
               for cause in _chain(exc))


def connection_lost(exc: BaseException) -> bool:
    """True when the connection failed or broke (refused, reset, closed mid-body; gRPC
    UNAVAILABLE), as opposed to the agent answering with an error."""
    return any(isinstance(cause, httpx.TransportError) or _grpc_status(cause) == "UNAVAILABLE"
               for cause in _chain(exc))


def interface_gone(exc: BaseException) -> bool:
    """True when the cached interface no longer speaks what the card said: method not
    found, version not supported, HTTP 404 or gRPC UNIMPLEMENTED. The agent refused the
    request without processing it; it was upgraded or moved in place, so its card is stale.
    """
    if isinstance(exc, (MethodNotFoundError, VersionNotSupportedError)):
        return True
    return any((isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 404)
               or _grpc_status(cause) == "UNIMPLEMENTED" for cause in _chain(exc))


#: HTTP statuses that say "not now" rather than "no": worth the same request again later.
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})


def transient(exc: BaseException) -> tuple[bool, float | None]:
    """Whether a failed request is worth sending again (a connection failure, or HTTP 429,
    502, 503, 504), and the server's ``Retry-After`` in seconds, if it gave one."""
    if never_delivered(exc):
        return True, None
    for cause in _chain(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            if cause.response.status_code not in TRANSIENT_STATUSES:
                return False, None
            return True, _retry_after(cause.response.headers.get("retry-after"))
        if _grpc_status(cause):
            return _grpc_status(cause) in ("UNAVAILABLE", "RESOURCE_EXHAUSTED"), None
    return False, None


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        from email.utils import parsedate_to_datetime
        import time

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def backoff_delay(retry: int, base: float, cap: float = 5.0) -> float:
    """Exponential backoff with full jitter: a random wait up to ``base * 2**retry`` (at most ``cap``)."""
    import random

    return random.uniform(0.0, min(cap, base * (2 ** retry)))


class CircuitOpenError(A2AClientError):
    """The agent failed several turns in a row; turns fail at once until a cool-down has passed."""


def agent_answered(exc: BaseException) -> bool:
    """Whether a turn that raised ``exc`` still heard from a healthy agent: a protocol
    error, a failed task, or a card that came back but is not trusted (its signature)."""
    return not isinstance(exc, A2AClientError) or isinstance(exc, CardSignatureError)


class CircuitBreaker:
    """Per agent: after ``threshold`` failed turns in a row, the next turns fail at once; after
    ``cooldown`` seconds one turn is let through as a probe, and its outcome closes or reopens it.

    A failed turn is one the agent could not be asked or did not answer (connection, HTTP,
    timeout, card errors); an agent that answers, even with an error of the protocol or a
    failed task, is healthy. ``clock`` gives the seconds the cool-down is measured in
    (``time.monotonic`` unless given).
    """

    def __init__(self, name: str, threshold: int, cooldown: float, *,
                 clock: Callable[[], float] | None = None) -> None:
        import threading
        import time

        self.name, self.threshold, self.cooldown = name, threshold, cooldown
        self._clock = clock or time.monotonic
        self._failures = 0
        self._open_until: float | None = None
        self._probing = False
        self._lock = threading.Lock()

    def before_turn(self) -> None:
        """Raise :class:`CircuitOpenError` when the turn must fail at once."""
        with self._lock:
            if self._open_until is None:
                return
            left = self._open_until - self._clock()
            if left <= 0 and not self._probing:
                self._probing = True
                LOG.info("circuit for %s: trying one turn after the cool-down", self.name)
                return
        raise CircuitOpenError(f"{self.name} failed {self.threshold} turns in a row; not asking it again "
                               f"for {max(left, 0):.0f} s" if left > 0 else
                               f"{self.name} failed {self.threshold} turns in a row; a trial turn is under way")

    def succeeded(self) -> None:
        with self._lock:
            if self._open_until is not None:
                LOG.warning("circuit for %s closed: it answers again", self.name)
            self._failures, self._open_until, self._probing = 0, None, False

    def failed(self, exc: BaseException) -> None:
        if isinstance(exc, (CircuitOpenError, MissingCredentialError)) or agent_answered(exc):
            return  # not a turn that asked the agent, or the agent answered (protocol error)
        with self._lock:
            self._failures += 1
            if self._probing or (self._open_until is None and self._failures >= self.threshold):
                self._open_until = self._clock() + self.cooldown
                self._probing = False
                LOG.warning("circuit for %s open after %d failed turns in a row (%s); turns fail at once "
                            "for %g s", self.name, self._failures, exc, self.cooldown)

    def abandoned(self) -> None:
        """The turn ended without an outcome (stopped): let another probe through."""
        with self._lock:
            self._probing = False
