"""Bridge: ``serve --workers N``, N processes on one port and one SQLite file.

The kernel spreads connections over the workers, so a test picks its worker by opening
connections until ``/health`` (on that same keep-alive connection) names the one it wants.
Work started on worker 1 is read, listed, streamed, canceled, replayed and continued
through worker 2; two owners stay apart; a worker killed with -9 is started again and its
work failed; the whole bridge stops on SIGTERM, Ctrl-C, and when its parent is killed.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import sys
import time
import uuid

import httpx
import pexpect
import pytest

from support.bridge_process import BridgeProcess, echo_calls, worker_sockets
from support.bridge_rpc import Worker as Calls, answer, grpc_client, message, state, status_text
from support.terminal import spawn_in_terminal
from support.waiting import wait_until


TOKEN_X, TOKEN_Y = "worker-owner-x-9fQe2", "worker-owner-y-3Lm8v"
TASK_NOT_FOUND, TASK_NOT_CANCELABLE = -32001, -32002
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SQLite workers need Linux")


def workers(*args: str, call_log=None, state_dir=None, count: int = 2, **env: str) -> BridgeProcess:
    return BridgeProcess("--workers", str(count), "--heartbeat", "1", *args, call_log=call_log,
                         state_dir=state_dir, env={"OVOS_A2A_TOKENS": f"{TOKEN_X},{TOKEN_Y}", **env})


class Worker(Calls):
    """Calls to one chosen worker, as owner X unless told."""

    def __init__(self, bridge: BridgeProcess, number: int, token: str = TOKEN_X) -> None:
        super().__init__(bridge, number, token)


def process_ids(bridge: BridgeProcess) -> list[int]:
    """The workers' process ids from the banner, worker 1 first."""
    return bridge.worker_ids()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
        return stat.read().split(")")[-1].split()[0] != "Z"


def stored(state_dir, task_id: str) -> dict:
    """The task as the SQLite file holds it (the bridge stopped)."""
    from a2a.types import Task
    from google.protobuf.json_format import MessageToDict

    with sqlite3.connect(state_dir / "bridge.sqlite3") as db:
        row = db.execute("SELECT task FROM bridge_tasks WHERE id = ?", (task_id,)).fetchone()
    assert row is not None, f"task {task_id} is not stored"
    return MessageToDict(Task.FromString(row[0]))


@pytest.fixture(scope="module")
def call_log(tmp_path_factory):
    return tmp_path_factory.mktemp("workers") / "echo-calls.jsonl"


@pytest.fixture(scope="module")
def two_workers(call_log):
    """A bridge of two workers on one port and one SQLite file, owners X and Y, one call log."""
    with workers(call_log=call_log) as running:
        yield running


@pytest.fixture
def one_two(two_workers):
    one, two = Worker(two_workers, 1), Worker(two_workers, 2)
    yield one, two
    one.close()
    two.close()


def test_both_workers_serve_one_port_and_read_each_others_tasks(one_two):
    one, two = one_two
    context = uuid.uuid4().hex
    done = one.send(message("hello", context_id=context))
    assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: hello"
    assert answer(two.get(done["id"])) == "echo: hello"
    assert [t["id"] for t in two.task("ListTasks", {"contextId": context})["tasks"]] == [done["id"]]


def test_a_subscriber_on_one_worker_gets_the_live_events_of_a_task_running_on_the_other(one_two):
    one, two = one_two
    task = one.send(message("slow:0.4"), blocking=False)
    events = two.subscribe(task["id"])
    assert "error" not in events[0], events
    assert events[0]["task"]["id"] == task["id"], events[0]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert len(chunks) >= 2 and chunks[-1].get("lastChunk") is True, events
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events
    assert answer(two.get(task["id"])) == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


def test_a_cancel_on_one_worker_stops_the_turn_running_on_the_other(one_two):
    one, two = one_two
    task = one.send(message("slow:1"), blocking=False)
    wait_until(lambda: one.get(task["id"]), "the first sentence", until=lambda t: "Sentence 1." in answer(t))
    canceled = two.task("CancelTask", {"id": task["id"]})
    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    wait_until(one.running, "worker 1's turn to end", until=lambda running: running == 0)
    marker = one.send(message("marker"))  # worker 1 has answered a later message: what the turn left is written
    assert answer(marker) == "echo: marker", marker
    after = two.get(task["id"])
    assert state(after) == "TASK_STATE_CANCELED" and "Sentence 5." not in answer(after), after


