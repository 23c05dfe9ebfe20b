# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which configured credential answers an agent card's security requirements, and in what form.

A card names its ``securitySchemes`` and lists ``securityRequirements``: alternatives,
each a set of schemes that must all be satisfied together. The first requirement that
the configured credentials satisfy is chosen, and each of its schemes is answered the
way it says:

* HTTP bearer: ``Authorization: Bearer <bearer_token>``
* HTTP basic: ``Authorization: Basic base64(username:password)``
* API key in a header (or a cookie): ``api_key`` in the header (cookie) the scheme names;
  an API key in the query is not supported (every logged URL would show it), nor in a
  header whose name is no header name (RFC 9110 token) or that the transport owns
  (``Host``, ``Content-Length``, ... see ``TRANSPORT_HEADERS``): such a scheme is refused
* OAuth2 with a client-credentials flow: a token from the flow's ``tokenUrl`` (RFC 6749
  §4.4), reused until it expires, sent as Bearer; or a ``bearer_token`` got elsewhere.
  The client secret goes only to a ``tokenUrl`` on the agent's origin, a trusted one, or
  one of ``oauth2_token_origins``: a card naming another is refused before anything is sent
* OAuth2 with a device-code flow, with ``oauth2_client_id`` (and a secret, for a confidential
  client): the token the person the request is for signed in for (``agent.sign_in``), by
  the same origin rules; or a ``bearer_token`` got elsewhere
* OpenID Connect: ``bearer_token``; or, with ``oauth2_client_id``, the person's sign-in at the
  provider its discovery document names, when it offers the device authorization grant

A card that declares such a sign-in scheme without requiring it still gets the token of a
person who signed in (the agent may ask for it mid-task: auth-required).

An ``auth_header`` satisfies every scheme that is sent in the header it names. A card
without requirements asks for nothing: then only ``auth_header`` is sent, as before.
When no requirement can be satisfied, :class:`MissingCredentialError` names the schemes
before anything is sent. Where the headers may go is decided in ``agent.credentials``.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from ovos_a2a_solver.agent.credentials import Credentials, OriginCredentials, token_url_refusal
from ovos_a2a_solver.agent.exceptions import MissingCredentialError
from ovos_a2a_solver.agent.sign_in import DeviceGrant, PersonToken
from ovos_a2a_solver.agent.tokens import expiry, token_request

LOG = logging.getLogger("ovos_a2a_solver")

#: Headers an API key may not be sent in, whatever a card says: the transport (HTTP/1.1,
#: HTTP/2, gRPC) and the A2A protocol set them, and a value of the card's choosing there
#: would reroute, cut or smuggle the request (compared in lower case; ``grpc-*`` too).
TRANSPORT_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
    "expect", "proxy-connection", "proxy-authorization", "proxy-authenticate", "content-type",
    "content-encoding", "accept-encoding", "a2a-version", "a2a-extensions"})
#: A header's name (RFC 9110 §5.1: a token) and a cookie's name (RFC 6265 §4.1.1: a token too).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class ClientCredentialsToken:
    """An OAuth2 access token got with the client-credentials grant, reused until it expires.

    The client authenticates to the token endpoint with HTTP Basic (RFC 6749 §2.3.1: id
    and secret form-encoded first). Concurrent requests wait for one fetch.
    """

    def __init__(self, http: httpx.AsyncClient, token_url: str, client_id: str, client_secret: str,
                 scopes: tuple[str, ...], *, clock: Callable[[], float] | None = None) -> None:
        self.token_url = token_url
        self._clock = clock or time.monotonic  # what the token's lifetime is measured in
        self.scopes = scopes
        self._http = http
        self._client_auth = httpx.BasicAuth(quote(client_id, safe=""), quote(client_secret, safe=""))
        self._authorization: str | None = None
        self._expires: float | None = None  # monotonic; None: until the agent refuses it
        self._lock = asyncio.Lock()

    def _fresh(self) -> str | None:
        if self._authorization and (self._expires is None or self._clock() < self._expires):
            return self._authorization
        return None

    async def authorization(self) -> str:
        """``Bearer <token>``, fetched when there is none or it expired."""
        current = self._fresh()
        if current:
            return current
        async with self._lock:
            current = self._fresh()
            if current:
                return current
            got = await self._fetch()
            self._authorization = f"Bearer {got.access_token}"
            self._expires = expiry(got.lifetime, self._clock())
            return self._authorization

    def forget(self, refused: str | None) -> None:
        """Drop the token if it is the one refused (a newer one stays)."""
        if refused is not None and refused == self._authorization:
            self._authorization = None

    async def renewed(self, refused: str | None) -> bool:
        """Drop the refused token and fetch another; True when the new one differs."""
        self.forget(refused)
        return await self.authorization() != refused

    async def _fetch(self):
        form = {"grant_type": "client_credentials"}
        if self.scopes:
            form["scope"] = " ".join(self.scopes)
        got = await token_request(self._http, self.token_url, form, what="the client credentials",
                                  auth=self._client_auth)
        LOG.info("got an OAuth2 token from %s%s", self.token_url,
                 f" for {got.lifetime:g} s" if got.lifetime is not None else "")
        return got


