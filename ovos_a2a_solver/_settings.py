# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's settings: every key of the persona's ``ovos-a2a-solver`` block, typed and
defaulted here and nowhere else."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ovos_a2a_solver.agent.credentials import Credentials, origin_of, token_origins_of
from ovos_a2a_solver._defaults import (DEFAULT_ANSWER_CUT, DEFAULT_BREAKER_COOLDOWN, DEFAULT_BREAKER_THRESHOLD,
                                      DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_REPLY_BYTES, DEFAULT_MAX_RETRIES,
                                      DEFAULT_RETRY_BASE_DELAY, DEFAULT_STILL_WORKING,
                                      DEFAULT_STILL_WORKING_ANNOUNCED, DEFAULT_TIMEOUT)
from ovos_a2a_solver.persona_config import (DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS, PLUGIN_ID,
                                            agent_url_of)
from ovos_a2a_solver.setting_specs import BLANK_KEPT, read_settings, setting

#: The settings that make a :class:`Credentials` (one key per field, the same name).
CREDENTIAL_KEYS = tuple(f.name for f in fields(Credentials))


def _agent_url(value: Any) -> str:
    """``value`` as the agent's URL; ``ValueError`` unless it is an http(s) URL with a host."""
    if not isinstance(value, str) or "://" not in value or origin_of(value) is None:
        raise ValueError("must be the agent's http(s) URL")
    return value.strip()


def _bus_address(value: Any) -> tuple[tuple[str, Any], ...]:
    """``value`` as the messagebus's ``(key, value)`` pairs, sorted; ``ValueError`` unless it is
    an object of host, port, route or ssl."""
    if not isinstance(value, Mapping) or not set(value) <= {"host", "port", "route", "ssl"}:
        raise ValueError("must be an object with host, port, route or ssl")
    return tuple(sorted(value.items()))


@dataclass(frozen=True)
class EngineSettings:
    """Settings of one persona's A2A handler (see the README's settings table), each declared
    once (:func:`~ovos_a2a_solver.setting_specs.setting`): its kind, bounds and default."""

    agent_url: str = setting(kind=_agent_url, means="the agent's http(s) URL")
    auth_header: str | None = setting(None)
    # sent in the form the card's security schemes name (see ``Credentials``); an empty one is not set,
    # but an empty password is a password
    bearer_token: str | None = setting(None, secret=True, blank=BLANK_KEPT)
    api_key: str | None = setting(None, secret=True, blank=BLANK_KEPT)
    username: str | None = setting(None, blank=BLANK_KEPT)
    password: str | None = setting(None, secret=True, blank=BLANK_KEPT)
    oauth2_client_id: str | None = setting(None, blank=BLANK_KEPT)
    oauth2_client_secret: str | None = setting(None, secret=True, blank=BLANK_KEPT)
    timeout: float = setting(DEFAULT_TIMEOUT, kind=float, positive=True)
    streaming: bool = setting(False, kind=bool)
    trusted_origins: tuple[str, ...] = setting((), kind=tuple)
    oauth2_token_origins: tuple[str, ...] = setting((), kind=tuple,
                                                    help="token endpoints' origins that may get the client secret")
    namespace: str = setting("")
    state_file: str | None = setting(None, help="None: $XDG_STATE_HOME/ovos_a2a_solver/conversations.json")
    persist_conversations: bool = setting(True, kind=bool, help="False: keep the session map in memory only")
    max_conversations: int = setting(DEFAULT_MAX_CONVERSATIONS, kind=int, positive=True)
    conversation_ttl: float = setting(DEFAULT_CONVERSATION_TTL, kind=float, positive=True,
                                      help="seconds a conversation may sit idle before a new one starts")
    max_retries: int = setting(DEFAULT_MAX_RETRIES, kind=int, bounds=(0, 10),
                               help="resends of a message after a transient failure")
    retry_base_delay: float = setting(DEFAULT_RETRY_BASE_DELAY, kind=float, positive=True,
                                      help="seconds; the backoff doubles from here")
    breaker_threshold: int = setting(DEFAULT_BREAKER_THRESHOLD, kind=int, positive=True,
                                     help="failed turns in a row that open the circuit")
    breaker_cooldown: float = setting(DEFAULT_BREAKER_COOLDOWN, kind=float, positive=True,
                                      help="seconds the circuit stays open before a probe")
    still_working: str = setting(DEFAULT_STILL_WORKING,
                                 help="said when the deadline passes and the agent works on")
    still_working_announced: str = setting(DEFAULT_STILL_WORKING_ANNOUNCED,
                                           help="the same, when the answer will be announced")
    max_answer_chars: int = setting(DEFAULT_MAX_ANSWER_CHARS, kind=int, positive=True,
                                    help="characters of an answer read and said; a longer one is cut")
    max_reply_bytes: int = setting(DEFAULT_MAX_REPLY_BYTES, kind=int, positive=True,
                                   help="bytes of one reply body (a stream: one line) read")
    answer_cut: str = setting(DEFAULT_ANSWER_CUT, help="said after an answer cut at max_answer_chars")
    announce: bool = setting(True, kind=bool, help="say that answer over the OVOS messagebus once it is ready")
    messagebus: tuple[tuple[str, Any], ...] = setting((), kind=_bus_address,
                                                      help="host/port/route/ssl of the bus; () = the device's own")
    require_signed_card: bool = setting(False, kind=bool,
                                        help="refuse a card without a valid signature (A2A 1.0 §8.4)")
    card_public_key: str | None = setting(None, help="PEM / JWK / JWK Set file of the card's signing keys "
                                                     "(implies the above)")
    card_jwks_url: str | None = setting(None, help="URL of the JWK Set of the card's signing keys (implies it too)")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "EngineSettings":
        """Validate a persona config block; raise ``ValueError`` naming the bad key."""
        values = read_settings(cls, {**(config or {}), "agent_url": agent_url_of(config or {})}, PLUGIN_ID)
        for key in CREDENTIAL_KEYS:
            if values.get(key) == "" and not (key == "password" and values.get("username")):
                values[key] = None  # empty: not set (but an empty password is a password)
        try:
            Credentials(**{key: values.get(key) for key in CREDENTIAL_KEYS})
            token_origins_of(values.get("oauth2_token_origins", ()))
        except ValueError as exc:
            raise ValueError(f"{PLUGIN_ID}: {exc}") from None
        if "still_working" in values and "still_working_announced" not in values:
            values["still_working_announced"] = values["still_working"]  # one line of the persona's own
        settings = cls(**values)
        # a key file that cannot be used stops the persona now, not at its first card
        from ovos_a2a_solver.agent.signatures import signature_check
        try:
            signature_check(settings.agent_url, required=settings.require_signed_card,
                            public_key_file=settings.card_public_key, jwks_url=settings.card_jwks_url)
        except ValueError as exc:
            raise ValueError(f"{PLUGIN_ID}: {exc}") from None
        return settings

    @property
    def credentials(self) -> Credentials | None:
        """The credentials to send in the form the card names, if any are set."""
        credentials = Credentials(**{key: getattr(self, key) for key in CREDENTIAL_KEYS})
        return credentials if credentials else None