def test_a_cancel_the_other_worker_cannot_honour_is_refused(call_log):
    with workers(call_log=call_log, OVOS_A2A_CANCEL_GRACE="0.3") as stubborn:
        one, two = Worker(stubborn, 1), Worker(stubborn, 2)
        try:
            task = one.send(message("sleep:2"), blocking=False)  # one step that cannot be interrupted
            one.wait_for_state(task["id"], "TASK_STATE_WORKING")
            error = two.error("CancelTask", {"id": task["id"]})
            assert error["code"] == TASK_NOT_CANCELABLE and "could not be stopped" in error["message"], error
            assert state(two.wait_for_state(task["id"], "TASK_STATE_COMPLETED")) == "TASK_STATE_COMPLETED"
        finally:
            one.close()
            two.close()


def test_a_message_delivered_again_to_the_other_worker_rejoins_the_first_delivery(one_two, call_log):
    one, two = one_two
    text = f"sleep:1 {uuid.uuid4().hex}"
    msg = message(text)
    first = one.send(msg, blocking=False)
    again = two.send(msg)
    assert again["id"] == first["id"] and state(again) == "TASK_STATE_COMPLETED", again
    assert answer(again) == f"echo: {text}"
    assert echo_calls(call_log, text) == 1


def test_a_task_waiting_for_input_on_one_worker_continues_on_the_other_and_back(one_two):
    """Back on worker 1 with its taskId alone: its context comes from the stored task."""
    one, two = one_two
    asked = one.send(message("ask:which colour?"))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
    follow = message("ask:and which size?", task_id=asked["id"], context_id=asked["contextId"])
    again = two.send(follow)
    assert again["id"] == asked["id"] and state(again) == "TASK_STATE_INPUT_REQUIRED", again
    last = one.send(message("blue, large", task_id=asked["id"]))  # A2A: the taskId alone is enough
    assert state(last) == "TASK_STATE_COMPLETED" and answer(last) == "echo: blue, large", last
    history = [p["text"] for m in two.get(asked["id"])["history"] for p in m["parts"] if m["role"] == "ROLE_USER"]
    assert history == ["ask:which colour?", "ask:and which size?", "blue, large"], history


@pytest.mark.parametrize("follow_up_on", [1, 2], ids=["follow-up-on-the-other-worker", "follow-up-on-the-same"])
def test_a_subscriber_to_a_task_waiting_for_input_sees_it_end_wherever_the_follow_up_lands(one_two, follow_up_on):
    import threading

    one, two = one_two
    asked = one.send(message("ask:which colour?"))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
    answerer = Worker(one.bridge, follow_up_on)
    try:
        follow_up = threading.Timer(0.8, lambda: answerer.send(
            message("slow:0.2", task_id=asked["id"], context_id=asked["contextId"])))
        follow_up.start()
        events = two.subscribe(asked["id"])  # returns once the stream ends
        follow_up.join()
    finally:
        answerer.close()
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", events
    assert sum("task" in e for e in events) == 1, events
    assert [e for e in events if "artifactUpdate" in e], events  # the follow-up's sentences, live
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events


def test_another_owner_finds_nothing_of_a_task_through_either_worker(two_workers):
    owner = Worker(two_workers, 1, TOKEN_X)
    strangers = [Worker(two_workers, n, TOKEN_Y) for n in (1, 2)]
    try:
        context = uuid.uuid4().hex
        task = owner.send(message("slow:0.5", context_id=context), blocking=False)
        for stranger in strangers:
            for method in ("GetTask", "CancelTask"):
                assert stranger.error(method, {"id": task["id"]})["code"] == TASK_NOT_FOUND
            assert stranger.subscribe(task["id"])[0]["error"]["code"] == TASK_NOT_FOUND
            assert stranger.task("ListTasks", {"contextId": context})["tasks"] == []
        assert state(owner.wait_for_state(task["id"], "TASK_STATE_COMPLETED"))
    finally:
        for caller in [owner, *strangers]:
            caller.close()


def test_a_worker_killed_with_9_is_started_again_and_its_task_failed(tmp_path):
    with workers(state_dir=tmp_path / "state") as running:
        one, two = Worker(running, 1), Worker(running, 2)
        try:
            doomed = process_ids(running)[0]
            task = one.send(message("sleep:60"), blocking=False)
            one.wait_for_state(task["id"], "TASK_STATE_WORKING")
            os.kill(doomed, signal.SIGKILL)
            failed = two.wait_for_state(task["id"], "TASK_STATE_FAILED", timeout=30)
            assert "interrupted by a restart" in status_text(failed).lower(), failed
            one.client = None  # its connection died with it
            assert state(one.send(message("again"))) == "TASK_STATE_COMPLETED"  # worker 1 serves again
            assert "worker 1 ended (signal SIGKILL); started it again" in running.stderr_text()
        finally:
            one.close()
            two.close()


