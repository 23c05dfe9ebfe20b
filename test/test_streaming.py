"""Streamed answers: chunks as they arrive, every answer shape said exactly once."""
import threading

import pytest
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine, A2AClient


def user(text):
    return [AgentMessage(role=MessageRole.USER, content=text)]


@pytest.mark.parametrize("name, expected", [
    ("stream-chunks", "Hello there. How are you today? Fine."),
    ("stream-cumulative", "The answer is 42."),
    ("stream-rewrite", "The answer is 42."),
    ("stream-multi", "First part.\nSecond part."),
    ("stream-snapshot", "snapshot answer"),
])
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_every_answer_shape_gives_the_text_once(agent, name, expected, streaming):
    with A2AClient(agent.agent(name), streaming=streaming) as client:
        assert client.send_task("go") == expected
        assert "".join(client.stream_task("go")) == expected


def test_chunks_arrive_as_the_agent_sends_them(agent):
    with A2AClient(agent.agent("stream-chunks"), streaming=True) as client:
        assert list(client.stream_task("go")) == ["Hello there. ", "How are ", "you today? ", "Fine."]


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_message_reply_is_the_answer(agent, streaming):
    with A2AClient(agent.agent("stream-message"), streaming=streaming) as client:
        answer = client.send_task("go", session_id="s")
        assert answer == f"message reply[{client.conversation('s').context_id}]"


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_status_messages_only_give_the_final_one(agent, streaming):
    with A2AClient(agent.agent("stream-status"), streaming=streaming) as client:
        answer = client.send_task("go", session_id="s")
        assert answer == f"status answer[{client.conversation('s').context_id}]"
        assert "thinking" not in answer


def test_a_continuation_stream_that_starts_with_an_artifact_is_understood(agent):
    # SDK issue #965: the follow-up of an input-required task streams no Task first
    with A2AClient(agent.agent("ask"), streaming=True) as client:
        assert "".join(client.stream_task("ask", session_id="s")) == "which city?"
        ctx = client.conversation("s").context_id
        assert "".join(client.stream_task("porto", session_id="s")) == f"continued[{ctx}]: porto"
        assert client.conversation("s").task_id is None


def test_stream_sentences_yields_a_sentence_before_the_next_exists(agent, tmp_path):
    engine = A2AChatEngine({"agent_url": agent.agent("stream-gated"), "streaming": True,
                            "state_file": str(tmp_path / "c.json")})
    sentences = engine.stream_sentences(user("go"), session_id="s")
    assert next(sentences) == "First sentence."  # the agent is still waiting to be released
    threading.Timer(0.05, agent.release).start()
    assert list(sentences) == ["Second sentence."]


def test_stream_sentences_splits_chunked_text_into_sentences(agent, tmp_path):
    engine = A2AChatEngine({"agent_url": agent.agent("stream-chunks"), "streaming": True,
                            "state_file": str(tmp_path / "c.json")})
    assert list(engine.stream_sentences(user("go"))) == ["Hello there.", "How are you today?", "Fine."]


def test_stream_tokens_without_streaming_is_the_whole_answer(agent, tmp_path):
    engine = A2AChatEngine({"agent_url": agent.agent("stream-chunks"), "state_file": str(tmp_path / "c.json")})
    assert list(engine.stream_tokens(user("go"))) == ["Hello there. How are you today? Fine."]


def test_leaving_a_stream_early_does_not_break_the_next_turn(agent):
    with A2AClient(agent.agent("stream-chunks"), streaming=True) as client:
        stream = client.stream_task("go")
        assert next(stream) == "Hello there. "
        stream.close()
        assert client.send_task("go") == "Hello there. How are you today? Fine."
