# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Connections to the HTTP port: how many may be open, and how long a request may take to arrive.

uvicorn accepts every connection it is handed and waits for a request's head without a time
limit (its ``limit_concurrency`` acts only on complete requests), so callers that send half a
request and wait could hold every file the process may open. Here, per process:

* at most ``max_connections`` connections are open. A new connection at the limit takes the
  place of the one that has waited longest without a complete request (no request head yet,
  a body still arriving, or idle between requests), which is closed at once; when every
  connection has a request in progress, the new one is answered ``503`` (``Retry-After: 1``)
  and closed, before any HTTP parser exists for it;
* except for health checks: past the limit, :data:`HEALTH_ROOM` more connections are let in
  to read their request, each for one request; a ``/health`` one is answered (and the
  connection closed), any other is answered that ``503`` as soon as its head has come. So a
  health check gets through even while every connection is taken by requests in progress;
* a request's line and headers must arrive within ``header_timeout`` seconds of the
  connection's opening or of its previous response's end (else ``408`` if part of it came,
  and the connection is closed), and its body within ``body_timeout`` seconds of its head
  (else ``408``, closed). Responses have no time limit: streams may last;
* a connection idle after a response (HTTP keep-alive) is closed once ``idle_timeout``
  seconds passed without a byte of its next request, unless bytes of it are waiting on the
  socket, unread: when the event loop was busy for longer than that, a caller's next request
  may have come in time and not been read yet, and it is answered. (uvicorn's own idle timer,
  which cannot tell, is set beyond this one: :meth:`ConnectionGuard.server_options`.)
* none of this is logged per connection: connections closed to make room, refused or timed
  out, and the event loop's "too many open files" when accepting, are each logged at most
  once per :data:`LOG_INTERVAL` seconds, with their count.

