"""Bridge: canceled means the persona really stopped; otherwise TaskNotCancelable, and work goes on."""
import time

import pytest

from bridge_process import BridgeProcess
from bridge_rpc import answer, cancel, get_task, message, send, state, task_of


@pytest.fixture(scope="module")
def bridge():
    with BridgeProcess("--heartbeat", "1") as process:
        yield process


def wait_for(url, task_id, predicate, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        task = task_of(get_task(url, task_id))
        if predicate(task) or time.monotonic() > deadline:
            return task
        time.sleep(0.05)


def test_cancel_stops_the_persona_between_sentences(bridge):
    task = task_of(send(bridge.url, message("slow:0.5"), blocking=False))
    wait_for(bridge.url, task["id"], lambda t: answer(t).startswith("Sentence 1."))
    canceled = task_of(cancel(bridge.url, task["id"]))
    assert state(canceled) == "TASK_STATE_CANCELED"
    said = answer(canceled)
    time.sleep(1.5)  # had the persona gone on, more sentences would have arrived by now
    after = task_of(get_task(bridge.url, task["id"]))
    assert state(after) == "TASK_STATE_CANCELED" and answer(after) == said and "Sentence 5." not in said


def test_a_step_that_cannot_stop_in_time_is_not_cancelable_and_goes_on(bridge):
    task = task_of(send(bridge.url, message("sleep:4"), blocking=False))
    wait_for(bridge.url, task["id"], lambda t: state(t) == "TASK_STATE_WORKING")
    response = cancel(bridge.url, task["id"])
    assert response["error"]["code"] == -32002
    assert "could not be stopped" in response["error"]["message"]
    done = wait_for(bridge.url, task["id"], lambda t: state(t) == "TASK_STATE_COMPLETED")
    assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: sleep:4"


def test_a_finished_task_is_not_cancelable_and_the_error_names_its_state(bridge):
    done = task_of(send(bridge.url, message("hello")))
    response = cancel(bridge.url, done["id"])
    assert response["error"]["code"] == -32002 and "completed" in response["error"]["message"]


def test_a_task_waiting_for_input_is_canceled(bridge):
    waiting = task_of(send(bridge.url, message("ask:which city?")))
    assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    assert state(task_of(cancel(bridge.url, waiting["id"]))) == "TASK_STATE_CANCELED"


def test_cancel_of_an_unknown_task_is_task_not_found(bridge):
    assert cancel(bridge.url, "no-such-task")["error"]["code"] == -32001
