# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A persona's engine warms up when it is built, so that its first answer is as quick as the
next ones: the A2A client is imported and the agent's card read on a thread of the engine's
own, which neither loading the persona nor its first turn waits for; a warm-up that failed is
done again by the first turn."""
import socket

from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine

from support.agent_process import AgentProcess
from support.waiting import wait_until


def user(text):
    return [AgentMessage(role=MessageRole.USER, content=text)]


def engine_for(url, tmp_path, **config):
    return A2AChatEngine({"agent_url": url, "state_file": str(tmp_path / "c.json"), "timeout": 10, **config})


def test_the_agents_card_is_read_before_anyone_speaks_and_not_again_by_the_first_turn(agent, tmp_path):
    before = agent.stats()["card_fetches"].get("echo", 0)
    engine = engine_for(agent.agent("echo"), tmp_path)
    try:
        wait_until(lambda: agent.stats()["card_fetches"].get("echo", 0) > before,
                   "the engine to read the agent's card before its first turn")
        assert engine.warmed_up.wait(15), "the warm-up did not end"
        read = agent.stats()["card_fetches"]["echo"]
        answer = engine.continue_chat(user("hello"), session_id="hall").content
        assert answer.startswith("echo[") and answer.endswith("]: hello"), answer
        assert agent.stats()["card_fetches"]["echo"] == read  # the first turn used the card read ahead
    finally:
        engine.shutdown()


def test_building_the_engine_does_not_wait_for_an_agent_that_does_not_answer(tmp_path):
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/a2a"
        engine = engine_for(url, tmp_path)
        try:
            assert not engine.warmed_up.is_set()  # built, while its warm-up still waits for the card
        finally:
            engine.shutdown()


def test_a_warm_up_that_failed_is_done_again_by_the_first_turn(tmp_path):
    with socket.socket() as probe:  # a port that nothing listens on, for now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = engine_for(f"http://127.0.0.1:{port}/echo", tmp_path, max_retries=0)
    try:
        assert engine.warmed_up.wait(30), "the warm-up did not end"
        assert engine.warm_up() is False  # the agent is not there: nothing was read
        with AgentProcess(port=port) as late:
            answer = engine.continue_chat(user("hello"), session_id="hall").content
            assert answer.startswith("echo[") and answer.endswith("]: hello"), answer
            assert late.stats()["card_fetches"]["echo"] == 1  # read by the first turn
    finally:
        engine.shutdown()
