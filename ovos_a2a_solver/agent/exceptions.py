# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The client's own errors, beside the a2a-sdk's, grouped by what a caller does about them.

Errors a caller sees are the a2a-sdk's own (``AgentCardResolutionError``,
``A2AClientTimeoutError``, ``A2AClientError`` and the protocol errors of
``a2a.utils.errors``), plus these: :class:`AgentTaskError` for a task the agent ended without
an answer, :class:`NoAnswerError` for a turn the agent ended without a word,
:class:`StillWorkingError` for a turn whose deadline passed while the agent went on working,
:class:`IncompleteAnswerError` for a reply that ended early,
:class:`ReplyTooLargeError` for a reply larger than the client reads,
:class:`CardSignatureError` for a card whose required signature is not valid,
:class:`MissingCredentialError` for a card whose security no credential satisfies (and
:class:`SignInRequiredError`, its kind for a person who has yet to sign in), :class:`SignInError`
for a sign-in that ended without tokens, :class:`SignInPendingError` for a turn whose deadline
passed while the person signs in, and :class:`CircuitOpenError` while an agent that failed
several turns in a row gets a rest.

It imports only the a2a-sdk's error classes, so any module may import it at the top.
"""
from __future__ import annotations

from a2a.client.errors import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.utils.errors import A2AError


class AgentTaskError(A2AError):
    """The agent ended the task as failed, rejected or canceled; ``reason`` is its own words."""

    def __init__(self, state: str, reason: str = "", task_id: str = "", context_id: str = "") -> None:
        self.state, self.reason, self.task_id, self.context_id = state, reason, task_id, context_id
        super().__init__(f"the agent {state} the task" + (f": {reason}" if reason else ""))


class NoAnswerError(A2AError):
    """The agent ended the turn without a word to say: it completed the task, answered with a
    message or asked back, and neither its artifacts, its status messages nor the task's history
    held any text. ``state`` is how the task was left ("completed", "input-required", ...; "" for
    a message reply)."""

    def __init__(self, state: str, task_id: str = "", context_id: str = "") -> None:
        self.state, self.task_id, self.context_id = state, task_id, context_id
        what = f"left task {task_id} {state}" if task_id and state else "replied"
        super().__init__(f"the agent gave no answer: it {what} without any text")


class StillWorkingError(A2AClientTimeoutError):
    """The turn's deadline passed while the agent's task was still working.

    The task is not canceled: it stays bound to the session, and its answer is delivered
    before the session's next one. ``task_id`` and ``context_id`` name it (``task_id`` is
    ``""`` when a blocking exchange ended before the agent named its task: it is then
    looked up by the message that started it).
    """

    def __init__(self, message: str, task_id: str, context_id: str = "") -> None:
        super().__init__(message)
        self.task_id, self.context_id = task_id, context_id


class IncompleteAnswerError(A2AClientError):
    """The agent's reply ended without a final state, naming no task that could be followed."""


class ReplyTooLargeError(A2AClientError):
    """A reply of the agent passed ``limit`` bytes (a JSON body, or one line of an event
    stream): it was not read further, and its connection was closed."""

    def __init__(self, limit: int, what: str = "reply") -> None:
        self.limit = limit
        super().__init__(f"the agent's {what} passed {limit} bytes, the most this client reads; the rest was not read")


class CardSignatureError(AgentCardResolutionError):
    """A signed card was required, and the agent's card has no valid signature: nothing is
    sent to the agent. ``reason`` is one of the constants below; the message says more."""

    UNSIGNED = "unsigned"                # the card carries no signature
    INVALID = "invalid signature"        # checked with a known key and wrong: tampered, or another key
    UNKNOWN_KEY = "unknown key"          # no key with the signature's kid where keys are looked up
    FOREIGN_KEY_SET = "jku not on the agent's origin"  # the card names keys elsewhere (and none are configured)
    NO_KEY_SET = "key set unavailable"   # the keys could not be read (unreachable, not a JWK Set)

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MissingCredentialError(A2AClientError):
    """The agent's card requires a security scheme that no configured credential satisfies;
    nothing was sent. ``schemes`` names the schemes of every requirement the card lists."""

    def __init__(self, message: str, schemes: tuple[str, ...] = ()) -> None:
        self.schemes = schemes
        super().__init__(message)


class SignInRequiredError(MissingCredentialError):
    """The agent needs the person to sign in (the device authorization grant of its card),
    and they have no token for it on this device, or theirs can no longer be refreshed;
    nothing was sent. ``sign_in`` is the person's token to get (``agent.sign_in.PersonToken``)."""

    def __init__(self, message: str, sign_in, schemes: tuple[str, ...] = ()) -> None:
        super().__init__(message, schemes)
        self.sign_in = sign_in


class SignInError(A2AClientError):
    """A sign-in ended without tokens: the person ``DENIED`` it, its code ``EXPIRED`` before
    they approved it, or the authorization server ``REFUSED`` the device; ``said`` is the
    sentence that tells the person."""

    DENIED = "denied"
    EXPIRED = "expired"
    REFUSED = "refused"

    def __init__(self, reason: str, message: str, said: str = "") -> None:
        super().__init__(message)
        self.reason, self.said = reason, said


class SignInPendingError(StillWorkingError):
    """The turn's deadline passed while the person signs in (the prompt was said): the message
    is kept, and sent once they have signed in; its answer is delivered as a task's that
    outlived its turn is. ``prompt`` is what the person was asked to do (``agent.sign_in.SignInPrompt``)."""

    def __init__(self, message: str, prompt, said: str = "") -> None:
        super().__init__(message, "", "")
        self.prompt = prompt
        self.said = said  # what the turn said before it ended (the prompt, an auth-required question)


class CircuitOpenError(A2AClientError):
    """The agent failed several turns in a row; turns fail at once until a cool-down has passed."""
