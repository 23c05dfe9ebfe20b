"""A task store that is away is "unavailable, retry shortly" to callers, never an internal error.

A real bridge whose SQLite writes fail (its file size limit lowered while it runs: every write
past the limit fails, as on a disk that takes no more), or whose PostgreSQL server stops:
every binding answers 503 with ``Retry-After`` (gRPC: ``UNAVAILABLE`` with a ``RetryInfo``),
no JSON-RPC ``-32603``, nothing of the database's words; the log says it once per 10 s, not
once per message; ``/health`` is 503 ``"store": "unavailable"`` meanwhile, and all is as
before once the store is back. A message refused so and sent again then is answered, once.
"""
from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, echo_log
from support.bridge_rpc import HEADERS, grpc_refusal, grpc_retry_info, message, state, task_of
from support.waiting import wait_until

#: what the database says, which callers must never read
DATABASE_WORDS = ("disk", "I/O", "sqlite", "SQLITE", "database", "Errno", "Connect call", "127.0.0.1", "shutting down",
                  "OperationalError", "asyncpg")
AWAY_LINE = "the task store is unavailable ("


def _jsonrpc(bridge, method: str, params: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return httpx.post(bridge.url + "/", json=body, headers={**HEADERS, "Accept": "text/event-stream"}, timeout=30)


def _assert_temporary(response: httpx.Response) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert int(response.headers["retry-after"]) >= 1, response.headers
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert "-32603" not in response.text, response.text
    for words in DATABASE_WORDS:
        assert words not in response.text, (words, response.text)


def _health(bridge) -> httpx.Response:
    return httpx.get(bridge.root + "/health", timeout=10)


def _refused_everywhere(bridge, text: str, message_id: str) -> None:
    """SendMessage over JSON-RPC and HTTP+JSON, a stream over JSON-RPC, and gRPC: each refused for now."""
    _assert_temporary(_jsonrpc(bridge, "SendMessage", {"message": message(text, message_id)}))
    _assert_temporary(_jsonrpc(bridge, "SendStreamingMessage", {"message": message(text + " streamed")}))
    _assert_temporary(httpx.post(bridge.url + "/rest/message:send", json={"message": message(text + " rest")},
                                 headers=HEADERS, timeout=30))
    _assert_grpc_unavailable(bridge, text + " grpc")


def _assert_grpc_unavailable(bridge, text: str) -> None:
    import grpc

    call = grpc_refusal(bridge.url, text, "the bridge answered while its store was away").__cause__
    assert isinstance(call, grpc.aio.AioRpcError), repr(call)
    assert call.code() == grpc.StatusCode.UNAVAILABLE, call
    for words in DATABASE_WORDS:
        assert words not in (call.details() or ""), (words, call.details())
    assert grpc_retry_info(call).retry_delay.seconds >= 1


def _answered(bridge, text: str, message_id: str) -> dict:
    response = _jsonrpc(bridge, "SendMessage", {"message": message(text, message_id)})
    assert response.status_code == 200, response.text
    task = task_of(response.json())
    assert state(task) == "TASK_STATE_COMPLETED", task
    return task


def _log_says_it_once(bridge) -> None:
    log = bridge.stderr_text()
    assert log.count(AWAY_LINE) == 1, log  # the calls above took well under 10 s
    assert "Traceback" not in log, log


def test_a_store_that_cannot_write_is_unavailable_for_now_and_then_back(tmp_path):
    calls = echo_log(tmp_path)
    with BridgeProcess("--grpc-port", "0", call_log=calls, piped_output=True) as bridge:
        _answered(bridge, "before", uuid.uuid4().hex)
        bridge.limit_file_size(1)  # no write of the database gets through
        refused = uuid.uuid4().hex
        _refused_everywhere(bridge, "while full", refused)
        for n in range(5):
            _assert_temporary(_jsonrpc(bridge, "SendMessage", {"message": message(f"more {n}")}))
        report = _health(bridge)
        assert report.status_code == 503 and report.json()["store"] == "unavailable", report.text
        assert report.json()["persona"] and "running" in report.json(), report.text  # the other fields stay
        _log_says_it_once(bridge)

        bridge.limit_file_size(None)
        wait_until(lambda: _health(bridge).status_code == 200, "the store to be seen back")
        assert _health(bridge).json()["store"] == "ok"
        _answered(bridge, "while full", refused)  # the refused message, sent again as it was
        _answered(bridge, "while full", refused)  # and again: its replay
        assert bridge.calls("while full") == 1
        assert "the task store works again" in bridge.stderr_text()


def test_a_message_refused_while_the_store_was_away_is_answered_when_sent_again_after_a_restart(tmp_path):
    calls = echo_log(tmp_path)
    state_dir = tmp_path / "state"
    refused = uuid.uuid4().hex
    with BridgeProcess(state_dir=state_dir, call_log=calls, piped_output=True) as bridge:
        _answered(bridge, "first", uuid.uuid4().hex)
        bridge.limit_file_size(1)
        _assert_temporary(_jsonrpc(bridge, "SendMessage", {"message": message("refused", refused)}))
    with InProcessBridge(state_dir=state_dir, call_log=calls) as bridge:  # started again, with room
        _answered(bridge, "refused", refused)
        assert bridge.calls("refused") == 1


def test_what_says_the_store_is_away():
    from ovos_a2a_solver.bridge.storage.availability import store_unavailable

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {page_count}")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t (v) VALUES (?)", ("x" * 100_000,))
    assert full.value.sqlite_errorname == "SQLITE_FULL"
    assert store_unavailable(full.value)

    conn.execute("PRAGMA max_page_count = 100000")
    conn.execute("INSERT INTO t (id, v) VALUES (1, 'a')")
    with pytest.raises(sqlite3.IntegrityError) as duplicate:
        conn.execute("INSERT INTO t (id, v) VALUES (1, 'b')")
    assert not store_unavailable(duplicate.value)  # the request's own fault, not the store's

    try:  # raised while handling another, as the SDK's consumer does
        try:
            raise full.value
        except sqlite3.OperationalError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert store_unavailable(outer)
    assert not store_unavailable(ValueError("no"))


