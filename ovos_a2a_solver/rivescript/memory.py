# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Per-conversation RiveScript user variables: bounded, idle-expiring, optionally durable.

RiveScript keeps what it knows about a user (``<set name=…>``, the topic, the reply
history) in a session manager. ``SessionMemory`` is that manager, with one RiveScript user
per conversation (the OVOS ``session_id``):

* at most ``max_sessions`` conversations are kept; the least recently used goes first;
* a conversation idle for longer than ``idle_ttl`` seconds is forgotten;
* with a :class:`~ovos_a2a_solver.rivescript.session_file.SessionFile`, each turn is written
  to disk, so a restart keeps what every conversation said. Forgotten conversations are
  deleted there too. When the file has a newer copy of a conversation (another process
  answered it), that copy is used.

The engine brackets each reply with ``with memory.turn(session_id):``. Changes made
outside a turn (RiveScript's ``set_uservar`` API) stay in RAM until the session's next turn.
"""
from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rivescript.sessions import SessionManager

from ovos_a2a_solver.persona_config import DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS
from ovos_a2a_solver.rivescript.session_file import SessionFile

UNDEFINED = "undefined"  # what RiveScript expects for a variable that is not set


@dataclass
class _Session:
    variables: dict[str, Any] = field(default_factory=dict)
    used: float = 0.0


class SessionMemory(SessionManager):
    """RiveScript's session manager, one user per conversation (see the module docstring).

    ``clock`` returns seconds since the epoch (stamps are stored in the file, so they
    must mean the same after a restart); tests inject their own. Thread-safe.
    """

    def __init__(self, max_sessions: int = DEFAULT_MAX_CONVERSATIONS,
                 idle_ttl: float = DEFAULT_CONVERSATION_TTL,
                 session_file: SessionFile | None = None, clock: Callable[[], float] = time.time) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if idle_ttl <= 0:
            raise ValueError("idle_ttl must be positive")
        self.max_sessions = int(max_sessions)
        self.idle_ttl = float(idle_ttl)
        self.session_file = session_file
        self._clock = clock
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self._frozen: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()

    # ---- one turn -------------------------------------------------------------------

    @contextlib.contextmanager
    def turn(self, session_id: str) -> Iterator[None]:
        """Hold the memory for one reply in ``session_id``: forget idle sessions, load this one
        (a fresh one if it is unknown or expired); afterwards stamp it used and store it."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            self._refresh(session_id, now)
            try:
                yield
            finally:
                self._store(session_id, self._clock())

    def __contains__(self, session_id: object) -> bool:
        """Whether the session is held in RAM now (expired ones go at the next turn)."""
        with self._lock:
            return session_id in self._sessions

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def close(self) -> None:
        """Close the session file (the memory in RAM stays usable)."""
        if self.session_file is not None:
            self.session_file.close()

    # ---- RiveScript's SessionManager interface --------------------------------------

    def set(self, username: str, args: dict[str, Any]) -> None:
        """Set variables of ``username`` (creating the user); a value ``None`` deletes the key."""
        with self._lock:
            session = self._sessions.get(username)
            if session is None:
                session = self._sessions[username] = _Session(self.default_session(), self._clock())
            for key, value in args.items():
                if value is None:
                    session.variables.pop(key, None)
                else:
                    session.variables[key] = value

    def get(self, username: str, key: str, default: Any = UNDEFINED) -> Any:
        """The variable, ``default`` ("undefined") if not set, ``None`` for an unknown user."""
        with self._lock:
            session = self._sessions.get(username)
            return None if session is None else session.variables.get(key, default)

    def get_any(self, username: str) -> dict[str, Any] | None:
        """A copy of every variable of ``username``, or ``None``."""
        with self._lock:
            session = self._sessions.get(username)
            return None if session is None else copy.deepcopy(session.variables)

    def get_all(self) -> dict[str, dict[str, Any]]:
        """A copy of the variables of every session held in RAM."""
        with self._lock:
            return {name: copy.deepcopy(s.variables) for name, s in self._sessions.items()}

    def reset(self, username: str) -> None:
        """Forget ``username`` in RAM and in the file."""
        with self._lock:
            self._forget(username)

    def reset_all(self) -> None:
        """Forget every session, in RAM and in the file."""
        with self._lock:
            self._sessions.clear()
            self._frozen.clear()
            if self.session_file is not None:
                self.session_file.forget_all()

    def freeze(self, username: str) -> None:
        """Keep a copy of the user's variables (in RAM) for ``thaw``."""
        with self._lock:
            session = self._sessions.get(username)
            if session is not None:
                self._frozen[username] = copy.deepcopy(session.variables)

    def thaw(self, username: str, action: str = "thaw") -> None:
        """``thaw``: restore and drop the copy; ``discard``: drop it; ``keep``: restore, keep it."""
        with self._lock:
            frozen = self._frozen.get(username)
            if frozen is None:
                return
            if action in ("thaw", "keep"):
                self.set(username, {})
                self._sessions[username].variables = copy.deepcopy(frozen)
            if action in ("thaw", "discard"):
                del self._frozen[username]

    # ---- internals ------------------------------------------------------------------

    def _expire(self, now: float) -> None:
        while self._sessions:
            name, oldest = next(iter(self._sessions.items()))
            if now - oldest.used <= self.idle_ttl:
                break
            self._forget(name)

    def _refresh(self, session_id: str, now: float) -> None:
        session = self._sessions.get(session_id)
        if session is not None and now - session.used > self.idle_ttl:
            self._forget(session_id)
            session = None
        stored = self.session_file.load(session_id) if self.session_file is not None else None
        if stored is None:
            return
        variables, used = stored
        if now - used > self.idle_ttl:
            self._forget(session_id)
        elif session is None or used > session.used:  # a restart, or another process answered it
            self._sessions[session_id] = _Session(variables, used)

    def _store(self, session_id: str, now: float) -> None:
        session = self._sessions.get(session_id)
        if session is None:  # the turn reset it
            return
        session.used = now
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self.max_sessions:
            name, _ = self._sessions.popitem(last=False)
            self._frozen.pop(name, None)
        if self.session_file is not None:
            self.session_file.save(session_id, session.variables, now,
                                   idle_before=now - self.idle_ttl, keep=self.max_sessions)

    def _forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._frozen.pop(session_id, None)
        if self.session_file is not None:
            self.session_file.forget(session_id)
