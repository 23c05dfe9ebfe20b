# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's settings: every key of the persona's ``ovos-a2a-solver`` block, typed,
defaulted and described here and nowhere else (docs/plugin.md's settings table is made from
them: :func:`settings_table`)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ovos_a2a_solver.agent.credentials import Credentials, origin_of, token_origins_of
from ovos_a2a_solver._defaults import (DEFAULT_SIGN_IN_WAITING, DEFAULT_STILL_WORKING,
                                      DEFAULT_STILL_WORKING_ANNOUNCED, DEFAULT_TIMEOUT, AnswerLimits, BreakerPolicy,
                                      CardTrust, RetryPolicy)
from ovos_a2a_solver.persona_config import (DEFAULT_CONVERSATION_TTL, DEFAULT_MAX_CONVERSATIONS, PLUGIN_ID,
                                            agent_url_of)
from ovos_a2a_solver.setting_specs import BLANK_KEPT, group, persona_block_table, quoted, read_settings, setting

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
    """Settings of one persona's A2A handler, each declared once
    (:func:`~ovos_a2a_solver.setting_specs.setting`): its kind, bounds, default and meaning,
    from which the settings table of docs/plugin.md is made (:func:`settings_table`). The client's policies are groups: their settings are keys of the block too, read
    by the policy's own declarations, and the client is given each policy whole."""

    agent_url: str = setting(kind=_agent_url, means="the agent's http(s) URL", help=(
        "The agent's URL. The card is looked up at `<agent_url>/.well-known/agent-card.json`, then `…/agent.json`, "
        "then at the origin's root. A URL ending in `.json` is the card itself."))
    timeout: float = setting(DEFAULT_TIMEOUT, kind=float, positive=True, help=(
        "Seconds for the whole turn: card, request and the complete (streamed) answer, and the look-ups of an "
        "earlier turn's task (ListTasks, GetTask) made before it: one deadline they all share, never a fresh one "
        "each."))
    streaming: bool = setting(False, kind=bool, help=(
        "`continue_chat` also streams when the agent's card offers streaming (`stream_sentences` and "
        "`stream_tokens` always do)."))
    auth_header: str | None = setting(None, help=(
        '`"Bearer <token>"` or `"Basic <b64>"` is sent as `Authorization`; `"X-API-Key: <key>"` names its own '
        "header. Sent only to the origin of `agent_url`."))
    # sent in the form the card's security schemes name (see ``Credentials``); an empty one is not set,
    # but an empty password is a password
    bearer_token: str | None = setting(None, secret=True, blank=BLANK_KEPT, help=(
        "Sent as `Authorization: Bearer <token>` when the card requires an HTTP bearer, OAuth2 or OpenID Connect "
        "scheme (see [Credentials from the card](#credentials-from-the-card))."))
    api_key: str | None = setting(None, secret=True, blank=BLANK_KEPT, help=(
        "Sent when the card requires an API key scheme: in the header (or cookie) the scheme names."))
    username: str | None = setting(None, blank=BLANK_KEPT, help=(
        "Sent as `Authorization: Basic …` when the card requires an HTTP Basic scheme. Set both (the password "
        'may be `""`).'))
    password: str | None = setting(None, secret=True, blank=BLANK_KEPT, described_with="username")
    oauth2_client_id: str | None = setting(None, blank=BLANK_KEPT, help=(
        "When the card requires an OAuth2 scheme with a client-credentials flow: a token is fetched from the "
        "flow's `tokenUrl` and sent as Bearer; set both. When it asks for OAuth2 with a device-code flow, or "
        "OpenID Connect whose provider offers it: the client id the person signs in with (see [Signing a person "
        "in](#signing-a-person-in)); the secret too for a confidential client, none for a public one (most "
        "devices)."))
    oauth2_client_secret: str | None = setting(None, secret=True, blank=BLANK_KEPT, described_with="oauth2_client_id")
    trusted_origins: tuple[str, ...] = setting((), kind=tuple, help=(
        "Other origins (`https://host:port`, or `host:port` for gRPC) that may also receive `auth_header` and the "
        "credentials above, e.g. when the card names an interface on another host."))
    oauth2_token_origins: tuple[str, ...] = setting((), kind=tuple, help=(
        "Origins (`https://host:port`) of OAuth2 token endpoints that may receive `oauth2_client_id` and "
        "`oauth2_client_secret`, besides the agent's own origin and `trusted_origins`, e.g. "
        '`["https://login.example"]` when the card\'s `tokenUrl` is there. A card whose `tokenUrl` is on any '
        "other origin gets `MissingCredentialError` naming that origin and this setting, and nothing is sent "
        "there."))
    namespace: str = setting("", help=(
        "Keeps the conversations of this persona apart from another persona on the same device that uses the "
        "same agent."))
    state_file: str | None = setting(None, shown="$XDG_STATE_HOME/ovos_a2a_solver/conversations.json", help=(
        "Where the session → conversation map is kept. A file that cannot be read (corrupt, nested too deep) is "
        "moved aside; one that cannot be written is logged once as a warning and the map is kept in memory."))
    persist_conversations: bool = setting(True, kind=bool, help=(
        "`false` keeps the map in memory only (conversations restart with the process)."))
    max_conversations: int = setting(DEFAULT_MAX_CONVERSATIONS, kind=int, positive=True, help=(
        "Sessions kept per device; the least recently used go first."))
    conversation_ttl: float = setting(DEFAULT_CONVERSATION_TTL, kind=float, positive=True, help=(
        "Seconds a session may stay idle before its next message starts a new remote conversation."))
    retries: RetryPolicy = group(RetryPolicy)           # max_retries, retry_base_delay
    breaker: BreakerPolicy = group(BreakerPolicy, "breaker_")  # breaker_threshold, breaker_cooldown
    limits: AnswerLimits = group(AnswerLimits)         # max_answer_chars, answer_cut, max_reply_bytes
    still_working: str = setting(DEFAULT_STILL_WORKING, help=(
        "Said when `timeout` passes while the agent is still working on the task; the task stays bound to the "
        "session and its answer comes before the next one."))
    still_working_announced: str = setting(
        DEFAULT_STILL_WORKING_ANNOUNCED, shown=f'{quoted(DEFAULT_STILL_WORKING_ANNOUNCED)} (your `still_working`, '
                                               f'when only that is set)', help=(
            "Said in its place when the answer will be announced: `announce` is on and a messagebus is at hand."))
    sign_in_waiting: str = setting(DEFAULT_SIGN_IN_WAITING, help=(
        "Said when `timeout` passes while the person signs in on another device: the message is kept and sent "
        "once they have, and its answer is announced (or comes with the next utterance), as a task's that "
        "outlived its turn."))
    sign_in_file: str | None = setting(None, shown="$XDG_STATE_HOME/ovos_a2a_solver/sign_ins.json", help=(
        "Where the tokens people signed in for are kept, per agent and session (mode 0600, the conversation "
        "file's rules); the `ovos-a2a` command line uses the same file."))
    announce: bool = setting(True, kind=bool, help=(
        "Say that answer over the OVOS messagebus as soon as the agent has it (a `speak` message for the "
        "session); without a reachable bus, or with `false`, the next utterance hears it first."))
    messagebus: tuple[tuple[str, Any], ...] = setting((), kind=_bus_address, shown="the device's", help=(
        '`{"host", "port", "route", "ssl"}` of the OVOS messagebus to announce on, when it is not the device\'s '
        "own (`mycroft.conf` `websocket`)."))
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


def settings_table() -> str:
    """docs/plugin.md's table of the keys of a persona's block (Markdown): a row per setting
    (a pair set together shares one), its default and bounds, and its ``help``."""
    return persona_block_table(EngineSettings)
