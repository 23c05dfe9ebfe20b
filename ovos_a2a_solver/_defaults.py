# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's defaults and limits, each written once: a leaf module (the standard library
only) that every other module may import, low or high in the stack. The settings of the
persona's block (``_settings``) take their defaults from here.
"""
from __future__ import annotations

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
