"""Connections under hostile callers, on a real bridge subprocess: requests that never finish
arriving, more connections than the bridge allows, fewer open files than connections.

The timeouts are short here (1 s) so that every test takes a few seconds.
"""
from __future__ import annotations

import re
import selectors
import socket
import statistics
import threading
import time

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, echo_log
from support.bridge_rpc import HEADERS, health, message, send, state, stream, task_of
from support.waiting import wait_until

TIMEOUT = 1.0   # OVOS_A2A_HEADER_TIMEOUT and OVOS_A2A_BODY_TIMEOUT in these tests
PROMPT = 2.0    # a normal caller's request is answered within this many seconds
SHORT = {"OVOS_A2A_HEADER_TIMEOUT": str(TIMEOUT), "OVOS_A2A_BODY_TIMEOUT": str(TIMEOUT)}

#: what unfinished requests send before they stall: half a request line, headers without
#: their end, headers and part of the body, nothing at all
STALLED = [
    b"POST /a2",
    b"POST /a2a/ HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nX-Pad: ",
    b"POST /a2a/ HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"
    b"Content-Length: 100000\r\n\r\n{\"jsonrpc\": \"2.0\", ",
    b"",
]


class Unfinished:
    """``count`` connections to ``port`` whose requests stall (:data:`STALLED` in turn); a
    quarter of them trickle a byte every 0.2 s (of their headers, or of their body)."""

    def __init__(self, port: int, count: int) -> None:
        self.sockets: list[socket.socket] = []
        self.open: set[socket.socket] = set()
        self.answers: dict[socket.socket, bytes] = {}
        self.port = port
        self._lock = threading.Lock()
        for n in range(count):
            self.add(STALLED[n % len(STALLED)])
        self.trickling = [s for n, s in enumerate(self.sockets) if n % len(STALLED) in (1, 2) and n % 8 < 4]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def add(self, stall: bytes) -> None:
        """One more connection, that sends ``stall`` and stalls."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(stall)
        sock.setblocking(False)
        with self._lock:
            self.sockets.append(sock)
            self.open.add(sock)
            self.answers[sock] = b""

    def _trickle(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for sock in [s for s in self.trickling if s in self.open]:
                    try:
                        sock.send(b"a")
                    except OSError:
                        pass  # closed by the bridge: counted by still_open()

    def still_open(self) -> int:
        """How many the bridge has not closed yet (EOF or reset seen from here)."""
        with self._lock:
            with selectors.DefaultSelector() as selector:
                for sock in self.open:
                    selector.register(sock, selectors.EVENT_READ)
                ready = [key.fileobj for key, _ in selector.select(timeout=0)]
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    self.answers[sock] += data
                else:
                    self.open.discard(sock)
            return len(self.open)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.sockets:
            sock.close()


def timed(call):
    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started


def log_lines(bridge: BridgeProcess) -> list[str]:
    return [line for line in bridge.stderr_text().splitlines() if line.strip()]


@pytest.mark.parametrize("limit, count", [("16", 300), (None, 1000)], ids=["limit-16", "default-limit"])
def test_unfinished_connections_beyond_the_limit_and_the_open_files_lock_nobody_out(limit, count):
    """Stalled requests, more than the bridge allows connections and open files (256): a
    normal caller is answered at once, every stalled one is closed after its timeout, and
    the log says so in a few lines (it said "Too many open files" ~100,000 times). The
    default limit leaves the bridge files enough for a burst of 1000 (none fails to be accepted)."""
    env = {**SHORT, **({"OVOS_A2A_MAX_CONNECTIONS": limit} if limit else {})}
    with BridgeProcess(env=env, fd_limit=256) as bridge:
        stalled = Unfinished(bridge.port, count)
        try:
            answer, seconds = timed(lambda: health(bridge))
            assert answer["ok"] and seconds < PROMPT, seconds
            reply, seconds = timed(lambda: send(bridge.url, message("hello"), timeout=10))
            assert state(task_of(reply)) == "TASK_STATE_COMPLETED" and seconds < PROMPT, (reply, seconds)
            wait_until(stalled.still_open, "the bridge to close every stalled connection", timeout=TIMEOUT + 5,
                       until=lambda n: n == 0)
            answered = [a for a in stalled.answers.values() if a]
            assert all(a.startswith((b"HTTP/1.1 408 ", b"HTTP/1.1 503 ")) for a in answered), answered[:3]
        finally:
            stalled.close()
        lines = log_lines(bridge)
        assert len(lines) <= 3, "\n".join(lines[:20])
        assert not [line for line in lines if "cannot accept" in line], lines
        assert any(f"at the limit of {limit or 96} connections (--max-connections (OVOS_A2A_MAX_CONNECTIONS)): "
                   f"closed" in line for line in lines), lines
        assert health(bridge)["ok"]


def read_until_closed(sock: socket.socket, timeout: float) -> bytes:
    """Everything the bridge sends on ``sock`` until it closes it (EOF or reset)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_closed():
    with BridgeProcess(env=SHORT) as bridge:
        nothing = socket.create_connection(("127.0.0.1", bridge.port))
        half_head = socket.create_connection(("127.0.0.1", bridge.port))
        half_head.sendall(b"GET /health HTTP/1.1\r\nHost: bridge\r\n")
        half_body = socket.create_connection(("127.0.0.1", bridge.port))
        half_body.sendall(b"POST /a2a/ HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\n"
                          b"A2A-Version: 1.0\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\":")
        started = time.monotonic()
        try:
            assert read_until_closed(nothing, TIMEOUT + 5) == b""
            assert read_until_closed(half_head, TIMEOUT + 5).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
            assert read_until_closed(half_body, TIMEOUT + 5).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
            assert TIMEOUT * 0.9 <= time.monotonic() - started < TIMEOUT + 3
        finally:
            for sock in (nothing, half_head, half_body):
                sock.close()
        assert log_lines(bridge) == []  # timeouts are logged at INFO only


