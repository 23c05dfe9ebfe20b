# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Bridge replicas: calls waiting on a replica cut off from the database are answered in time.

Replica A runs in a network namespace of its own (a machine), replica B beside the database.
A blocking SendMessage and a streaming one go to A, their turns held by the echo backend
(``hold:NAME``) until the test releases them, far past the bound below; then every packet
between A and the database's port is dropped. A's lease ends by its own clock at the latest one
:data:`LEASE` after the cut (it was renewed less than a third of a lease before), and with it
A may write nothing: its turns are given up, and both callers answered a cancel's grace later at
the latest, the blocking one "unavailable, retry
shortly" (503 with ``Retry-After``) or with an ended task, the stream ended (by a last status
that says why, or the task's end), within :data:`ANSWER_WITHIN` of the cut. The turn's deadline
answers nothing here. After the heal no task is left running: the blocking message sent again
to B (a retry) is answered with its task's end, and both tasks read ended on both replicas.
"""
from __future__ import annotations

import json
import threading
import time
import uuid

import httpx
import pytest

from support.chaos import DATABASE_WORDS, HEADERS, SETTLED, TERMINAL, Replica
from support.netns import Machines, can_make_machines
from support.postgres_server import PostgresServer, postgres_bin
from support.waiting import wait_until

LEASE = 3.0            # seconds: OVOS_A2A_REPLICA_LEASE of both replicas
DEADLINE = 120.0       # seconds: a turn's deadline, far past everything here
CANCEL_GRACE = 2.0     # seconds: the bridge's cancel grace (its default), which a given-up turn's call waits
#: seconds after the cut: the lease ends by then by A's clock, its turns' callers are answered a cancel's grace
#: later; and a margin for a busy machine
ANSWER_WITHIN = LEASE + CANCEL_GRACE + 4.0
SETTLED_WITHIN = 3 * LEASE + 10  # seconds after the heal: the take-over has failed A's tasks by then
TOKEN = "cut-off-owner-q8Vn3x"
AUTH = {**HEADERS, "Authorization": f"Bearer {TOKEN}"}

pytestmark = [
    pytest.mark.skipif(postgres_bin() is None, reason="the PostgreSQL server programs (initdb, pg_ctl) are not "
                                                      "installed (apt-get install postgresql)"),
]


def _rpc(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}


def _message(text: str, message_id: str) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}}


class Call(threading.Thread):
    """One request to a replica, in a thread of its own: what came back, and when it ended
    (``time.monotonic()``); a stream's events as they come."""

    def __init__(self, url: str, method: str, params: dict) -> None:
        super().__init__(daemon=True, name=f"call-{method}")
        self.url, self.method, self.params = url, method, params
        self.status: int | None = None
        self.headers: dict = {}
        self.text = ""
        self.events: list[dict] = []
        self.failure = ""
        self.ended: float | None = None

    def run(self) -> None:
        body = _rpc(self.method, self.params)
        try:
            if self.method == "SendMessage":
                response = httpx.post(self.url + "/", json=body, headers=AUTH, timeout=90)
                self.status, self.headers, self.text = response.status_code, dict(response.headers), response.text
            else:
                with httpx.stream("POST", self.url + "/", json=body, timeout=90,
                                  headers={**AUTH, "Accept": "text/event-stream"}) as response:
                    self.status, self.headers = response.status_code, dict(response.headers)
                    for line in response.iter_lines():
                        if line.startswith("data:"):
                            self.events.append(json.loads(line[5:]))
                        self.text += line + "\n"
        except httpx.HTTPError as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended = time.monotonic()


def _event_state(event: dict) -> str:
    result = event.get("result", {})
    payload = result.get("task") or result.get("statusUpdate") or {}
    return payload.get("status", {}).get("state", "")


def _event_metadata(event: dict) -> dict:
    return event.get("result", {}).get("statusUpdate", {}).get("metadata", {})


