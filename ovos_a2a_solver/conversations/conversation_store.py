# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which remote conversation each local session is in.

For every (agent key, session id) the store keeps the agent's ``contextId`` and, while
the agent waits for the user (input-required / auth-required), the open ``taskId``.
Values only ever come from the agent: the store never makes up a contextId.

The store is bounded (least recently used entries go first), forgets entries idle for
longer than ``idle_ttl`` seconds, and, given a path, persists to one JSON file written
atomically (temp file, fsync, rename) under an advisory lock, so the plugin inside
ovos-core and the ``ovos-a2a`` command line can share it. A corrupt file is moved aside
and logged, never fatal; a file that cannot be written (a read-only or missing directory)
is logged once, and the map lives on in memory.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ovos_a2a_solver.local_state import SharedJsonFile, package_state_dir
from ovos_a2a_solver.persona_config import DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS

LOG = logging.getLogger("ovos_a2a_solver")

FORMAT_VERSION = 1
MAX_REFUSED = 64  # refused contexts remembered per agent key


def default_state_path() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver/conversations.json`` (``~/.local/state`` by default)."""
    return package_state_dir() / "conversations.json"


@dataclass(frozen=True)
class Conversation:
    """Where a session stands with the agent.

    ``task_id``: the task that waits for this user (input-required, auth-required): the next
    message continues it. ``pending_task_id``: a task still working when its turn's deadline
    passed: its answer is delivered before the session's next one. ``pending_message_id``: a
    message sent in a blocking exchange whose deadline passed before the agent named its task
    (the task is looked up by it). ``context_id`` is ``""`` until the agent names one.
    """

    context_id: str
    task_id: str | None = None
    pending_task_id: str | None = None
    pending_message_id: str | None = None


class ConversationStore:
    """session -> (contextId, open taskId), per agent key; bounded, idle-expiring, optionally durable."""

    def __init__(self, path: str | os.PathLike | None = None, max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
                 idle_ttl: float = DEFAULT_CONVERSATION_TTL, *, clock: Callable[[], float] = time.time) -> None:
        """``clock``: the wall-clock seconds a conversation's last use is stamped with (the
        stamps are kept in the file, so across processes), ``time.time`` unless given."""
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        if idle_ttl <= 0:
            raise ValueError("idle_ttl must be positive")
        self.path = Path(path) if path is not None else None
        self.max_conversations = int(max_conversations)
        self.idle_ttl = float(idle_ttl)
        self._clock = clock
        # {agent_key: {"sessions": {session_id: {"context_id", "task_id", "used"}}, "refused": [ctx, ...]}}
        self._file = SharedJsonFile(self.path, "conversation file", "agents", FORMAT_VERSION, _validated)
        self._lock = self._file.lock

    @classmethod
    def default(cls, **kwargs) -> "ConversationStore":
        """The per-device store under the user's XDG state directory."""
        return cls(default_state_path(), **kwargs)

    # ---- public API -------------------------------------------------------------------

    def get(self, agent_key: str, session_id: str) -> Conversation | None:
        """The session's conversation, or ``None`` for a new (or expired) one."""
        with self._lock:
            self._reload_if_changed()
            entry = self._data.get(agent_key, {}).get("sessions", {}).get(session_id)
            if not entry or self._clock() - entry.get("used", 0) > self.idle_ttl:
                return None
            return _conversation(entry)

    def remember(self, agent_key: str, session_id: str, context_id: str, task_id: str | None = None) -> None:
        """Record the agent's contextId (and open taskId, if the task waits for the user)."""
        if not context_id:
            return
        with self._lock:
            self._reload_if_changed()
            entry = self._data.get(agent_key, {}).get("sessions", {}).get(session_id)
            now = self._clock()
            if entry and entry["context_id"] == context_id and entry["task_id"] == (task_id or None) \
                    and now - entry["used"] < min(60.0, self.idle_ttl / 10):
                entry["used"] = now  # unchanged and recently saved: no need to rewrite the file
                return
        with self._transaction() as data:
            agent = data.setdefault(agent_key, {"sessions": {}, "refused": []})
            if context_id in agent.get("refused", ()):
                LOG.info("not adopting context %s: the agent refused it before", context_id)
                return
            earlier = agent["sessions"].get(session_id, {})
            agent["sessions"][session_id] = {"context_id": context_id, "task_id": task_id or None,
                                             "pending": earlier.get("pending"),
                                             "pending_message": earlier.get("pending_message"),
                                             "used": self._clock()}

    def take_pending(self, agent_key: str, session_id: str, task_id: str) -> bool:
        """Unbind the session's pending task if it is still ``task_id``; whether it was (so
        that of two deliverers of its answer, only one says it)."""
        with self._transaction() as data:
            entry = data.get(agent_key, {}).get("sessions", {}).get(session_id)
            if not entry or entry.get("pending") != task_id:
                return False
            entry["pending"] = entry["pending_message"] = None
            return True

    def set_pending(self, agent_key: str, session_id: str, context_id: str, task_id: str | None,
                    message_id: str | None = None) -> None:
        """Bind the task that outlived the session's last turn (or, while its id is unknown,
        the message that started it); ``None`` for both unbinds."""
        with self._transaction() as data:
            agent = data.setdefault(agent_key, {"sessions": {}, "refused": []})
            entry = agent["sessions"].get(session_id)
            if entry is None:
                if task_id is None and message_id is None:
                    return
                entry = agent["sessions"][session_id] = {"context_id": context_id or "", "task_id": None}
            elif context_id and not entry["context_id"]:
                entry["context_id"] = context_id
            entry["pending"], entry["pending_message"] = task_id, message_id
            entry["used"] = self._clock()

    def forget_task(self, agent_key: str, session_id: str) -> None:
        """The agent no longer has the open task; keep the conversation."""
        with self._transaction() as data:
            entry = data.get(agent_key, {}).get("sessions", {}).get(session_id)
            if entry:
                entry["task_id"] = None

    def forget(self, agent_key: str, session_id: str, refused: bool = False) -> None:
        """Start a new conversation next time; with ``refused``, never send this context again."""
        with self._transaction() as data:
            agent = data.get(agent_key)
            entry = agent.get("sessions", {}).pop(session_id, None) if agent else None
            if refused and entry:
                agent["refused"] = (agent.get("refused", []) + [entry["context_id"]])[-MAX_REFUSED:]

    def sessions(self, agent_key: str) -> dict[str, Conversation]:
        """Every live session of one agent key (for tools and tests)."""
        with self._lock:
            self._reload_if_changed()
            now = self._clock()
            return {sid: _conversation(e)
                    for sid, e in self._data.get(agent_key, {}).get("sessions", {}).items()
                    if now - e.get("used", 0) <= self.idle_ttl}

    # ---- persistence ------------------------------------------------------------------

    @property
    def _data(self) -> dict[str, dict]:
        return self._file.data

    def _reload_if_changed(self) -> None:
        self._file.current()

    @contextlib.contextmanager
    def _transaction(self):
        with self._file.transaction() as data:
            yield data
            self._prune()

    def _prune(self) -> None:
        now = self._clock()
        live = []
        for key, agent in list(self._data.items()):
            sessions = agent.get("sessions", {})
            for sid, entry in list(sessions.items()):
                if now - entry.get("used", 0) > self.idle_ttl:
                    del sessions[sid]
                else:
                    live.append((entry.get("used", 0), key, sid))
            if not sessions and not agent.get("refused"):
                del self._data[key]
        if len(live) > self.max_conversations:
            live.sort()
            for _, key, sid in live[: len(live) - self.max_conversations]:
                del self._data[key]["sessions"][sid]


def _conversation(entry: dict) -> Conversation:
    return Conversation(entry["context_id"], entry.get("task_id") or None, entry.get("pending") or None,
                        entry.get("pending_message") or None)


def _validated(agents: dict) -> dict:
    """Keep only well-formed entries of a loaded file."""
    clean: dict[str, dict] = {}
    for key, agent in agents.items():
        sessions = {}
        for sid, e in (agent.get("sessions") or {}).items():
            if not isinstance(e, dict) or not isinstance(e.get("context_id"), str):
                continue
            task, pending, message = (v if isinstance(v, str) and v else None
                                      for v in (e.get("task_id"), e.get("pending"), e.get("pending_message")))
            if e["context_id"] or pending or message:  # no context yet only while an answer is pending
                sessions[str(sid)] = {"context_id": e["context_id"], "task_id": task, "pending": pending,
                                      "pending_message": message, "used": float(e.get("used", 0))}
        refused = [c for c in (agent.get("refused") or []) if isinstance(c, str)][-MAX_REFUSED:]
        clean[str(key)] = {"sessions": sessions, "refused": refused}
    return clean
