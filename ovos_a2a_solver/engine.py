# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``A2AChatEngine``: the OPM ChatEngine (plugin id ``ovos-a2a-solver``) that answers
through a remote A2A agent.

OPM imports every plugin module whenever a persona is built, so this module imports
nothing heavy. The a2a-sdk, httpx and gRPC load when an engine is built, on a thread of its
own (the warm-up, which also reads the agent's card), so that neither loading the persona
nor its first answer waits for them.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ovos_plugin_manager.templates.agents import AgentMessage, ChatEngine, MessageRole

from ovos_a2a_solver._listening import ListenAfterQuestion
from ovos_a2a_solver._settings import EngineSettings
from ovos_a2a_solver.persona_config import newest_user_text

LOG = logging.getLogger("ovos_a2a_solver")
#: Seconds to wait for the OVOS messagebus to accept a connection.
BUS_CONNECT_TIMEOUT = 3.0
#: Seconds the warm-up waits for it: no turn waits for the warm-up, and a busy device may take longer than that.
WARM_UP_BUS_TIMEOUT = 30.0
#: Stack frames searched for the bus message a turn came in on (ovos-persona's handler holds it).
TURN_MESSAGE_DEPTH = 40
#: Sessions whose last turn's message is kept (a sign-in's steps are forwarded from it).
TURNS_KEPT = 256

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.client import A2AClient


class A2AChatEngine(ChatEngine):
    """An OVOS ChatEngine whose answers come from a remote A2A agent.

    Config (the persona's ``"ovos-a2a-solver"`` block) is described by
    :class:`~ovos_a2a_solver._settings.EngineSettings`. Construction validates it and
    returns at once; a thread then warms the engine up (:meth:`warm_up`). Every bus message
    sent for a turn (an answer announced later, the microphone reopened after a question) is
    forwarded from the message the turn came in on, so it keeps its destination, source and
    session: a HiveMind satellite hears it too.
    """

    def __init__(self, config: Optional[Dict[str, Any]] = None):
        super().__init__(config)
        self.settings = EngineSettings.from_config(self.config)
        self._client: Optional["A2AClient"] = None
        self._bus = None  # the OVOS messagebus this engine connected, once an answer is to be announced
        self._lock = threading.Lock()
        self._bus_lock = threading.Lock()
        self._listen = ListenAfterQuestion()
        self._progress_listeners: Dict[str, Callable[[str], None]] = {}  # by session (``follow_progress``)
        self._turns: Dict[str, Any] = {}  # session -> the message its last turn came in on (sign-in steps)
        self._closed = False
        self.warmed_up = threading.Event()
        threading.Thread(target=self.warm_up, name="ovos-a2a-warm-up", daemon=True).start()

    def warm_up(self) -> bool:
        """Do now what the first turn would otherwise wait for: import the A2A client, read
        the agent's card (which opens the connection), and, when answers are announced on a
        messagebus the settings name, connect to it. Runs on its own thread from
        construction; ``warmed_up`` is set when it ended. Whether the agent's card was read:
        what failed is simply done again by the first turn.
        """
        try:
            if self._closed:
                return False
            self.client.fetch_agent_card()
            return True
        except Exception as exc:  # the first turn tries again, and says what fails then
            LOG.info("could not reach the agent at %s ahead of the first turn: %s", self.settings.agent_url, exc)
            return False
        finally:
            if self.settings.announce and self.settings.messagebus and not self._closed:
                self._messagebus(within=WARM_UP_BUS_TIMEOUT)
            self.warmed_up.set()

    @property
    def client(self) -> "A2AClient":
        """The A2A client, built on first use."""
        with self._lock:
            if self._client is None:
                from ovos_a2a_solver.agent.tokens import TokenStore, default_tokens_path
                from ovos_a2a_solver.client import A2AClient
                from ovos_a2a_solver.conversations.conversation_store import ConversationStore, default_state_path

                s = self.settings
                path = (s.state_file or default_state_path()) if s.persist_conversations else None
                store = ConversationStore(path, max_conversations=s.max_conversations, idle_ttl=s.conversation_ttl)
                self._client = A2AClient(s.agent_url, auth_header=s.auth_header, timeout=s.timeout,
                                         streaming=s.streaming, credentials=s.credentials,
                                         trusted_origins=s.trusted_origins,
                                         oauth2_token_origins=s.oauth2_token_origins,
                                         conversations=store, namespace=s.namespace, retries=s.retries,
                                         breaker=s.breaker, card_trust=s.card_trust, limits=s.limits,
                                         tokens=TokenStore(s.sign_in_file or default_tokens_path()),
                                         on_sign_in=self._sign_in_step)
            return self._client

    def continue_chat(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None,
                      tools: Any = None) -> AgentMessage:
        """Send the newest user message in ``session_id``'s remote conversation; return the answer.

        With no user message after the last assistant message the answer is empty, and the
        agent is not called.
        """
        text = newest_user_text(messages)
        answer = ""
        if text is not None:
            from ovos_a2a_solver.agent.exceptions import SignInError, StillWorkingError

            turn = self._turn_message(session_id)
            try:
                answer = self.client.send_task(text, session_id=session_id, lang=lang)
            except StillWorkingError as still:
                said = getattr(still, "said", "")  # a sign-in's prompt, said before its deadline passed
                answer = "\n".join(filter(None, (said, self._still_working(still, session_id, lang, turn))))
            except SignInError as ended:
                answer = ended.said
        return AgentMessage(role=MessageRole.ASSISTANT, content=answer)

    def stream_tokens(self, messages: List[AgentMessage], session_id: str = "default",
                      lang: Optional[str] = None, units: Optional[str] = None) -> Iterable[str]:
        """Yield the answer's text as the agent sends it (streamed whenever its card offers it)."""
        text = newest_user_text(messages)
        if text is not None:
            turn = self._turn_message(session_id)
            yield from self._until_deadline(self.client.stream_task(text, session_id=session_id, lang=lang,
                                                                    on_update=self._progress_of(session_id)),
                                            session_id, lang, turn)

    def stream_sentences(self, messages: List[AgentMessage], session_id: str = "default",
                         lang: Optional[str] = None, units: Optional[str] = None) -> Iterator[str]:
        """Yield each sentence (or line) of the answer as soon as it is complete (for TTS).

        Only whole sentences: a part the agent rewrote differently is said again from the
        first sentence that changed. When the answer is a question (the agent waits for the
        user), the microphone reopens once its audio ended, as for a ``speak`` that expects a
        response (see ``_listening``), on the messagebus of the persona's process (or the one
        ``messagebus`` names).
        """
        text = newest_user_text(messages)
        if text is not None:
            self._listen.cancel(session_id)  # the user spoke: an earlier question was answered
            turn = self._turn_message(session_id)
            yield from self._until_deadline(self.client.stream_sentences(text, session_id=session_id, lang=lang,
                                                                         on_update=self._progress_of(session_id)),
                                            session_id, lang, turn)
            if self.has_open_task(session_id):
                # a bus named in the settings is connected to; the device's own is not looked for
                bus = self._messagebus(connect=bool(self.settings.messagebus))
                if bus is not None:
                    self._listen.after_question(bus, session_id, turn)

    def _turn_message(self, session_id: str):
        """The bus message this turn came in on: ovos-persona's handler, which asks this
        engine, holds it (an argument on the call stack). When there is none of this session
        (the engine asked outside ovos-persona), a message naming only the session. Kept as the
        session's last turn (a sign-in's steps, which come later, are forwarded from it)."""
        from ovos_bus_client.message import Message, dig_for_message

        found = dig_for_message(max_records=TURN_MESSAGE_DEPTH)
        if found is None or ((found.context.get("session") or {}).get("session_id") or "default") != session_id:
            found = Message("ovos-a2a-solver.turn", {},
                            {"session": {"session_id": session_id}, "source": "ovos-a2a-solver"})
        with self._lock:
            self._turns.pop(session_id, None)
            self._turns[session_id] = found
            while len(self._turns) > TURNS_KEPT:
                del self._turns[next(iter(self._turns))]
        return found

    def _sign_in_step(self, event: Any) -> None:
        """A step of a person's sign-in (called on the client's loop): put on the messagebus
        (``_sign_in_bus``), from a thread of its own (connecting to a bus may take seconds)."""
        turn = self._turns.get(event.session_id or "default")
        if turn is None or self._closed:
            return

        def emit() -> None:
            from ovos_a2a_solver._sign_in_bus import sign_in_message

            bus = self._messagebus(connect=bool(self.settings.messagebus))
            if bus is not None:
                bus.emit(sign_in_message(event, self.settings.agent_url, turn))

        threading.Thread(target=emit, name="ovos-a2a-sign-in", daemon=True).start()

    def _until_deadline(self, pieces: Iterator[str], session_id: str, lang: Optional[str],
                        turn: Any) -> Iterator[str]:
        """``pieces``, then, if the turn's deadline passed while the agent works on, the
        still-working line (the answer comes later)."""
        from ovos_a2a_solver.agent.exceptions import SignInError, StillWorkingError

        try:
            yield from pieces
        except StillWorkingError as still:
            yield self._still_working(still, session_id, lang, turn)
        except SignInError as ended:  # denied, or its code expired: said, as the prompt was
            yield ended.said

    def _still_working(self, still, session_id: str, lang: Optional[str], turn: Any) -> str:
        """The line for a task that outlived its turn. With ``announce`` and a messagebus at
        hand, its answer is said over the bus once it is ready (``still_working_announced``);
        else the session's next utterance hears it first (``still_working``). A message kept
        while the person signs in is answered the same ways (``sign_in_waiting``)."""
        from ovos_a2a_solver.agent.exceptions import SignInPendingError

        signing_in = isinstance(still, SignInPendingError)
        if not self.settings.announce:
            return self.settings.sign_in_waiting if signing_in else self.settings.still_working
        threading.Thread(target=self._announce_when_ready, args=(session_id, still.task_id, lang, turn),
                         name="ovos-a2a-announce", daemon=True).start()
        if signing_in:
            return self.settings.sign_in_waiting
        if self._messagebus(connect=False) is not None:
            return self.settings.still_working_announced
        return self.settings.still_working

    def _announce_when_ready(self, session_id: str, task_id: str, lang: Optional[str], turn: Any) -> None:
        bus = self._messagebus()
        if bus is None:
            return
        answer = self.client.answer_when_ready(session_id, task_id, within=self.settings.conversation_ttl)
        if answer:
            question = self.has_open_task(session_id)  # the user's next words answer it: listen after it
            # forwarded from the turn's message: its destination (a satellite) and session go with it
            bus.emit(turn.forward("speak", {"utterance": answer, "lang": lang or "", "expect_response": question}))

    def _messagebus(self, connect: bool = True, within: Optional[float] = None):
        """The OVOS messagebus: the one ``messagebus`` names; else the one of this process
        (ovos-core connects ``SessionManager`` to it), else the device's own. Connected on
        first use, unless not ``connect``, waiting ``within`` seconds (:data:`BUS_CONNECT_TIMEOUT`)
        for it; ``None`` when none is reachable. No lock is held while a connection is waited
        for: a turn asking whether a bus is at hand (``connect=False``) is answered at once."""
        with self._bus_lock:
            if self._bus is not None:
                return self._bus
            if not self.settings.messagebus:
                from ovos_bus_client.session import SessionManager

                if SessionManager.bus is not None:
                    return SessionManager.bus
            if not connect:
                return None
        bus = self._connected_messagebus(BUS_CONNECT_TIMEOUT if within is None else within)
        with self._bus_lock:
            if bus is not None and self._bus is None and not self._closed:
                self._bus, bus = bus, None
            kept = self._bus
        if bus is not None:  # another thread connected meanwhile, or the engine was shut down
            bus.close()
        return kept

    def _connected_messagebus(self, within: float):
        """A new connection to the messagebus ``messagebus`` names (or the device's own), once it
        is up; ``None`` when none answers ``within`` seconds."""
        try:
            from ovos_bus_client import MessageBusClient

            bus = MessageBusClient(**dict(self.settings.messagebus))
            bus.run_in_thread()
            if not bus.connected_event.wait(within):
                bus.close()
                raise ConnectionError("no answer")
        except Exception as exc:  # no bus here: the next utterance delivers the answer
            LOG.info("no OVOS messagebus reachable (%s); the answer comes with the next utterance", exc)
            return None
        return bus

    def stop(self, session_id: Optional[str] = None) -> bool:
        """Stop the turns under way (of ``session_id``, or all): their streams end and the
        agent's tasks are canceled (CancelTask). Closing a stream early does the same.

        True when every such task was canceled (or none was running); False when the agent
        refused (logged as an error with its reason: the agent may still be working).
        """
        if session_id is None:
            self._listen.close()
        else:
            self._listen.cancel(session_id)  # a stopped question does not reopen the microphone
        client = self._client
        return client.stop(session_id) if client is not None else True

    def follow_progress(self, session_id: str, listener: Optional[Callable[[str], None]]) -> None:
        """Call ``listener`` with each progress note ("Searching flights…": a "working" status
        text that ends in an ellipsis, never said as answer) the agent sends in ``session_id``'s
        streamed turns from now on; ``None`` stops that. It is called on the client's thread.
        A bridge whose persona relays to this engine forwards the notes to its own caller."""
        with self._lock:
            if listener is None:
                self._progress_listeners.pop(session_id, None)
            else:
                self._progress_listeners[session_id] = listener

    def _progress_of(self, session_id: str) -> Callable[[Any], None]:
        """What a streamed turn of ``session_id`` calls with each ``TaskUpdate``: it hands each
        progress note to the listener following the session, if any, when the update comes."""
        from ovos_a2a_solver.answers.status_answer import progress_note

        listeners = self._progress_listeners

        def report(update: Any) -> None:
            listener = listeners.get(session_id)
            if listener is not None and update.progress and progress_note(update.progress):
                try:
                    listener(update.progress.strip())
                except Exception as exc:  # a listener's failure is its own, never the answer's
                    LOG.debug("a progress listener of session %s raised %r", session_id, exc)

        return report

    def sign_out(self, session_id: Optional[str] = None) -> int:
        """Forget what the person of ``session_id`` (every session's, when ``None``) signed in for
        with this persona's agent ("forget my calendar account"), and revoke it at the provider
        where it says how: the next turn that needs it asks them to sign in again. How many
        sign-ins were forgotten."""
        return self.client.sign_out(session_id)

    def has_open_task(self, session_id: str) -> bool:
        """Whether the agent waits for this session's user (input-required / auth-required)."""
        if self._client is None:
            return False
        conversation = self._client.conversation(session_id)
        return bool(conversation and conversation.task_id)

    def shutdown(self) -> None:
        """Close the connection to the agent (and to the messagebus)."""
        self._closed = True
        with self._lock:
            client, self._client = self._client, None
        with self._bus_lock:
            bus, self._bus = self._bus, None
        self._listen.close()
        if client is not None:
            client.close()
        if bus is not None:
            bus.close()
