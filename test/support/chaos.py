# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Load and witnesses for chaos tests of bridge replicas: what callers were told, and when.

* :class:`Replica`: one bridge replica (a :class:`~support.bridge_process.BridgeProcess` on a
  shared PostgreSQL database) that can be killed, paused, resumed and started again on the
  same address, keeping every run's stderr.
* :class:`Load`: caller threads sending messages, blocking and streaming, each to one replica
  and, after a transport failure, a hang, a 503/429 (after its ``Retry-After``) or an error,
  identically (the same messageId) to the other; every attempt is recorded, and every task
  state it is answered with is told to a witness (a :class:`TerminalWatch`).
* :class:`TerminalWatch`: reads every task of the callers' owner on each replica (ListTasks)
  over and over, and records the first terminal state seen of each task, and every later
  reading that differs from it.
"""
from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import httpx

from support.bridge_process import BridgeProcess
from support.bridge_rpc import status_text

HEADERS = {"A2A-Version": "1.0"}
TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED")
SETTLED = TERMINAL + ("TASK_STATE_INPUT_REQUIRED",)
INTERNAL_ERROR = -32603
#: words of the database or its driver, which no answer of the bridge may carry
DATABASE_WORDS = re.compile(r"asyncpg|psycopg|sqlalchemy|postgres|SQLSTATE|pg_hba|terminating connection|"
                            r"connection was closed|ConnectionDoesNotExist|CannotConnectNow|database system|"
                            r"\bErrno\b|Traceback", re.I)
SLOW_ANSWER = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


class Replica:
    """One replica of the bridge on the database of ``db_url``, with the echo backend; started
    again by :meth:`start` on the address it had."""

    def __init__(self, label: str, db_url: str, token: str, *, lease: float, deadline: float,
                 call_log: Path, host: str = "127.0.0.1", command_prefix: Sequence[str] = ()) -> None:
        self.label = label
        self.name = f"chaos-{label}-{uuid.uuid4().hex[:8]}"  # its name in the database
        self.db_url, self.token, self.lease, self.deadline = db_url, token, lease, deadline
        self.call_log, self.host, self.command_prefix = call_log, host, tuple(command_prefix)
        self.port = 0
        self.process: Optional[BridgeProcess] = None
        self.ended_runs: list[str] = []  # the stderr of each run that ended
        self.url = self.root = ""

    def start(self) -> None:
        """Start a run (on the port of the last one, if there was one)."""
        self.process = BridgeProcess("--host", self.host, "--heartbeat", "1", "--deadline", str(self.deadline),
                                     port=self.port, call_log=self.call_log, command_prefix=self.command_prefix,
                                     env={"OVOS_A2A_DB": self.db_url, "OVOS_A2A_TOKENS": self.token,
                                          "OVOS_A2A_REPLICA": self.name,
                                          "OVOS_A2A_REPLICA_LEASE": str(self.lease)})
        self.port, self.url, self.root = self.process.port, self.process.url, self.process.root

    def kill9(self) -> None:
        """SIGKILL (a crash)."""
        self._end(self.process.kill9)

    def stop(self) -> None:
        """End the run (SIGTERM, then SIGKILL), resuming it first if it was paused."""
        if self.process is not None:
            self.resume()
            self._end(self.process.stop)

    def pause(self) -> None:
        """SIGSTOP: the process stops where it is, its sockets stay open."""
        os.kill(self.process.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT."""
        if self.process is not None and self.process.returncode is None:
            os.kill(self.process.proc.pid, signal.SIGCONT)

    def _end(self, how) -> None:
        how()
        self.ended_runs.append(self.process.stderr_text())
        self.process = None

    def stderr(self) -> str:
        """What every run wrote to stderr, run after run."""
        runs = self.ended_runs + ([self.process.stderr_text()] if self.process is not None else [])
        return "".join(f"----- run {n + 1} of {self.label} -----\n{text}" for n, text in enumerate(runs))

    def get(self, task_id: str, timeout: float = 5, client: Optional[httpx.Client] = None) -> Optional[dict]:
        """The task as this replica reads it now (None when it gives none), through ``client``
        (a :func:`new_connections` one) if given."""
        try:
            reply = (client or httpx).post(self.url + "/", json=_rpc("GetTask", {"id": task_id}), timeout=timeout,
                                           headers={**HEADERS, "Authorization": f"Bearer {self.token}"}).json()
        except (httpx.HTTPError, ValueError):
            return None
        return reply.get("result")


def new_connections() -> httpx.Client:
    """A client that opens a new connection for every request, as ``httpx.post`` does, but is
    made once: making a client (its TLS context) costs tens of milliseconds of CPU, which a
    request per client paid on every request, hundreds of times a run."""
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def _rpc(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}


