"""Bridge: tasks survive kill -9; interrupted work is reported honestly; long work; settings."""
import os

import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import answer, get_task, message, send, state, status_text, task_of, wait_for_state


def test_every_task_survives_kill_9_and_restart(tmp_path):
    state_dir = str(tmp_path / "state")
    with BridgeProcess(state_dir=state_dir) as first:
        tasks = [task_of(send(first.url, message(f"hello {n}"))) for n in range(5)]
        waiting = task_of(send(first.url, message("ask:which city?")))
        first.kill9()
    with InProcessBridge(state_dir=state_dir) as second:
        for task in tasks:
            again = task_of(get_task(second.url, task["id"]))
            assert state(again) == "TASK_STATE_COMPLETED" and answer(again) == answer(task)
        resumed = task_of(send(second.url, message("lisbon", task_id=waiting["id"], context_id=waiting["contextId"])))
        assert resumed["id"] == waiting["id"] and state(resumed) == "TASK_STATE_COMPLETED"
        assert answer(resumed).endswith("echo: lisbon")


def test_work_cut_short_by_a_crash_is_failed_on_restart_not_left_working(tmp_path):
    state_dir = str(tmp_path / "state")
    with BridgeProcess(state_dir=state_dir) as first:
        running = task_of(send(first.url, message("sleep:30"), blocking=False))
        wait_for_state(first.url, running["id"], "TASK_STATE_WORKING")
        first.kill9()
    with InProcessBridge(state_dir=state_dir) as second:
        task = task_of(get_task(second.url, running["id"]))
        assert state(task) == "TASK_STATE_FAILED"
        assert "interrupted by a restart" in status_text(task).lower()


def test_a_resend_after_restart_returns_the_stored_task_without_a_new_turn(tmp_path):
    state_dir, log = str(tmp_path / "state"), tmp_path / "calls.jsonl"
    msg = message("remember me")
    with BridgeProcess(state_dir=state_dir, call_log=str(log)) as first:
        original = task_of(send(first.url, msg))
        first.kill9()
    with InProcessBridge(state_dir=state_dir, call_log=str(log)) as second:
        again = task_of(send(second.url, msg))
    assert again["id"] == original["id"] and answer(again) == answer(original)
    assert len(log.read_text().splitlines()) == 1


def test_past_the_deadline_the_task_stays_working_then_takes_the_late_answer(tmp_path):
    with InProcessBridge("--deadline", "1", "--heartbeat", "5") as bridge:
        task = task_of(send(bridge.url, message("sleep:3")))
        assert state(task) == "TASK_STATE_WORKING"
        assert "outcome is unknown" in status_text(task)
        late = wait_for_state(bridge.url, task["id"], "TASK_STATE_COMPLETED")
        assert state(late) == "TASK_STATE_COMPLETED" and answer(late) == "echo: sleep:3"


def test_bad_environment_settings_are_clamped_and_logged_never_fatal(tmp_path):
    env = {"OVOS_A2A_HEARTBEAT": "often", "OVOS_A2A_MAX_CONCURRENT": "-3", "OVOS_A2A_DEADLINE": "0"}
    with BridgeProcess(env=env) as bridge:
        done = task_of(send(bridge.url, message("hello")))
        assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: hello"
        # the deadline took its clamped value, 1 s: not 0 (no time at all), not the default hour
        late = task_of(send(bridge.url, message("sleep:1.5")))
        assert state(late) == "TASK_STATE_WORKING" and "No answer within 1 s" in status_text(late)
        log = bridge.stderr_text()
    assert "OVOS_A2A_HEARTBEAT='often'" in log and "OVOS_A2A_DEADLINE='0'" in log, log
    assert "OVOS_A2A_MAX_CONCURRENT='-3'" in log, log


POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")


@pytest.mark.skipif(not POSTGRES and not os.environ.get("CI"), reason="set OVOS_A2A_TEST_POSTGRES to a database URL")
def test_postgresql_store_survives_restart_too():
    assert POSTGRES, "CI must provide OVOS_A2A_TEST_POSTGRES (see .ci/run)"
    with BridgeProcess("--db", POSTGRES, state_dir=None) as first:
        done = task_of(send(first.url, message("hello postgres")))
        first.kill9()
    with InProcessBridge("--db", POSTGRES, state_dir=None) as second:
        again = task_of(get_task(second.url, done["id"]))
        assert state(again) == "TASK_STATE_COMPLETED" and answer(again) == "echo: hello postgres"
