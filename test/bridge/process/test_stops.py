"""Bridge: after any stop, no task is left ``submitted`` or ``working`` without a live owner.

SIGTERM (how systemd and containers stop a service) and Ctrl-C give running turns
``shutdown_grace`` seconds, then store what is still unfinished as ``failed``
("interrupted by a shutdown"), and exit quietly and promptly. ``kill -9`` leaves the work
to the next start, which fails it ("interrupted by a restart") -- also when the turn had
passed its deadline, and also when the restarted bridge has another replica name (a
recreated container) on its single-process SQLite store.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import httpx
import pexpect
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, echo_log
from support.bridge_rpc import answer, cancel, get_task, message, send, state, status_text, task_of
from support.postgres import POSTGRES_VAR, new_database
from support.terminal import spawn_in_terminal
from support.waiting import wait_until


QUIET = ("ERROR", "WARNING", "Traceback", "CRITICAL")


def noisy_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(word in line for word in QUIET)]


def start_working(bridge: BridgeProcess, text: str) -> dict:
    task = task_of(send(bridge.url, message(text), blocking=False))
    wait_until(lambda: httpx.get(bridge.root + "/health", timeout=10).json()["running"] == 1,
               f"the turn {text!r} to run")
    return task


def sigterm_and_wait(bridge: BridgeProcess, within: float) -> float:
    """SIGTERM; return how long the bridge took to exit; fail if it takes longer than ``within``."""
    started = time.monotonic()
    bridge.proc.send_signal(signal.SIGTERM)
    try:
        bridge.proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the bridge did not exit within {within:g} s of SIGTERM") from None
    return time.monotonic() - started


def operation_states(state_dir, task_id: str) -> list[str]:
    """The states of the operations (messages at work) of task ``task_id`` in the bridge's SQLite store."""
    with contextlib.closing(sqlite3.connect(state_dir / "bridge.sqlite3")) as db:
        return [row[0] for row in db.execute("SELECT state FROM a2a_bridge_operations WHERE task_id = ?", (task_id,))]


def stored_state(state_dir, task_id: str, db: str | None = None) -> dict:
    """The task as a fresh bridge on the same store (``state_dir``'s, or the database ``db``) reads it
    (served in this process: what was stored is read, the process that stored it is gone)."""
    with InProcessBridge(*(("--db", db) if db else ()), state_dir=state_dir) as again:
        return task_of(get_task(again.url, task_id))


def test_an_idle_bridge_stops_at_once_and_quietly(tmp_path):
    bridge = BridgeProcess(state_dir=tmp_path / "state")
    took = sigterm_and_wait(bridge, within=5)
    bridge.stop()
    assert took < 3, f"an idle bridge took {took:.1f} s to stop"
    assert noisy_lines(bridge.stderr_text()) == []


def test_sigterm_gives_up_unfinished_work_as_failed_and_exits_quietly(tmp_path):
    state_dir = tmp_path / "state"
    bridge = BridgeProcess("--heartbeat", "1", state_dir=state_dir, env={"OVOS_A2A_SHUTDOWN_GRACE": "1"})
    task = start_working(bridge, "sleep:30")
    took = sigterm_and_wait(bridge, within=12)
    bridge.stop()
    assert took < 8, f"the bridge took {took:.1f} s to stop with a 1 s grace"
    assert noisy_lines(bridge.stderr_text()) == [], bridge.stderr_text()
    stored = stored_state(state_dir, task["id"])
    assert state(stored) == "TASK_STATE_FAILED", stored
    assert "interrupted by a shutdown" in status_text(stored).lower()


def test_a_blocking_caller_gets_the_failed_task_when_the_bridge_shuts_down(tmp_path):
    bridge = BridgeProcess(state_dir=tmp_path / "state", env={"OVOS_A2A_SHUTDOWN_GRACE": "1"})
    result: dict = {}

    def wait_for_answer() -> None:
        result["response"] = send(bridge.url, message("sleep:30"))

    caller = threading.Thread(target=wait_for_answer)
    caller.start()
    wait_until(lambda: httpx.get(bridge.root + "/health", timeout=10).json()["running"] == 1, "the turn to run")
    sigterm_and_wait(bridge, within=12)
    caller.join(10)
    bridge.stop()
    assert not caller.is_alive()
    task = task_of(result["response"])
    assert state(task) == "TASK_STATE_FAILED" and "shutdown" in status_text(task).lower(), task