@dataclass(frozen=True)
class CardAuth:
    """The requirement chosen from a card, and the headers that satisfy it (a ``credentials.CardAnswer``)."""

    schemes: tuple[str, ...]
    fixed: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (header, value) pairs
    token: ClientCredentialsToken | PersonToken | None = None  # fetched: in Authorization

    async def headers(self) -> dict[str, str]:
        """The headers to send now (an OAuth2 token is fetched, or a person's refreshed, when
        needed; ``SignInRequiredError`` when the person must sign in first)."""
        headers = dict(self.fixed)
        if self.token is not None:
            authorization = await self.token.authorization()
            if authorization is not None:  # a sign-in the card only declares: nothing until the person has one
                headers["Authorization"] = authorization
        return headers

    @property
    def sign_in(self) -> PersonToken | None:
        """The person's sign-in this answer sends, if it sends one."""
        return self.token if isinstance(self.token, PersonToken) else None

    async def renewed(self, sent: dict[str, str]) -> bool:
        """A request with ``sent`` was refused: True when a fresh token is worth one more try."""
        return self.token is not None and await self.token.renewed(_authorization(sent))

    def forget(self, sent: dict[str, str]) -> None:
        """A request with ``sent`` was refused: fetch a new token next time."""
        if self.token is not None:
            self.token.forget(_authorization(sent))


def _authorization(headers: dict[str, str]) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == "authorization"), None)


@dataclass(frozen=True)
class _Answer:
    """How one scheme is answered: a header, a token, or the ``auth_header`` as it is."""

    header: str = ""
    value: str = field(default="", repr=False)
    token: ClientCredentialsToken | PersonToken | None = None


TokenFactory = Callable[[str, str, str, tuple[str, ...]], ClientCredentialsToken]
#: a person's token for a sign-in (a grant), required or not
PersonTokenFactory = Callable[[DeviceGrant, bool], PersonToken]


@dataclass(frozen=True)
class _Makers:
    """What answering a card's schemes needs besides the credentials."""

    agent: str
    token_allowed: Callable[[str], bool]
    tokens: TokenFactory
    person_tokens: PersonTokenFactory | None


def describe(scheme: Any) -> str:
    """A scheme in a few words: "HTTP bearer", "API key in header X-Key", "OAuth2", ..."""
    kind = scheme.WhichOneof("scheme")
    if kind == "http_auth_security_scheme":
        return f"HTTP {scheme.http_auth_security_scheme.scheme.lower() or 'auth'}"
    if kind == "api_key_security_scheme":
        key = scheme.api_key_security_scheme
        name = key.name if not key.name or _TOKEN.fullmatch(key.name) else repr(key.name)
        return f"API key in {key.location.lower() or 'header'} {name}".rstrip()
    return {"oauth2_security_scheme": "OAuth2", "open_id_connect_security_scheme": "OpenID Connect",
            "mtls_security_scheme": "mutual TLS"}.get(kind, "an unknown kind")


def _header_of(scheme: Any) -> str | None:
    """The header a scheme is sent in, if it is sent in one."""
    kind = scheme.WhichOneof("scheme")
    if kind in ("http_auth_security_scheme", "oauth2_security_scheme", "open_id_connect_security_scheme"):
        return "Authorization"
    if kind == "api_key_security_scheme":
        key = scheme.api_key_security_scheme
        location = key.location.lower()
        if not key.name or _api_key_refusal(location, key.name):
            return None  # refused: not even an auth_header of that name answers it
        return key.name if location == "header" else "Cookie" if location == "cookie" else None
    return None


