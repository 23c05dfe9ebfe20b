"""Bridge: a message delivered again is never worked on twice; supersession is fenced."""
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import answer, cancel, get_task, message, send, state, stream, task_of, wait_for_state


@pytest.fixture(scope="module")
def bridge_with_call_log(tmp_path_factory):
    """An echo bridge (1 s heartbeat) that logs every backend call (``calls(text)``)."""
    log = tmp_path_factory.mktemp("calls") / "calls.jsonl"
    with InProcessBridge("--heartbeat", "1", call_log=str(log)) as process:
        yield process


def event_task_id(event):
    if "task" in event:
        return event["task"]["id"]
    return (event.get("statusUpdate") or event.get("artifactUpdate"))["taskId"]


def unique(text):
    return f"{text} {uuid.uuid4().hex[:8]}"


def test_a_resent_finished_message_returns_the_saved_task(bridge_with_call_log):
    text = unique("hello")
    msg = message(text)
    first = task_of(send(bridge_with_call_log.url, msg))
    again = task_of(send(bridge_with_call_log.url, msg))
    assert again["id"] == first["id"] and state(again) == "TASK_STATE_COMPLETED"
    assert answer(again) == f"echo: {text}"
    assert bridge_with_call_log.calls(text) == 1


def test_twenty_concurrent_duplicates_make_one_turn_and_one_task(bridge_with_call_log):
    text = unique("sleep:1")
    msg = message(text)

    def deliver(n):
        if n % 3 == 0:
            events = stream(bridge_with_call_log.url, msg)
            final = events[-1]
            task_id = final.get("task", {}).get("id") or final.get("statusUpdate", {}).get("taskId")
            return task_id, events
        task = task_of(send(bridge_with_call_log.url, msg))
        return task["id"], state(task)

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(deliver, range(20)))
    task_ids = {task_id for task_id, _ in results}
    assert len(task_ids) == 1 and None not in task_ids
    blocking_states = {r for n, (_, r) in enumerate(results) if n % 3}
    assert blocking_states == {"TASK_STATE_COMPLETED"}
    assert bridge_with_call_log.calls(text) == 1
    assert state(task_of(get_task(bridge_with_call_log.url, task_ids.pop()))) == "TASK_STATE_COMPLETED"


def test_a_non_blocking_resend_while_running_returns_the_current_task(bridge_with_call_log):
    text = unique("sleep:2")
    msg = message(text)
    first = task_of(send(bridge_with_call_log.url, msg, blocking=False))
    again = task_of(send(bridge_with_call_log.url, msg, blocking=False))
    assert again["id"] == first["id"] and state(again) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    done = task_of(send(bridge_with_call_log.url, msg))  # blocking: attaches and waits for the same work
    assert done["id"] == first["id"] and state(done) == "TASK_STATE_COMPLETED"
    assert bridge_with_call_log.calls(text) == 1


def test_a_streaming_resend_attaches_to_the_running_work(bridge_with_call_log):
    text = unique("slow:0.3")
    msg = message(text)
    task = task_of(send(bridge_with_call_log.url, msg, blocking=False))
    events = stream(bridge_with_call_log.url, msg)
    final = events[-1]
    final_state = (final.get("statusUpdate") or final.get("task"))["status"]["state"]
    assert final_state == "TASK_STATE_COMPLETED"
    assert {event_task_id(e) for e in events} == {task["id"]}
    assert bridge_with_call_log.calls(text) == 1


@pytest.mark.parametrize("change", ["content", "context"])
def test_the_same_message_id_with_other_content_or_context_is_a_new_message(bridge_with_call_log, change):
    text = unique("hello")
    msg = message(text)
    first = task_of(send(bridge_with_call_log.url, msg))
    before = get_task(bridge_with_call_log.url, first["id"])["result"]
    altered = dict(msg)
    if change == "content":
        altered["parts"] = [{"text": text + " but different"}]
    else:
        altered["contextId"] = "some-other-context"
    second = task_of(send(bridge_with_call_log.url, altered))
    assert second["id"] != first["id"] and state(second) == "TASK_STATE_COMPLETED"
    assert answer(second) == "echo: " + (altered["parts"][0]["text"])
    assert get_task(bridge_with_call_log.url, first["id"])["result"] == before
    assert bridge_with_call_log.calls(text) == (1 if change == "content" else 2)
    again = task_of(send(bridge_with_call_log.url, altered))  # and its own identical retry rejoins it
    assert again["id"] == second["id"]
    assert bridge_with_call_log.calls(altered["parts"][0]["text"]) == (1 if change == "content" else 2)