def test_a_connection_error_is_the_stores_only_when_the_database_driver_raised_it():
    """PostgreSQL refusing a connection is the store away; a webhook's host that does not resolve,
    or a sibling worker's socket that refuses, is not (they have answers of their own)."""
    import asyncio
    import socket

    import asyncpg

    from ovos_a2a_solver.bridge.storage.availability import store_unavailable

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once it is closed
    with pytest.raises(OSError) as refused_by_the_database:
        asyncio.run(asyncpg.connect(f"postgresql://nobody@127.0.0.1:{port}/none", timeout=5))
    assert store_unavailable(refused_by_the_database.value)

    with pytest.raises(OSError) as refused_elsewhere, socket.socket() as plain:
        plain.connect(("127.0.0.1", port))
    assert not store_unavailable(refused_elsewhere.value)
    with pytest.raises(OSError) as unresolved:
        socket.getaddrinfo("no-such-host.invalid", 80)
    assert not store_unavailable(unresolved.value)


def test_the_log_says_each_kind_once_per_ten_seconds(caplog):
    from ovos_a2a_solver.bridge.storage.availability import StoreAvailability

    now = [100.0]
    availability = StoreAvailability(clock=lambda: now[0])
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
    with caplog.at_level("WARNING", logger="ovos_a2a_solver.bridge"):
        for _ in range(20):
            availability.failed(refused)
            now[0] += 0.4
        assert not availability.available
        now[0] += 3
        availability.failed(refused)
    lines = [r.getMessage() for r in caplog.records if AWAY_LINE in r.getMessage()]
    assert len(lines) == 2, lines
    assert "Connect call failed" in lines[0] and "19 more like it" in lines[1], lines
    availability.works()
    assert availability.available
    availability.failed(refused, source="lease")
    availability.works()  # the store's requests work, the lease does not
    assert not availability.available
    availability.works("lease")
    assert availability.available