def _api_key_refusal(location: str, name: str) -> str | None:
    """Why an API key may not go in the header (or cookie) ``name``; ``None`` if it may."""
    kind = "cookie" if location == "cookie" else "header"
    if not _TOKEN.fullmatch(name):
        return f"{name!r} is not a {kind} name: refused"
    if kind == "header" and (name.lower() in TRANSPORT_HEADERS or name.lower().startswith("grpc-")):
        return f"the {name} header belongs to the transport: refused"
    return None


def _sign_in(scheme: Any, name: str, scopes: tuple[str, ...], creds: Credentials, makers: _Makers,
             required: bool) -> PersonToken | str | None:
    """The person's sign-in that answers a device-code or OpenID Connect scheme, or why it cannot
    (what to set); ``None`` for a scheme that is no sign-in, or without ``oauth2_client_id``."""
    kind = scheme.WhichOneof("scheme")
    if creds.oauth2_client_id is None or makers.person_tokens is None:
        return None
    if kind == "oauth2_security_scheme" and scheme.oauth2_security_scheme.flows.HasField("device_code"):
        flow = scheme.oauth2_security_scheme.flows.device_code
        grant = DeviceGrant(makers.agent, name, creds.oauth2_client_id, creds.oauth2_client_secret,
                            scopes or tuple(sorted(flow.scopes)), makers.token_allowed,
                            device_authorization_url=flow.device_authorization_url, token_url=flow.token_url,
                            refresh_url=flow.refresh_url, metadata_url=scheme.oauth2_security_scheme.oauth2_metadata_url)
        for url, what in ((flow.device_authorization_url, "device authorization URL"), (flow.token_url, "token URL"),
                          (flow.refresh_url, "refresh URL")):
            refusal = grant.refusal(url, what) if url or what != "refresh URL" else None
            if refusal:
                return refusal
    elif kind == "open_id_connect_security_scheme":
        url = scheme.open_id_connect_security_scheme.open_id_connect_url
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            return f"its discovery URL {url!r} is not an http(s) URL"
        grant = DeviceGrant(makers.agent, name, creds.oauth2_client_id, creds.oauth2_client_secret,
                            scopes or ("openid",), makers.token_allowed, discovery_url=url)
    else:
        return None
    return makers.person_tokens(grant, required)


def _answer(scheme: Any, name: str, scopes: tuple[str, ...], creds: Credentials, makers: _Makers) -> _Answer | str:
    """How the typed credentials answer one scheme, or why they cannot (what to set)."""
    kind = scheme.WhichOneof("scheme")
    if kind == "http_auth_security_scheme":
        word = scheme.http_auth_security_scheme.scheme.lower()
        if word == "bearer":
            return _Answer("Authorization", f"Bearer {creds.bearer_token}") if creds.bearer_token else "set bearer_token"
        if word == "basic":
            if creds.username is None:
                return "set username and password"
            pair = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
            return _Answer("Authorization", f"Basic {pair}")
        return "set auth_header (the whole Authorization value)"
    if kind == "api_key_security_scheme":
        key = scheme.api_key_security_scheme
        location = key.location.lower()
        if not key.name or location not in ("header", "cookie"):
            return f"an API key in the {location or 'unknown place'} is not supported"
        refusal = _api_key_refusal(location, key.name)
        if refusal:
            return refusal
        if not creds.api_key:
            return "set api_key"
        if location == "cookie":
            return _Answer("Cookie", f"{key.name}={creds.api_key}")
        return _Answer(key.name, creds.api_key)
    if kind == "oauth2_security_scheme":
        flow = scheme.oauth2_security_scheme.flows
        has_flow = flow.HasField("client_credentials") and bool(flow.client_credentials.token_url)
        if creds.oauth2_client_id is not None and creds.oauth2_client_secret is not None and has_flow:
            url = flow.client_credentials.token_url
            refusal = token_url_refusal(url, "token URL", makers.token_allowed, "the client secret")
            if refusal:
                return refusal
            return _Answer(token=makers.tokens(url, creds.oauth2_client_id, creds.oauth2_client_secret, scopes))
        if creds.bearer_token:
            return _Answer("Authorization", f"Bearer {creds.bearer_token}")
        sign_in = _sign_in(scheme, name, scopes, creds, makers, required=True)
        if sign_in is not None:
            return sign_in if isinstance(sign_in, str) else _Answer(token=sign_in)
        if has_flow:
            return ("set oauth2_client_secret too (a client-credentials flow needs it)" if creds.oauth2_client_id
                    else "set oauth2_client_id and oauth2_client_secret (or bearer_token)")
        if flow.HasField("device_code"):
            return "set oauth2_client_id (the person signs in on another device; or set bearer_token)"
        return "it has no client-credentials or device-code flow: set bearer_token"
    if kind == "open_id_connect_security_scheme":
        if creds.bearer_token:
            return _Answer("Authorization", f"Bearer {creds.bearer_token}")
        sign_in = _sign_in(scheme, name, scopes, creds, makers, required=True)
        if sign_in is not None:
            return sign_in if isinstance(sign_in, str) else _Answer(token=sign_in)
        return "set bearer_token (or oauth2_client_id: the person signs in on another device)"
    return "not supported"


