# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Credentials bound to origins.

An ``auth_header`` is given for one agent. It is attached only to requests whose
origin (scheme, host, port) is the agent's own or one the user listed as trusted:
never to another origin that the agent card, a redirect or an interface URL names.
"""
from __future__ import annotations

from collections.abc import Iterable
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


class OriginCredentials:
    """One header, and the origins allowed to receive it."""

    def __init__(self, auth_header: str, agent_url: str, trusted: Iterable[str] = ()) -> None:
        self.header, self._value = parse_auth_header(auth_header)
        origins = set()
        for url in (agent_url, *trusted):
            origin = origin_of(url)
            if origin is None:
                raise ValueError(f"not a URL with a host: {url!r}")
            origins.add(origin)
        self.origins = frozenset(origins)

    def allows(self, url: str) -> bool:
        """Whether a request to ``url`` may carry the credential."""
        return origin_of(url) in self.origins

    def headers_for(self, url: str) -> dict[str, str]:
        """The credential header for ``url``, or nothing."""
        return {self.header: self._value} if self.allows(url) else {}

    def grpc_metadata(self) -> tuple[str, str]:
        """The credential as one gRPC metadata pair (keys are lower case there)."""
        return self.header.lower(), self._value

    def __repr__(self) -> str:
        return f"OriginCredentials(header={self.header!r}, value=<redacted>, origins={sorted(self.origins)})"


def httpx_auth(credentials: OriginCredentials):
    """An ``httpx.Auth`` that adds the header only on allowed origins.

    httpx runs the auth flow once per request it is asked to send and drops
    ``Authorization`` itself on a cross-origin redirect, so neither a card, an
    interface URL nor a redirect can lead the credential elsewhere.
    """
    import httpx

    class _OriginBoundAuth(httpx.Auth):
        def auth_flow(self, request):
            headers = credentials.headers_for(str(request.url))
            request.headers.update(headers)
            yield request

    return _OriginBoundAuth()


def grpc_metadata_interceptors(credentials: OriginCredentials | None, target: str) -> list:
    """gRPC client interceptors adding the credential for ``target`` (if it is trusted)."""
    if credentials is None or not credentials.allows(target):
        return []
    import grpc

    pair = credentials.grpc_metadata()

    def with_metadata(details):
        metadata = grpc.aio.Metadata(*(details.metadata or ()), pair)
        return details._replace(metadata=metadata)

    class _Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):
            return await continuation(with_metadata(details), request)

    class _Stream(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation, details, request):
            return await continuation(with_metadata(details), request)

    return [_Unary(), _Stream()]
