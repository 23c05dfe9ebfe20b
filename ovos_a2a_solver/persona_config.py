# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Typed values from a persona's config block, for this package's OPM engines (the A2A
plugin and the RiveScript engine of the embedded persona): one wording of every "must be"
error, the conversation defaults both engines share, and which message of a chat they
answer (:func:`newest_user_text`). It depends on nothing, so every part of the package may
use it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the A2A plugin's id: its name in a persona's ``handlers`` and the key of its config block
PLUGIN_ID = "ovos-a2a-solver"
#: the words of a yes or no, in a persona's config and in the bridge's settings (any case)
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
#: the default of both engines' ``max_conversations``: conversations remembered, the least recently used go first
DEFAULT_MAX_CONVERSATIONS = 1000
#: the default of both engines' ``conversation_ttl``: seconds a conversation may sit idle before it is forgotten
DEFAULT_CONVERSATION_TTL = 86400.0


def positive_setting(key: str, value: Any, kind: type, plugin: str = PLUGIN_ID) -> float:
    """``value`` as a positive ``kind``; ``ValueError`` naming ``plugin`` and ``key`` otherwise."""
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{plugin}: {key!r} must be a number, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{plugin}: {key!r} must be positive, got {value!r}")
    return number


def yes_or_no(value: Any) -> bool | None:
    """``value`` as a bool: a bool as it is, a string of :data:`TRUE_WORDS` or
    :data:`FALSE_WORDS` (any case, spaces around it) as its meaning; ``None`` for anything else.
    The one reading of a yes or no: each caller says what an answer of ``None`` means."""
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    return None


def boolean_setting(key: str, value: Any, plugin: str = PLUGIN_ID) -> bool:
    """``value`` as a bool (true/false, yes/no, on/off, 1/0: :func:`yes_or_no`); ``ValueError`` otherwise."""
    meaning = yes_or_no(value)
    if meaning is None:
        raise ValueError(f"{plugin}: {key!r} must be true or false, got {value!r}")
    return meaning


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