def _declared_sign_in(card: Any, creds: Credentials, makers: _Makers) -> PersonToken | None:
    """A sign-in scheme the card declares (required or not), answered without requiring it: a
    person who signed in sends their token; one who has not sends nothing."""
    for name, scheme in card.security_schemes.items():
        sign_in = _sign_in(scheme, name, (), creds, makers, required=False)
        if isinstance(sign_in, PersonToken):
            return sign_in
    return None


def card_auth(card: Any, credentials: OriginCredentials | None, tokens: TokenFactory,
              person_tokens: PersonTokenFactory | None = None) -> CardAuth | None:
    """The first of the card's requirements the credentials satisfy, as headers to send.

    ``None`` when the card requires nothing (and declares no sign-in the person may have
    made). Raises :class:`MissingCredentialError` naming the schemes (and what to set) when
    no requirement can be satisfied. ``person_tokens`` makes the token of a person's sign-in
    (without it, sign-in schemes are answered only by ``bearer_token``).
    """
    creds = (credentials.credentials if credentials else None) or Credentials()
    auth_header = credentials.header if credentials else None
    token_allowed = credentials.allows_token_request if credentials else (lambda url: False)
    makers = _Makers(card.name, token_allowed, tokens, person_tokens)
    requirements = list(card.security_requirements)
    if not requirements:
        declared = _declared_sign_in(card, creds, makers)
        return CardAuth((), token=declared) if declared is not None else None
    alternatives, named = [], []
    for requirement in requirements:
        answers, missing = [], []
        for name in requirement.schemes:
            named.append(name)
            if name not in card.security_schemes:
                missing.append(f"'{name}': not declared on the card")
                continue
            scheme = card.security_schemes[name]
            answer = _answer(scheme, name, tuple(requirement.schemes[name].list), creds, makers)
            header = _header_of(scheme)
            if isinstance(answer, str) and auth_header and header and auth_header.lower() == header.lower():
                answer = _Answer()  # the auth_header is sent in the header this scheme uses
            if isinstance(answer, str):
                missing.append(f"'{name}' ({describe(scheme)}): {answer}")
            else:
                answers.append(answer)
        sent = [a.header.lower() for a in answers if a.header] + ["authorization" for a in answers if a.token]
        twice = next((header for header in sent if sent.count(header) > 1), None)
        if not missing and twice:
            missing.append(f"{' and '.join(repr(n) for n in requirement.schemes)}: two credentials in one header "
                           f"({twice})")
        if not missing:
            chosen = tuple(requirement.schemes)
            if chosen:
                LOG.info("%s: sending credentials for %s", card.name, ", ".join(chosen))
            tokens_ = [a.token for a in answers if a.token]
            fixed = tuple((a.header, a.value) for a in answers if a.header)
            if not tokens_ and not any(header.lower() == "authorization" for header, _ in fixed):
                tokens_ = [t for t in (_declared_sign_in(card, creds, makers),) if t is not None]
            return CardAuth(chosen, fixed, tokens_[0] if tokens_ else None)
        alternatives.append(", together with ".join(missing))
    schemes = tuple(dict.fromkeys(named))
    raise MissingCredentialError(f"the agent {card.name!r} requires credentials this client was not given: "
                                 + "; or ".join(alternatives), schemes)
