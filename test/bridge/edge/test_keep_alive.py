"""A keep-alive connection whose next request comes while the event loop is busy past the
connection's idle time is answered, not closed under the request: the bridge's connection guard
on a real uvicorn server, configured as ``ovos-a2a serve`` configures it
(``ConnectionGuard.server_options``), with a plain ASGI app that keeps the loop busy on cue.

On a bridge this happens under a burst (hundreds of streams opened at once keep the loop busy
for seconds): the idle timer was due when the loop last looked at its sockets, the request came
while the loop worked through what it had found, and the timer then closed the connection with
the request unread; the caller saw "server disconnected without sending a response"."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import time

from ovos_a2a_solver.bridge.edge.connections import ConnectionGuard
from support.network import serving

IDLE = 0.5      # idle_timeout of the guard
HEAD = 6.0      # header_timeout: longer than the loop stays busy
BUSY = 2.0      # seconds the loop is busy, from just before the connection's idle time is up
SEND_AFTER = 1.0  # seconds after its first answer the caller sends its next request (the loop is busy then)


async def app(scope, receive, send) -> None:
    """``GET /busy`` answers, and keeps the loop busy from just before that connection's idle
    time is up until well after it; ``GET /`` just answers."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":  # startup, then shutdown
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["path"] == "/busy":
        loop = asyncio.get_running_loop()
        now = loop.time()
        # the first keeps the loop until the idle timer is due, so that the second and the idle
        # timer are run in the same turn, the second first: the request comes during it
        loop.call_at(now + IDLE - 0.15, time.sleep, 0.3)
        loop.call_at(now + IDLE - 0.1, time.sleep, BUSY)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def guarded_server():
    """uvicorn with the guard on a loopback port, in a thread; its port."""
    guard = ConnectionGuard(limit=100, header_timeout=HEAD, body_timeout=HEAD, idle_timeout=IDLE,
                            limit_name="max_connections", timeout_names="header_timeout")
    with serving(guard.app(app), **guard.server_options(), lifespan="on") as port:
        yield port


def answer(sock: socket.socket) -> bytes:
    """One response of :func:`app` (two bytes of body), or what came before the connection closed."""
    data = b""
    while not (data.startswith(b"HTTP/1.1 ") and data.endswith(b"\r\n\r\nok")):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_a_next_request_sent_while_the_loop_is_busy_past_the_idle_time_is_answered():
    with guarded_server() as port, socket.create_connection(("127.0.0.1", port), timeout=BUSY + 5) as sock:
        sock.sendall(b"GET /busy HTTP/1.1\r\nHost: bridge\r\n\r\n")
        first = answer(sock)
        assert first.startswith(b"HTTP/1.1 200 "), first
        time.sleep(SEND_AFTER)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: bridge\r\n\r\n")
        second = answer(sock)
        assert second.startswith(b"HTTP/1.1 200 "), f"the request sent in time was not answered: {second!r}"


def test_an_idle_keep_alive_connection_is_still_closed_after_its_idle_time():
    with guarded_server() as port, socket.create_connection(("127.0.0.1", port), timeout=HEAD) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: bridge\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        assert sock.recv(4096) == b"", "the idle connection got bytes instead of its end"
        closed_after = time.monotonic() - started
        assert IDLE * 0.8 <= closed_after < IDLE + 2, closed_after
