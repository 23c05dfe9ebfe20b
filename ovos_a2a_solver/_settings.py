# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's settings: every key of the persona's ``ovos-a2a-solver`` block, typed and
defaulted here and nowhere else."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ovos_a2a_solver.agent.credentials import Credentials, origin_of, token_origins_of
from ovos_a2a_solver._defaults import (DEFAULT_SIGN_IN_WAITING, DEFAULT_STILL_WORKING,
                                      DEFAULT_STILL_WORKING_ANNOUNCED, DEFAULT_TIMEOUT, AnswerLimits, BreakerPolicy,
                                      CardTrust, RetryPolicy)
from ovos_a2a_solver.persona_config import (DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS, PLUGIN_ID,
                                            agent_url_of)
from ovos_a2a_solver.setting_specs import BLANK_KEPT, group, read_settings, setting

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
    """Settings of one persona's A2A handler (see the settings table of docs/plugin.md), each
    declared once (:func:`~ovos_a2a_solver.setting_specs.setting`): its kind, bounds and
    default. The client's policies are groups: their settings are keys of the block too, read
    by the policy's own declarations, and the client is given each policy whole."""

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
    retries: RetryPolicy = group(RetryPolicy)           # max_retries, retry_base_delay
    breaker: BreakerPolicy = group(BreakerPolicy, "breaker_")  # breaker_threshold, breaker_cooldown
    still_working: str = setting(DEFAULT_STILL_WORKING,
                                 help="said when the deadline passes and the agent works on")
    still_working_announced: str = setting(DEFAULT_STILL_WORKING_ANNOUNCED,
                                           help="the same, when the answer will be announced")
    sign_in_waiting: str = setting(DEFAULT_SIGN_IN_WAITING,
                                   help="said when the deadline passes while the person signs in")
    sign_in_file: str | None = setting(None, help="None: $XDG_STATE_HOME/ovos_a2a_solver/sign_ins.json")
    limits: AnswerLimits = group(AnswerLimits)         # max_answer_chars, answer_cut, max_reply_bytes
    announce: bool = setting(True, kind=bool, help="say that answer over the OVOS messagebus once it is ready")
    messagebus: tuple[tuple[str, Any], ...] = setting((), kind=_bus_address,
                                                      help="host/port/route/ssl of the bus; () = the device's own")
    card_trust: CardTrust = group(CardTrust)            # require_signed_card, card_public_key, card_jwks_url

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
            signature_check(settings.agent_url, settings.card_trust)
        except ValueError as exc:
            raise ValueError(f"{PLUGIN_ID}: {exc}") from None
        return settings

    @property
    def credentials(self) -> Credentials | None:
        """The credentials to send in the form the card names, if any are set."""
        credentials = Credentials(**{key: getattr(self, key) for key in CREDENTIAL_KEYS})
        return credentials if credentials else None
