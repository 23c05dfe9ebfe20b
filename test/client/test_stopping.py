"""Stopping a turn: the stream ends, the agent's task is canceled (CancelTask), and an agent
that refuses is reported honestly. Also through the bridge, relaying to a slow agent."""
import signal
import threading

import pytest

from ovos_a2a_solver import A2AClient

from support.agent_process import AgentProcess
from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import answer, cancel, get_task, message, send, state, status_text, task_of, wait_for_task
from support.chat import chat_engine, user
from support.personas import relay_bridge, relay_persona
from support.waiting import wait_until


def cancels(agent, name):
    return agent.stats()["cancels"][name]


@pytest.fixture(scope="module")
def held_agent():
    """An agent server of this module's own for the ``stall-held`` agent: its /_admin/release lets
    go of the held turn of the test that sends it, and of no other module's."""
    with AgentProcess() as own:
        yield own


def test_a_stream_closed_early_cancels_the_agents_task(agent, tmp_path):
    engine = chat_engine(agent.agent("drip"), tmp_path)
    before = cancels(agent, "drip")
    updates = []
    sentences = engine.client.stream_sentences("go", session_id="s", on_update=updates.append)
    assert next(sentences) == "drop 0."
    sentences.close()
    wait_until(lambda: cancels(agent, "drip"), "the agent to receive a CancelTask", until=lambda n: n == before + 1)
    task_id = updates[-1].task_id
    task = wait_until(lambda: engine.client.get_task(task_id), "the agent's task to be canceled",
                      until=lambda t: t.status.state == 5)  # TASK_STATE_CANCELED
    assert task.id == task_id
    # the conversation goes on in the same context, with no open task
    assert engine.client.conversation("s").context_id == updates[-1].context_id
    assert engine.client.conversation("s").task_id is None


def test_stop_ends_the_turn_and_cancels_the_task(agent, tmp_path):
    engine = chat_engine(agent.agent("drip"), tmp_path)
    before = cancels(agent, "drip")
    stream = engine.stream_sentences(user("go"), session_id="s")
    assert next(stream) == "drop 0."
    stopped = []
    threading.Thread(target=lambda: stopped.append(engine.stop("s"))).start()
    rest = list(stream)  # ends soon after the stop, without an error
    assert len(rest) < 100
    wait_until(lambda: stopped, "stop() to return")
    assert stopped == [True]
    assert cancels(agent, "drip") == before + 1


def test_a_stop_before_the_agent_named_its_task_ends_the_turn_and_cancels_the_task_once_named(held_agent, tmp_path):
    """The agent has the message but has not said which task it is (``stall-held`` holds even its
    first event): a stop in that gap ends the turn at once, and the task is canceled as soon as
    the agent names it, not left working."""
    own = held_agent
    engine = chat_engine(own.agent("stall-held"), tmp_path)
    messages, canceled = own.stats()["messages"]["stall-held"], cancels(own, "stall-held")
    said, stopped = [], []
    turn = threading.Thread(target=lambda: said.extend(engine.stream_sentences(user("go"), session_id="s")))
    turn.start()
    wait_until(lambda: own.stats()["messages"]["stall-held"], "the agent to get the message",
               until=lambda n: n == messages + 1)
    threading.Thread(target=lambda: stopped.append(engine.stop("s"))).start()
    wait_until(lambda: not turn.is_alive(), "the stopped turn to end while the agent has not named its task")
    assert said == [] and cancels(own, "stall-held") == canceled
    own.release()  # the agent names its task now, and starts working on it
    wait_until(lambda: cancels(own, "stall-held"), "the agent to receive a CancelTask",
               until=lambda n: n == canceled + 1)
    wait_until(lambda: stopped, "stop() to return")
    assert stopped == [True]


