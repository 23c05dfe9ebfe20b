# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Credentials bound to origins.

Credentials are given for one agent: an ``auth_header`` sent as it is, and
:class:`Credentials` sent in the form the agent's card names (see ``agent.schemes``). They
are attached only to requests whose origin (scheme, host, port) is the agent's own or
one the user listed as trusted: never to another origin that the agent card, a
redirect or an interface URL names. An OAuth2 client secret goes to a token endpoint on
those origins, or on one the user listed in ``oauth2_token_origins``: never to another
that the card names.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Protocol
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "grpc": 443}


def origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a URL, default ports filled in; ``None`` if it has no host.

    A scheme-less ``host:port`` (how A2A cards write gRPC targets) is a ``grpc`` origin.
    """
    url = url.strip()
    if "://" not in url:
        url = "grpc://" + url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not parts.hostname or scheme not in _DEFAULT_PORTS:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def parse_auth_header(value: str) -> tuple[str, str]:
    """Split a setting into ``(header name, value)``.

    ``"Bearer abc"`` and ``"Basic ..."`` go in ``Authorization``; ``"X-API-Key: abc"``
    names its own header.
    """
    value = value.strip()
    name, sep, rest = value.partition(":")
    if sep and name and " " not in name.strip() and rest.strip():
        return name.strip(), rest.strip()
    if not value:
        raise ValueError("auth_header is empty")
    return "Authorization", value


@dataclass(frozen=True, repr=False)
class Credentials:
    """Credentials for one agent, each sent in the form its card's security schemes name.

    * ``bearer_token``: an HTTP bearer scheme, or an OAuth2 / OpenID Connect scheme (a token
      got elsewhere): ``Authorization: Bearer <token>``.
    * ``api_key``: an API key scheme, in the header (or cookie) the scheme names.
    * ``username`` and ``password``: an HTTP Basic scheme.
    * ``oauth2_client_id`` and ``oauth2_client_secret``: an OAuth2 scheme with a
      client-credentials flow; the token is fetched from the flow's ``tokenUrl``.
    * ``oauth2_client_id`` alone (a public client), or with the secret (a confidential one):
      an OAuth2 scheme with a device-code flow, or OpenID Connect offering it; the person
      signs in on another device (``agent.sign_in``).
    """

    bearer_token: str | None = None
    api_key: str | None = None
    username: str | None = None
    password: str | None = None
    oauth2_client_id: str | None = None
    oauth2_client_secret: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{f.name} must be a string")
            if value == "" and f.name != "password":  # an empty password is a password (a key as user name)
                raise ValueError(f"{f.name} is empty")
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together: set both")
        if self.oauth2_client_secret is not None and self.oauth2_client_id is None:
            raise ValueError("oauth2_client_id and oauth2_client_secret go together: set the client id too")
        if self.username is not None and ":" in self.username:
            raise ValueError("username must not contain ':' (HTTP Basic cannot send it)")

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def identity(self) -> str:
        """All the values, in one string: who is calling (two callers never share a conversation)."""
        return "\n".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                         if getattr(self, f.name) is not None)

    def __repr__(self) -> str:
        given = ", ".join(f"{f.name}=<redacted>" for f in fields(self) if getattr(self, f.name) is not None)
        return f"Credentials({given})"


class CardAnswer(Protocol):
    """How the credentials answer the security requirement chosen from a card: the headers
    to send, and what a refusal of them changes (``agent.schemes.CardAuth`` is one)."""

    async def headers(self) -> dict[str, str]:
        """The headers to send now."""

    async def renewed(self, sent: dict[str, str]) -> bool:
        """A request with ``sent`` was refused: True when fresh headers are worth one more try."""

    def forget(self, sent: dict[str, str]) -> None:
        """A request with ``sent`` was refused: send fresh headers next time."""


class OriginCredentials:
    """What may be sent to one agent, and the origins allowed to receive it.

    ``auth_header`` is sent as it is. ``credentials`` are sent as ``card_auth`` says, which
    the connection sets once it has read the card (``agent.schemes.card_auth``); a header of
    ``card_auth`` replaces an ``auth_header`` of the same name.
    """

    def __init__(self, auth_header: str | None, agent_url: str, trusted: Iterable[str] = (),
                 credentials: Credentials | None = None, token_origins: Iterable[str] = ()) -> None:
        self.header, self._value = parse_auth_header(auth_header) if auth_header else (None, None)
        self.credentials = credentials if credentials else None
        self.card_auth: CardAnswer | None = None
        self.origins = _origins((agent_url, *trusted))
        self.token_origins = self.origins | token_origins_of(token_origins)

    def allows(self, url: str) -> bool:
        """Whether a request to ``url`` may carry the credentials."""
        return origin_of(url) in self.origins

    def allows_token_request(self, url: str) -> bool:
        """Whether the OAuth2 client secret may be sent to the token endpoint ``url``."""
        return origin_of(url) in self.token_origins

    async def headers_for(self, url: str) -> dict[str, str]:
        """The credential headers for ``url``, or nothing (an OAuth2 token is fetched if needed)."""
        if not self.allows(url):
            return {}
        headers = {self.header: self._value} if self.header else {}
        card_auth = self.card_auth
        if card_auth is not None:
            for name, value in (await card_auth.headers()).items():
                headers = {k: v for k, v in headers.items() if k.lower() != name.lower()}
                headers[name] = value
        return headers

    async def refused(self, sent: dict[str, str]) -> bool:
        """The agent refused a request that carried ``sent`` (HTTP 401, gRPC UNAUTHENTICATED):
        drop a fetched token it carried; True when a fresh one was got, worth one more try."""
        card_auth = self.card_auth
        return card_auth is not None and await card_auth.renewed(sent)

    def forget_refused(self, sent: dict[str, str]) -> None:
        """Like :meth:`refused`, without fetching: the next request gets a fresh token."""
        card_auth = self.card_auth
        if card_auth is not None:
            card_auth.forget(sent)

    def __repr__(self) -> str:
        return (f"OriginCredentials(header={self.header!r}, value=<redacted>, credentials={self.credentials!r}, "
                f"origins={sorted(self.origins)})")


def _origins(urls: Iterable[str]) -> frozenset[tuple[str, str, int]]:
    origins = set()
    for url in urls:
        origin = origin_of(url)
        if origin is None:
            raise ValueError(f"not a URL with a host: {url!r}")
        origins.add(origin)
    return frozenset(origins)


def token_origins_of(urls: Iterable[str]) -> frozenset[tuple[str, str, int]]:
    """The origins of ``oauth2_token_origins`` (``https://host[:port]``); ``ValueError`` naming
    the setting for one that is not an http(s) URL with a host."""
    origins = set()
    for url in urls:
        origin = origin_of(url) if isinstance(url, str) and "://" in url else None
        if origin is None or origin[0] not in ("http", "https"):
            raise ValueError(f"oauth2_token_origins: {url!r} is not an http(s) origin such as https://login.example")
        origins.add(origin)
    return frozenset(origins)


def token_url_refusal(url: str, what: str, allowed: Callable[[str], bool], sent: str) -> str | None:
    """Why ``url`` (a card's ``what``: "token URL") may not receive ``sent`` ("the client secret"),
    or ``None`` if it may: it is no http(s) URL, or ``allowed`` refuses its origin."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"its {what} {url!r} is not an http(s) URL"
    if not allowed(url):
        return (f"its {what} {url} is on another origin, {origin_text(url)}: refused ({sent} goes only to the "
                f"agent's origin, trusted_origins and oauth2_token_origins; list {origin_text(url)} in "
                f"oauth2_token_origins to send it there)")
    return None


def origin_text(url: str) -> str:
    """The origin of ``url`` as people write it: ``https://host:port``."""
    origin = origin_of(url)
    return f"{origin[0]}://{origin[1]}:{origin[2]}" if origin else url


def httpx_auth(credentials: OriginCredentials):
    """An ``httpx.Auth`` that adds the credentials only on allowed origins.

    httpx runs the auth flow once per request it is asked to send and drops
    ``Authorization`` itself on a cross-origin redirect, so neither a card, an
    interface URL nor a redirect can lead the credential elsewhere. An HTTP 401 to a
    fetched OAuth2 token gets one more try with a fresh token.
    """
    import httpx

    class _OriginBoundAuth(httpx.Auth):
        async def async_auth_flow(self, request):
            headers = await credentials.headers_for(str(request.url))
            request.headers.update(headers)
            response = yield request
            if response.status_code == 401 and headers and await credentials.refused(headers):
                request.headers.update(await credentials.headers_for(str(request.url)))
                yield request

    return _OriginBoundAuth()


def grpc_metadata_interceptors(credentials: OriginCredentials | None, target: str) -> list:
    """gRPC client interceptors adding the credentials for ``target`` (if it is trusted).

    A unary call refused ``UNAUTHENTICATED`` while it carried a fetched OAuth2 token is
    made once more with a fresh token; a refused stream drops the token, so the next
    call fetches a new one.
    """
    if credentials is None or not credentials.allows(target):
        return []
    import asyncio

    import grpc

    async def with_metadata(details):
        headers = await credentials.headers_for(target)
        pairs = [(name.lower(), value) for name, value in headers.items()]
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), *pairs)), headers

    class _Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):
            sent_details, headers = await with_metadata(details)
            call = await continuation(sent_details, request)
            if headers and await call.code() == grpc.StatusCode.UNAUTHENTICATED \
                    and await credentials.refused(headers):
                return await continuation((await with_metadata(details))[0], request)
            return call

    class _Stream(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation, details, request):
            sent_details, headers = await with_metadata(details)
            call = await continuation(sent_details, request)
            if headers:
                call.add_done_callback(lambda done: _forget_if_refused(done, headers))
            return call

    checks: set = set()  # the status checks of ended streams, held until they are done

    def _forget_if_refused(call, headers) -> None:
        async def check() -> None:
            if await call.code() == grpc.StatusCode.UNAUTHENTICATED:
                credentials.forget_refused(headers)

        task = asyncio.ensure_future(check())
        checks.add(task)
        task.add_done_callback(checks.discard)

    return [_Unary(), _Stream()]
