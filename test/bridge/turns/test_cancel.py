"""Bridge: canceled means the persona really stopped; otherwise TaskNotCancelable, and work goes on."""
import asyncio

import pytest

from ovos_a2a_solver.bridge.turns.turn import Turn, TurnRegistry

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import (answer, cancel, get_task, health, message, send, state, status_text, task_of, wait_for_state,
                        wait_for_task)
from support.waiting import wait_until

#: what ``slow:N`` says when nothing stops it
WHOLE_SLOW_ANSWER = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


@pytest.fixture(scope="module")
def fresh_echo_bridge():
    """An echo bridge (1 s heartbeat) of this module's own: no other module's turns run on it."""
    with InProcessBridge("--heartbeat", "1") as process:
        yield process


def no_turn_running(bridge):
    return wait_until(lambda: health(bridge)["running"], "no persona turn to be running on the bridge",
                      until=lambda running: running == 0)


def test_cancel_stops_the_persona_between_sentences(fresh_echo_bridge):
    no_turn_running(fresh_echo_bridge)  # so that "running" below counts only this test's turn
    task = task_of(send(fresh_echo_bridge.url, message("slow:0.5"), blocking=False))
    wait_for_task(fresh_echo_bridge.url, task["id"], lambda t: answer(t).startswith("Sentence 1."),
                  "to say its first sentence")
    canceled = task_of(cancel(fresh_echo_bridge.url, task["id"]))
    assert state(canceled) == "TASK_STATE_CANCELED"
    # canceled is answered only once the turn has ended: a persona still going would be counted here
    assert health(fresh_echo_bridge)["running"] == 0
    said = answer(canceled)
    assert said.startswith("Sentence 1.") and WHOLE_SLOW_ANSWER.startswith(said) and said != WHOLE_SLOW_ANSWER
    after = task_of(get_task(fresh_echo_bridge.url, task["id"]))
    assert state(after) == "TASK_STATE_CANCELED" and answer(after) == said
    assert "stopped before it finished" in status_text(after)


def test_a_step_that_cannot_stop_in_time_is_not_cancelable_and_goes_on(fresh_echo_bridge):
    task = task_of(send(fresh_echo_bridge.url, message("sleep:4"), blocking=False))
    wait_for_state(fresh_echo_bridge.url, task["id"], "TASK_STATE_WORKING")
    response = cancel(fresh_echo_bridge.url, task["id"])
    assert response["error"]["code"] == -32002
    assert "could not be stopped" in response["error"]["message"]
    # the step merely takes longer than the grace: it is not called one that cannot be interrupted
    assert "takes longer" in response["error"]["message"] and "cannot" not in response["error"]["message"]
    assert health(fresh_echo_bridge)["running"] >= 1  # the refused cancel left the turn running
    done = wait_for_state(fresh_echo_bridge.url, task["id"], "TASK_STATE_COMPLETED")
    assert answer(done) == "echo: sleep:4"


def test_a_finished_task_is_not_cancelable_and_the_error_names_its_state(fresh_echo_bridge):
    done = task_of(send(fresh_echo_bridge.url, message("hello")))
    response = cancel(fresh_echo_bridge.url, done["id"])
    assert response["error"]["code"] == -32002 and "completed" in response["error"]["message"]
    after = task_of(get_task(fresh_echo_bridge.url, done["id"]))
    assert state(after) == "TASK_STATE_COMPLETED" and answer(after) == "echo: hello"


def test_a_task_waiting_for_input_is_canceled(fresh_echo_bridge):
    waiting = task_of(send(fresh_echo_bridge.url, message("ask:which city?")))
    assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    assert state(task_of(cancel(fresh_echo_bridge.url, waiting["id"]))) == "TASK_STATE_CANCELED"
    assert state(task_of(get_task(fresh_echo_bridge.url, waiting["id"]))) == "TASK_STATE_CANCELED"


def test_cancel_of_an_unknown_task_is_task_not_found(fresh_echo_bridge):
    response = cancel(fresh_echo_bridge.url, "no-such-task")
    assert response["error"]["code"] == -32001 and "no-such-task" in response["error"]["message"]


def test_the_turn_registry_forgets_turns_that_ended_without_being_discarded():
    # their relays raised: nobody discards them; the registry must not keep them all
    async def scenario():
        loop = asyncio.get_running_loop()
        registry = TurnRegistry()
        abandoned = [Turn(lambda: iter(["said"]), loop).start() for _ in range(1000)]
        for number, turn in enumerate(abandoned):
            registry.add(f"abandoned-{number}", turn)
            await asyncio.wait_for(turn.ended.wait(), 10)
        running = Turn(lambda: iter(["more"]), loop)  # not started: it runs until it is
        registry.add("running", running)
        kept = sum(1 for number in range(1000) if registry.get(f"abandoned-{number}") is not None)
        return kept, len(registry), registry.get("running") is running

    kept, running_count, found = asyncio.run(scenario())
    assert kept <= TurnRegistry.SWEEP_FROM, f"{kept} of 1000 ended turns are still kept"
    assert running_count == 1 and found  # only the turn still running is counted, and it is kept
