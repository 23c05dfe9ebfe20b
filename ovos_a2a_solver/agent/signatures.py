# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Signed agent cards on the client side: when a signature is required, every card fetched
must carry a valid one (A2A 1.0 §8.4), or the card is refused with a
:class:`~ovos_a2a_solver.agent.exceptions.CardSignatureError` and nothing is sent to the agent.

Where the public keys come from, one source per client:

1. a configured key file (``card_public_key``): PEM, JWK or JWK Set;
2. a configured JWK Set URL (``card_jwks_url``);
3. otherwise the signature's own ``jku``, and only when it is on the agent's origin
   (scheme, host and port of the agent URL; a redirect elsewhere is refused too). A card
   that names keys on another origin is refused: whoever serves the card would choose the
   key that vouches for it.

A signature is checked with the key whose ``kid`` it names (a PEM key's kid is its RFC 7638
thumbprint, as the bridge names its key). The check runs once per card fetched: a card
revalidated with 304 keeps its check, and key sets are read then, with the card's own HTTP
client and a size cap (``MAX_KEY_SET_BYTES``).

The signature itself is checked by the a2a-sdk (``create_signature_verifier``), so the
canonical form is the SDK's: it leaves out every empty value, also empty required fields,
before RFC 8785, where A2A 1.0 §8.4.1 keeps required fields. A card signed by the a2a-sdk
(the bridge) always agrees; one signed by a spec-literal signer agrees unless it has an empty
required field (an empty description, no skills).
"""
from __future__ import annotations

import base64
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ovos_a2a_solver._defaults import CardTrust
from ovos_a2a_solver.agent.credentials import origin_of

if TYPE_CHECKING:  # pragma: no cover
    from a2a.types import AgentCard as ProtoAgentCard

    from ovos_a2a_solver.jwk import CardKey

#: ``read(url) -> (HTTP status, the URL the answer came from, body)``: a GET that follows
#: redirects and reads at most ``MAX_KEY_SET_BYTES``; raises ``httpx.HTTPError`` or
#: ``AgentCardResolutionError`` (too large).
KeySetReader = Callable[[str], Awaitable[tuple[int, str, bytes]]]


def signature_check(agent_url: str, trust: CardTrust) -> "SignatureCheck | CustomCheck | None":
    """The check every fetched card of ``agent_url`` must pass as ``trust`` says, or ``None``
    for none.

    Raises ``ValueError`` naming the setting for a key file that cannot be used, or a key set
    URL that is not http(s). Reads the key file, but imports neither httpx nor the a2a-sdk
    (the plugin's settings use it to check a persona's config when it loads).
    """
    if trust.signature_verifier is not None:
        return CustomCheck(trust.signature_verifier)
    if not trust.signed:
        return None
    public_key_file, jwks_url = trust.card_public_key, trust.card_jwks_url
    if jwks_url and (urlsplit(jwks_url).scheme not in ("http", "https") or origin_of(jwks_url) is None):
        raise ValueError(f"card_jwks_url must be an http(s) URL, got {jwks_url!r}")
    from ovos_a2a_solver.jwk import KeyFileError, read_public_keys

    keys = None
    if public_key_file:
        try:
            keys = read_public_keys(public_key_file)
        except KeyFileError as exc:
            raise ValueError(f"card_public_key: {exc}") from None
    else:  # fail now, not at the first card, when the signing extra is missing
        import importlib.util

        from ovos_a2a_solver.jwk import SIGNING_EXTRA

        missing = [m for m in ("jwt", "cryptography") if importlib.util.find_spec(m) is None]
        if missing:
            raise ValueError(f"signed agent cards need PyJWT and cryptography (missing: {', '.join(missing)}): "
                             f"{SIGNING_EXTRA}")
    return SignatureCheck(agent_url, keys=keys, jwks_url=jwks_url or None)


def protected_header(signature) -> dict | None:
    """The decoded protected header of an ``AgentCardSignature``, or ``None`` if unreadable."""
    try:
        text = signature.protected
        header = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, TypeError):
        return None
    return header if isinstance(header, dict) else None


class SignatureCheck:
    """Requires a valid signature by a key from one source (see the module's docstring)."""

    def __init__(self, agent_url: str, *, keys: "list[CardKey] | None" = None, jwks_url: str | None = None) -> None:
        self.agent_origin = origin_of(agent_url)
        self.keys = {k.kid: k for k in keys} if keys is not None else None
        self.jwks_url = jwks_url

    async def check(self, card: "ProtoAgentCard", card_url: str, read: KeySetReader) -> None:
        """Return when ``card`` has a valid signature; raise :class:`CardSignatureError` otherwise."""
        from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
        from jwt.exceptions import PyJWKError

        from ovos_a2a_solver.agent.exceptions import CardSignatureError
        from ovos_a2a_solver.jwk import ALGORITHMS

        where = f"the agent card at {card_url}"
        if not card.signatures:
            raise CardSignatureError(CardSignatureError.UNSIGNED,
                                     f"{where} is not signed, and a signed card is required")
        key_sets = await self._key_sets([protected_header(s) for s in card.signatures], where, read)
        problems: list[tuple[str, str]] = []  # (reason, detail), one per signature that had no key
        tried: list[str] = []                 # kids of the keys signatures were checked with

        def key_for(kid: str | None, jku: str | None):
            source, keys = self._source(jku, key_sets)
            if keys is None:  # a jku elsewhere, or none at all
                problems.append(source)
                raise PyJWKError(source[1])
            key = keys.get(kid) if isinstance(kid, str) else None
            if key is None:
                detail = f"{where} is signed with an unknown key: kid {kid!r} is not in {source}"
                problems.append((CardSignatureError.UNKNOWN_KEY, detail))
                raise PyJWKError(detail)
            tried.append(kid)
            return key.verification_key()

        try:
            create_signature_verifier(key_for, list(ALGORITHMS))(card)
        except InvalidSignaturesError:
            if tried or not problems:
                raise CardSignatureError(
                    CardSignatureError.INVALID,
                    f"{where} has an invalid signature" + (f" for key {tried[0]!r}" if tried else "") +
                    ": the card was changed after it was signed, or signed by another key") from None
            reason, detail = problems[0]
            raise CardSignatureError(reason, detail) from None

    def _source(self, jku: str | None, key_sets: dict) -> tuple[Any, dict | None]:
        """(where keys are looked up, those keys) for a signature naming ``jku``; the keys are
        ``None`` when there is nowhere to look, and the first item is then (reason, detail)."""
        from ovos_a2a_solver.agent.exceptions import CardSignatureError

        if self.keys is not None:
            return "the configured key file (card_public_key)", self.keys
        if self.jwks_url is not None:
            return f"the key set at {self.jwks_url} (card_jwks_url)", key_sets[self.jwks_url]
        if not isinstance(jku, str) or not jku:
            return (CardSignatureError.UNKNOWN_KEY, "the card's signature names no key set (jku), and no key is "
                                                    "configured (card_public_key, card_jwks_url)"), None
        if jku not in key_sets:
            return (CardSignatureError.FOREIGN_KEY_SET,
                    f"the card's signature names keys at {jku}, not on the agent's origin; refused (to trust "
                    f"keys there, configure card_jwks_url)"), None
        return f"the key set at {jku} (the card's jku)", key_sets[jku]

    async def _key_sets(self, headers: list[dict | None], where: str, read: KeySetReader) -> dict:
        """The key sets the signatures need, read once each: ``{url: {kid: CardKey}}``."""
        if self.keys is not None:
            return {}
        if self.jwks_url is not None:
            return {self.jwks_url: await self._read_key_set(self.jwks_url, read, same_origin=False)}
        sets = {}
        for header in headers:
            jku = header.get("jku") if header else None
            if isinstance(jku, str) and jku not in sets and origin_of(jku) == self.agent_origin and "://" in jku:
                sets[jku] = await self._read_key_set(jku, read, same_origin=True)
        return sets

    async def _read_key_set(self, url: str, read: KeySetReader, *, same_origin: bool) -> dict:
        import httpx
        from a2a.client import AgentCardResolutionError

        from ovos_a2a_solver.agent.exceptions import CardSignatureError
        from ovos_a2a_solver.jwk import KeyFileError, parse_key_set

        def unavailable(why: str) -> CardSignatureError:
            return CardSignatureError(CardSignatureError.NO_KEY_SET, f"cannot read the card's key set at {url}: {why}")

        try:
            status, final_url, body = await read(url)
        except AgentCardResolutionError as exc:  # larger than the cap
            raise unavailable(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise unavailable(str(exc) or type(exc).__name__) from exc
        if same_origin and origin_of(final_url) != self.agent_origin:
            raise CardSignatureError(CardSignatureError.FOREIGN_KEY_SET,
                                     f"the card's key set at {url} redirects to {final_url}, not on the agent's "
                                     f"origin; refused")
        if status != 200:
            raise unavailable(f"HTTP {status}")
        try:
            return {k.kid: k for k in parse_key_set(body, url)}
        except KeyFileError as exc:
            raise unavailable(str(exc)) from None


class CustomCheck:
    """A caller's own verifier (``signature_verifier``), its refusals as :class:`CardSignatureError`."""

    def __init__(self, verifier: Callable[[Any], None]) -> None:
        self.verifier = verifier

    async def check(self, card: "ProtoAgentCard", card_url: str, read: KeySetReader) -> None:
        from ovos_a2a_solver.agent.exceptions import CardSignatureError

        try:
            self.verifier(card)
        except Exception as exc:
            reason = CardSignatureError.UNSIGNED if _unsigned(exc) else CardSignatureError.INVALID
            raise CardSignatureError(reason, f"the agent card at {card_url} failed signature verification: "
                                             f"{exc}") from exc


def _unsigned(exc: BaseException) -> bool:
    """Whether a verifier refused the card for carrying no signature: the a2a-sdk's
    ``NoSignatureError`` (the signing helpers, loaded only where a verifier uses them)."""
    signing = sys.modules.get("a2a.utils.signing")
    return signing is not None and isinstance(exc, getattr(signing, "NoSignatureError", ()))
