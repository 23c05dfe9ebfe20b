"""An agent that is down, slow, stalls, refuses, or ends a task without an answer."""
import pytest
from a2a.client import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError

from agent_process import free_port
from ovos_a2a_solver import A2AClient, AgentTaskError


@pytest.mark.parametrize("name, state, reason", [
    ("fail", "failed", "the backend exploded"),
    ("reject", "rejected", "I will not do that"),
    ("cancelled", "canceled", "stopped by the agent"),
])
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_task_ended_without_answer_raises_with_the_agents_reason(agent, name, state, reason, streaming):
    with A2AClient(agent.agent(name), streaming=streaming) as client:
        with pytest.raises(AgentTaskError) as info:
            client.send_task("do it", session_id="s")
        assert info.value.state == state and info.value.reason == reason
        assert reason in str(info.value)
        assert client.conversation("s").context_id == info.value.context_id  # the conversation is kept


def test_a_slow_agent_times_out_within_the_deadline_and_keeps_the_conversation(agent):
    with A2AClient(agent.agent("echo"), timeout=1) as client:
        first = client.send_task("hello", session_id="s")
        with pytest.raises(A2AClientTimeoutError):
            client.send_task("sleep:5", session_id="s")
        assert client.send_task("again", session_id="s").startswith(first[:first.index("]") + 1])


def test_the_deadline_covers_a_whole_stream_not_each_read(agent):
    # 'drip' sends a chunk every 0.2 s for a minute: a per-read timeout would never fire
    with A2AClient(agent.agent("drip"), timeout=1.5, streaming=True) as client:
        pieces = []
        with pytest.raises(A2AClientTimeoutError):
            for piece in client.stream_task("go", session_id="s"):
                pieces.append(piece)
    # chunks did arrive, in order, until the deadline (1.5 s at one per 0.2 s: never the minute's 300)
    assert pieces and pieces == [f"drop {n}. " for n in range(len(pieces))], pieces
    assert len(pieces) <= 1.5 / 0.2 + 1, pieces


def test_a_stalled_stream_times_out(agent):
    with A2AClient(agent.agent("stall"), timeout=1, streaming=True) as client:
        with pytest.raises(A2AClientTimeoutError):
            list(client.stream_task("go"))


def test_nothing_listening_is_a_card_resolution_error():
    with A2AClient(f"http://127.0.0.1:{free_port()}", timeout=3) as client:
        with pytest.raises(AgentCardResolutionError):
            client.send_task("hello")


def test_http_errors_are_a2a_client_errors(agent):
    with A2AClient(agent.agent("secure")) as client:  # no credentials: 401
        with pytest.raises(A2AClientError) as info:
            client.send_task("hello")
    assert "401" in str(info.value)


def test_a_closed_client_says_so(agent):
    client = A2AClient(agent.agent("echo"))
    client.close()
    client.close()  # idempotent
    with pytest.raises(A2AClientError, match="this A2AClient is closed"):
        client.send_task("hello")


@pytest.mark.parametrize("kwargs, says", [
    ({"base_url": "not a url"}, "agent URL must be an http(s) URL: 'not a url'"),
    ({"base_url": "ftp://x/"}, "agent URL must be an http(s) URL: 'ftp://x/'"),
    ({"base_url": "http://x/", "timeout": 0}, "timeout must be a positive number of seconds"),
])
def test_bad_arguments_are_clear_errors(kwargs, says):
    with pytest.raises(ValueError) as info:
        A2AClient(**kwargs)
    assert str(info.value) == says


def test_empty_text_is_refused_before_anything_is_sent(agent):
    before = agent.stats()
    with A2AClient(agent.agent("echo")) as client:
        with pytest.raises(ValueError, match="text must be a non-empty string"):
            client.send_task("   ")
    after = agent.stats()
    assert after["card_fetches"]["echo"] == before["card_fetches"]["echo"]  # not even the card
    assert after["messages"]["echo"] == before["messages"]["echo"]
