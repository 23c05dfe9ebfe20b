"""A task that outlives its turn: the persona says so in one line, the task stays bound to
the session, and the session's next utterance first delivers the finished answer."""
import pytest
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine, StillWorkingError
from ovos_a2a_solver._settings import DEFAULT_STILL_WORKING
from waiting import wait_until

LINE = "Still on it; I will tell you later."


def user(text):
    return [AgentMessage(role=MessageRole.USER, content=text)]


def engine_for(agent, name, tmp_path, **config):
    return A2AChatEngine({"agent_url": agent.agent(name), "state_file": str(tmp_path / "c.json"), "timeout": 1,
                          "streaming": True, **config})


def settled(engine, task_id, state):
    return wait_until(lambda: engine.client.get_task(task_id), f"task {task_id} to be {state}",
                      until=lambda t: t.status.state == state)


def test_a_task_past_the_deadline_is_announced_in_one_line_and_answered_before_the_next(agent, tmp_path):
    engine = engine_for(agent, "echo", tmp_path, still_working=LINE)
    spoken = list(engine.stream_sentences(user("sleep:2"), session_id="s"))
    assert spoken == [LINE]
    pending = engine.client.conversation("s").pending_task_id
    assert pending
    settled(engine, pending, 3)  # TASK_STATE_COMPLETED: the agent was not told to stop
    context = engine.client.conversation("s").context_id

    spoken = list(engine.stream_sentences(user("hello"), session_id="s"))
    assert spoken == [f"echo[{context}]: sleep:2", f"echo[{context}]: hello"]
    assert engine.client.conversation("s").pending_task_id is None
    assert list(engine.stream_sentences(user("again"), session_id="s")) == [f"echo[{context}]: again"]


@pytest.mark.parametrize("way", ["continue_chat", "stream_tokens"])
def test_every_way_of_asking_says_the_line_and_delivers_the_answer_later(agent, tmp_path, way):
    engine = engine_for(agent, "echo", tmp_path)

    def ask(text):
        if way == "continue_chat":
            return engine.continue_chat(user(text), session_id="s").content
        return "".join(engine.stream_tokens(user(text), session_id="s"))

    assert ask("sleep:2") == DEFAULT_STILL_WORKING
    settled(engine, engine.client.conversation("s").pending_task_id, 3)
    context = engine.client.conversation("s").context_id
    assert ask("hello") == f"echo[{context}]: sleep:2\necho[{context}]: hello"


def test_a_task_still_working_at_the_next_utterance_stays_bound(agent, tmp_path):
    engine = engine_for(agent, "echo", tmp_path)
    with pytest.raises(StillWorkingError) as caught:
        engine.client.send_task("sleep:3", session_id="s")
    task_id = caught.value.task_id
    context = engine.client.conversation("s").context_id
    assert engine.client.send_task("quick", session_id="s") == f"echo[{context}]: quick"
    assert engine.client.conversation("s").pending_task_id == task_id  # not ready yet: still bound
    settled(engine, task_id, 3)
    assert engine.client.send_task("later", session_id="s") == f"echo[{context}]: sleep:3\necho[{context}]: later"


def test_a_task_that_then_asks_a_question_says_it_and_takes_the_answer(agent, tmp_path):
    engine = engine_for(agent, "ask", tmp_path)
    assert engine.continue_chat(user("sleep:2"), session_id="s").content == DEFAULT_STILL_WORKING
    task_id = engine.client.conversation("s").pending_task_id
    settled(engine, task_id, 6)  # TASK_STATE_INPUT_REQUIRED
    context = engine.client.conversation("s").context_id
    assert engine.continue_chat(user("anything new?"), session_id="s").content == "which city?"
    assert engine.client.conversation("s").task_id == task_id
    assert engine.continue_chat(user("Paris"), session_id="s").content == f"continued[{context}]: Paris"


def test_a_task_the_agent_lost_is_let_go(agent, tmp_path):
    engine = engine_for(agent, "echo", tmp_path)
    with pytest.raises(StillWorkingError):
        engine.client.send_task("sleep:2", session_id="s")
    agent.forget()  # the agent restarted without its tasks
    context = engine.client.conversation("s").context_id
    assert engine.client.send_task("hello", session_id="s").endswith(": hello")
    assert engine.client.conversation("s").pending_task_id is None


@pytest.mark.parametrize("way", ["stream_sentences", "stream_task", "send_task"])
def test_a_stream_that_breaks_mid_answer_is_resumed_not_failed(agent, tmp_path, way):
    engine = A2AChatEngine({"agent_url": agent.agent("cut"), "state_file": str(tmp_path / "c.json"),
                            "timeout": 10, "streaming": True})
    client = engine.client
    before = agent.stats()["messages"]["cut"]
    if way == "stream_sentences":
        assert list(client.stream_sentences("go", session_id="s")) == ["First part.", "Second part.", "Third part."]
    elif way == "stream_task":
        assert "".join(client.stream_task("go", session_id="s")) == "First part. Second part. Third part."
    else:
        assert client.send_task("go", session_id="s") == "First part. Second part. Third part."
    assert agent.stats()["messages"]["cut"] == before + 1  # followed, not sent again
