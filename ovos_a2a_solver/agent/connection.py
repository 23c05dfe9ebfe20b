# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One agent, reachable: its card, one HTTP client, and the a2a-sdk clients built from the card.

Everything here runs on the background loop (see ``_loop``). The card is resolved once
and reused; transports are rebuilt, and the credentials its security requirements ask
for chosen again, only when the card changes.
"""
from __future__ import annotations

import asyncio
import importlib.util
import logging
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlsplit

import httpx
from a2a.client import A2AClientError, Client, ClientConfig, ClientFactory
from a2a.utils.constants import TransportProtocol

from ovos_a2a_solver.agent.credentials import OriginCredentials, grpc_metadata_interceptors, httpx_auth
from ovos_a2a_solver.agent.exceptions import MissingCredentialError
from ovos_a2a_solver.agent.cards import CardResolver
from ovos_a2a_solver.agent.schemes import ClientCredentialsToken, card_auth
from ovos_a2a_solver.agent.sign_in import DeviceGrant, PersonToken
from ovos_a2a_solver.agent.tokens import TokenStore
from ovos_a2a_solver.agent.readable_transport import ReadableTransport
from ovos_a2a_solver.agent.reply_limit import ReplyLimitTransport
from ovos_a2a_solver._defaults import DEFAULT_MAX_REPLY_BYTES
from ovos_a2a_solver.agent.wire_log import LoggedTransport
from ovos_a2a_solver.trace_context import outgoing

LOG = logging.getLogger("ovos_a2a_solver")

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.agent.signatures import CustomCheck, SignatureCheck


def grpc_available() -> bool:
    """Whether the gRPC transport can be used (the ``grpc`` extra is installed)."""
    return importlib.util.find_spec("grpc") is not None


def supported_bindings() -> list[str]:
    """Transport bindings this client speaks, in no particular order (the card's order decides)."""
    bindings = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON]
    if grpc_available():
        bindings.append(TransportProtocol.GRPC)
    return bindings


async def _with_trace_context(request: httpx.Request) -> None:
    """Send the trace this request is part of on (see ``trace_context``), unless it names one."""
    for name, value in outgoing().items():
        if name not in request.headers:
            request.headers[name] = value


def _trace_interceptors() -> list:
    """gRPC client interceptors sending the trace a call is part of on, in its metadata."""
    import grpc

    def with_trace(details):
        pairs = [pair for pair in outgoing().items() if pair[0] not in dict(details.metadata or ())]
        if not pairs:
            return details
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), *pairs))

    class _Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):
            return await continuation(with_trace(details), request)

    class _Stream(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation, details, request):
            return await continuation(with_trace(details), request)

    return [_Unary(), _Stream()]


