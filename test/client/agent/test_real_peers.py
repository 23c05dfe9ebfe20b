"""What real peers send, read as they send it: each bend seen on the wire is built into the
scripted test agent (test/support/bent_wire.py), and the client reads it there.

* langgraph: A2A 0.3 events on an A2A 1.0 stream; langgraph-garbled: a stream no version reads;
* data-question: a question carried only in an "Interrupt" data artifact;
* fasta2a*: status timestamps without a zone, and a blocking send answered while the task is
  submitted.
"""
import pytest

from ovos_a2a_solver import A2AClient, StillWorkingError

from support.chat import chat_engine, user

CHUNKS = ["Hello there. ", "How are ", "you today? ", "Fine."]


class Calls:
    """The calls an agent gets from here on (its JSON-RPC methods, or HTTP+JSON paths)."""

    def __init__(self, agent, name):
        self.agent, self.name = agent, name
        self.seen = len(agent.calls())

    def new(self) -> list[str]:
        calls = self.agent.calls()
        fresh, self.seen = calls[self.seen:], len(calls)
        return [c["call"] for c in fresh if c["agent"] == self.name]


# ---- A2A 0.3 events on an A2A 1.0 stream (LangGraph) ------------------------------------------

def test_a_stream_of_03_events_on_a_10_stream_is_read_as_it_arrives(agent, tmp_path):
    calls = Calls(agent, "langgraph")
    with A2AClient(agent.agent("langgraph"), streaming=True) as client:
        assert list(client.stream_task("go", session_id="s")) == CHUNKS
        assert client.send_task("go") == "".join(CHUNKS)
    engine = chat_engine(agent.agent("langgraph"), tmp_path, streaming=True)
    assert list(engine.stream_sentences(user("go"), session_id="s")) == ["Hello there.", "How are you today?",
                                                                         "Fine."]
    assert calls.new() == ["SendStreamingMessage"] * 3  # read from the stream itself, nothing sent again


def test_a_stream_nobody_can_read_falls_back_to_a_blocking_send_and_later_turns_go_straight_there(agent, tmp_path):
    calls = Calls(agent, "langgraph-garbled")
    with A2AClient(agent.agent("langgraph-garbled"), streaming=True) as client:
        assert "".join(client.stream_task("go", session_id="s")) == "".join(CHUNKS)
        assert calls.new() == ["SendStreamingMessage", "SendMessage"]
        assert "".join(client.stream_task("again", session_id="s")) == "".join(CHUNKS)
        assert client.send_task("and again", session_id="s") == "".join(CHUNKS)
        assert calls.new() == ["SendMessage", "SendMessage"]
    engine = chat_engine(agent.agent("langgraph-garbled"), tmp_path, streaming=True)
    assert list(engine.stream_sentences(user("go"), session_id="s")) == ["Hello there.", "How are you today?",
                                                                         "Fine."]
    assert calls.new() == ["SendStreamingMessage", "SendMessage"]


# ---- a question carried only as data (a LangGraph interrupt) -----------------------------------

@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_question_carried_only_as_data_is_asked_as_the_question(agent, tmp_path, streaming):
    engine = chat_engine(agent.agent("data-question"), tmp_path, streaming=streaming)
    assert list(engine.stream_sentences(user("weather"), session_id="s")) == ["which city?"]
    assert engine.continue_chat(user("weather"), session_id="t").content == "which city?"
    with A2AClient(agent.agent("data-question"), streaming=streaming) as client:
        assert client.send_task("weather", session_id="s") == "which city?"
        assert "".join(client.stream_task("weather", session_id="u")) == "which city?"
        for session in "su":  # the reply that continues the task repeats the question: not said again
            context_id = client.conversation(session).context_id
            assert client.send_task("Porto", session_id=session) == f"continued[{context_id}]: Porto"


# ---- timestamps without a zone; a blocking send answered while submitted (fasta2a) --------------

FASTA2A = ["fasta2a", "fasta2a-rest", "fasta2a-v03", "fasta2a-stream", "fasta2a-stream-rest", "fasta2a-stream-v03"]


@pytest.mark.parametrize("name", FASTA2A)
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_timestamps_without_a_zone_and_an_early_blocking_answer_still_give_the_answer(agent, name, streaming):
    calls = Calls(agent, name)
    with A2AClient(agent.agent(name), streaming=streaming) as client:
        answer = client.send_task("hi", session_id="s")
        assert answer == f"echo[{client.conversation('s').context_id}]: hi"
    sent = [c for c in calls.new() if c in ("SendMessage", "SendStreamingMessage", "message/send", "message/stream")
            or c.endswith(("message:send", "message:stream"))]
    assert len(sent) == 1, sent  # the task was followed, the message never sent again


@pytest.mark.parametrize("name", ["fasta2a-stream", "fasta2a-stream-rest", "fasta2a-stream-v03"])
def test_streamed_events_with_timestamps_without_a_zone_are_spoken(agent, tmp_path, name):
    engine = chat_engine(agent.agent(name), tmp_path, streaming=True)
    said = list(engine.stream_sentences(user("hi"), session_id="s"))
    assert len(said) == 1 and said[0].startswith("echo[") and said[0].endswith("]: hi"), said


def test_a_blocking_answer_while_submitted_is_followed_with_get_task_where_no_stream_is_offered(agent):
    calls = Calls(agent, "fasta2a")
    with A2AClient(agent.agent("fasta2a")) as client:
        assert client.send_task("hi").endswith("]: hi")
    made = calls.new()
    assert made[0] == "SendMessage" and set(made[1:]) == {"GetTask"} and len(made) >= 2, made


def test_a_blocking_answer_while_submitted_is_followed_by_subscribing_where_streams_are_offered(agent):
    calls = Calls(agent, "fasta2a-stream")
    with A2AClient(agent.agent("fasta2a-stream")) as client:
        assert client.send_task("hi").endswith("]: hi")
    assert calls.new() == ["SendMessage", "SubscribeToTask"]


def test_a_task_followed_past_the_turns_deadline_is_still_working_and_its_answer_comes_later(agent):
    # the task is named at once and works until the turn ended (held: released below): the deadline
    # of 3 s passes while it works (one of 0.25 s could pass before a busy machine had delivered the
    # message: "no answer", not this)
    held = agent.held_work()
    with A2AClient(agent.agent("fasta2a"), timeout=3) as client:
        with pytest.raises(StillWorkingError) as caught:
            client.send_task(held.text, session_id="s")
        assert caught.value.task_id
        held.release()
        assert client.answer_when_ready("s", caught.value.task_id, within=15).endswith(f"]: {held.text}")