def test_a_body_sent_slowly_within_its_time_is_answered():
    """The body timeout counts from the head, and the head's timer starts again after each
    response: a keep-alive connection is not closed for having lived long."""
    with InProcessBridge(env={"OVOS_A2A_HEADER_TIMEOUT": "2", "OVOS_A2A_BODY_TIMEOUT": "2",
                              "OVOS_A2A_IDLE_TIMEOUT": "5"}) as bridge:
        body = (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
                b'{"role": "ROLE_USER", "messageId": "m-%d", "parts": [{"text": "hi"}]}}}')
        with socket.create_connection(("127.0.0.1", bridge.port), timeout=10) as sock:
            for n in range(2):
                payload = body % n
                sock.sendall(b"POST /a2a/ HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\n"
                             b"A2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n" % len(payload))
                for half in (payload[:40], payload[40:]):
                    time.sleep(0.6)
                    sock.sendall(half)
                answer = b""
                while b"TASK_STATE_COMPLETED" not in answer:
                    chunk = sock.recv(65536)
                    assert chunk, answer
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 200 "), answer


def test_at_the_limit_with_every_connection_busy_a_new_one_is_refused_503_and_logged_once(tmp_path):
    """Requests in progress are never closed to make room, nor timed out while they are
    answered (blocking SendMessages whose turns are held, beyond the 1 s timeouts, until the
    requests below are done); connections closed to
    make room give their place up for good; newcomers are refused 503 meanwhile, and the log
    has one line for all of them; a health check gets through all the same."""
    with BridgeProcess(env={**SHORT, "OVOS_A2A_MAX_CONNECTIONS": "3"}, call_log=echo_log(tmp_path)) as bridge:
        stalled = Unfinished(bridge.port, 0)
        for _ in range(6):  # bodies that never end: the first 3 closed to make room for the next, then for the senders
            stalled.add(STALLED[2])
        replies: list[dict] = []
        senders = [threading.Thread(target=lambda: replies.append(send(bridge.url, message("hold:busy"), timeout=30)))
                   for _ in range(3)]
        for sender in senders:
            sender.start()
        wait_until(bridge.calls, "the three messages to be in progress", until=lambda n: n == 3)
        in_progress = time.monotonic()
        refusals = [httpx.get(bridge.root + "/.well-known/agent-card.json", timeout=5) for _ in range(20)]
        assert {r.status_code for r in refusals} == {503}, [r.text for r in refusals]
        assert refusals[0].headers["retry-after"] == "1"
        checks = [httpx.get(bridge.root + "/health", timeout=5) for _ in range(5)]
        assert {r.status_code for r in checks} == {200}, [r.text for r in checks]
        assert {r.json()["running"] for r in checks} == {3}  # while every connection was taken
        time.sleep(max(0.0, in_progress + 2 * TIMEOUT - time.monotonic()))  # in progress past the timeouts
        (bridge.call_log.parent / "busy").touch()  # the held turns end
        for sender in senders:
            sender.join(30)
        assert [state(task_of(r)) for r in replies] == ["TASK_STATE_COMPLETED"] * 3, replies
        assert stalled.still_open() == 0
        stalled.close()
        assert health(bridge)["ok"]
        lines = log_lines(bridge)
        assert len(lines) == 2, lines  # one line for the 20 refused, one for the 6 closed to make room
        assert "closed 1 connection that had no complete request, to make room for new ones" in lines[0], lines
        assert "each with a request in progress: refused 1 connection (HTTP 503)" in lines[1], lines


