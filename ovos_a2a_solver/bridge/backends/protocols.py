# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the bridge needs from whatever answers (:class:`Backend` and the abilities a backend
may have besides), and the typed outputs a backend may yield.

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

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class FollowsProgress(Protocol):
    """What hears the progress notes ("Searching flights…") a remote agent sends during a
    session's turn: a relaying handler (this package's A2A plugin) and the persona backend
    that has one. The notes are never part of the answer."""

    def follow_progress(self, session_id: str, listener: Callable[[str], None] | None) -> None:
        """Call ``listener`` with each progress note of ``session_id``'s turns from now on
        (from any thread); ``None`` stops that. One listener per session: the newest."""


@dataclass(frozen=True)
class Capability:
    """One thing the backend can do, for the card's skill list. ``declared``: the persona's own
    words (its file's ``skills``), with the ``examples`` it answers, not derived from its handlers."""

    id: str
    name: str
    description: str
    examples: tuple[str, ...] = ()
    tags: tuple[str, ...] = ("handler",)
    declared: bool = False


class Backend(Protocol):
    """The interface the bridge needs from whatever answers."""

    name: str
    description: str

    def capabilities(self) -> list[Capability]:
        """What the backend really has (one per persona handler)."""

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        """The answer's sentences, in order, and a :class:`Question` last if the user must
        answer back. Raise to fail the turn."""


@runtime_checkable
class MessageRoutedBackend(Backend, Protocol):
    """A backend that also reads the message's id and may answer with typed outputs; one
    whose first output may be a :class:`Reply` (the executor then waits for that first
    output before it creates a task)."""

    def reply_to(self, text: str, message_id: str, session_id: str,
                 lang: str | None = None) -> Iterator[object]:
        """Like ``reply``, knowing the messageId; may yield the typed outputs too."""

    def answers_with_message(self, message_id: str) -> bool:
        """Whether this message's first output may be a :class:`Reply`."""


@runtime_checkable
class AnswersAtOnce(Protocol):
    """A backend that can tell which replies wait on nothing: those turns run on the event
    loop, without the hand-off to and from a thread (the echo's)."""

    def answers_at_once(self, text: str) -> bool:
        """Whether the reply to ``text`` is computed without waiting (no sleep, no I/O)."""


@runtime_checkable
class Interruptible(Protocol):
    """A backend that can end a session's turn in the middle of a step (a persona whose
    handler relays to another agent: it cancels the remote work)."""

    def interrupt(self, session_id: str) -> None:
        """End ``session_id``'s turn where it is."""