@pytest.mark.parametrize("how", ["continued", "canceled"])
def test_a_message_sent_again_after_the_caller_continued_or_canceled_its_task_is_new_work(bridge_with_call_log, how):
    question = unique("ask:Which city?")
    first_message = message(question)
    first = task_of(send(bridge_with_call_log.url, first_message))
    assert state(first) == "TASK_STATE_INPUT_REQUIRED"
    # the answer may be unseen: a retry
    assert task_of(send(bridge_with_call_log.url, first_message))["id"] == first["id"]
    if how == "continued":
        reply = task_of(send(bridge_with_call_log.url,
                             message("Paris", task_id=first["id"], context_id=first["contextId"])))
        assert reply["id"] == first["id"] and state(reply) == "TASK_STATE_COMPLETED"
    else:
        assert state(task_of(cancel(bridge_with_call_log.url, first["id"]))) == "TASK_STATE_CANCELED"

    again = task_of(send(bridge_with_call_log.url, first_message))  # the caller saw the answer: this is a new message
    assert again["id"] != first["id"] and state(again) == "TASK_STATE_INPUT_REQUIRED"
    assert bridge_with_call_log.calls(question) == 2
    assert task_of(send(bridge_with_call_log.url, first_message))["id"] == again["id"]  # whose own retry rejoins it
    events = stream(bridge_with_call_log.url, first_message)
    assert {event_task_id(e) for e in events} == {again["id"]}
    assert bridge_with_call_log.calls(question) == 2
    earlier = task_of(get_task(bridge_with_call_log.url, first["id"]))
    if how == "continued":
        assert state(earlier) == "TASK_STATE_COMPLETED" and answer(earlier) == "echo: Paris"
    else:
        assert state(earlier) == "TASK_STATE_CANCELED"


def test_a_message_to_a_task_still_working_is_refused(bridge_with_call_log):
    running = task_of(send(bridge_with_call_log.url, message(unique("sleep:2")), blocking=False))
    response = send(bridge_with_call_log.url,
                    message("follow-up", task_id=running["id"], context_id=running["contextId"]))
    assert response["error"]["code"] == -32004 and "still working" in response["error"]["message"]
    new_task = task_of(send(bridge_with_call_log.url, message("wait", task_id="", context_id=running["contextId"])))
    assert state(new_task) == "TASK_STATE_COMPLETED"  # the same context still takes new tasks


def test_a_late_answer_of_an_older_message_never_touches_the_newer_task(bridge_with_call_log):
    text = unique("sleep:2")
    slow = task_of(send(bridge_with_call_log.url, message(text), blocking=False))
    quick = task_of(send(bridge_with_call_log.url, message("quick", context_id=slow["contextId"])))
    assert quick["id"] != slow["id"] and answer(quick) == "echo: quick"
    late = wait_for_state(bridge_with_call_log.url, slow["id"], "TASK_STATE_COMPLETED")
    assert answer(late) == f"echo: {text}"
    assert answer(task_of(get_task(bridge_with_call_log.url, quick["id"]))) == "echo: quick"


def test_a_message_to_a_finished_task_is_refused(bridge_with_call_log):
    done = task_of(send(bridge_with_call_log.url, message("hello")))
    response = send(bridge_with_call_log.url, message("more", task_id=done["id"], context_id=done["contextId"]))
    assert response["error"]["code"] == -32004
    after = task_of(get_task(bridge_with_call_log.url, done["id"]))
    assert state(after) == "TASK_STATE_COMPLETED" and answer(after) == "echo: hello"


def test_a_message_the_sdk_refuses_can_be_sent_again(bridge_with_call_log):
    msg = message("hello", task_id="no-such-task")
    assert send(bridge_with_call_log.url, msg)["error"]["code"] == -32001
    assert send(bridge_with_call_log.url, msg)["error"]["code"] == -32001  # the same answer, not a stuck replay