def test_a_subscriber_sees_the_task_of_a_worker_killed_with_9_end_failed(tmp_path):
    import threading

    with workers(state_dir=tmp_path / "state") as running:
        one, two = Worker(running, 1), Worker(running, 2)
        try:
            task = one.send(message("sleep:60"), blocking=False)
            one.wait_for_state(task["id"], "TASK_STATE_WORKING")
            threading.Timer(1.0, os.kill, (process_ids(running)[0], signal.SIGKILL)).start()
            events = two.subscribe(task["id"])  # relayed from worker 1 until it dies, then followed
        finally:
            one.close()
            two.close()
    last = events[-1].get("task") or events[-1].get("statusUpdate")
    assert last is not None and last["status"]["state"] == "TASK_STATE_FAILED", events
    assert "interrupted by a restart" in status_text(last).lower(), last


def test_sigterm_stops_every_worker_and_fails_their_unfinished_work(tmp_path):
    state_dir = tmp_path / "state"
    running = workers(state_dir=state_dir, OVOS_A2A_SHUTDOWN_GRACE="1")
    pids = process_ids(running)
    one, two = Worker(running, 1), Worker(running, 2)
    try:
        tasks = [caller.send(message("sleep:60"), blocking=False) for caller in (one, two)]
        for caller, task in zip((one, two), tasks):
            caller.wait_for_state(task["id"], "TASK_STATE_WORKING")
    finally:
        one.close()
        two.close()
    began = time.monotonic()
    running.proc.send_signal(signal.SIGTERM)
    assert running.proc.wait(timeout=20) == 0, running.stderr_text()
    took = time.monotonic() - began
    running.stop()
    assert not any(alive(pid) for pid in pids)
    assert took < 10, f"stopping took {took:.1f} s"
    for task in tasks:
        assert "interrupted by a shutdown" in status_text(stored(state_dir, task["id"])).lower()


def test_kill_9_of_the_parent_ends_the_workers_and_a_restart_keeps_the_store(tmp_path):
    state_dir = tmp_path / "state"
    first = workers(state_dir=state_dir, OVOS_A2A_SHUTDOWN_GRACE="1")
    pids = process_ids(first)
    one = Worker(first, 1)
    try:
        done = one.send(message("kept"))
        task = one.send(message("sleep:60"), blocking=False)
        one.wait_for_state(task["id"], "TASK_STATE_WORKING")
    finally:
        one.close()
    first.kill9()
    wait_until(lambda: [pid for pid in pids if alive(pid)], "the orphaned workers to end", timeout=20,
               until=lambda left: not left)
    with workers(state_dir=state_dir) as second:
        again = Worker(second, 2)
        try:
            assert answer(again.get(done["id"])) == "echo: kept"
            assert state(again.get(task["id"])) == "TASK_STATE_FAILED"
        finally:
            again.close()


def test_ctrl_c_in_a_terminal_stops_every_worker(tmp_path):
    env = {**os.environ, "OVOS_A2A_SHUTDOWN_GRACE": "1"}
    child = spawn_in_terminal(sys.executable, ["-m", "ovos_a2a_solver.bridge", "--port", "0", "--backend", "echo",
                                               "--workers", "2", "--state-dir", str(tmp_path / "state")], env=env)
    try:
        child.expect(r"2 workers, process ids (\d+) (\d+)")
        pids = [int(child.match.group(1)), int(child.match.group(2))]
        child.expect("Ctrl-C to stop")
        child.sendintr()
        child.expect(pexpect.EOF, timeout=15)
        output = child.before
        child.close()
        status = child.exitstatus
    finally:
        child.close(force=True)
    assert status == 0, output
    assert "Traceback" not in output and "ERROR" not in output, output
    assert not any(alive(pid) for pid in pids)


def test_a_worker_that_cannot_start_stops_the_command_with_its_reason(tmp_path):
    with pytest.raises(Exception) as failed:
        BridgeProcess("--workers", "2", "--persona", str(tmp_path / "missing.json"), backend="persona")
    assert failed.value.returncode == 2, failed.value.stderr
    assert re.search(r"^ovos-a2a: worker \d: .*missing\.json", failed.value.stderr, re.M), failed.value.stderr