def test_a_turn_that_ends_within_the_grace_completes(tmp_path):
    state_dir = tmp_path / "state"
    bridge = BridgeProcess(state_dir=state_dir, env={"OVOS_A2A_SHUTDOWN_GRACE": "10"})
    task = start_working(bridge, "sleep:1.5")
    sigterm_and_wait(bridge, within=15)
    bridge.stop()
    stored = stored_state(state_dir, task["id"])
    assert state(stored) == "TASK_STATE_COMPLETED" and answer(stored) == "echo: sleep:1.5"
    assert noisy_lines(bridge.stderr_text()) == []


@pytest.mark.skipif(not os.environ.get(POSTGRES_VAR) and not os.environ.get("CI"),
                    reason=f"needs a PostgreSQL database ({POSTGRES_VAR})")
def test_a_turn_whose_end_is_saved_slowly_while_the_bridge_drains_still_completes_quietly():
    # the turn ends while another session locks its task's row, so its end is saved only when that
    # session lets go: the bridge must wait for the save before it tears down the a2a-sdk, or the
    # answer is lost, the task stays "working", and the SDK warns of lost events
    import asyncpg
    from sqlalchemy.engine import make_url

    with new_database(prefix="ovos_a2a_stops") as url:
        bridge = BridgeProcess("--db", url, env={"OVOS_A2A_SHUTDOWN_GRACE": "10"})
        began = time.monotonic()
        task = start_working(bridge, "sleep:1.5")

        async def hold_the_row_while_the_turn_ends() -> bool:
            other = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
            try:
                async with other.transaction():  # another writer: an operator's session, a migration
                    await other.execute("SELECT 1 FROM bridge_tasks WHERE id = $1 FOR UPDATE", task["id"])
                    bridge.proc.send_signal(signal.SIGTERM)
                    await asyncio.sleep(max(0.0, began + 2.5 - time.monotonic()))  # the turn ends (1.5 s)
                    return bridge.proc.poll() is None
            finally:
                await other.close()

        assert asyncio.run(hold_the_row_while_the_turn_ends()), "the bridge exited while its turn's end was unsaved"
        bridge.proc.wait(timeout=15)
        bridge.stop()
        assert noisy_lines(bridge.stderr_text()) == []
        stored = stored_state(None, task["id"], db=url)
        assert state(stored) == "TASK_STATE_COMPLETED" and answer(stored) == "echo: sleep:1.5", stored


def test_while_draining_new_messages_are_refused_and_health_says_so(tmp_path):
    bridge = BridgeProcess(state_dir=tmp_path / "state", env={"OVOS_A2A_SHUTDOWN_GRACE": "10"},
                           call_log=echo_log(tmp_path))
    try:
        task = start_working(bridge, "hold:drain")  # until the checks below are done
        with httpx.Client(timeout=10) as kept:  # a load balancer's probe keeps its connection
            assert kept.get(bridge.root + "/health").status_code == 200
            bridge.proc.send_signal(signal.SIGTERM)
            health = wait_until(lambda: kept.get(bridge.root + "/health"), "/health to report draining",
                                until=lambda r: r.status_code == 503)
            assert health.json()["accepting"] is False
            # the bridge serves for as long as its drain lasts (until the turn is let go), on kept
            # connections and new ones alike, well past the moment the server would have stopped listening before
            probed_until = time.monotonic() + 1.5
            while time.monotonic() < probed_until:
                for client in (kept, httpx):
                    probe = client.get(bridge.root + "/health", timeout=10)
                    assert probe.status_code == 503 and probe.json()["running"] == 1, probe.text
                time.sleep(0.1)
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("late")}}
            refused = httpx.post(bridge.url + "/", json=body, headers={"A2A-Version": "1.0"}, timeout=10)
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text  # retry later
            assert "shutting down" in refused.json()["error"]["message"], refused.text
            read = kept.post(bridge.url + "/", json={"jsonrpc": "2.0", "id": 2, "method": "GetTask",
                                                     "params": {"id": task["id"]}}, headers={"A2A-Version": "1.0"})
            assert read.json()["result"]["status"]["state"] == "TASK_STATE_WORKING", read.text
        (bridge.call_log.parent / "drain").touch()  # the turn ends
        bridge.proc.wait(timeout=20)  # the turn ends within the grace, and then the bridge
        assert bridge.proc.returncode == 0
        assert state(stored_state(tmp_path / "state", task["id"])) == "TASK_STATE_COMPLETED"
    finally:
        bridge.stop()


