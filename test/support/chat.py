# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's chat engine as a persona uses it, for tests:

    engine = chat_engine(agent.agent("echo"), tmp_path, streaming=True)
    engine.continue_chat(user("hello"), session_id="s")
"""
from __future__ import annotations

from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine


def chat_engine(agent_url: str, tmp_path, **settings) -> A2AChatEngine:
    """The plugin's chat engine for the agent at ``agent_url``, its state file in ``tmp_path``;
    ``settings`` add to its configuration."""
    return A2AChatEngine({"agent_url": agent_url, "state_file": str(tmp_path / "c.json"), **settings})


def from_user(text: str) -> AgentMessage:
    """One message the user said."""
    return AgentMessage(role=MessageRole.USER, content=text)


def user(text: str) -> list[AgentMessage]:
    """A chat of one message the user said: what a persona hands the engine for a new question."""
    return [from_user(text)]


def context_of(answer: str) -> str:
    """The context id the echo agent names between brackets in its ``answer``."""
    return answer[answer.index("[") + 1:answer.index("]")]
