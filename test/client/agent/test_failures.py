"""An agent that is down, slow, stalls, refuses, or ends a task without an answer."""
import time

import pytest
from a2a.client import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError

from ovos_a2a_solver import A2AClient, AgentTaskError, BreakerPolicy, CircuitOpenError, RetryPolicy

from support.network import free_port
from support.clock import ManualClock


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
    with A2AClient(agent.agent("guarded")) as client:  # no credentials, and the card does not ask: 401
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


def processed(agent):
    return agent.message_ids()["processed"].get("flaky", [])


@pytest.mark.parametrize("status", [503, 429, 502, 504])
def test_a_transient_failure_is_retried_with_the_same_message(agent, status):
    with A2AClient(agent.agent("flaky"), retries=RetryPolicy(retry_base_delay=0.05)) as client:
        client.send_task("warm up")
        before = processed(agent)
        agent.flaky(2, status)
        assert client.send_task("hello").endswith(": hello")
    ids = agent.message_ids()
    (message_id,) = ids["processed"]["flaky"][len(before):]  # one turn, processed once
    assert ids["refused"] == [message_id, message_id]


def test_retry_after_is_honoured(agent):
    with A2AClient(agent.agent("flaky"), retries=RetryPolicy(retry_base_delay=0.01)) as client:
        client.send_task("warm up")
        agent.flaky(1, 503, retry_after="1")
        started = time.monotonic()
        assert client.send_task("hello").endswith(": hello")
        assert time.monotonic() - started >= 1.0


def test_a_failure_that_is_not_transient_is_not_retried(agent):
    with A2AClient(agent.agent("flaky"), retries=RetryPolicy(retry_base_delay=0.01)) as client:
        client.send_task("warm up")
        before = len(processed(agent))
        agent.flaky(1, 500)
        with pytest.raises(A2AClientError, match="500"):
            client.send_task("hello")
        assert len(agent.message_ids()["refused"]) == 1 and len(processed(agent)) == before


def test_retries_never_pass_the_turns_deadline(agent):
    with A2AClient(agent.agent("flaky"), timeout=2) as client:
        client.send_task("warm up")
        agent.flaky(100, 503, retry_after="60")
        try:
            started = time.monotonic()
            with pytest.raises(A2AClientError, match="503"):
                client.send_task("hello")
            assert time.monotonic() - started < 2
            assert len(agent.message_ids()["refused"]) == 1  # a 60 s wait does not fit: no retry
        finally:
            agent.flaky(0)


def test_after_three_failed_turns_the_next_fails_at_once_then_one_probe_goes_through(agent, caplog):
    clock = ManualClock()
    with A2AClient(agent.agent("flaky"), retries=RetryPolicy(max_retries=0), breaker=BreakerPolicy(cooldown=30),
                   clock=clock) as client:
        client.send_task("warm up")
        before = len(processed(agent))
        agent.flaky(3, 503)
        for _ in range(3):
            with pytest.raises(A2AClientError, match="503"):
                client.send_task("hello")
        with caplog.at_level("WARNING", logger="ovos_a2a_solver"):
            with pytest.raises(CircuitOpenError, match="failed 3 turns in a row"):
                client.send_task("hello")
        assert len(agent.message_ids()["refused"]) == 3 and len(processed(agent)) == before  # not asked
        assert "circuit for" in caplog.text and "open after 3 failed turns" in caplog.text
        clock.advance(29)
        with pytest.raises(CircuitOpenError, match="not asking it again for 1 s"):  # still cooling down
            client.send_task("hello")
        clock.advance(1)
        assert client.send_task("probe").endswith(": probe")  # the one trial turn after the cool-down
        assert client.send_task("again").endswith(": again")  # closed again


@pytest.mark.parametrize("config, key", [
    ({"max_retries": -1}, "max_retries"),
    ({"max_retries": "two"}, "max_retries"),
    ({"retry_base_delay": 0}, "retry_base_delay"),
    ({"breaker_threshold": 0}, "breaker_threshold"),
    ({"breaker_cooldown": "soon"}, "breaker_cooldown"),
    ({"breaker_threshold": 2.5}, "breaker_threshold"),
    ({"timeout": True}, "timeout"),
    ({"namespace": 5}, "namespace"),
    ({"trusted_origins": 5}, "trusted_origins"),
])
def test_bad_retry_and_breaker_settings_name_the_key(config, key):
    from ovos_a2a_solver import A2AChatEngine

    with pytest.raises(ValueError, match=key):
        A2AChatEngine({"agent_url": "http://127.0.0.1:9/x", **config})


def test_numbers_written_as_text_are_read_as_numbers():
    from ovos_a2a_solver._settings import EngineSettings

    settings = EngineSettings.from_config({"agent_url": "http://127.0.0.1:9/x", "max_retries": "1",
                                           "breaker_threshold": 4.0, "timeout": "2.5"})
    assert (settings.retries.max_retries, settings.breaker.threshold, settings.timeout) == (1, 4, 2.5)


def test_the_engine_takes_its_retry_settings_from_the_persona(agent, tmp_path):
    from ovos_a2a_solver import A2AChatEngine
    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    engine = A2AChatEngine({"agent_url": agent.agent("flaky"), "max_retries": 0, "state_file": str(tmp_path / "c")})
    agent.flaky(1, 503)
    with pytest.raises(A2AClientError, match="503"):  # no retry
        engine.continue_chat([AgentMessage(role=MessageRole.USER, content="hi")])