def test_ctrl_c_in_a_terminal_stops_the_bridge_like_sigterm(tmp_path):
    state_dir = tmp_path / "state"
    env = {**os.environ, "OVOS_A2A_SHUTDOWN_GRACE": "1"}
    child = spawn_in_terminal(sys.executable, ["-m", "ovos_a2a_solver.bridge", "--port", "0", "--backend", "echo",
                                               "--state-dir", str(state_dir)], env=env)
    try:
        child.expect(r'serving "[^"]*" at (?P<url>\S+) \(card')
        url = child.match.group("url").rstrip("/")
        task = task_of(send(url, message("sleep:30"), blocking=False))
        root = url.rsplit("/", 1)[0]
        wait_until(lambda: httpx.get(root + "/health", timeout=10).json()["running"] == 1, "the turn to run")
        child.sendintr()
        child.expect(pexpect.EOF, timeout=12)
        output = child.before
    finally:
        child.close(force=True)
    assert noisy_lines(output) == [], output
    stored = stored_state(state_dir, task["id"])
    assert state(stored) == "TASK_STATE_FAILED" and "interrupted by a shutdown" in status_text(stored).lower()


def test_kill_9_past_the_deadline_fails_the_task_on_restart(tmp_path):
    state_dir = tmp_path / "state"
    with BridgeProcess("--deadline", "1", "--heartbeat", "5", state_dir=state_dir) as first:
        task = task_of(send(first.url, message("sleep:20")))
        assert state(task) == "TASK_STATE_WORKING" and "outcome is unknown" in status_text(task)
        # finished operations are written in batches, in the order they finish: once a later
        # message's is written, one the deadline had finished would be written too
        marker = task_of(send(first.url, message("marker")))
        wait_until(lambda: operation_states(state_dir, marker["id"]), "the marker's finished operation to be written",
                   until=lambda states: states == ["done"])
        first.kill9()
    stored = stored_state(state_dir, task["id"])
    assert state(stored) == "TASK_STATE_FAILED" and "interrupted by a restart" in status_text(stored).lower()


def test_kill_9_then_a_restart_under_another_replica_name_fails_the_task(tmp_path):
    state_dir = tmp_path / "state"
    with BridgeProcess(state_dir=state_dir, env={"OVOS_A2A_REPLICA": "container-1"}) as first:
        task = start_working(first, "sleep:30")
        first.kill9()
    with InProcessBridge(state_dir=state_dir, env={"OVOS_A2A_REPLICA": "container-2"}) as second:
        stored = task_of(get_task(second.url, task["id"]))
        assert state(stored) == "TASK_STATE_FAILED" and "interrupted by a restart" in status_text(stored).lower()
        refused = cancel(second.url, task["id"])
        assert refused["error"]["code"] == -32002 and "failed" in refused["error"]["message"], refused


@pytest.mark.parametrize("stop", ["sigterm", "kill-9"])
def test_a_task_waiting_for_input_survives_any_stop_and_continues(tmp_path, stop):
    state_dir = tmp_path / "state"
    first = BridgeProcess(state_dir=state_dir)
    waiting = task_of(send(first.url, message("ask:which city?")))
    assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    first.stop() if stop == "sigterm" else first.kill9()
    with InProcessBridge(state_dir=state_dir) as second:
        assert state(task_of(get_task(second.url, waiting["id"]))) == "TASK_STATE_INPUT_REQUIRED"
        done = task_of(send(second.url, message("Lisbon", task_id=waiting["id"], context_id=waiting["contextId"])))
        assert state(done) == "TASK_STATE_COMPLETED" and answer(done).endswith("echo: Lisbon")


def test_a_follow_up_naming_only_its_task_continues_it_after_a_restart(tmp_path):
    """A2A lets a follow-up name its task without its contextId; the SDK generated a new
    context for it, and refused its own events, once the task was no longer in memory."""
    state_dir = tmp_path / "state"
    with InProcessBridge(state_dir=state_dir) as first:
        waiting = task_of(send(first.url, message("ask:which city?")))
    with InProcessBridge(state_dir=state_dir) as second:
        done = task_of(send(second.url, message("Porto", task_id=waiting["id"])))
    assert state(done) == "TASK_STATE_COMPLETED" and answer(done).endswith("echo: Porto"), done
    assert done["contextId"] == waiting["contextId"]
