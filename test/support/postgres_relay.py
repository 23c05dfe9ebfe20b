"""A relay in front of the tests' PostgreSQL server that counts the connections made through it.

    with CountingRelay(url) as relay:       # url: a ``postgresql+asyncpg://`` URL
        bridge = replica("x", db=relay.url)  # the same database, reached through the relay
        relay.counts()                       # Counts(logins=..., closed=..., cancel_requests=...)

PostgreSQL's own figures cannot tell one client's connections from another's: its count of
sessions is for the whole database and reaches the statistics a moment late, and
``pg_stat_activity`` also lists the sessions of other processes, autovacuum's workers and
connections still logging in. The relay sees exactly the connections of the clients given its
URL, when they are opened and when they end.
"""
from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from dataclasses import dataclass

#: the code of a CancelRequest, the first message of a connection that only asks the server to
#: cancel another connection's statement (the PostgreSQL protocol's "Frontend/Backend" chapter)
CANCEL_REQUEST_CODE = 80877102


@dataclass(frozen=True)
class Counts:
    """What went through the relay so far: connections that logged in (or tried to), those of
    them that ended, and connections that only carried a cancel request."""

    logins: int
    closed: int
    cancel_requests: int


class CountingRelay:
    """Relays TCP connections from a port of its own on 127.0.0.1 to the server of ``url``, byte
    for byte, on a thread of its own, and counts them (:meth:`counts`)."""

    def __init__(self, url: str) -> None:
        from sqlalchemy.engine import make_url

        self._target = make_url(url)
        self._logins = self._closed = self._cancel_requests = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="postgres-relay", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._relays: set[asyncio.Task] = set()
        self.url = ""

    def __enter__(self) -> "CountingRelay":
        self._thread.start()
        self._server = self._run(asyncio.start_server(self._relay, "127.0.0.1", 0))
        port = self._server.sockets[0].getsockname()[1]
        self.url = self._target.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
        return self

    def __exit__(self, *_exc) -> None:
        async def close() -> None:
            self._server.close()
            for relay in list(self._relays):
                relay.cancel()
            await asyncio.gather(*self._relays, return_exceptions=True)
            await self._server.wait_closed()

        self._run(close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def counts(self) -> Counts:
        with self._lock:
            return Counts(self._logins, self._closed, self._cancel_requests)

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._relays.add(asyncio.current_task())
        server_writer = None
        counted_login = False
        try:
            first = await client_reader.readexactly(8)  # every first message: its length, then a code
            if struct.unpack("!ii", first)[1] == CANCEL_REQUEST_CODE:
                with self._lock:
                    self._cancel_requests += 1
            else:
                with self._lock:
                    self._logins += 1
                counted_login = True
            server_reader, server_writer = await asyncio.open_connection(
                self._target.host or "127.0.0.1", self._target.port or 5432)
            server_writer.write(first)
            await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_writer, server_writer):
                if writer is not None:
                    writer.close()
            if counted_login:
                with self._lock:
                    self._closed += 1
            self._relays.discard(asyncio.current_task())


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until either end closes; then close ``writer`` (the other
    direction then ends too)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()