class AgentConnection:
    """The card and the SDK clients of one agent; create and use it on the background loop."""

    def __init__(self, agent_url: str, *, timeout: float, credentials: OriginCredentials | None = None,
                 signature_check: "SignatureCheck | CustomCheck | None" = None,
                 clock: Callable[[], float] | None = None,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, tokens: TokenStore | None = None) -> None:
        self.agent_url = agent_url
        self._max_reply_bytes = max_reply_bytes
        self._credentials = credentials
        self._secure = urlsplit(agent_url).scheme == "https"
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            auth=httpx_auth(credentials) if credentials else None,
            follow_redirects=False,
            # bodies as real agents bend them, made readable; logged raw for ovos-a2a -v; each
            # reply read up to max_reply_bytes (a stream: each line), before anything holds it
            transport=ReadableTransport(ReplyLimitTransport(LoggedTransport(httpx.AsyncHTTPTransport()),
                                                            max_reply_bytes)),
            event_hooks={"request": [_with_trace_context]},
        )
        self._timeout = timeout
        self._sign_in_http: httpx.AsyncClient | None = None
        self._tokens_kept = tokens if tokens is not None else TokenStore()
        self._people: dict[tuple[str, bool], PersonToken] = {}
        self.cards = CardResolver(agent_url, self.http, signature_check, clock=clock)
        self._clock = clock
        self._clients: dict[bool, tuple[int, Client]] = {}
        self._lock = asyncio.Lock()
        self._authorized = -1  # the card generation whose security requirements are met
        self._reachable = False  # whether one of its interfaces may receive the credentials
        self._tokens: dict[tuple, ClientCredentialsToken] = {}
        self._unreadable_streams = -1  # the card generation whose streams could not be read

    @property
    def streams_readable(self) -> bool:
        """False once a stream of the agent could not be read, until its card changes."""
        return self._unreadable_streams != self.cards.generation

    def streams_unreadable(self) -> None:
        """A stream of the agent could not be read: ask without streams until its card changes."""
        self._unreadable_streams = self.cards.generation

    async def card(self):
        """The agent's card (SDK protobuf), from cache when fresh."""
        return await self.cards.get()

    async def client(self, streaming: bool) -> Client:
        """An SDK client for the card's preferred transport; one per mode, reused."""
        card = await self.cards.get()
        generation = self.cards.generation
        await self._authorize(card, generation)
        cached = self._clients.get(streaming)
        if cached and cached[0] == generation:
            return cached[1]
        async with self._lock:
            cached = self._clients.get(streaming)
            if cached and cached[0] == generation:
                return cached[1]
            config = ClientConfig(
                streaming=streaming,
                httpx_client=self.http,
                supported_protocol_bindings=supported_bindings(),
                grpc_channel_factory=self._grpc_channel,
            )
            try:
                client = ClientFactory(config).create(card)
            except ValueError as exc:
                offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}".strip()
                                    for i in card.supported_interfaces) or "none"
                hint = "" if grpc_available() else " (gRPC needs: pip install 'ovos-a2a-solver-plugin[grpc]')"
                raise A2AClientError(f"the agent offers no transport this client speaks: {offered}{hint}") from exc
            if cached:
                await cached[1].close()
            self._clients[streaming] = (generation, client)
            return client

    async def _authorize(self, card, generation: int) -> None:
        """Choose the credentials the card's security requirements ask for (raises
        ``MissingCredentialError`` when none fit), and get an OAuth2 token if one is needed,
        before any request that needs it."""
        credentials = self._credentials
        if self._authorized != generation:
            chosen = card_auth(card, credentials, self._token, self._person_token)
            self._authorized = generation
            if credentials is None:
                return
            credentials.card_auth = chosen
            self._reachable = any(credentials.allows(i.url) for i in card.supported_interfaces)
            if chosen is not None and chosen.schemes and not self._reachable:
                LOG.warning("%s: the card's interfaces are on other origins, where no credential is sent "
                            "(list them in trusted_origins to send it)", self.agent_url)
        if credentials is not None and credentials.card_auth is not None and self._reachable:
            await credentials.card_auth.headers()

    def _token(self, token_url: str, client_id: str, client_secret: str,
               scopes: tuple[str, ...]) -> ClientCredentialsToken:
        """One token per endpoint, client and scopes, kept while the card changes."""
        key = (token_url, client_id, client_secret, scopes)
        if key not in self._tokens:
            self._tokens[key] = ClientCredentialsToken(self.http, token_url, client_id, client_secret, scopes,
                                                       clock=self._clock)
        return self._tokens[key]

    @property
    def sign_in_http(self) -> httpx.AsyncClient:
        """The HTTP client of the authorization servers of people's sign-ins: none of the agent's
        credentials, no body logged; made on first use (most agents need none)."""
        if self._sign_in_http is None:
            self._sign_in_http = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout, connect=min(self._timeout, 10.0)), follow_redirects=False,
                transport=ReplyLimitTransport(httpx.AsyncHTTPTransport(), self._max_reply_bytes))
        return self._sign_in_http

    def _person_token(self, grant: DeviceGrant, required: bool) -> PersonToken:
        """One person's token per sign-in and need, kept while the card changes (it holds the
        refreshes under way)."""
        key = (grant.key, required)
        if key not in self._people:
            self._people[key] = PersonToken(grant, lambda: self.sign_in_http, self._tokens_kept, required)
        return self._people[key]

    async def sign_in(self) -> PersonToken | None:
        """The sign-in the card's security asks for, or declares, if the credentials can answer it
        with a person's token (``None`` else); the card is read first if need be."""
        card = await self.cards.get()
        credentials = self._credentials
        if credentials is None:
            return None
        if self._authorized != self.cards.generation:
            try:
                await self._authorize(card, self.cards.generation)
            except MissingCredentialError:  # the person's own sign-in is missing: it is what is asked for
                pass
        chosen = credentials.card_auth
        return getattr(chosen, "sign_in", None)

    def invalidate(self) -> None:
        """Resolve the card again before the next call (the agent could not be reached)."""
        self.cards.invalidate()

    def _grpc_channel(self, target: str):
        import grpc

        interceptors = [*_trace_interceptors(), *grpc_metadata_interceptors(self._credentials, target)]
        options = [("grpc.max_receive_message_length", self._max_reply_bytes)]  # one message, as one HTTP body
        if self._secure:
            return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options=options,
                                           interceptors=interceptors)
        return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)

    async def aclose(self) -> None:
        """Close transports and the HTTP clients."""
        clients, self._clients = list(self._clients.values()), {}
        for _, client in clients:
            await client.close()
        await self.http.aclose()
        if self._sign_in_http is not None:
            await self._sign_in_http.aclose()
