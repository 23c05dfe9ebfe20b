# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What each outcome of a turn does to the session's conversation: one table, applied in
one place (the client's ``_record``).

A conversation is the session's contextId and, while the agent waits for the user or works
past the turn, its open task. :data:`KEPT` says what each :class:`Outcome` leaves of it;
:func:`effect_of_error` what an error of the protocol does to it.
"""
from __future__ import annotations

import enum

from a2a.types import TaskState
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from ovos_a2a_solver.persona_config import DEFAULT_MAX_CONVERSATIONS
from ovos_a2a_solver.states import WAITING_FOR_USER


class Outcome(enum.Enum):
    """How a turn ended, as far as its conversation is concerned."""

    ANSWERED = "answered"            # the task completed, or the agent answered with a message
    WAITING = "waiting"              # the agent asks back (input-required, auth-required)
    ENDED = "ended"                  # the agent failed, rejected or canceled the task
    CUT = "cut"                      # the answer was too long: cut, the rest not read
    STOPPED = "stopped"              # the turn was stopped, its task canceled
    STILL_WORKING = "still working"  # the deadline passed while the named task worked on
    UNNAMED = "unnamed"              # the deadline passed before the agent named the message's task
    INCOMPLETE = "incomplete"        # the reply ended while the task was still running
    SILENT = "silent"                # the agent completed, replied or asked back without a word


class Kept(enum.Enum):
    """What a conversation keeps after an outcome."""

    CONTEXT = "context"                  # the contextId; the next message starts a new task in it
    OPEN_TASK = "open task"              # the contextId and the task: the next message continues the task
    PENDING_TASK = "pending task"        # the contextId and the task, whose answer comes later
    PENDING_MESSAGE = "pending message"  # the contextId and the message, whose task is looked up later


#: what each outcome leaves of the conversation
KEPT = {
    Outcome.ANSWERED: Kept.CONTEXT,
    Outcome.WAITING: Kept.OPEN_TASK,
    Outcome.ENDED: Kept.CONTEXT,
    Outcome.CUT: Kept.CONTEXT,
    Outcome.STOPPED: Kept.CONTEXT,
    Outcome.STILL_WORKING: Kept.PENDING_TASK,
    Outcome.UNNAMED: Kept.PENDING_MESSAGE,
    Outcome.INCOMPLETE: Kept.CONTEXT,
    Outcome.SILENT: Kept.CONTEXT,  # a task that asked back without a word is let go: the next utterance is heard
}


class Effect(enum.Enum):
    """What a turn's outcome does to the session's conversation."""

    KEEP = "keep"                          # same context, same open task (if any)
    FORGET_TASK = "forget_task"            # the task is gone; the next message starts a new task in the same context
    NEW_CONVERSATION = "new_conversation"  # the context was refused or expired: drop it and never send it again


# (protocol errors, effect when the message named a task, effect when it named only a context)
ERROR_EFFECTS: tuple[tuple[tuple[type[A2AError], ...], Effect, Effect], ...] = (
    ((TaskNotFoundError, UnsupportedOperationError), Effect.FORGET_TASK, Effect.NEW_CONVERSATION),
    ((InvalidParamsError,), Effect.NEW_CONVERSATION, Effect.NEW_CONVERSATION),
)

# Final task states and what they mean for the session (the waiting states: ``states.WAITING_FOR_USER``).
ANSWERED = frozenset({TaskState.TASK_STATE_COMPLETED})
ENDED_WITHOUT_ANSWER = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
}


def outcome_of(state: int | None, message_reply: bool, has_words: bool = True) -> Outcome:
    """The outcome of a reply that ended: its task's last ``state``; ``message_reply``: the
    agent answered with a message instead of a task; ``has_words``: the reply gave something
    to say (an answer or a question)."""
    if message_reply or state in ANSWERED or state in WAITING_FOR_USER:
        if not has_words:
            return Outcome.SILENT
        return Outcome.WAITING if state in WAITING_FOR_USER and not message_reply else Outcome.ANSWERED
    if state in ENDED_WITHOUT_ANSWER:
        return Outcome.ENDED
    return Outcome.INCOMPLETE


def effect_of_error(exc: BaseException, named_task: bool, named_context: bool, refused: bool = False,
                    failed_before: bool = False) -> Effect:
    """The conversation effect of an error raised by a send.

    The errors of :data:`ERROR_EFFECTS` say what the agent no longer has. Beyond them, a
    continuation the agent ``refused`` for good (an error of its own or an HTTP status that
    is not transient, see ``agent.request_failures.refused_for_good``) lets go of the open task, so that
    the session's next utterance starts a new task in the same context instead of failing
    the same way until the conversation expires. Timeouts, lost connections and transient
    statuses keep the conversation: the agent may still hold it, and the user's next
    utterance should continue there; but a continuation of a task whose continuation
    ``failed_before`` (the last turn, see :class:`FailedContinuations`) lets go of it,
    whatever the failure.
    """
    if not (named_task or named_context):
        return Effect.KEEP
    for errors, with_task, with_context in ERROR_EFFECTS:
        if isinstance(exc, errors):
            return with_task if named_task else with_context
    return Effect.FORGET_TASK if named_task and (refused or failed_before) else Effect.KEEP


class FailedContinuations:
    """Per session, the open task whose continuation failed in the session's last turn.

    The safety net for a peer that cannot say it forgot a task: its stream is cut mid-body,
    or it answers 503 (or 500) to every continuation. A failure that keeps the task is
    given one more try; the second failure in a row of a continuation of the same task
    lets go of it, and the next utterance starts a new task in the same context."""

    def __init__(self, most: int = DEFAULT_MAX_CONVERSATIONS) -> None:
        self._last: dict[str, str] = {}  # oldest first: beyond ``most`` sessions, the oldest is forgotten
        self.most = most

    def failed(self, session_id: str, task_id: str) -> bool:
        """Note that the continuation of ``task_id`` failed; whether the last turn's did too."""
        again = self._last.pop(session_id, None) == task_id
        self._last[session_id] = task_id
        if len(self._last) > self.most:
            del self._last[next(iter(self._last))]
        return again

    def ended(self, session_id: str) -> None:
        """The session's turn came to an outcome: the failures in a row start again."""
        self._last.pop(session_id, None)
