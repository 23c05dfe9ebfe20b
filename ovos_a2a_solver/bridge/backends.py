# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What answers behind the bridge: an OVOS persona, or (for tests and benchmarks) an echo,
or the A2A conformance kit's scenarios.

A backend turns one user message of one session into sentences. ``reply`` is a plain
generator run in a worker thread: the bridge pulls one sentence at a time, so a turn can
be stopped between sentences. Besides sentences and a :class:`Question`, a backend may
yield typed outputs: an :class:`ArtifactOutput` (a part of an artifact of its own), a
:class:`Reply` (the answer is a message, no task), a :class:`Rejection` or a
:class:`Completion` (the task ends with a message of the agent's). A backend that computes
some replies without waiting on anything may say so (``answers_at_once``): those turns
run on the event loop, without the hand-off to and from a thread.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

DEFAULT_PERSONA = Path(__file__).resolve().parent.parent / "personas" / "default.json"


class NoAnswerError(RuntimeError):
    """The backend produced no text; ``str()`` says why if it knows."""


@dataclass(frozen=True)
class Question:
    """What a backend yields to ask the user back: the task then waits for their answer.
    ``text`` may be empty when the question was already said as sentences."""

    text: str = ""


@dataclass(frozen=True)
class ArtifactOutput:
    """A part of an artifact other than the spoken answer (a file, a URL, data, text).

    ``part`` is an ``a2a.types.Part``. Several outputs with the same ``artifact_id`` and
    ``append`` build one artifact chunk by chunk; ``last_chunk`` marks its last one."""

    part: object
    artifact_id: str = "output"
    name: str = "output"
    append: bool = False
    last_chunk: bool = False


@dataclass(frozen=True)
class Reply:
    """The whole answer as one agent message instead of a task (yielded first and alone)."""

    text: str


@dataclass(frozen=True)
class Rejection:
    """The agent refuses the task: it ends ``rejected`` with ``text`` as the reason."""

    text: str = "Rejected."


@dataclass(frozen=True)
class Completion:
    """The task ends ``completed`` with ``text`` as the agent's final message."""

    text: str


@runtime_checkable
class RelayingHandler(Protocol):
    """A persona handler that relays to another agent and can tell whether that agent
    waits for this session's user (this package's A2A plugin is one)."""

    def has_open_task(self, session_id: str) -> bool:
        """Whether the remote agent waits for the user of ``session_id``."""


@runtime_checkable
class StoppableRelay(Protocol):
    """A relaying handler that can end a session's turn in the middle (this package's A2A
    plugin: it cancels its remote task)."""

    def has_open_task(self, session_id: str) -> bool:
        """Whether the remote agent waits for the user of ``session_id``."""

    def stop(self, session_id: str | None = None) -> bool:
        """End the turn of ``session_id`` now; True if its remote work was canceled."""


@dataclass(frozen=True)
class Capability:
    """One thing the backend can do, for the card's skill list."""

    id: str
    name: str
    description: str


class Backend(Protocol):
    """The interface the bridge needs from whatever answers."""

    name: str
    description: str

    def capabilities(self) -> list[Capability]:
        """What the backend really has (one per persona handler)."""

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        """The answer's sentences, in order, and a :class:`Question` last if the user must
        answer back. Raise to fail the turn."""


class MessageRoutedBackend(Backend, Protocol):
    """A backend that also reads the message's id and may answer with typed outputs; one
    whose first output may be a :class:`Reply` (the executor then waits for that first
    output before it creates a task)."""

    def reply_to(self, text: str, message_id: str, session_id: str,
                 lang: str | None = None) -> Iterator[object]:
        """Like ``reply``, knowing the messageId; may yield the typed outputs too."""

    def answers_with_message(self, message_id: str) -> bool:
        """Whether this message's first output may be a :class:`Reply`."""


class PersonaBackend:
    """An ovos-persona ``Persona``; the A2A contextId is its session."""

    def __init__(self, config: dict) -> None:
        from ovos_persona import Persona

        self.config = config
        self.name = config.get("name") or "OVOS persona"
        self.description = config.get("description") or f"The OVOS persona {self.name}."
        self.persona = Persona(self.name, config)
        self._handlers = list(config.get("handlers") or config.get("solvers") or [])

    @classmethod
    def from_file(cls, path: str | os.PathLike | None) -> "PersonaBackend":
        """Load a persona JSON file (the embedded default persona when ``path`` is None)."""
        path = Path(path) if path else DEFAULT_PERSONA
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read persona file {path}: {exc}") from exc
        if not isinstance(config, dict):
            raise ValueError(f"persona file {path} is not a JSON object")
        config.setdefault("name", path.stem)
        return cls(config)

    def capabilities(self) -> list[Capability]:
        return [Capability(id=h, name=h, description=f"Answers through the OVOS plugin {h}.")
                for h in self._handlers]

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        from ovos_bus_client.session import Session

        session = Session(session_id)
        if lang:
            session.lang = lang
        messages = self.persona.get_messages(text, session)
        said = []
        for sentence in self.persona.stream(messages, session):
            if sentence and sentence.strip():
                said.append(sentence.strip())
                yield sentence.strip()
        if not said:
            error = getattr(self.persona.solvers, "last_error", None)
            raise NoAnswerError(f"the persona had no answer ({error})" if error else "the persona had no answer")
        self.persona.remember(text, " ".join(said), session)
        if self._relay_waits_for_user(session_id):
            yield Question()

    def interrupt(self, session_id: str) -> None:
        """End ``session_id``'s turn where it is: every relaying handler that can stop its
        remote work mid-turn does (a persona step has no other way out than its next sentence)."""
        for handler in self.persona.solvers.loaded_modules.values():
            if isinstance(handler, StoppableRelay):
                handler.stop(session_id)

    def _relay_waits_for_user(self, session_id: str) -> bool:
        """Whether a relaying handler left its remote task waiting for the user: then this
        task waits too, and the next message continues it."""
        return any(isinstance(handler, RelayingHandler) and handler.has_open_task(session_id)
                   for handler in self.persona.solvers.loaded_modules.values())


#: the echo commands whose reply waits (sleeps) between or before its sentences
ECHO_WAITING_COMMANDS = ("sleep", "slow")


class EchoBackend:
    """A scripted backend for tests, demos and benchmarks; no OVOS needed.

    ``"echo: <text>"`` per message, with commands (words after N are ignored): ``sleep:N`` (one uninterruptible step of
    N s), ``slow:N`` (five sentences, N s apart), ``ask:Q`` (asks Q back: input-required),
    ``fail``, ``fail:after`` (one sentence, then fails), ``flaky:N`` (fails the first N calls of a session, then echoes), ``empty``, ``remember X`` /
    ``recall`` (per session). If ``call_log`` is set, each call appends a line there.
    """

    name = "echo"
    description = "Echoes what it is told (a test backend)."

    def __init__(self, call_log: str | None = None) -> None:
        self.call_log = call_log
        self._memory: dict[str, str] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def capabilities(self) -> list[Capability]:
        return [Capability(id="echo", name="echo", description="Repeats the message.")]

    def answers_at_once(self, text: str) -> bool:
        """Whether the reply to ``text`` waits on nothing (no sleep, no call log to write),
        so that the bridge may compute it on its event loop."""
        return not self.call_log and text.strip().partition(":")[0] not in ECHO_WAITING_COMMANDS

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        with self._lock:
            if self.call_log:
                with open(self.call_log, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"session": session_id, "text": text}) + "\n")
        command, _, arg = text.strip().partition(":")
        seconds = float((arg.split() or ["1"])[0]) if command in ECHO_WAITING_COMMANDS else 0.0
        if command == "sleep":
            time.sleep(seconds)
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