def answer_text(task: dict) -> str:
    """The text of all the task's artifacts, joined."""
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a.get("parts", []))


@dataclass
class Attempt:
    """One request of a message to one replica, and what came of it."""

    replica: str
    method: str
    started: float            # seconds since the load started
    ended: float = 0.0
    outcome: str = ""         # task, http-503, http-429, http-N, rpc-error, transport, hang, stream-cut
    detail: str = ""          # an error's code and message, an exception's name, a body
    task_id: str = ""
    state: str = ""


@dataclass
class Sent:
    """One message: its id and text, and every attempt to have it answered."""

    message_id: str
    text: str
    method: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def answers(self) -> list[Attempt]:
        return [a for a in self.attempts if a.outcome == "task"]

    def expected_answer(self) -> str:
        return SLOW_ANSWER if self.text.startswith("slow:") else f"echo: {self.text}"


class Load:
    """``callers`` threads sending messages to ``replicas`` (caller N starts at replica N mod
    count) until :meth:`stop`; a request not answered within ``answer_within`` seconds is a hang."""

    def __init__(self, replicas: Sequence[Replica], token: str, *, callers: int = 4, answer_within: float,
                 give_up_after: float = 40.0, witness: Optional["TerminalWatch"] = None) -> None:
        self.replicas, self.token, self.callers, self.witness = list(replicas), token, callers, witness
        self.answer_within, self.give_up_after = answer_within, give_up_after
        self.sent: list[Sent] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> "Load":
        self.t0 = time.monotonic()
        for n in range(self.callers):
            thread = threading.Thread(target=self._caller, args=(n,), daemon=True, name=f"caller-{n}")
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Send no new message, and wait for the messages under way to end (answered or given up)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(self.give_up_after + self.answer_within + 10)
        assert not any(thread.is_alive() for thread in self._threads), "a caller thread did not end"

    def task_ids(self) -> set[str]:
        return {a.task_id for s in self.sent for a in s.attempts if a.task_id}

    # -- one caller ------------------------------------------------------------------

    def _caller(self, n: int) -> None:
        with new_connections() as client:
            self._send_until_stopped(n, client)

    def _send_until_stopped(self, n: int, client: httpx.Client) -> None:
        count = 0
        while not self._stopping.is_set():
            count += 1
            tag = f"c{n}m{count}-{uuid.uuid4().hex[:8]}"
            if count % 5 == 0:
                text, method = f"slow:0.1 {tag}", "SendStreamingMessage"
            elif count % 3 == 0:
                text, method = tag, "SendMessage"
            else:
                text, method = f"sleep:0.4 {tag}", "SendMessage"
            sent = Sent(uuid.uuid4().hex, text, method)
            with self._lock:
                self.sent.append(sent)
            self._deliver(sent, (n + count) % len(self.replicas), client)

    def _deliver(self, sent: Sent, first: int, client: httpx.Client) -> None:
        message = {"role": "ROLE_USER", "messageId": sent.message_id, "parts": [{"text": sent.text}]}
        began = time.monotonic()
        target = first
        while time.monotonic() - began < self.give_up_after:
            replica = self.replicas[target]
            attempt = Attempt(replica.label, sent.method, self.now())
            sent.attempts.append(attempt)
            pause = self._attempt(replica, sent.method, message, attempt, client)
            attempt.ended = self.now()
            if attempt.outcome == "task":
                if self.witness is not None:
                    self.witness.note(attempt.task_id, attempt.state, f"{replica.label} (answer)", attempt.started)
                return
            target = (target + 1) % len(self.replicas)
            time.sleep(pause)

    def _attempt(self, replica: Replica, method: str, message: dict, attempt: Attempt,
                 client: httpx.Client) -> float:
        """Fill ``attempt``; the seconds to wait before the next one."""
        headers = {**HEADERS, "Authorization": f"Bearer {self.token}"}
        body = _rpc(method, {"message": message})
        timeout = httpx.Timeout(self.answer_within, connect=3)
        try:
            if method == "SendMessage":
                response = client.post(replica.url + "/", json=body, headers=headers, timeout=timeout)
                return self._read_reply(response.status_code, response.headers, response.text, attempt)
            with client.stream("POST", replica.url + "/", json=body, timeout=timeout,
                               headers={**headers, "Accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    response.read()
                    return self._read_reply(response.status_code, response.headers, response.text, attempt)
                events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
            return self._read_stream(events, attempt)
        except httpx.TimeoutException as exc:
            attempt.outcome, attempt.detail = ("transport" if isinstance(exc, httpx.ConnectTimeout) else "hang",
                                               type(exc).__name__)
        except (httpx.HTTPError, ValueError) as exc:
            attempt.outcome, attempt.detail = "transport", f"{type(exc).__name__}: {exc}"
        return 0.2

    def _read_reply(self, status: int, headers, text: str, attempt: Attempt) -> float:
        if status in (429, 503):
            attempt.outcome, attempt.detail = f"http-{status}", f"Retry-After {headers.get('retry-after')}: {text[:200]}"
            try:
                return min(float(headers.get("retry-after", "1")), 3.0)
            except ValueError:
                return 1.0
        if status != 200:
            attempt.outcome, attempt.detail = f"http-{status}", text[:300]
            return 0.5
        reply = json.loads(text)
        if "error" in reply:
            error = reply["error"] or {}
            attempt.outcome, attempt.detail = "rpc-error", f"{error.get('code')} {error.get('message')}"
            return 0.5
        task = reply["result"].get("task", reply["result"])
        if "status" not in task:  # a message, not a task
            attempt.outcome, attempt.detail = "rpc-error", f"answered with no task: {text[:200]}"
            return 0.5
        attempt.outcome, attempt.task_id, attempt.state = "task", task["id"], task["status"]["state"]
        attempt.detail = status_text(task)
        return 0.0

    def _read_stream(self, events: list[dict], attempt: Attempt) -> float:
        task_id = state = ""
        for event in events:
            if "error" in event:
                error = event["error"] or {}
                attempt.outcome, attempt.detail = "rpc-error", f"{error.get('code')} {error.get('message')}"
                attempt.task_id = task_id
                return 0.5
            result = event.get("result") or {}
            if "task" in result:
                task_id, state = result["task"]["id"], result["task"]["status"]["state"]
            elif "statusUpdate" in result:
                task_id, state = result["statusUpdate"]["taskId"], result["statusUpdate"]["status"]["state"]
                attempt.detail = status_text(result["statusUpdate"])
            elif "artifactUpdate" in result:
                task_id = result["artifactUpdate"]["taskId"]
        attempt.task_id, attempt.state = task_id, state
        if state in SETTLED:
            attempt.outcome = "task"
            return 0.0
        attempt.outcome, attempt.detail = "stream-cut", f"the stream ended at {state or 'no state'}"
        return 0.2


class TerminalWatch:
    """Reads every task of the owner of ``token`` on each replica, over and over (a thread per
    replica), recording the first terminal state read of each task and every reading after it
    that differs (a terminal state changed)."""

    def __init__(self, replicas: Sequence[Replica], token: str, clock) -> None:
        self.replicas, self.token, self.clock = list(replicas), token, clock
        self.first: dict[str, tuple[str, str, float]] = {}  # id -> (state, replica, when)
        self.changes: list[tuple[str, str, str, str, float]] = []  # (id, first state, read state, replica, when)
        self.rounds = {replica.label: 0 for replica in replicas}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._watch, args=(r,), daemon=True) for r in self.replicas]

    def start(self) -> "TerminalWatch":
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(15)

    def note(self, task_id: str, task_state: str, where: str, asked: float) -> None:
        """One reading of a task's state (by this watch, or by anyone else), from a request made
        at ``asked`` (on :attr:`clock`) and answered now. A reading whose request was made before
        the first terminal reading came proves nothing (it may have been read before), so
        only one asked later is compared with it."""
        with self._lock:
            first = self.first.get(task_id)
            if first is None:
                if task_state in TERMINAL:
                    self.first[task_id] = (task_state, where, self.clock())
            elif task_state != first[0] and asked > first[2]:
                self.changes.append((task_id, first[0], task_state, where, self.clock()))

    def _watch(self, replica: Replica) -> None:
        with new_connections() as client:
            self._watch_until_stopped(replica, client)

    def _watch_until_stopped(self, replica: Replica, client: httpx.Client) -> None:
        headers = {**HEADERS, "Authorization": f"Bearer {self.token}"}
        while not self._stopping.is_set():
            token = ""
            try:
                while True:
                    asked = self.clock()
                    params = {"pageSize": 100, **({"pageToken": token} if token else {})}
                    reply = client.post(replica.url + "/", json=_rpc("ListTasks", params), headers=headers,
                                        timeout=3).json()
                    result = reply.get("result") or {}
                    for task in result.get("tasks", []):
                        self.note(task["id"], task["status"]["state"], f"{replica.label} (list)", asked)
                    token = result.get("nextPageToken") or ""
                    if not token:
                        break
                self.rounds[replica.label] += 1
            except (httpx.HTTPError, ValueError):
                pass  # a replica killed, paused or cut off: read again later
            self._stopping.wait(0.25)
