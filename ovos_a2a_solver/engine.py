# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``A2AChatEngine``: the OPM ChatEngine (plugin id ``ovos-a2a-solver``) that answers
through a remote A2A agent.

OPM imports every plugin module whenever a persona is built, so this module imports
nothing heavy: the a2a-sdk, httpx and gRPC load on the first utterance.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ovos_plugin_manager.templates.agents import AgentMessage, ChatEngine, MessageRole

from ovos_a2a_solver._settings import EngineSettings

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.client import A2AClient


def newest_user_text(messages: List[AgentMessage]) -> Optional[str]:
    """The newest user message: the only one sent (the agent keeps the earlier turns).

    ``None`` when no user message follows the last assistant message: the last question
    was answered already, so there is nothing to send.
    """
    for message in reversed(messages or []):
        if message.role == MessageRole.ASSISTANT:
            return None
        if message.role == MessageRole.USER and (message.content or "").strip():
            return message.content
    return None


class A2AChatEngine(ChatEngine):
    """An OVOS ChatEngine whose answers come from a remote A2A agent.

    Config (the persona's ``"ovos-a2a-solver"`` block) is described by
    :class:`~ovos_a2a_solver._settings.EngineSettings`. Construction validates it and
    does no network I/O.
    """

    def __init__(self, config: Optional[Dict[str, Any]] = None):
        super().__init__(config)
        self.settings = EngineSettings.from_config(self.config)
        self._client: Optional["A2AClient"] = None
        self._lock = threading.Lock()

    @property
    def client(self) -> "A2AClient":
        """The A2A client, built on first use."""
        with self._lock:
            if self._client is None:
                from ovos_a2a_solver.client import A2AClient
                from ovos_a2a_solver._conversations import ConversationStore, default_state_path

                s = self.settings
                path = (s.state_file or default_state_path()) if s.persist_conversations else None
                store = ConversationStore(path, max_conversations=s.max_conversations, idle_ttl=s.conversation_ttl)
                self._client = A2AClient(s.agent_url, auth_header=s.auth_header, timeout=s.timeout,
                                         streaming=s.streaming, credentials=s.credentials,
                                         trusted_origins=s.trusted_origins,
                                         conversations=store, namespace=s.namespace,
                                         max_retries=s.max_retries, retry_base_delay=s.retry_base_delay,
                                         breaker_threshold=s.breaker_threshold,
                                         breaker_cooldown=s.breaker_cooldown)
            return self._client

    def continue_chat(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None,
                      tools: Any = None) -> AgentMessage:
        """Send the newest user message in ``session_id``'s remote conversation; return the answer.

        With no user message after the last assistant message the answer is empty, and the
        agent is not called.
        """
        text = newest_user_text(messages)
        answer = self.client.send_task(text, session_id=session_id, lang=lang) if text is not None else ""
        return AgentMessage(role=MessageRole.ASSISTANT, content=answer)

    def stream_tokens(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None) -> Iterable[str]:
        """Yield the answer's text as the agent sends it (streamed whenever its card offers it)."""
        text = newest_user_text(messages)
        if text is not None:
            yield from self.client.stream_task(text, session_id=session_id, lang=lang)

    def stream_sentences(self, messages: List[AgentMessage], session_id: str = "default",
                         lang: Optional[str] = None, units: Optional[str] = None) -> Iterator[str]:
        """Yield each sentence (or line) of the answer as soon as it is complete (for TTS).

        Only whole sentences: a part the agent rewrote differently is said again from the
        first sentence that changed.
        """
        text = newest_user_text(messages)
        if text is not None:
            yield from self.client.stream_sentences(text, session_id=session_id, lang=lang)

    def stop(self, session_id: Optional[str] = None) -> bool:
        """Stop the turns under way (of ``session_id``, or all): their streams end and the
        agent's tasks are canceled (CancelTask). Closing a stream early does the same.

        True when every such task was canceled (or none was running); False when the agent
        refused (logged as an error with its reason: the agent may still be working).
        """
        client = self._client
        return client.stop(session_id) if client is not None else True

    def has_open_task(self, session_id: str) -> bool:
        """Whether the agent waits for this session's user (input-required / auth-required)."""
        if self._client is None:
            return False
        conversation = self._client.conversation(session_id)
        return bool(conversation and conversation.task_id)

    def shutdown(self) -> None:
        """Close the connection to the agent."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