def test_grpc_answers_through_the_workers_shared_port():
    import asyncio

    from a2a.types import Message, Part, Role, SendMessageRequest

    async def ask(url: str, n: int) -> list[str]:
        answers = []
        for i in range(n):  # a client (a channel, a connection) each: the kernel picks the worker
            async with grpc_client(url) as client:
                msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=f"grpc {i}")])
                async for event in client.send_message(SendMessageRequest(message=msg)):
                    task = event.task
                answers.append("".join(p.text for a in task.artifacts for p in a.parts))
        return answers

    with BridgeProcess("--workers", "2", "--grpc-port", "0") as running:
        assert asyncio.run(ask(running.url, 6)) == [f"echo: grpc {i}" for i in range(6)]


def test_connections_are_spread_over_the_workers(two_workers):
    """Keep-alive connections opened at once: on one shared socket the first worker to wake
    would take them all."""
    import asyncio

    async def burst() -> list[int]:
        clients = [httpx.AsyncClient(timeout=30) for _ in range(16)]
        try:
            replies = await asyncio.gather(*(client.get(two_workers.root + "/health") for client in clients))
            return [reply.json()["worker"] for reply in replies]
        finally:
            await asyncio.gather(*(client.aclose() for client in clients))

    served = asyncio.run(burst())
    assert set(served) == {1, 2}, served
    assert min(served.count(1), served.count(2)) >= 2, served


def test_a_second_bridge_with_workers_cannot_take_the_same_port(two_workers):
    with pytest.raises(Exception) as refused:
        BridgeProcess("--workers", "2", port=two_workers.port)
    assert refused.value.returncode == 1, refused.value.stderr
    assert f"port {two_workers.port} on 127.0.0.1 is already in use" in refused.value.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to ask as another user")
def test_a_worker_answers_only_the_other_workers_of_its_bridge(two_workers):
    """The workers' sockets are in the abstract namespace, open to every local user: a
    request from another user is not answered (SO_PEERCRED), nor one from a process of the
    same user that is not a worker of the bridge. (The workers' own requests are answered:
    every cancel and subscription across workers above.)"""
    names = worker_sockets(two_workers)  # this bridge's: other bridges on the machine may come and go meanwhile
    assert names, "no worker socket found"
    request = b'{"kind":"cancel","task":"no-such-task","owner":"nobody"}\n'

    def heard_back(as_user: int | None) -> bytes:
        """What a process (of ``as_user``, else of this user) hears back on the socket."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the asking process: a socket, a request, whatever comes back
            try:
                os.close(read_end)
                if as_user is not None:
                    os.setuid(as_user)
                import socket
                asking = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                asking.settimeout(10)
                asking.connect("\0" + names[0])
                asking.sendall(request)
                os.write(write_end, b"heard:" + asking.recv(4096))
            except BaseException as exc:  # reported to the test, which fails on it
                os.write(write_end, f"failed:{exc!r}".encode())
            finally:
                os._exit(0)
        os.close(write_end)
        heard = b""
        while chunk := os.read(read_end, 4096):
            heard += chunk
        os.close(read_end)
        os.waitpid(pid, 0)
        return heard

    for as_user in (65534, None):
        refused = heard_back(as_user)  # connected, then hung up on: before or after the request was written
        assert refused == b"heard:" or refused.startswith((b"failed:BrokenPipeError",
                                                           b"failed:ConnectionResetError")), (as_user, refused)


FORGED = "forged by another user"


def forged_lines(task_id: str, context_id: str) -> dict[str, bytes]:
    """What a process squatting on a worker's socket name answers: a cancel done, and a
    subscription that ends ``completed`` with its own words."""
    import base64

    from a2a.types import Message, Part, Role, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent

    ended = StreamResponse(status_update=TaskStatusUpdateEvent(
        task_id=task_id, context_id=context_id, status=TaskStatus(
            state=TaskState.TASK_STATE_COMPLETED,
            message=Message(message_id="forged", role=Role.ROLE_AGENT, parts=[Part(text=FORGED)]))))
    event = base64.b64encode(ended.SerializeToString()).decode()
    return {"cancel": b'{"refusal":null}\n', "follow": json.dumps({"event": event}).encode() + b'\n{"end":true}\n'}


def squat(name: str, as_user: int, answers: dict[str, bytes]) -> tuple[int, int]:
    """Fork a process of ``as_user`` that binds the abstract socket ``name`` and answers every
    connection with ``answers[kind]`` for the request's kind; it reports ``bound`` and then
    each connection's kind on the pipe it returns (with its pid)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setuid(as_user)
            import socket
            listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listening.bind("\0" + name)
            listening.listen(8)
            os.write(write_end, b"bound\n")
            while True:
                connection, _ = listening.accept()
                with connection, connection.makefile("rb") as lines:
                    connection.settimeout(5)
                    try:
                        kind = json.loads(lines.readline() or b"{}").get("kind", "")
                    except (OSError, ValueError):
                        kind = ""
                    os.write(write_end, f"asked:{kind}\n".encode())
                    try:
                        connection.sendall(answers.get(kind, b""))
                    except OSError:
                        pass
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def read_report(pipe: int, timeout: float = 30) -> str:
    """One line the squatting process reported (a line at a time: it writes nothing more
    until it is asked again)."""
    import select

    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        readable, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
        assert readable, f"the squatting process reported nothing within {timeout:g} s (so far {line!r})"
        chunk = os.read(pipe, 1)
        assert chunk, f"the squatting process ended (so far {line!r})"
        line += chunk
    return line.decode().strip()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to listen as another user")