def test_a_stop_before_the_agent_named_its_task_gives_up_on_an_agent_that_names_none(held_agent, tmp_path, caplog):
    """The agent keeps the message without a word: the stop waits for its task's name within a
    bound (``CANCEL_TIMEOUT``), then says it could not cancel, instead of waiting on."""
    own = held_agent  # never released here: its held turn is let go by itself 30 s later
    engine = chat_engine(own.agent("stall-held"), tmp_path)
    messages, canceled = own.stats()["messages"]["stall-held"], cancels(own, "stall-held")
    turn = threading.Thread(target=lambda: list(engine.stream_sentences(user("go"), session_id="s")))
    turn.start()
    wait_until(lambda: own.stats()["messages"]["stall-held"], "the agent to get the message",
               until=lambda n: n == messages + 1)
    stopped = []
    with caplog.at_level("ERROR", logger="ovos_a2a_solver"):
        threading.Thread(target=lambda: stopped.append(engine.stop("s"))).start()
        wait_until(lambda: not turn.is_alive(), "the stopped turn to end")
        wait_until(lambda: stopped, "stop() to give up on the agent that names no task")
    assert stopped == [False]
    assert any("named none" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert cancels(own, "stall-held") == canceled


def test_stop_with_nothing_running_is_true_and_asks_nothing(agent, tmp_path):
    engine = chat_engine(agent.agent("echo"), tmp_path)
    assert engine.stop() is True
    engine.continue_chat(user("hello"), session_id="s")
    before = cancels(agent, "echo")
    assert engine.stop("s") is True
    assert cancels(agent, "echo") == before


def test_an_agent_that_refuses_to_cancel_is_reported(agent, tmp_path, caplog):
    engine = chat_engine(agent.agent("stubborn"), tmp_path)
    stream = engine.stream_sentences(user("go"), session_id="s")
    assert next(stream) == "drop 0."
    stopped = []
    with caplog.at_level("ERROR", logger="ovos_a2a_solver"):
        threading.Thread(target=lambda: stopped.append(engine.stop())).start()
        list(stream)
        wait_until(lambda: stopped, "stop() to return")
    assert stopped == [False]
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "refused to cancel" in r.getMessage()]
    assert errors and "cannot be stopped halfway" in errors[0].getMessage()


def test_a_relay_persona_on_the_bridge_is_canceled_and_cancels_its_remote_task(agent, tmp_path, private_state):
    before = cancels(agent, "drip")
    with relay_bridge(tmp_path, agent.agent("drip"), timeout=60) as bridge:
        task = task_of(send(bridge.url, message("go"), blocking=False))
        wait_for_task(bridge.url, task["id"], lambda t: answer(t).startswith("drop 0."), "the relay's first sentence")
        canceled = task_of(cancel(bridge.url, task["id"]))
        assert state(canceled) == "TASK_STATE_CANCELED"
        wait_until(lambda: cancels(agent, "drip"), "the remote agent to receive a CancelTask",
                   until=lambda n: n == before + 1)


def test_a_relay_whose_agent_is_silent_is_canceled_at_once_and_cancels_its_remote_task(agent, tmp_path,
                                                                                         private_state):
    """The remote agent works without a word (``stall``): the bridge's cancel stops the relay in the
    middle of its step (the plugin cancels the remote task), instead of TaskNotCancelable."""
    before_messages, before_cancels = agent.stats()["messages"]["stall"], cancels(agent, "stall")
    with relay_bridge(tmp_path, agent.agent("stall"), timeout=60) as bridge:
        task = task_of(send(bridge.url, message("go"), blocking=False))
        wait_until(lambda: agent.stats()["messages"]["stall"], "the remote agent to get the message",
                   until=lambda n: n == before_messages + 1)
        canceled = task_of(cancel(bridge.url, task["id"]))
        assert state(canceled) == "TASK_STATE_CANCELED", canceled
        wait_until(lambda: cancels(agent, "stall"), "the remote agent to receive a CancelTask",
                   until=lambda n: n == before_cancels + 1)


def test_a_relay_persona_given_up_at_shutdown_cancels_its_remote_task(agent, tmp_path, private_state):
    """SIGTERM on a bridge whose persona relays to a silent agent: the bridge's task ends failed
    ("interrupted by a shutdown") and the remote task is canceled, not left running."""
    persona = relay_persona(tmp_path, agent.agent("stall"), timeout=60)
    state_dir = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(tmp_path / "bridge-xdg"), "OVOS_A2A_SHUTDOWN_GRACE": "1"}
    before_messages, before_cancels = agent.stats()["messages"]["stall"], cancels(agent, "stall")
    bridge = BridgeProcess("--persona", str(persona), backend="persona", state_dir=state_dir, env=env)
    try:
        task = task_of(send(bridge.url, message("go"), blocking=False))
        wait_until(lambda: agent.stats()["messages"]["stall"], "the remote agent to get the message",
                   until=lambda n: n == before_messages + 1)
        bridge.proc.send_signal(signal.SIGTERM)
        bridge.proc.wait(timeout=20)
    finally:
        bridge.stop()
    wait_until(lambda: cancels(agent, "stall"), "the remote agent to receive a CancelTask",
               until=lambda n: n == before_cancels + 1)
    with InProcessBridge("--persona", str(persona), backend="persona", state_dir=state_dir) as again:
        stored = task_of(get_task(again.url, task["id"]))
    assert state(stored) == "TASK_STATE_FAILED" and "interrupted by a shutdown" in status_text(stored).lower()