:class:`ConnectionGuard` makes the protocol uvicorn runs for each connection (its ``http=``):
:class:`GuardedConnection` wraps uvicorn's own HTTP protocol, keeps the count and the timers;
:meth:`ConnectionGuard.app` wraps the ASGI app to tell a connection where its request is
(head arrived, body read, response ended). The connection is found through a context
variable set while the connection hands uvicorn its bytes, which the request's task inherits.
"""
from __future__ import annotations

import asyncio
import contextvars
import errno
import logging
import select
from typing import Callable

LOG = logging.getLogger("ovos_a2a_solver.bridge")

#: seconds between two log lines about the same kind of refusal
LOG_INTERVAL = 10.0
#: what a connection refused at the limit reads
REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"
           b"Content-Type: text/plain\r\nContent-Length: 20\r\n\r\ntoo many connections")
#: connections past the limit let in for one request each, answered only if it is a health check
HEALTH_ROOM = 4
#: the path of the health check
HEALTH_PATH = "/health"
#: what a connection let in past the limit reads when its request is no health check
REFUSED_BODY = b"too many connections"
#: what a connection whose request did not arrive in time reads
TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
             b"Content-Length: 28\r\n\r\nthe request came too slowly\n")
#: seconds by which the event loop may run a timer early (its clock's resolution, and more)
TIMER_SLACK = 0.001
#: the event loop's report of an ``accept()`` that failed for want of files or memory
ACCEPT_FAILED = "socket.accept() out of system resource"

# where a connection's request is
WAITING = "waiting"    # for a request's head (a new connection, or idle after a response)
READING = "reading"    # the head arrived; the body is being read
WORKING = "working"    # the request is read; its response is being made or sent

_CONNECTION: contextvars.ContextVar["GuardedConnection | None"] = contextvars.ContextVar(
    "ovos_a2a_bridge_connection", default=None)


class BurstLog:
    """Counts events of one kind and logs them at most once per ``interval`` seconds: the
    first at once, then how many more came since, until a quiet interval. ``describe(n)``
    is the line for ``n`` events."""

    def __init__(self, level: int, describe: Callable[[int], str], interval: float = LOG_INTERVAL) -> None:
        self.level, self.describe, self.interval = level, describe, interval
        self.count = 0
        self._flush: asyncio.TimerHandle | None = None

    def note(self) -> None:
        """One more event (call on the event loop)."""
        self.count += 1
        if self._flush is None:
            self._log()

    def _log(self) -> None:
        if self.count:
            LOG.log(self.level, "%s", self.describe(self.count))
            self.count = 0
            self._flush = asyncio.get_running_loop().call_later(self.interval, self._log)
        else:
            self._flush = None


class ConnectionGuard:
    """The limits on one process's HTTP connections (see the module's docstring).

    ``limit``, ``header_timeout``, ``body_timeout`` and ``idle_timeout`` are the settings;
    ``limit_name`` and ``timeout_names`` say how a person changes them (for the log). Each
    connection runs uvicorn's default HTTP protocol (h11, or httptools when installed) inside.
    """

    def __init__(self, *, limit: int, header_timeout: float, body_timeout: float, idle_timeout: float,
                 limit_name: str, timeout_names: str) -> None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        self.limit, self.header_timeout, self.body_timeout = limit, header_timeout, body_timeout
        self.idle_timeout = idle_timeout
        self.inner = AutoHTTPProtocol
        self.open = 0                                          # connections admitted and not yet lost
        self.spare = 0             # of them, let in past the limit for a health check (at most HEALTH_ROOM)
        self.unfinished: dict[GuardedConnection, None] = {}    # without a request in progress, oldest first
        self.made_room = BurstLog(logging.WARNING, lambda n: (
            f"at the limit of {limit} connections ({limit_name}): closed {_connections(n)} that had no complete "
            f"request, to make room for new ones{_since(n)}"))
        self.refused = BurstLog(logging.WARNING, lambda n: (
            f"at the limit of {limit} connections ({limit_name}), each with a request in progress: refused "
            f"{_connections(n)} (HTTP 503){_since(n)}"))
        self.timed_out = BurstLog(logging.INFO, lambda n: (
            f"closed {_connections(n)} whose request did not arrive in time ({timeout_names}){_since(n)}"))
        self.accept_failures = BurstLog(logging.ERROR, lambda n: (
            f"cannot accept connections: {self._accept_error}{_since(n, 'time')}; the event loop tries again every "
            f"second. Lower {limit_name} or raise the open-file limit (ulimit -n)"))
        self._accept_error = ""

    def server_options(self) -> dict:
        """What uvicorn's ``Config`` takes from the guard: its protocol (``http=``), and an idle
        timer of uvicorn's own that never comes before the guard's (a backstop)."""
        return {"http": self.protocol, "timeout_keep_alive": self.idle_timeout + self.header_timeout + 1}

    def protocol(self, config, server_state, app_state, _loop=None) -> "GuardedConnection":
        """uvicorn's ``http=``: the protocol of one new connection."""

        def make() -> asyncio.Protocol:
            return self.inner(config=config, server_state=server_state, app_state=app_state, _loop=_loop)

        return GuardedConnection(self, make)

    def app(self, app):
        """``app`` (ASGI) telling each request's connection where the request is."""

        async def reporting(scope, receive, send) -> None:
            connection = _CONNECTION.get()
            if scope["type"] != "http" or connection is None:
                return await app(scope, receive, send)
            connection.head_arrived()
            served = app
            if connection.spare:  # let in past the limit: a health check is served, nothing else
                send = _closing(send)
                if scope["path"] != HEALTH_PATH:
                    self.refused.note()
                    served = _refuse
            read_all = False

            def read():
                # once the body is in, the server's receive() itself: no frame of this one
                # waits for a stream's disconnect
                return receive() if read_all else reading()

            async def reading():
                nonlocal read_all
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    read_all = True
                    connection.request_read()
                return message

            async def answer(message) -> None:
                if message["type"] == "http.response.start":
                    connection.request_read()  # an answer before the body (a refusal): its reading is over
                elif message["type"] == "http.response.body" and not message.get("more_body", False):
                    connection.response_ended()
                await send(message)

            await served(scope, read, answer)

        return reporting

    def loop_exceptions(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """The event loop's exception handler: a failed ``accept()`` (no files left) is
        logged once per interval; everything else as the loop would."""
        if context.get("message") != ACCEPT_FAILED:
            return loop.default_exception_handler(context)
        exc = context.get("exception")
        self._accept_error = (errno.errorcode.get(getattr(exc, "errno", None) or 0, "")
                              + f" ({getattr(exc, 'strerror', None) or exc})").strip()
        self.accept_failures.note()

    # ---- the connections' reports ----------------------------------------------------------------

    def admit(self, connection: "GuardedConnection") -> bool:
        """Whether ``connection`` may open: under the limit, or in the place of the oldest
        unfinished one, which is closed; else, while there is :data:`HEALTH_ROOM`, as a spare
        one (for a health check), or in the place of the oldest unfinished spare one."""
        if self.open - self.spare >= self.limit:
            # the oldest unfinished one within the limit; spare ones are at most HEALTH_ROOM to pass
            within = next((c for c in self.unfinished if not c.spare), None)
            if within is None and self.spare >= HEALTH_ROOM:
                within = next(iter(self.unfinished), None)
            if within is not None:
                self.made_room.note()
                within.close_unfinished()
            elif self.spare >= HEALTH_ROOM:
                self.refused.note()
                return False
        self.open += 1
        connection.counted = True
        if self.open - self.spare > self.limit:
            self.spare += 1
            connection.spare = True
        return True

    def release(self, connection: "GuardedConnection") -> None:
        """``connection`` no longer counts (it is closing)."""
        if connection.counted:
            connection.counted = False
            self.open -= 1
            if connection.spare:
                self.spare -= 1
        self.unfinished.pop(connection, None)


class GuardedConnection(asyncio.Protocol):
    """One HTTP connection: uvicorn's protocol inside (``make()``), once admitted, and the
    timer of the request it waits for."""

    def __init__(self, guard: ConnectionGuard, make: Callable[[], asyncio.Protocol]) -> None:
        self.guard, self.make = guard, make
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.counted = False     # admitted, and not yet closing
        self.spare = False       # admitted past the limit, for a health check
        self.phase = WAITING
        self.partial = False     # bytes of the next request's head have come
        self.timer: asyncio.TimerHandle | None = None
        self.waiting_since = 0.0  # the loop's time when the connection began to wait for a head

    # ---- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        if not self.guard.admit(self):
            transport.write(REFUSED)
            transport.close()
            return
        self.inner = self.make()
        self.inner.connection_made(transport)
        self._wait_for_head(self.guard.header_timeout)

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        if self.phase == WAITING:
            self.partial = True
        token = _CONNECTION.set(self)  # the request's task, made in here, inherits it
        try:
            self.inner.data_received(data)
        finally:
            _CONNECTION.reset(token)

    def eof_received(self):
        return self.inner.eof_received() if self.inner is not None else None

    def connection_lost(self, exc) -> None:
        self._cancel_timer()
        self.guard.release(self)
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    # ---- where the request is (from ConnectionGuard.app; nothing once the connection closes) ---

    def head_arrived(self) -> None:
        if self.counted:
            self.phase, self.partial = READING, False
            self._arm(self.guard.body_timeout)

    def request_read(self) -> None:
        if self.counted and self.phase == READING:
            self.phase = WORKING
            self._cancel_timer()
            self.guard.unfinished.pop(self, None)

    def response_ended(self) -> None:
        if self.counted and self.spare:  # one request only: the connection closes
            self.guard.release(self)
        elif self.counted:
            self._wait_for_head(min(self.guard.idle_timeout, self.guard.header_timeout))

    # ---- timers and closing ----------------------------------------------------------------------

    def _wait_for_head(self, seconds: float) -> None:
        self.phase, self.partial = WAITING, False
        self.guard.unfinished.pop(self, None)
        self.guard.unfinished[self] = None   # the newest unfinished
        self.waiting_since = asyncio.get_running_loop().time()
        self._arm(seconds)

    def _arm(self, seconds: float) -> None:
        self._cancel_timer()
        self.timer = asyncio.get_running_loop().call_later(seconds, self._too_slow)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _too_slow(self) -> None:
        self.timer = None
        if self.transport is None or self.transport.is_closing():
            return
        if self.phase == WAITING:
            left = self.guard.header_timeout - (asyncio.get_running_loop().time() - self.waiting_since)
            if left > TIMER_SLACK:  # the idle time after a response is over, not the head's
                if self.partial or self._bytes_waiting():
                    self._arm(left)  # a next request is coming: its head has the rest of its time
                else:  # the caller keeps the connection without using it: closed, as keep-alive ends
                    self.guard.release(self)
                    self.transport.close()
                return
        self.guard.timed_out.note()
        self.guard.release(self)
        if self.phase == READING or self.partial:
            self.transport.write(TIMED_OUT)
        self.transport.close()

    def _bytes_waiting(self) -> bool:
        """Whether the socket has bytes (or its end) the event loop has not read yet."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        poller = select.poll()  # not select(): descriptors past 1023
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    def close_unfinished(self) -> None:
        """Close at once (to make room): the request had not arrived."""
        self._cancel_timer()
        self.guard.release(self)
        if self.transport is not None:
            self.transport.abort()


async def _refuse(scope, receive, send) -> None:
    """Answer a request on a spare connection that is no health check (an ASGI app): 503."""
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"connection", b"close"), (b"retry-after", b"1"), (b"content-type", b"text/plain"),
                            (b"content-length", str(len(REFUSED_BODY)).encode())]})
    await send({"type": "http.response.body", "body": REFUSED_BODY})


def _closing(send):
    """``send`` whose response closes its connection (a spare one serves one request)."""

    async def closing(message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return closing


def _connections(n: int) -> str:
    return f"{n} connection{'s' if n != 1 else ''}"


def _since(n: int, what: str = "") -> str:
    if what:
        return f" ({n} {what}{'s' if n != 1 else ''} in the last {LOG_INTERVAL:g} s)" if n > 1 else ""
    return f" in the last {LOG_INTERVAL:g} s" if n > 1 else ""

