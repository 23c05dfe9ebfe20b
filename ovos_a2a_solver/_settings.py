# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's settings: every key of the persona's ``ovos-a2a-solver`` block, typed and
defaulted here and nowhere else."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ovos_a2a_solver.agent.credentials import Credentials, origin_of, token_origins_of
from ovos_a2a_solver._defaults import (DEFAULT_ANSWER_CUT, DEFAULT_BREAKER_COOLDOWN, DEFAULT_BREAKER_THRESHOLD,
                                      DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_REPLY_BYTES, DEFAULT_MAX_RETRIES,
                                      DEFAULT_RETRY_BASE_DELAY, DEFAULT_STILL_WORKING,
                                      DEFAULT_STILL_WORKING_ANNOUNCED, DEFAULT_TIMEOUT)
from ovos_a2a_solver.persona_config import (DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS, agent_url_of,
                                            boolean_setting, positive_setting)

#: The settings that make a :class:`Credentials` (one key per field, the same name).
CREDENTIAL_KEYS = tuple(f.name for f in fields(Credentials))


@dataclass(frozen=True)
class EngineSettings:
    """Settings of one persona's A2A handler (see the README's settings table)."""

    agent_url: str
    auth_header: str | None = None
    # sent in the form the card's security schemes name (see ``Credentials``)
    bearer_token: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    oauth2_client_id: str | None = None
    oauth2_client_secret: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    streaming: bool = False
    trusted_origins: tuple[str, ...] = ()
    oauth2_token_origins: tuple[str, ...] = ()  # token endpoints' origins that may get the client secret
    namespace: str = ""
    state_file: str | None = None        # None: $XDG_STATE_HOME/ovos_a2a_solver/conversations.json
    persist_conversations: bool = True   # False: keep the session map in memory only
    max_conversations: int = DEFAULT_MAX_CONVERSATIONS
    conversation_ttl: float = DEFAULT_CONVERSATION_TTL   # seconds a conversation may sit idle before a new one starts
    max_retries: int = DEFAULT_MAX_RETRIES          # resends of a message after a transient failure
    retry_base_delay: float = DEFAULT_RETRY_BASE_DELAY  # seconds; the backoff doubles from here
    breaker_threshold: int = DEFAULT_BREAKER_THRESHOLD  # failed turns in a row that open the circuit
    breaker_cooldown: float = DEFAULT_BREAKER_COOLDOWN  # seconds the circuit stays open before a probe
    still_working: str = DEFAULT_STILL_WORKING  # said when the deadline passes and the agent works on
    still_working_announced: str = DEFAULT_STILL_WORKING_ANNOUNCED  # the same, when the answer will be announced
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS  # characters of an answer read and said; a longer one is cut
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # bytes of one reply body (a stream: one line) read
    answer_cut: str = DEFAULT_ANSWER_CUT  # said after an answer cut at max_answer_chars
    announce: bool = True                # say that answer over the OVOS messagebus once it is ready
    messagebus: tuple[tuple[str, Any], ...] = ()  # host/port/route/ssl of the bus; () = the device's own
    require_signed_card: bool = False    # refuse a card without a valid signature (A2A 1.0 §8.4)
    card_public_key: str | None = None   # PEM / JWK / JWK Set file of the card's signing keys (implies the above)
    card_jwks_url: str | None = None     # URL of the JWK Set of the card's signing keys (implies it too)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "EngineSettings":
        """Validate a persona config block; raise ``ValueError`` naming the bad key."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in (config or {}).items() if k in known}
        url = agent_url_of(config or {})
        if not isinstance(url, str) or "://" not in url or origin_of(url) is None:
            raise ValueError(f"ovos-a2a-solver: 'agent_url' must be the agent's http(s) URL, got {url!r}")
        values["agent_url"] = url.strip()
        for key in ("timeout", "conversation_ttl", "retry_base_delay", "breaker_cooldown"):
            if key in values:
                values[key] = positive_setting(key, values[key], float)
        for key in ("max_conversations", "breaker_threshold", "max_answer_chars", "max_reply_bytes"):
            if key in values:
                values[key] = int(positive_setting(key, values[key], int))
        if "max_retries" in values:
            retries = values["max_retries"]
            if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
                raise ValueError(f"ovos-a2a-solver: 'max_retries' must be a whole number from 0 to 10, got {retries!r}")
        if "messagebus" in values:
            bus = values["messagebus"] or {}
            if not isinstance(bus, Mapping) or not set(bus) <= {"host", "port", "route", "ssl"}:
                raise ValueError("ovos-a2a-solver: 'messagebus' must be an object with host, port, route or ssl")
            values["messagebus"] = tuple(sorted(bus.items()))
        for key in ("streaming", "persist_conversations", "announce", "require_signed_card"):
            if key in values:
                values[key] = boolean_setting(key, values[key])
        for key in ("trusted_origins", "oauth2_token_origins"):
            if key in values:
                origins = values[key]
                if isinstance(origins, str):
                    origins = [origins]
                values[key] = tuple(str(o) for o in origins or ())
        try:
            token_origins_of(values.get("oauth2_token_origins", ()))
        except ValueError as exc:
            raise ValueError(f"ovos-a2a-solver: {exc}") from None
        for key in ("auth_header", "state_file", "still_working", "still_working_announced", "answer_cut",
                    "card_public_key", "card_jwks_url"):
            if key in values and values[key] is not None and not isinstance(values[key], str):
                raise ValueError(f"ovos-a2a-solver: {key!r} must be a string")
        for key in ("card_public_key", "card_jwks_url"):
            values[key] = values.get(key) or None
        values["auth_header"] = values.get("auth_header") or None
        for key in CREDENTIAL_KEYS:
            if values.get(key) is not None and not isinstance(values[key], str):
                raise ValueError(f"ovos-a2a-solver: {key!r} must be a string")
            if values.get(key) == "" and not (key == "password" and values.get("username")):
                values[key] = None  # empty: not set (but an empty password is a password)
        try:
            Credentials(**{key: values.get(key) for key in CREDENTIAL_KEYS})
        except ValueError as exc:
            raise ValueError(f"ovos-a2a-solver: {exc}") from None
        values["namespace"] = str(values.get("namespace") or "")
        for key in ("still_working", "still_working_announced", "answer_cut"):
            if not (values.get(key) or "").strip():
                values.pop(key, None)  # empty: the default line
        if "still_working" in values and "still_working_announced" not in values:
            values["still_working_announced"] = values["still_working"]  # one line of the persona's own
        settings = cls(**values)
        # a key file that cannot be used stops the persona now, not at its first card
        from ovos_a2a_solver.agent.signatures import signature_check
        try:
            signature_check(settings.agent_url, required=settings.require_signed_card,
                            public_key_file=settings.card_public_key, jwks_url=settings.card_jwks_url)
        except ValueError as exc:
            raise ValueError(f"ovos-a2a-solver: {exc}") from None
        return settings

    @property
    def credentials(self) -> Credentials | None:
        """The credentials to send in the form the card names, if any are set."""
        credentials = Credentials(**{key: getattr(self, key) for key in CREDENTIAL_KEYS})
        return credentials if credentials else None
