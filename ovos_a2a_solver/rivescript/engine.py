# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``RiveScriptChatEngine``: the OPM ChatEngine (plugin id ``ovos-a2a-rivescript``) behind
the embedded offline persona (the bridge's default persona, and any persona that names it).

It answers from a RiveScript brain (by default the small-talk brain shipped in
``brain/``) as RiveScript user = the ``session_id`` it is given, so each
conversation has its own memory: a name told in one conversation is unknown in another.
With a ``persona`` setting (the bridge gives each persona's engine its name), each persona
has its own memory too: a name told to one persona is unknown to another in the same
conversation.
That memory is bounded and expires (see :mod:`~ovos_a2a_solver.rivescript.memory`),
and by default survives restarts in ``$XDG_STATE_HOME/ovos_a2a_solver/rivescript-sessions.sqlite``.

OPM imports every plugin module whenever a persona is built, so this module imports
nothing heavy: RiveScript loads when the engine is built. It imports nothing of the bridge.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from ovos_plugin_manager.templates.agents import AgentMessage, ChatEngine, MessageRole

from ovos_a2a_solver.local_state import package_state_dir
from ovos_a2a_solver.persona_config import DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS, newest_user_text
from ovos_a2a_solver.sentence_units import units_of
from ovos_a2a_solver.setting_specs import BLANK_REFUSED, persona_block_table, read_settings, setting

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.rivescript.memory import SessionMemory

PLUGIN_ID = "ovos-a2a-rivescript"
EMBEDDED_BRAIN = Path(__file__).resolve().parent / "brain"
STATE_FILE_NAME = "rivescript-sessions.sqlite"
MAX_INPUT_CHARS = 1000  # longer messages are cut: RiveScript keeps the last inputs of every conversation


def default_state_file() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver/rivescript-sessions.sqlite`` (``~/.local/state`` by default)."""
    return package_state_dir() / STATE_FILE_NAME


@dataclass(frozen=True)
class RiveScriptSettings:
    """The keys of the persona's ``"ovos-a2a-rivescript"`` block."""

    brain: str | None = setting(None, blank=BLANK_REFUSED, means="a path",
                                help="a directory of .rive files; none: the embedded small-talk brain")
    state_file: str | None = setting(None, blank=BLANK_REFUSED, means="a path",
                                     help="the session file, which keeps the memory across restarts; none: "
                                          "$XDG_STATE_HOME/ovos_a2a_solver/rivescript-sessions.sqlite")
    persist_conversations: bool = setting(True, kind=bool,
                                          help="false: memory in RAM only (lost on restart)")
    max_conversations: int = setting(DEFAULT_MAX_CONVERSATIONS, kind=int, positive=True,
                                     help="conversations remembered; the least recently used go first")
    conversation_ttl: float = setting(DEFAULT_CONVERSATION_TTL, kind=float, positive=True,
                                      help="seconds a conversation may sit idle before it is forgotten")
    persona: str | None = setting(None, blank=BLANK_REFUSED, means="a persona's name",
                                  help="whose memory this is: the bridge gives each persona its own name here, so two "
                                       "personas of one bridge that share the file and a context each remember on "
                                       "their own (two that name one persona share it); none: one for all")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> "RiveScriptSettings":
        """Validate a persona config block; raise ``ValueError`` naming the bad key. Unknown
        keys (``enabled``, ``lang`` …) are ignored, and so is a ``null``: the default."""
        given = {key: value for key, value in (config or {}).items() if value is not None}
        return cls(**read_settings(cls, given, PLUGIN_ID))


def settings_table() -> str:
    """docs/bridge.md's table of the keys of the ``"ovos-a2a-rivescript"`` block (Markdown)."""
    return persona_block_table(RiveScriptSettings)


class RiveScriptChatEngine(ChatEngine):
    """An offline ChatEngine: a RiveScript brain with one memory per conversation.

    Construction loads the brain and opens the session file; a brain directory without
    replies raises ``ValueError``. A session file that is damaged or unwritable never
    stops answering (see :class:`~ovos_a2a_solver.rivescript.session_file.SessionFile`).
    Thread-safe: replies are computed one at a time (each takes milliseconds).
    """

    def __init__(self, config: Optional[Dict[str, Any]] = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(config)
        from rivescript import RiveScript

        from ovos_a2a_solver.rivescript.memory import SessionMemory
        from ovos_a2a_solver.rivescript.session_file import SessionFile

        self.settings = RiveScriptSettings.from_config(self.config)
        s = self.settings
        session_file = SessionFile(s.state_file or default_state_file()) if s.persist_conversations else None
        self.memory: SessionMemory = SessionMemory(max_sessions=s.max_conversations, idle_ttl=s.conversation_ttl,
                                                   session_file=session_file, clock=clock)
        brain = Path(s.brain).expanduser() if s.brain else EMBEDDED_BRAIN
        if not brain.is_dir():
            raise ValueError(f"{PLUGIN_ID}: 'brain' must be a directory of .rive files, got {str(brain)!r}")
        self._rivescript = RiveScript(utf8=True, session_manager=self.memory)
        self._rivescript.load_directory(str(brain))
        if not self._rivescript.deparse()["topics"]:
            raise ValueError(f"{PLUGIN_ID}: no RiveScript replies in {str(brain)!r}")
        self._rivescript.sort_replies()
        self._lock = threading.Lock()

    def answer(self, text: str, session_id: str = "default") -> str:
        """The brain's reply to ``text`` (its first ``MAX_INPUT_CHARS`` characters, which
        bounds what a conversation can make the memory hold) in conversation ``session_id``.

        Raises the library's ``RiveScriptError`` when the brain has no reply (the persona
        then asks its next handler)."""
        user = self.memory_key(str(session_id or "default"))
        with self._lock, self.memory.turn(user):
            reply = self._rivescript.reply(user, text[:MAX_INPUT_CHARS], errors_as_replies=False)
        return reply.strip()

    def memory_key(self, session_id: str) -> str:
        """The RiveScript user, and the session file's key, of conversation ``session_id``:
        the session itself, or with a ``persona`` setting, the persona and the session (so
        personas that share a session file and a conversation each remember on their own)."""
        persona = self.settings.persona
        return session_id if persona is None else json.dumps([persona, session_id])

    def continue_chat(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None,
                      tools: Any = None) -> AgentMessage:
        """Answer the newest user message in ``session_id``'s conversation (English only;
        ``lang``, ``units`` and ``tools`` are ignored). ``ValueError`` when no user message
        follows the last assistant message (:func:`~ovos_a2a_solver.persona_config.newest_user_text`)."""
        text = newest_user_text(messages)
        if text is None:
            raise ValueError(f"{PLUGIN_ID}: there is no user message to answer")
        return AgentMessage(role=MessageRole.ASSISTANT, content=self.answer(text, session_id))

    def stream_sentences(self, messages: List[AgentMessage], session_id: str = "default",
                         lang: Optional[str] = None, units: Optional[str] = None) -> Iterator[str]:
        """The answer, one sentence (or line) at a time (for TTS), split as the A2A plugin splits
        an agent's answer (:func:`~ovos_a2a_solver.sentence_units.units_of`). The brain runs once
        per call."""
        yield from units_of(self.continue_chat(messages, session_id, lang, units).content)

    def stream_tokens(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None) -> Iterable[str]:
        """The answer in one piece: it is complete at once."""
        yield self.continue_chat(messages, session_id, lang, units).content

    def shutdown(self) -> None:
        """Close the session file; answering goes on with memory in RAM. May be called twice."""
        self.memory.close()
