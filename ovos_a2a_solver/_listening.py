# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The microphone reopened after the persona asked a question, so that the user answers
without the wake word.

OVOS does this for a ``speak`` message with ``expect_response``: once the utterance's audio
has played, the audio service emits ``mycroft.mic.listen`` in that message's context.
ovos-persona speaks each sentence of an answer with a plain ``speak``, so when the agent's
answer is a question the engine does the same in its place: after the question was handed
to the persona, the next end of the session's audio (``recognizer_loop:audio_output_end``,
``ovos.audio.output.ended`` in OVOS-AUDIO-1's words) is followed by ``mycroft.mic.listen``
forwarded from it, as ovos-workshop's ``speak(wait=True)`` waits for that same message. The
wait ends without listening when the session's speech is stopped or the user already speaks
(``mycroft.audio.speech.stop``, ``recognizer_loop:record_begin``), at the session's next
turn or stop, and after ``QUESTION_AUDIO_TIMEOUT`` (a device without audio output).

``mycroft.mic.listen`` is forwarded from the message the turn came in on, so it goes where
the user is: a HiveMind satellite (whose turns hivemind-core marks with its ``peer``) is
named in its ``destination``. A satellite plays its own speech, so no end of its audio
reaches this bus: its microphone is reopened as soon as the question was handed over.
"""
from __future__ import annotations

import threading
from typing import Any

AUDIO_ENDED = ("recognizer_loop:audio_output_end", "ovos.audio.output.ended")
NO_NEED = ("mycroft.audio.speech.stop", "ovos.audio.stop", "recognizer_loop:record_begin",
           "ovos.listener.record.started")
LISTEN = "mycroft.mic.listen"
#: Seconds the end of a question's audio is waited for.
QUESTION_AUDIO_TIMEOUT = 60.0


def _session_id(message: Any) -> str:
    from ovos_bus_client.session import SessionManager

    return SessionManager.get(message).session_id


class ListenAfterQuestion:
    """Per session, at most one wait for the end of a question's audio."""

    def __init__(self, timeout: float = QUESTION_AUDIO_TIMEOUT) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._waits: dict[str, tuple[Any, Any, threading.Timer]] = {}  # session -> (bus, handler, timer)

    def after_question(self, bus: Any, session_id: str, turn: Any = None) -> None:
        """Emit ``mycroft.mic.listen`` once the audio of ``session_id``'s speech ends.

        ``turn``: the message the turn came in on; the listen is forwarded from it (else from
        the end of the audio). When it came from a HiveMind peer, the listen is sent at once.
        """
        if turn is not None and turn.context.get("peer"):
            self.cancel(session_id)
            bus.emit(turn.forward(LISTEN))
            return

        def ended(message: Any) -> None:
            if _session_id(message) == session_id and self._end(session_id, ended) \
                    and message.msg_type in AUDIO_ENDED:
                bus.emit((turn if turn is not None else message).forward(LISTEN))

        timer = threading.Timer(self.timeout, self._end, (session_id,))
        timer.daemon = True
        with self._lock:
            earlier = self._waits.pop(session_id, None)
            self._waits[session_id] = (bus, ended, timer)
        if earlier is not None:
            _release(*earlier)
        for name in AUDIO_ENDED + NO_NEED:
            bus.on(name, ended)
        timer.start()

    def cancel(self, session_id: str) -> None:
        """End the session's wait, if any (its next turn began)."""
        self._end(session_id)

    def close(self) -> None:
        """End every wait."""
        for session_id in list(self._waits):
            self._end(session_id)

    def _end(self, session_id: str, handler: Any = None) -> bool:
        """End the session's wait (only if it is ``handler``'s, when given); whether it did."""
        with self._lock:
            wait = self._waits.get(session_id)
            if wait is None or (handler is not None and wait[1] is not handler):
                return False
            del self._waits[session_id]
        _release(*wait)
        return True


def _release(bus: Any, handler: Any, timer: threading.Timer) -> None:
    timer.cancel()
    for name in AUDIO_ENDED + NO_NEED:
        bus.remove(name, handler)