def test_a_worker_does_not_ask_a_process_of_another_user_holding_a_dead_workers_socket(tmp_path):
    """Worker 1 dies; before it is started again, a process of another user takes the name
    of its socket. Worker 2, asked to cancel worker 1's task or to relay its events, connects
    to that name, sees who holds it, and hangs up: the cancel is refused as not answered, and
    the subscriber gets no forged event; it sees the task fail once worker 1 is back."""
    import threading

    state_dir = tmp_path / "state"
    with workers(state_dir=state_dir) as running:
        one, two, follower = Worker(running, 1), Worker(running, 2), Worker(running, 2)
        supervisor, squatter, pipe = running.proc.pid, None, None
        try:
            task = one.send(message("sleep:60"), blocking=False)
            one.wait_for_state(task["id"], "TASK_STATE_WORKING")
            with sqlite3.connect(state_dir / "bridge.sqlite3") as db:
                (boot,) = db.execute("SELECT boot FROM a2a_bridge_operations WHERE task_id = ? AND state = 'running'",
                                     (task["id"],)).fetchone()
            name = f"ovos-a2a-bridge/{boot}"
            two.get(task["id"]), follower.get(task["id"])  # each keeps a connection to worker 2
            os.kill(supervisor, signal.SIGSTOP)  # worker 1 is not started again meanwhile
            os.kill(process_ids(running)[0], signal.SIGKILL)

            def holders() -> int:
                with open("/proc/net/unix") as table:
                    return sum(line.split()[-1] == "@" + name for line in table)
            wait_until(holders, "worker 1's socket to be gone", until=lambda count: count == 0)
            squatter, pipe = squat(name, 65534, forged_lines(task["id"], task["contextId"]))
            assert read_report(pipe) == "bound"

            error = two.error("CancelTask", {"id": task["id"]})
            assert error["code"] == TASK_NOT_CANCELABLE and "did not answer" in error["message"], error
            assert read_report(pipe) == "asked:"  # connected, and hung up on before anything was asked
            events = []
            subscriber = threading.Thread(target=lambda: events.extend(follower.subscribe(task["id"])))
            subscriber.start()
            assert read_report(pipe) == "asked:"
            os.kill(supervisor, signal.SIGCONT)  # worker 1 is started again, and fails the dead run's task
            subscriber.join(60)
            assert not subscriber.is_alive(), "the subscription did not end"
        finally:
            os.kill(supervisor, signal.SIGCONT)
            if squatter is not None:
                os.kill(squatter, signal.SIGKILL)
                os.waitpid(squatter, 0)
                os.close(pipe)
            for calls in (one, two, follower):
                calls.close()
        assert "did not ask the socket of worker" in running.stderr_text()
    assert FORGED not in json.dumps(events), events
    last = events[-1].get("task") or events[-1].get("statusUpdate")
    assert last is not None and last["status"]["state"] == "TASK_STATE_FAILED", events


def test_the_default_persona_remembers_a_conversation_across_workers():
    """Each worker loads its own persona; what one conversation said on one worker is known
    on the other (the persona's memory is kept on disk, and the newer copy wins)."""
    with BridgeProcess("--workers", "2", backend="persona", env={"OVOS_A2A_TOKENS": TOKEN_X}) as running:
        one, two = Worker(running, 1), Worker(running, 2)
        try:
            context = uuid.uuid4().hex
            met = one.send(message("my name is Ada", context_id=context))
            assert state(met) == "TASK_STATE_COMPLETED" and "Ada" in answer(met), met
            asked = two.send(message("what is my name?", context_id=context))
            assert answer(asked) == "Your name is Ada.", asked
            renamed = two.send(message("my name is Bo", context_id=context))
            assert "Bo" in answer(renamed), renamed
            back = one.send(message("what is my name?", context_id=context))
            assert answer(back) == "Your name is Bo.", back
            stranger = two.send(message("what is my name?"))  # another conversation
            assert "Ada" not in answer(stranger) and "Bo" not in answer(stranger), stranger
        finally:
            one.close()
            two.close()