class ScenarioBackend(EchoBackend):
    """The A2A conformance kit's test agent: the messageId's prefix picks a scripted
    scenario (as the kit's reference agent does). Any other message is echoed and the task
    then waits for input, so that a plain message's task can be continued, given a longer
    history, or canceled afterwards (what the 0.3 kit's mandatory tests do with it)."""

    name = "scenarios"
    description = "Follows the A2A conformance kit's scenarios by messageId prefix; echoes the rest (a test backend)."
    RESUBSCRIBE_SECONDS = 4.0

    def answers_with_message(self, message_id: str) -> bool:
        """Whether the answer to this message may be a :class:`Reply` (no task)."""
        return message_id.startswith("tck-message-response")

    def answers_at_once(self, text: str) -> bool:
        """Never: scenarios pick their script by messageId, and some of them wait."""
        return False

    def capabilities(self) -> list[Capability]:
        return [Capability(id="tck", name="TCK scenarios", description="Follows the conformance kit's scenarios."),
                *super().capabilities()]

    def reply_to(self, text: str, message_id: str, session_id: str, lang: str | None = None) -> Iterator[object]:
        from a2a.types import Part
        from google.protobuf import json_format
        from google.protobuf.struct_pb2 import Value

        def starts(prefix: str) -> bool:
            return message_id.startswith(prefix)

        file_part = Part(raw=b"tck", media_type="text/plain", filename="output.txt")
        if starts("tck-stream-artifact-chunked"):
            yield ArtifactOutput(Part(text="chunk-1 "))
            yield ArtifactOutput(Part(text="chunk-2"), append=True, last_chunk=True)
        elif starts("test-resubscribe-message-id"):
            yield "Working on it."
            time.sleep(self.RESUBSCRIBE_SECONDS)
            yield "Done."
        elif starts("tck-stream-artifact-text"):
            yield ArtifactOutput(Part(text="Streamed text content"), last_chunk=True)
        elif starts("tck-stream-artifact-file"):
            yield ArtifactOutput(file_part, last_chunk=True)
        elif starts("tck-stream-ordering-001"):
            yield ArtifactOutput(Part(text="Ordered output"), last_chunk=True)
        elif starts("tck-artifact-file-url"):
            yield ArtifactOutput(Part(url="https://example.com/output.txt", media_type="text/plain",
                                      filename="output.txt"), last_chunk=True)
        elif starts("tck-message-response"):
            yield Reply("Direct message response")
        elif starts("tck-input-required"):
            yield Question("Please provide more input.")
        elif starts("tck-complete-task"):
            yield Completion("Hello from TCK")
        elif starts("tck-artifact-text"):
            yield ArtifactOutput(Part(text="Generated text content"), last_chunk=True)
        elif starts("tck-artifact-file"):
            yield ArtifactOutput(file_part, last_chunk=True)
        elif starts("tck-artifact-data"):
            yield ArtifactOutput(Part(data=json_format.Parse('{"key": "value", "count": 42}', Value())),
                                 last_chunk=True)
        elif starts("tck-reject-task"):
            yield Rejection("Rejected by the scenario.")
        elif starts("tck-stream-001"):
            yield ArtifactOutput(Part(text="Stream hello from TCK"), last_chunk=True)
        elif starts("tck-stream-002"):
            yield Completion("Done.")
        elif starts("tck-stream-003"):
            yield ArtifactOutput(Part(text="Stream task lifecycle"), last_chunk=True)
        else:  # no scenario: echo, and keep the conversation open (a follow-up continues the task)
            asked = False
            for item in self.reply(text, session_id, lang):
                asked = asked or isinstance(item, Question)
                yield item
            if not asked:
                yield Question()
