# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What this package's OPM engines (the A2A plugin and the RiveScript engine of the
embedded persona) share of a persona's config: the conversation defaults, where the agent's
URL is, and which message of a chat they answer (:func:`newest_user_text`). A shared leaf
module: every part of the package may use it. (How a setting is declared and read is
:mod:`~ovos_a2a_solver.setting_specs`.)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the A2A plugin's id: its name in a persona's ``handlers`` and the key of its config block
PLUGIN_ID = "ovos-a2a-solver"
#: the default of both engines' ``max_conversations``: conversations remembered, the least recently used go first
DEFAULT_MAX_CONVERSATIONS = 1000
#: the default of both engines' ``conversation_ttl``: seconds a conversation may sit idle before it is forgotten
DEFAULT_CONVERSATION_TTL = 86400.0


def agent_url_of(block: Any) -> Any:
    """The agent URL of the A2A plugin's config ``block``: ``agent_url``, or ``url`` as
    ovos-persona-server's README and older docs write it (unchecked: see the plugin's settings)."""
    if not isinstance(block, Mapping):
        return None
    return block.get("agent_url") or block.get("url")


def newest_user_text(messages: Sequence[Any] | None) -> str | None:
    """The text of the newest user message of an OPM chat (``AgentMessage`` objects), the one
    an engine answers (the agent, or the engine, keeps the earlier turns itself).

    ``None`` when no user message with words follows the last assistant message: the last
    question was answered already (or none was asked), so there is nothing to answer."""
    for message in reversed(messages or []):
        if message.role == "assistant":  # OPM's MessageRole is a str enum
            return None
        if message.role == "user" and (message.content or "").strip():
            return message.content
    return None
