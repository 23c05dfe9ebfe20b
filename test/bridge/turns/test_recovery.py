"""Bridge: a backend that fails is tried again, and a backend that keeps failing gets a rest.

Echo backend commands: ``flaky:N`` fails the first N calls of a conversation, then answers;
``fail`` always fails; ``slow:N`` says five sentences.
"""
from __future__ import annotations

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import answer, get_task, health, message, rpc, send, state, status_text, task_of
from support.waiting import wait_until


def test_a_turn_that_fails_before_saying_anything_is_tried_again(tmp_path):
    log = tmp_path / "calls.jsonl"
    with InProcessBridge(call_log=str(log), env={"OVOS_A2A_BACKEND_RETRIES": "2"}) as bridge:
        done = task_of(send(bridge.url, message("flaky:2")))
        assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: flaky:2"
        assert bridge.calls() == 3  # two failures, then the answer
        failed = task_of(send(bridge.url, message("flaky:5")))
        assert state(failed) == "TASK_STATE_FAILED" and "fail 5 time(s); this was call 3" in status_text(failed)
        assert bridge.calls() == 6  # three tries, no more


def test_without_retries_the_first_failure_is_the_answer(tmp_path):
    log = tmp_path / "calls.jsonl"
    with InProcessBridge(call_log=str(log), env={"OVOS_A2A_BACKEND_RETRIES": "0"}) as bridge:
        failed = task_of(send(bridge.url, message("flaky:1")))
        assert state(failed) == "TASK_STATE_FAILED" and bridge.calls() == 1


def test_after_three_failed_turns_in_a_row_messages_fail_at_once_until_a_probe_succeeds(tmp_path):
    log = tmp_path / "calls.jsonl"
    env = {"OVOS_A2A_BACKEND_RETRIES": "0", "OVOS_A2A_BACKEND_COOL_DOWN": "2"}
    with InProcessBridge(call_log=str(log), env=env) as bridge:
        for _ in range(3):
            assert state(task_of(send(bridge.url, message("fail")))) == "TASK_STATE_FAILED"
        assert health(bridge)["backend"]["state"] == "open"
        calls = bridge.calls()
        resting = task_of(send(bridge.url, message("hello")))
        assert state(resting) == "TASK_STATE_FAILED" and "gets a rest" in status_text(resting)
        assert bridge.calls() == calls  # the backend was not called
        wait_until(lambda: health(bridge)["backend"]["state"] == "half-open", "the cool-down to pass")
        probe = task_of(send(bridge.url, message("hello")))
        assert state(probe) == "TASK_STATE_COMPLETED" and answer(probe) == "echo: hello"
        assert health(bridge)["backend"] == {"state": "closed", "failures_in_a_row": 0, "retry_in": 0.0}


def test_a_failed_probe_opens_the_circuit_again(tmp_path):
    env = {"OVOS_A2A_BACKEND_RETRIES": "0", "OVOS_A2A_BACKEND_COOL_DOWN": "1"}
    with InProcessBridge(env=env) as bridge:
        for _ in range(3):
            send(bridge.url, message("fail"))
        wait_until(lambda: health(bridge)["backend"]["state"] == "half-open", "the cool-down to pass")
        assert state(task_of(send(bridge.url, message("fail")))) == "TASK_STATE_FAILED"
        assert health(bridge)["backend"]["state"] == "open"


def test_a_turn_that_already_spoke_is_not_tried_again(tmp_path):
    """A retry would make the listener hear the beginning twice: a failure after the first
    sentence is the answer."""
    log = tmp_path / "calls.jsonl"
    with InProcessBridge(call_log=str(log), env={"OVOS_A2A_BACKEND_RETRIES": "2"}) as bridge:
        body = {"message": message("fail:after"), "configuration": {"returnImmediately": True}}
        task = rpc(bridge.url, "SendMessage", body)["result"]["task"]
        failed = wait_until(lambda: task_of(get_task(bridge.url, task["id"])), "the task to fail",
                            until=lambda t: state(t) == "TASK_STATE_FAILED")
        assert answer(failed) == "I started." and "after its first sentence" in status_text(failed)
        assert bridge.calls() == 1