def _task(replica: Replica, task_id: str) -> dict | None:
    try:
        reply = httpx.post(replica.url + "/", json=_rpc("GetTask", {"id": task_id}), headers=AUTH, timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return None
    return reply.get("result")


@pytest.mark.timeout(180)
@pytest.mark.skipif(bool(can_make_machines()), reason=can_make_machines() or "-")
def test_calls_waiting_on_a_replica_cut_off_from_the_database_are_answered_within_its_lease(tmp_path):
    call_log = tmp_path / "echo-calls.jsonl"
    held, streamed = f"hold:{uuid.uuid4().hex[:8]}", f"hold:{uuid.uuid4().hex[:8]}"
    blocking_id = uuid.uuid4().hex
    with Machines("a") as machines, \
            PostgresServer(listen=("127.0.0.1", machines.host_address("a")),
                           clients=(f"{machines.address('a')}/32",)) as server:
        a = Replica("A", server.url(machines.host_address("a")), TOKEN, lease=LEASE, deadline=DEADLINE,
                    call_log=call_log, host=machines.address("a"), command_prefix=machines.run_in("a"))
        b = Replica("B", server.url("127.0.0.1"), TOKEN, lease=LEASE, deadline=DEADLINE, call_log=call_log)
        try:
            a.start()
            b.start()
            blocking = Call(a.url, "SendMessage", _message(held, blocking_id))
            stream = Call(a.url, "SendStreamingMessage", _message(streamed, uuid.uuid4().hex))
            blocking.start()
            stream.start()
            # both turns are under way on A: the persona was asked, and the stream began
            wait_until(lambda: call_log.read_text() if call_log.exists() else "", "both turns to begin on A",
                       timeout=30, until=lambda text: held in text and streamed in text)
            wait_until(lambda: list(stream.events), "the stream's first event", timeout=30,
                       until=lambda events: bool(events) or stream.ended is not None)
            assert stream.events and blocking.ended is None and stream.ended is None, \
                (blocking.text, stream.text, stream.failure)
            stream_task = stream.events[0]["result"]["task"]["id"]

            machines.cut("a", server.port)
            cut = time.monotonic()
            blocking.join(ANSWER_WITHIN)
            stream.join(max(0.0, cut + ANSWER_WITHIN - time.monotonic()))
            answered_in = {call.method: None if call.ended is None else round(call.ended - cut, 1)
                           for call in (blocking, stream)}
            print(f"answered {answered_in} s after the cut")
            late = [method for method, seconds in answered_in.items() if seconds is None or seconds > ANSWER_WITHIN]
            assert not late, (f"not answered within {ANSWER_WITHIN:g} s of A's cut from the database: {late}; "
                              f"answered after {answered_in} s")

            # the blocking call: "unavailable, retry shortly", or its task's end; never the database's words
            assert not blocking.failure, blocking.failure
            if blocking.status == 503:
                assert blocking.headers.get("retry-after"), blocking.headers
            else:
                assert blocking.status == 200, blocking.text
                answer = json.loads(blocking.text)
                assert "result" in answer, answer
                assert answer["result"]["task"]["status"]["state"] in SETTLED, answer
            assert not DATABASE_WORDS.search(blocking.text), blocking.text
            # the stream: ended by its task's end, or by a last status that says the store is away
            assert not stream.failure and stream.status == 200, (stream.failure, stream.text)
            last = stream.events[-1]
            assert "error" not in last, stream.text
            assert _event_state(last) in SETTLED or _event_metadata(last).get("storeUnavailable"), stream.text
            assert not DATABASE_WORDS.search(stream.text), stream.text

            machines.heal("a")
            (tmp_path / held.split(":")[1]).touch()  # the turns may end now (given up, they ended already)
            (tmp_path / streamed.split(":")[1]).touch()

            # never stranded: the blocking message sent again, to B, is answered with its task's end
            retried = httpx.post(b.url + "/", json=_rpc("SendMessage", _message(held, blocking_id)), headers=AUTH,
                                 timeout=SETTLED_WITHIN + 30).json()
            assert "result" in retried, retried
            blocking_task = retried["result"]["task"]
            assert blocking_task["status"]["state"] in TERMINAL, retried
            for task_id in (blocking_task["id"], stream_task):
                for replica in (a, b):
                    wait_until(lambda: _task(replica, task_id), f"task {task_id} to be ended on {replica.label}",
                               timeout=SETTLED_WITHIN, until=lambda task: task is not None
                               and task["status"]["state"] in TERMINAL)
            assert blocking.ended is not None
        finally:
            for replica in (a, b):
                replica.stop()
