# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's defaults and limits, each written once, and the client's policies that group
them (:class:`RetryPolicy`, :class:`BreakerPolicy`, :class:`CardTrust`, :class:`AnswerLimits`):
each checks its own values, by the specs of its settings. A leaf module (the standard library
and the shared :mod:`~ovos_a2a_solver.setting_specs` only) that every other module may import,
low or high in the stack. ``A2AClient`` takes the policies whole, and the persona's block
(``_settings``) reads their settings as keys of its own, so a setting of a policy is declared
here and nowhere else.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ovos_a2a_solver.setting_specs import CheckedSettings, setting

#: Seconds for one whole turn (card, request, the complete answer): the plugin's ``timeout``
#: key, ``A2AClient``'s ``timeout`` and the command line's ``--timeout``. One number, because
#: every caller waits for one turn on behalf of a person (who can ask for longer).
DEFAULT_TIMEOUT = 30.0

#: The largest agent card accepted, in bytes: a card is a page of JSON; a larger one is
#: refused (``AgentCardResolutionError``) as soon as the stream passes this size.
MAX_CARD_BYTES = 1024 * 1024
#: The largest JWK Set read to check a card's signature, in bytes (a key is a few hundred).
MAX_KEY_SET_BYTES = 64 * 1024

#: Sends of one turn retried after a transient failure (connection, HTTP 429/502/503/504),
#: with the same messageId, waiting base * 2**n seconds at most (full jitter), and never
#: past the turn's deadline.
DEFAULT_MAX_RETRIES = 2
DEFAULT_RETRY_BASE_DELAY = 0.2
#: After this many failed turns in a row the next turns fail at once, for the cool-down.
DEFAULT_BREAKER_THRESHOLD = 3
DEFAULT_BREAKER_COOLDOWN = 10.0

#: What the persona says when a turn's deadline passes while the agent is still working
#: (the answer then comes before the session's next one).
DEFAULT_STILL_WORKING = "That is taking a while. I will tell you the answer next time you talk to me."
#: The same line when the answer is to be announced over the OVOS messagebus once it is ready.
DEFAULT_STILL_WORKING_ANNOUNCED = "That is taking a while. I will tell you the answer as soon as I have it."
#: What the persona says when a turn's deadline passes while the person signs in for the agent
#: on another device (the answer then comes once they have, as the still-working one does).
DEFAULT_SIGN_IN_WAITING = "I will answer as soon as you have signed in."

#: The most characters of one answer read and handed to speech (256 Ki), counting what a
#: rewritten artifact says again: a longer answer is cut after its last sentence within them,
#: ``DEFAULT_ANSWER_CUT`` is said, and the rest is not read.
DEFAULT_MAX_ANSWER_CHARS = 256 * 1024
#: What the persona says after an answer cut at ``max_answer_chars``.
DEFAULT_ANSWER_CUT = "That answer was too long, so I stopped there."

#: The most bytes read of one reply of the agent (4 Mi), before any of it is parsed: a JSON
#: body (a blocking answer, GetTask, ListTasks, a card or a token), one line of an event
#: stream, one gRPC message. Past it the reply is refused (``ReplyTooLargeError``), reading
#: stops and its connection is closed. A stream's whole length is bounded by
#: ``max_answer_chars`` (what is said) and the turn's deadline, not by this.
DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class RetryPolicy(CheckedSettings):
    """How one request to the agent is tried again after a transient failure (a connection
    failure, HTTP 429, 502, 503, 504, gRPC UNAVAILABLE or RESOURCE_EXHAUSTED): the same
    message (its messageId) before any answer arrived, GetTask too, after a random wait up to
    ``retry_base_delay * 2**n`` seconds (full jitter, at most 5 s, at least the agent's
    ``Retry-After``), never past the turn's deadline. An agent that says it is busy (HTTP 429,
    gRPC RESOURCE_EXHAUSTED) did not take the message: it is asked again until the deadline."""

    max_retries: int = setting(DEFAULT_MAX_RETRIES, kind=int, bounds=(0, 10),
                               help=(
        "Resends of a message after a transient failure (connection failure, HTTP 502, 503, 504) before any answer "
        "arrived: the same `messageId`, so never a second turn. `GetTask` on a known task is retried the same way. "
        "An agent that says it is busy (HTTP 429, gRPC `RESOURCE_EXHAUSTED`) did not take the message: it is asked "
        "again, at its `Retry-After`, until the turn's `timeout`."))
    retry_base_delay: float = setting(DEFAULT_RETRY_BASE_DELAY, kind=float, positive=True,
                                      help=(
        "Seconds of the first backoff; each retry waits a random time up to twice the previous bound (full jitter, "
        "at most 5 s), at least the agent's `Retry-After`, and never past the turn's `timeout`."))


