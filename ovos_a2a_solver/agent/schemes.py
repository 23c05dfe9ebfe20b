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
* OpenID Connect: ``bearer_token``

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
from a2a.client import A2AClientError

from ovos_a2a_solver.agent.credentials import Credentials, OriginCredentials, origin_text
from ovos_a2a_solver.agent.exceptions import MissingCredentialError

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

#: Seconds before a token's ``expires_in`` ends that a new one is fetched (at most a tenth
#: of its lifetime), so that no request carries a token that expires on the way.
TOKEN_EXPIRY_MARGIN = 30.0


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
            token, lifetime = await self._fetch()
            self._authorization = f"Bearer {token}"
            self._expires = (None if lifetime is None
                             else self._clock() + lifetime - min(TOKEN_EXPIRY_MARGIN, lifetime / 10))
            return self._authorization

    def forget(self, refused: str | None) -> None:
        """Drop the token if it is the one refused (a newer one stays)."""
        if refused is not None and refused == self._authorization:
            self._authorization = None

    async def renewed(self, refused: str | None) -> bool:
        """Drop the refused token and fetch another; True when the new one differs."""
        self.forget(refused)
        return await self.authorization() != refused

    async def _fetch(self) -> tuple[str, float | None]:
        form = {"grant_type": "client_credentials"}
        if self.scopes:
            form["scope"] = " ".join(self.scopes)
        try:
            response = await self._http.post(self.token_url, data=form, auth=self._client_auth,
                                              headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise A2AClientError(f"cannot reach the OAuth2 token endpoint {self.token_url}: {exc}") from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200:
            said = ""
            if isinstance(body, dict) and body.get("error"):
                said = f": {body['error']}" + (f" ({body['error_description']})" if body.get("error_description") else "")
            raise A2AClientError(f"the OAuth2 token endpoint {self.token_url} refused the client credentials "
                                 f"(HTTP {response.status_code}{said})")
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise A2AClientError(f"the OAuth2 token endpoint {self.token_url} answered without an access_token")
        token_type = body.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise A2AClientError(f"the OAuth2 token endpoint {self.token_url} gave a {token_type!r} token; "
                                 f"only Bearer tokens are supported")
        lifetime = body.get("expires_in")
        try:
            lifetime = float(lifetime) if lifetime is not None and not isinstance(lifetime, bool) else None
        except (TypeError, ValueError):
            lifetime = None
        LOG.info("got an OAuth2 token from %s%s", self.token_url,
                 f" for {lifetime:g} s" if lifetime is not None else "")
        return token, lifetime if lifetime is None or lifetime > 0 else 0.0


@dataclass(frozen=True)
class CardAuth:
    """The requirement chosen from a card, and the headers that satisfy it (a ``credentials.CardAnswer``)."""

    schemes: tuple[str, ...]
    fixed: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (header, value) pairs
    token: ClientCredentialsToken | None = None

    async def headers(self) -> dict[str, str]:
        """The headers to send now (an OAuth2 token is fetched when needed)."""
        headers = dict(self.fixed)
        if self.token is not None:
            headers["Authorization"] = await self.token.authorization()
        return headers

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
    token: ClientCredentialsToken | None = None


TokenFactory = Callable[[str, str, str, tuple[str, ...]], ClientCredentialsToken]


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


def _answer(scheme: Any, scopes: tuple[str, ...], creds: Credentials,
            token_allowed: Callable[[str], bool], tokens: TokenFactory) -> _Answer | str:
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
        if creds.oauth2_client_id is not None and has_flow:
            url = flow.client_credentials.token_url
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return f"its token URL {url!r} is not an http(s) URL"
            if not token_allowed(url):
                return (f"its token URL {url} is on another origin, {origin_text(url)}: refused (the client "
                        f"secret goes only to the agent's origin, trusted_origins and oauth2_token_origins; "
                        f"list {origin_text(url)} in oauth2_token_origins to send it there)")
            return _Answer(token=tokens(url, creds.oauth2_client_id, creds.oauth2_client_secret, scopes))
        if creds.bearer_token:
            return _Answer("Authorization", f"Bearer {creds.bearer_token}")
        if has_flow:
            return "set oauth2_client_id and oauth2_client_secret (or bearer_token)"
        return "it has no client-credentials flow: set bearer_token"
    if kind == "open_id_connect_security_scheme":
        return _Answer("Authorization", f"Bearer {creds.bearer_token}") if creds.bearer_token else "set bearer_token"
    return "not supported"


def card_auth(card: Any, credentials: OriginCredentials | None, tokens: TokenFactory) -> CardAuth | None:
    """The first of the card's requirements the credentials satisfy, as headers to send.

    ``None`` when the card requires nothing. Raises :class:`MissingCredentialError` naming
    the schemes (and what to set) when no requirement can be satisfied.
    """
    requirements = list(card.security_requirements)
    if not requirements:
        return None
    creds = (credentials.credentials if credentials else None) or Credentials()
    auth_header = credentials.header if credentials else None
    token_allowed = credentials.allows_token_request if credentials else (lambda url: False)
    alternatives, named = [], []
    for requirement in requirements:
        answers, missing = [], []
        for name in requirement.schemes:
            named.append(name)
            if name not in card.security_schemes:
                missing.append(f"'{name}': not declared on the card")
                continue
            scheme = card.security_schemes[name]
            answer = _answer(scheme, tuple(requirement.schemes[name].list), creds, token_allowed, tokens)
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
            return CardAuth(chosen, tuple((a.header, a.value) for a in answers if a.header),
                            tokens_[0] if tokens_ else None)
        alternatives.append(", together with ".join(missing))
    schemes = tuple(dict.fromkeys(named))
    raise MissingCredentialError(f"the agent {card.name!r} requires credentials this client was not given: "
                                 + "; or ".join(alternatives), schemes)
