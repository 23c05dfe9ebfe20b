# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What a failure is, and what to do next: whether the request ever reached the agent,
whether its interface is gone (the card is stale), whether the same request is worth another
try and when (:class:`Attempts`, the tries of one request within a turn's deadline), and the
per-agent circuit breaker.
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError
from a2a.client.errors import AgentCardResolutionError
from a2a.utils.errors import (A2A_REASON_TO_ERROR, JSON_RPC_ERROR_CODE_MAP, A2AError, MethodNotFoundError,
                              TaskNotFoundError, VersionNotSupportedError)

from ovos_a2a_solver._defaults import BreakerPolicy, RetryPolicy
from ovos_a2a_solver.agent.exceptions import CardSignatureError, CircuitOpenError, MissingCredentialError
from ovos_a2a_solver.resilience import Backoff, Breaker

LOG = logging.getLogger("ovos_a2a_solver")


def _chain(exc: BaseException | None):
    """``exc`` and the exceptions behind it (its cause, else its context), each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _grpc_status(exc: BaseException) -> str:
    """The gRPC status name of a failed gRPC call; '' otherwise. (grpc is not imported here:
    where it was never imported, no gRPC call was made.)"""
    grpc = sys.modules.get("grpc")
    if grpc is None or not isinstance(exc, grpc.RpcError) or not callable(getattr(exc, "code", None)):
        return ""
    return getattr(exc.code(), "name", "")


def _grpc_too_large(exc: BaseException) -> bool:
    """Whether a gRPC call failed because the agent's message passed the channel's
    ``grpc.max_receive_message_length`` (RESOURCE_EXHAUSTED, but not the agent being busy)."""
    return _grpc_status(exc) == "RESOURCE_EXHAUSTED" and "larger than max" in str(exc.details() or "")


def http_status(exc: BaseException) -> int | None:
    """The HTTP status a failed request got back (a card fetch or a call), if it got one."""
    for cause in _chain(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            return cause.response.status_code
        if isinstance(cause, AgentCardResolutionError) and cause.status_code:
            return cause.status_code
    return None


#: the A2A errors by their JSON-RPC code (the a2a-sdk's own mapping, read the other way)
ERRORS_BY_CODE = {code: cls for cls, code in JSON_RPC_ERROR_CODE_MAP.items()}
#: how the a2a-sdk words an SSE ``event: error`` it has no handler for (its 0.3 JSON-RPC stream)
SSE_ERROR_PREFIX = "SSE stream error event received: "


def peer_error(exc: BaseException) -> BaseException:
    """The A2A error a peer meant where the a2a-sdk could not read it, else ``exc``.

    Real agents word errors in ways the SDK's transports do not all read: an A2A 0.3
    HTTP+JSON agent answers ``404 {"code": -32001, "message": ...}`` (the SDK's 0.3 REST
    transport reads only a ``type`` field, and takes the 404 for a method not found); a 0.3
    JSON-RPC stream ends with an SSE ``event: error`` whose data is a JSON-RPC error (no
    handler there: a generic error); a 0.3 gRPC agent answers a task it does not have with
    status ``NOT_FOUND`` and its own wording (the SDK's 0.3 gRPC transport reads only details
    worded ``"TaskNotFoundError: ..."``, as the a2a-sdk's own server words them). Read the
    JSON-RPC ``code``, or a ``google.rpc`` reason (``TASK_NOT_FOUND``), wherever the body or
    the event carries it, and a gRPC ``NOT_FOUND`` (A2A's status for a task not found: a method
    that is not there is ``UNIMPLEMENTED`` on gRPC)."""
    if isinstance(exc, A2AClientError):
        not_found = next((cause for cause in _chain(exc) if _grpc_status(cause) == "NOT_FOUND"), None)
        if not_found is not None:
            meant = TaskNotFoundError(message=not_found.details() or None)
            meant.__cause__ = exc
            return meant
    body = _sse_error_data(exc)
    if body is None:
        status = next((cause for cause in _chain(exc) if isinstance(cause, httpx.HTTPStatusError)), None)
        # a card that could not be read, and what failed before anything was sent, say nothing of a task
        if status is None or not isinstance(exc, (MethodNotFoundError, A2AClientError)) or \
                isinstance(exc, (AgentCardResolutionError, CircuitOpenError, MissingCredentialError)):
            return exc
        try:
            body = status.response.json()
        except (ValueError, httpx.ResponseNotRead, UnicodeDecodeError):
            return exc
    meant = _a2a_error_in(body)
    if meant is None:
        return exc
    meant.__cause__ = exc
    return meant


def _sse_error_data(exc: BaseException):
    text = str(exc) if isinstance(exc, A2AClientError) else ""
    if not text.startswith(SSE_ERROR_PREFIX):
        return None
    try:
        return json.loads(text[len(SSE_ERROR_PREFIX):])
    except ValueError:
        return None


def _a2a_error_in(body) -> A2AError | None:
    """The A2A error an error body names: ``{"code", "message"}``, a JSON-RPC response's
    ``error``, or a ``google.rpc.Status`` whose details carry an ``ErrorInfo`` reason."""
    if not isinstance(body, dict):
        return None
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and code in ERRORS_BY_CODE:
        return ERRORS_BY_CODE[code](message=message or None)
    for detail in error.get("details") or ():
        reason = detail.get("reason") if isinstance(detail, dict) else None
        if reason in A2A_REASON_TO_ERROR:
            return A2A_REASON_TO_ERROR[reason](message=message or None)
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
    if isinstance(exc, A2AError) and not isinstance(exc, A2AClientError):
        return False  # the agent answered with an A2A error of its own (a 404 that says TASK_NOT_FOUND, say)
    return any((isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 404)
               or _grpc_status(cause) == "UNIMPLEMENTED" for cause in _chain(exc))


#: the longest wait between two tries of one request, in seconds, before any ``Retry-After``
BACKOFF_CAP = 5.0
#: HTTP statuses that say "not now" rather than "no": worth the same request again later.
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})


def busy(exc: BaseException) -> bool:
    """Whether the agent said it did not take the request now (HTTP 429, gRPC
    RESOURCE_EXHAUSTED): it is asked again until the turn's deadline, not a set number of times."""
    for cause in _chain(exc):
        if isinstance(cause, httpx.HTTPStatusError):
            return cause.response.status_code == 429
        if _grpc_status(cause):
            return _grpc_status(cause) == "RESOURCE_EXHAUSTED" and not _grpc_too_large(cause)
    return False


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
            return _grpc_status(cause) in ("UNAVAILABLE", "RESOURCE_EXHAUSTED") and not _grpc_too_large(cause), None
    return False, None


def refused_for_good(exc: BaseException) -> bool:
    """Whether the agent got the request and refused it for a reason another try would not
    change: an A2A error of its own, or an HTTP status that is not transient. Not a timeout, a
    lost connection or a transient status, nor what failed before anything was sent (an open
    circuit, a missing credential, a card that could not be read or is not trusted)."""
    if isinstance(exc, (CircuitOpenError, MissingCredentialError, AgentCardResolutionError, A2AClientTimeoutError)):
        return False
    if never_delivered(exc) or connection_lost(exc) or transient(exc)[0]:
        return False
    return isinstance(exc, A2AError)


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


def agent_answered(exc: BaseException) -> bool:
    """Whether a turn that raised ``exc`` still heard from a healthy agent: a protocol
    error, a failed task, or a card that came back but is not trusted (its signature)."""
    return not isinstance(exc, A2AClientError) or isinstance(exc, CardSignatureError)


class CircuitBreaker:
    """Per agent, as its :class:`~ovos_a2a_solver._defaults.BreakerPolicy` says: after
    ``threshold`` failed turns in a row, the next turns fail at once; after ``cooldown`` seconds
    one turn is let through as a probe, and its outcome closes or reopens it.

    A failed turn is one the agent could not be asked or did not answer (connection, HTTP,
    timeout, card errors); an agent that answers, even with an error of the protocol or a
    failed task, is healthy. The counting is a :class:`~ovos_a2a_solver.resilience.Breaker`.
    """

    def __init__(self, name: str, policy: BreakerPolicy, clock: Callable[[], float] | None = None) -> None:
        self.name, self.threshold, self.cooldown = name, policy.threshold, policy.cooldown
        self.circuit = Breaker(policy.threshold, policy.cooldown, clock)

    def before_turn(self) -> None:
        """Raise :class:`CircuitOpenError` when the turn must fail at once."""
        if self.circuit.allows():
            if self.circuit.probing:
                LOG.info("circuit for %s: trying one turn after the cool-down", self.name)
            return
        left = self.circuit.retry_in()
        raise CircuitOpenError(f"{self.name} failed {self.threshold} turns in a row; not asking it again "
                               f"for {left:.0f} s" if left > 0 else
                               f"{self.name} failed {self.threshold} turns in a row; a trial turn is under way")

    def succeeded(self) -> None:
        if self.circuit.succeeded():
            LOG.warning("circuit for %s closed: it answers again", self.name)

    def failed(self, exc: BaseException) -> None:
        if isinstance(exc, (CircuitOpenError, MissingCredentialError)) or agent_answered(exc):
            return  # not a turn that asked the agent, or the agent answered (protocol error)
        if self.circuit.failed():
            LOG.warning("circuit for %s open after %d failed turns in a row (%s); turns fail at once "
                        "for %g s", self.name, self.circuit.failures, exc, self.cooldown)

    def abandoned(self) -> None:
        """The turn ended without an outcome (stopped): let another probe through."""
        self.circuit.abandoned()


class Attempts:
    """The tries of one request to an agent within a turn's deadline.

    After a failure, :meth:`next_try` marks the connection's card stale when the failure says
    so, and says how long to wait before sending the same request again, or ``None`` to give
    up: at once, and once, when the agent's interface is gone (it moved or was upgraded in
    place; the card is resolved again first); with backoff on a transient failure (a refused
    connection, HTTP 429, 502, 503, 504, gRPC UNAVAILABLE or RESOURCE_EXHAUSTED; at least its
    ``Retry-After``), up to the policy's ``max_retries`` times, or, when the agent is
    :func:`busy`, as often as it takes (the waits of a :class:`~ovos_a2a_solver.resilience.Backoff`,
    as the bridge's tries are); never past ``deadline`` (the loop's time)."""

    def __init__(self, connection, deadline: float, policy: RetryPolicy, agent: str) -> None:
        self.connection, self.deadline, self.agent = connection, deadline, agent
        self.backoff = Backoff(policy.max_retries, policy.retry_base_delay, BACKOFF_CAP)
        self.resent_for_interface = False

    def next_try(self, exc: BaseException, *, send_again: bool = True, transient_again: bool = True) -> float | None:
        """Seconds to wait before the next try after ``exc``, or ``None``. ``send_again``:
        the request may be sent again at all (nothing of it was answered yet);
        ``transient_again``: a transient failure may be tried again (the request changes
        nothing twice)."""
        if never_delivered(exc) or interface_gone(exc):
            self.connection.invalidate()
        if not send_again:
            return None
        if interface_gone(exc) and not self.resent_for_interface:
            LOG.info("%s refused the request at its cached interface (%s); resolving its card again",
                     self.agent, exc)
            self.resent_for_interface = True
            return 0.0
        if not transient_again:
            return None
        worth, retry_after = transient(exc)
        delay = self.backoff.next_wait(past_retries=busy(exc)) if worth else None
        if delay is None:
            return None
        if retry_after is not None:
            delay = max(delay, retry_after)
        if asyncio.get_running_loop().time() + delay >= self.deadline:
            LOG.info("%s: %s; no time left in this turn to try again", self.agent, exc)
            return None
        LOG.info("%s: %s; trying again in %.2f s", self.agent, exc, delay)
        return delay