def test_a_stream_outlives_the_request_timeouts():
    """A response is not timed: a stream of 2.5 s, beyond the 1 s timeouts, ends completed."""
    with InProcessBridge(env=SHORT) as bridge:
        events = stream(bridge.url, message("slow:0.5"), timeout=20)
        assert events[-1].get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED" \
            or state(events[-1].get("task", {})) == "TASK_STATE_COMPLETED", events[-1]


def test_keep_alive_responses_are_not_delayed_by_nagle():
    """TCP_NODELAY on the accepted sockets: without it every response on a keep-alive
    connection waits ~40 ms for the client's delayed ACK."""
    with InProcessBridge() as bridge, httpx.Client(headers=HEADERS) as client:
        client.get(bridge.root + "/health").raise_for_status()
        seconds = []
        for _ in range(20):
            _, took = timed(lambda: client.get(bridge.root + "/health").raise_for_status())
            seconds.append(took)
        assert statistics.median(seconds) < 0.02, seconds


def grpc_port(bridge: BridgeProcess) -> int:
    return int(re.search(r"gRPC on port (\d+)", bridge.stdout_text()).group(1))


def closed_after(sock: socket.socket, started: float, timeout: float) -> float:
    """Seconds from ``started`` until the bridge closed ``sock`` (read to its end)."""
    read_until_closed(sock, timeout)
    return time.monotonic() - started


def test_grpc_connections_beyond_the_limit_are_closed_and_handshakes_are_timed():
    """On the gRPC port: connections beyond the limit are closed at once, those that never
    finish their HTTP/2 handshake after the header timeout; then a real call is answered."""
    grpc = pytest.importorskip("grpc")
    from a2a.types import Message, Part, Role, SendMessageRequest, a2a_pb2_grpc

    with BridgeProcess("--grpc-port", "0", env={**SHORT, "OVOS_A2A_MAX_CONNECTIONS": "4"}) as bridge:
        port = grpc_port(bridge)
        stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
        started = time.monotonic()
        try:
            stalled[0].sendall(b"PRI * HTTP/2.0\r\n")  # half the HTTP/2 preface
            beyond = [closed_after(sock, started, TIMEOUT + 5) for sock in stalled[4:]]
            assert max(beyond) < TIMEOUT * 0.8, beyond
            timed_out = [closed_after(sock, started, TIMEOUT + 5) for sock in stalled[:4]]
            assert TIMEOUT * 0.8 <= min(timed_out) and max(timed_out) < TIMEOUT + 3, timed_out
        finally:
            for sock in stalled:
                sock.close()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id="m1",
                                                         parts=[Part(text="hello")]))
            reply = a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(request, metadata=[("a2a-version", "1.0")],
                                                                    timeout=10)
        assert "".join(p.text for a in reply.task.artifacts for p in a.parts) == "echo: hello"


def test_running_out_of_open_files_is_logged_once_per_interval():
    """A limit above what the open files allow (warned at start): accepting fails with "too
    many open files", which the event loop logged with a traceback for every try (thousands
    of lines a second); now one line per interval. Callers are served again once it passes."""
    env = {**SHORT, "OVOS_A2A_MAX_CONNECTIONS": "1000"}
    with BridgeProcess(env=env, fd_limit=128) as bridge:
        stalled = Unfinished(bridge.port, 400)
        try:
            wait_until(lambda: "Too many open files" in bridge.stderr_text(), "the bridge to run out of open files")
            assert health(bridge)["ok"]
            wait_until(stalled.still_open, "the bridge to close every stalled connection", timeout=TIMEOUT + 10,
                       until=lambda n: n == 0)
        finally:
            stalled.close()
        lines = log_lines(bridge)
        assert "needs about 1064 open files, and this process may open 128" in lines[0], lines
        assert 1 <= len([line for line in lines if "cannot accept connections: EMFILE" in line]) <= 2, lines
        assert len(lines) <= 3, "\n".join(lines[:20])
