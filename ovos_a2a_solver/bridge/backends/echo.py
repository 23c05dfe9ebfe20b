# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The echo backend: a scripted persona for tests, demos and benchmarks (no OVOS needed)."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ovos_a2a_solver.bridge.backends.protocols import Capability, Question

#: the echo commands whose reply waits (sleeps) between or before its sentences
ECHO_WAITING_COMMANDS = ("sleep", "slow")
#: the longest a ``hold:NAME`` reply waits for its release file
HOLD_LIMIT = 60.0
#: how often a ``hold:NAME`` reply looks for its release file
HOLD_POLL = 0.02


class EchoBackend:
    """A scripted backend for tests, demos and benchmarks; no OVOS needed.

    ``"echo: <text>"`` per message, with commands (words after N are ignored): ``sleep:N`` (one uninterruptible step of
    N s), ``slow:N`` (five sentences, N s apart), ``ask:Q`` (asks Q back: input-required),
    ``fail``, ``fail:after`` (one sentence, then fails), ``flaky:N`` (fails the first N calls of a session, then echoes), ``empty``, ``remember X`` /
    ``recall`` (per session). If ``call_log`` is set, each call appends a line there, and
    ``hold:NAME`` waits until a file NAME (letters, digits, ``-`` and ``_``) exists beside the
    call log, for at most :data:`HOLD_LIMIT` seconds, or until the turn is stopped: a test
    ends such a turn when it chooses, not after a guessed time.
    """

    name = "echo"
    description = "Echoes what it is told (a test backend)."

    def __init__(self, call_log: str | None = None) -> None:
        self.call_log = call_log
        self._memory: dict[str, str] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._held: dict[str, threading.Event] = {}  # session -> what ends its hold early

    def capabilities(self) -> list[Capability]:
        return [Capability(id="echo", name="echo", description="Repeats the message.")]

    def answers_at_once(self, text: str) -> bool:
        """Whether the reply to ``text`` waits on nothing (no sleep, no call log to write),
        so that the bridge may compute it on its event loop."""
        return not self.call_log and text.strip().partition(":")[0] not in ECHO_WAITING_COMMANDS

    def interrupt(self, session_id: str) -> None:
        """End the session's ``hold:`` step, if it is in one (a stop or cancel asked)."""
        with self._lock:
            held = self._held.get(session_id)
        if held is not None:
            held.set()

    def _hold(self, release: Path, session_id: str) -> None:
        """Wait until ``release`` exists, the turn is interrupted, or :data:`HOLD_LIMIT` s passed."""
        interrupted = threading.Event()
        with self._lock:
            self._held[session_id] = interrupted
        try:
            end = time.monotonic() + HOLD_LIMIT
            while not release.exists() and time.monotonic() < end and not interrupted.wait(HOLD_POLL):
                pass
        finally:
            with self._lock:
                if self._held.get(session_id) is interrupted:
                    del self._held[session_id]

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        with self._lock:
            if self.call_log:
                with open(self.call_log, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"session": session_id, "text": text}) + "\n")
        command, _, arg = text.strip().partition(":")
        seconds = float((arg.split() or ["1"])[0]) if command in ECHO_WAITING_COMMANDS else 0.0
        if command == "sleep":
            time.sleep(seconds)
        elif command == "hold" and self.call_log and arg.strip().replace("-", "").replace("_", "").isalnum():
            self._hold(Path(self.call_log).parent / arg.strip(), session_id)
        elif command == "slow":
            for n in range(5):
                yield f"Sentence {n + 1}."
                time.sleep(seconds)
            return
        elif command == "ask":
            yield Question(arg.strip() or "which one?")
            return
        elif text == "fail":
            raise RuntimeError("the echo backend was told to fail")
        elif text == "fail:after":
            yield "I started."
            raise RuntimeError("the echo backend was told to fail after its first sentence")
        elif command == "flaky":
            with self._lock:
                failed = self._failures[(session_id, text)] = self._failures.get((session_id, text), 0) + 1
            if failed <= int(arg or 1):
                raise ConnectionError(f"the echo backend was told to fail {arg} time(s); this was call {failed}")
        elif text == "empty":
            return
        elif text.startswith("remember "):
            self._memory[session_id] = text[len("remember "):]
            yield f"ok, I will remember {self._memory[session_id]}."
            return
        elif text == "recall":
            remembered = self._memory.get(session_id)
            yield f"you told me {remembered}." if remembered else "I remember nothing."
            return
        yield f"echo: {text}"