@dataclass(frozen=True)
class BreakerPolicy(CheckedSettings):
    """When the client stops asking an agent that keeps failing: after ``threshold`` failed
    turns in a row (the agent could not be asked or did not answer), turns fail at once
    (``CircuitOpenError``) for ``cooldown`` seconds; then one turn is let through as a probe,
    whose outcome closes the circuit or opens it again. (A persona's keys: ``breaker_threshold``,
    ``breaker_cooldown``.)"""

    threshold: int = setting(DEFAULT_BREAKER_THRESHOLD, kind=int, positive=True,
                             help=(
        "Failed turns in a row (the agent could not be asked or did not answer) after which the next turns fail at "
        "once (`CircuitOpenError`), without asking the agent."))
    cooldown: float = setting(DEFAULT_BREAKER_COOLDOWN, kind=float, positive=True,
                              help=(
        "Seconds the circuit stays open; then one turn is let through as a probe: an answer closes it, a failure "
        "opens it again. Logged each time. It bounds how long the persona keeps failing at once after the agent is "
        "back (`bench/bench_recovery.py`)."))


@dataclass(frozen=True)
class CardTrust(CheckedSettings):
    """Which agent cards the client believes: with ``require_signed_card``, only one with a
    valid signature (A2A 1.0 §8.4) by a key from ``card_public_key`` (a PEM, JWK or JWK Set
    file), ``card_jwks_url`` (a JWK Set's URL, on any origin) or, without those, the card's
    ``jku`` on the agent's own origin; either key source implies it. A card that fails is
    refused (``CardSignatureError``) and nothing is sent. ``signature_verifier``, instead of
    those, is your own check, called with each fetched card (a2a-sdk protobuf): raise to
    refuse it."""

    require_signed_card: bool = setting(False, kind=bool,
                                        help=(
        "`true` refuses a card without a valid signature (A2A 1.0 §8.4) by a key from `card_public_key`, "
        "`card_jwks_url` or, without those, the URL the signature names (`jku`) when it is on the agent's own "
        "origin: `CardSignatureError`, and no message is sent. Needs the `signing` extra."))
    card_public_key: str | None = setting(None, help=(
        "A PEM, JWK or JWK Set file of the keys that may sign the agent's card; a signature names its key by `kid` "
        "(a PEM key's is its RFC 7638 thumbprint, as the bridge names its key). Requires a signed card."))
    card_jwks_url: str | None = setting(None, help=(
        "The URL of the JWK Set whose keys may sign the card, on any origin; the card's own `jku` is then not used. "
        "Requires a signed card. Not with `card_public_key`."))
    signature_verifier: Callable[[Any], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.card_public_key and self.card_jwks_url:
            raise ValueError("give card_public_key or card_jwks_url, not both: they are two sources of the same keys")
        if self.signature_verifier is not None:
            if not callable(self.signature_verifier):
                raise ValueError(f"CardTrust: 'signature_verifier' must be a function of the card, "
                                 f"got {self.signature_verifier!r}")
            if self.signed:
                raise ValueError("give signature_verifier or the card signature settings (require_signed_card, "
                                 "card_public_key, card_jwks_url), not both")

    @property
    def signed(self) -> bool:
        """Whether a card must carry a valid signature (it is required, or a key source is named)."""
        return self.require_signed_card or bool(self.card_public_key or self.card_jwks_url)


@dataclass(frozen=True)
class AnswerLimits(CheckedSettings):
    """How much of an agent's answer is read. At most ``max_answer_chars`` characters are read
    and handed on, counting what a rewritten part gives again: a longer answer is cut after its
    last sentence within them, ``answer_cut`` is said as its last line, and the rest is not read
    (the stream is closed). At most ``max_reply_bytes`` bytes of one reply are read (a JSON body,
    one line of an event stream, one gRPC message): past it the turn fails with
    ``ReplyTooLargeError`` and the connection is closed."""

    max_answer_chars: int = setting(DEFAULT_MAX_ANSWER_CHARS, kind=int, positive=True,
                                    help=(
        "The most characters of one answer read and handed to speech (256 Ki), counting what is said again when "
        "the agent rewrites an artifact (`append: false`: from the sentence that changed). A longer answer is cut "
        "after its last whole sentence within them (or its last word, if no sentence ends there), and the "
        "`answer_cut` line is said after it; the rest of a streamed answer is not read. A blocking reply "
        "(`SendMessage`, `streaming: false`) arrives in one piece, of at most `max_reply_bytes`, and is cut the "
        "same way."))
    answer_cut: str = setting(DEFAULT_ANSWER_CUT, help=(
        "Said after an answer cut at `max_answer_chars` (`stream_task` shows it on a line of its own; `send_task` "
        "returns it as the answer's last line)."))
    max_reply_bytes: int = setting(DEFAULT_MAX_REPLY_BYTES, kind=int, positive=True,
                                   help=(
        "The most bytes read of one reply of the agent (4 MiB), counted as they arrive, before anything parses or "
        "holds them: a JSON body (a blocking answer, GetTask, ListTasks, a token), one line of an event stream (an "
        "SSE event), one gRPC message. A reply past it fails the turn with `ReplyTooLargeError`: reading stops "
        "there and the connection is closed. A stream's whole length is bounded by `max_answer_chars` and "
        "`timeout`, not by this."))
