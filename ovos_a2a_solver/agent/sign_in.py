# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Signing a person in on a device with no screen and no keyboard: the OAuth 2.0 device
authorization grant (RFC 8628).

An agent that acts for a person says so on its card: OAuth2 with a device-code flow (A2A 1.0's
``DeviceCodeOAuthFlow``: a device authorization URL, a token URL and scopes), or OpenID Connect
whose discovery document names a ``device_authorization_endpoint``. With a client id for it
(``oauth2_client_id``), the device asks the authorization server for a code
(:meth:`DeviceGrant.start`), says where to enter it (:class:`SignInPrompt`: "To let me use the
travel agent, go to example.com/device and enter the code W-D-J-B M-J-H-T."), and polls the
token endpoint at the interval the server gives, five seconds slower after each ``slow_down``,
until the person approved, denied, or the code expired (:meth:`DeviceGrant.poll`).

The tokens are the person's (``agent.tokens``): :class:`PersonToken` sends the access token of
whoever the turn is for, refreshes it before asking them again, and, when the refresh is refused
(revoked, expired), asks them to sign in again (``SignInRequiredError``). Every URL of the flow
(device authorization, token, refresh, revocation) must be on an origin the credentials allow
(the agent's, ``trusted_origins``, ``oauth2_token_origins``): a card or discovery document naming
another is refused before anything is sent there. The exchanges with the authorization server
go over an HTTP client of their own, which carries none of the agent's credentials and logs no
body (the wire log would show the tokens).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import quote, urlsplit

import httpx
from a2a.client import A2AClientError

from ovos_a2a_solver.agent.credentials import token_url_refusal
from ovos_a2a_solver.agent.exceptions import MissingCredentialError, SignInError, SignInRequiredError
from ovos_a2a_solver.agent.tokens import (SignedIn, TokenEndpointError, TokenResponse, TokenStore, expiry, person,
                                          token_request)

LOG = logging.getLogger("ovos_a2a_solver")

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
#: Seconds between polls when the server names no interval (RFC 8628 §3.2), and what each
#: ``slow_down`` adds to it (§3.5).
DEFAULT_INTERVAL, SLOW_DOWN_STEP = 5.0, 5.0
#: The shortest interval honoured, whatever a server says.
LEAST_INTERVAL = 0.5
#: Seconds a code lives when the server does not say (it must; RFC 8628 §3.2).
DEFAULT_CODE_LIFETIME = 600.0
#: Messages kept for one person's sign-in at most (the oldest are let go, and logged).
KEPT_MOST = 8
#: The token endpoint's refusals of a refresh token that mean: sign in again (RFC 6749 §5.2).
REFRESH_REFUSED = frozenset({"invalid_grant", "invalid_token", "unauthorized_client"})


def spelled(code: str) -> str:
    """A user code as it is said: each character on its own, groups apart ("WDJB-MJHT" ->
    "W-D-J-B M-J-H-T")."""
    groups = "".join(c if c.isalnum() else " " for c in code.upper()).split()
    return " ".join("-".join(group) for group in groups)


def spoken_address(uri: str) -> str:
    """A verification URI as it is said: without its scheme and a final slash ("example.com/device")."""
    parts = urlsplit(uri)
    address = (parts.netloc + parts.path).rstrip("/") if parts.netloc else uri
    return address + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class SignInPrompt:
    """What the person is asked to do: open ``verification_uri`` and enter ``user_code`` (or open
    ``verification_uri_complete``, which holds the code, on a screen that shows it) within
    ``expires_in`` seconds, to let the device use ``agent``."""

    agent: str
    verification_uri: str
    user_code: str
    expires_in: float
    verification_uri_complete: str = ""

    def spoken(self) -> str:
        """The sentence that asks the person to sign in."""
        return (f"To let me use {self.agent}, go to {spoken_address(self.verification_uri)} "
                f"and enter the code {spelled(self.user_code)}.")

    def reminder(self) -> str:
        """The sentence said to a person whose sign-in is still awaited."""
        return (f"I am still waiting for you to sign in to {self.agent}: go to "
                f"{spoken_address(self.verification_uri)} and enter the code {spelled(self.user_code)}.")


@dataclass(frozen=True)
class SignInEvent:
    """A step of a sign-in, as a listener (the engine's messagebus, the command line) hears it:
    ``step`` is "started" (the prompt was said), "waiting" (said again to a person whose sign-in
    is awaited), "signed in", "denied", "expired" or "refused"."""

    step: str
    prompt: SignInPrompt
    session_id: str | None = None


@dataclass(frozen=True)
class _Started:
    """A code the authorization server gave."""

    prompt: SignInPrompt
    device_code: str
    interval: float
    ends: float  # the event loop's time at which the code expires


@dataclass(frozen=True)
class _Endpoints:
    device_authorization: str
    token: str
    refresh: str
    revocation: str = ""


class DeviceGrant:
    """How a person signs in for one scheme of an agent's card: the endpoints (given by the card's
    device-code flow, or found in an OpenID Connect discovery document), the client and the scopes.

    ``token_allowed``: whether a URL's origin may receive the person's codes and tokens.
    """

    def __init__(self, agent: str, scheme: str, client_id: str, client_secret: str | None,
                 scopes: tuple[str, ...], token_allowed: Callable[[str], bool], *,
                 device_authorization_url: str = "", token_url: str = "", refresh_url: str = "",
                 discovery_url: str = "", metadata_url: str = "") -> None:
        self.agent, self.scheme, self.scopes = agent, scheme, scopes
        self.client_id, self._client_secret = client_id, client_secret
        self._allowed = token_allowed
        self._given = (device_authorization_url, token_url, refresh_url)
        self.discovery_url = discovery_url
        self.metadata_url = metadata_url  # the server's metadata (RFC 8414): where to revoke, for a card's flow
        self._endpoints: _Endpoints | None = None
        #: who the grant is, whoever signs in: the person's tokens are kept under it
        self.key = "\n".join((discovery_url or token_url, client_id, " ".join(scopes)))

    def __repr__(self) -> str:
        return f"DeviceGrant({self.agent!r}, {self.scheme!r}, client_id={self.client_id!r}, scopes={self.scopes})"

    def refusal(self, url: str, what: str) -> str | None:
        """Why ``url`` may not be used for ``what`` ("token URL"), or ``None`` if it may."""
        return token_url_refusal(url, what, self._allowed, "what the person signs in with")

    def _checked(self, url: str, what: str) -> str:
        refusal = self.refusal(url, what)
        if refusal:
            raise MissingCredentialError(f"the agent {self.agent!r} signs people in where this client sends "
                                         f"nothing: '{self.scheme}': {refusal}", (self.scheme,))
        return url

    def _client_auth(self) -> httpx.Auth | None:
        """A confidential client authenticates with HTTP Basic (RFC 6749 §2.3.1); a public one names itself."""
        if self._client_secret is None:
            return None
        return httpx.BasicAuth(quote(self.client_id, safe=""), quote(self._client_secret, safe=""))

    def _form(self, **fields: str) -> dict[str, str]:
        return {**fields, **({"client_id": self.client_id} if self._client_secret is None else {})}

    async def endpoints(self, http: httpx.AsyncClient) -> _Endpoints:
        """The flow's endpoints, each checked to be on an allowed origin (``MissingCredentialError``
        naming the one that is not); an OpenID Connect provider's read from its discovery document."""
        if self._endpoints is not None:
            return self._endpoints
        device, token, refresh = self._given
        revocation = ""
        if self.discovery_url:
            document = await self._discovered(http, self.discovery_url)
            device, token = document.get("device_authorization_endpoint"), document.get("token_endpoint")
            revocation = document.get("revocation_endpoint") or ""
            if not isinstance(device, str) or not device or not isinstance(token, str) or not token:
                raise MissingCredentialError(
                    f"the agent {self.agent!r} signs people in with OpenID Connect at {self.discovery_url}, whose "
                    f"provider offers no device sign-in (no device_authorization_endpoint): set bearer_token",
                    (self.scheme,))
            refresh = token
        elif self.metadata_url:
            try:
                revocation = (await self._discovered(http, self.metadata_url)).get("revocation_endpoint") or ""
            except A2AClientError as exc:  # it only says where to revoke: sign in without it
                LOG.info("%s: %s", self.agent, exc)
        endpoints = _Endpoints(self._checked(device, "device authorization URL"), self._checked(token, "token URL"),
                               self._checked(refresh or token, "refresh URL"),
                               revocation if isinstance(revocation, str) and revocation
                               and self.refusal(revocation, "revocation URL") is None else "")
        self._endpoints = endpoints
        return endpoints

    @staticmethod
    async def _discovered(http: httpx.AsyncClient, url: str) -> dict:
        """An authorization server's metadata document (OpenID Connect discovery, RFC 8414)."""
        try:
            response = await http.get(url, headers={"Accept": "application/json"})
            document = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            raise A2AClientError(f"cannot read the authorization server's metadata {url}: {exc}") from exc
        if not isinstance(document, dict):
            raise A2AClientError(f"the authorization server's metadata {url} could not be read "
                                 f"(HTTP {response.status_code})")
        return document

    async def start(self, http: httpx.AsyncClient) -> _Started:
        """Ask for a code (RFC 8628 §3.1): what to tell the person, and how to poll."""
        endpoints = await self.endpoints(http)
        form = self._form(**({"scope": " ".join(self.scopes)} if self.scopes else {}))
        try:
            response = await http.post(endpoints.device_authorization, data=form, auth=self._client_auth(),
                                       headers={"Accept": "application/json"})
            body = response.json()
        except httpx.HTTPError as exc:
            raise A2AClientError(f"cannot reach the device authorization endpoint "
                                 f"{endpoints.device_authorization}: {exc}") from exc
        except ValueError:
            body = None
        fields = ("device_code", "user_code")
        uri = (body.get("verification_uri") or body.get("verification_url")) if isinstance(body, dict) else None
        if response.status_code != 200 or not isinstance(uri, str) \
                or not all(isinstance(body.get(f), str) and body[f] for f in fields):
            error = body.get("error") if isinstance(body, dict) else None
            raise SignInError(SignInError.REFUSED,
                              f"the device authorization endpoint {endpoints.device_authorization} gave no code "
                              f"(HTTP {response.status_code}" + (f": {error})" if error else ")"),
                              f"I could not start the sign-in to {self.agent}.")
        lifetime = _seconds(body.get("expires_in"), DEFAULT_CODE_LIFETIME)
        complete = body.get("verification_uri_complete")
        prompt = SignInPrompt(self.agent, uri, body["user_code"], lifetime,
                              complete if isinstance(complete, str) else "")
        interval = max(_seconds(body.get("interval"), DEFAULT_INTERVAL), LEAST_INTERVAL)
        LOG.info("%s: a sign-in started at %s (code for %g s, polled every %g s)", self.agent,
                 endpoints.device_authorization, lifetime, interval)
        return _Started(prompt, body["device_code"], interval, asyncio.get_running_loop().time() + lifetime)

    async def poll(self, http: httpx.AsyncClient, started: _Started) -> TokenResponse:
        """Poll the token endpoint (RFC 8628 §3.4) at the interval the server gave, five seconds
        slower after each ``slow_down``, until the person approved (the tokens), denied or the code
        expired (:class:`SignInError`). A token endpoint out of reach is asked again at the next poll."""
        endpoints = await self.endpoints(http)
        loop, interval = asyncio.get_running_loop(), started.interval
        form = self._form(grant_type=DEVICE_CODE_GRANT, device_code=started.device_code)
        while True:
            await asyncio.sleep(min(interval, max(0.0, started.ends - loop.time())))
            if loop.time() >= started.ends:
                raise self._ended(SignInError.EXPIRED)
            try:
                return await token_request(http, endpoints.token, form, what="the device code",
                                           auth=self._client_auth())
            except TokenEndpointError as exc:
                if exc.error == "authorization_pending":
                    continue
                if exc.error == "slow_down":
                    interval += SLOW_DOWN_STEP
                    LOG.info("%s: the token endpoint asked to poll slower: every %g s", self.agent, interval)
                    continue
                if exc.error == "access_denied":
                    raise self._ended(SignInError.DENIED) from None
                if exc.error == "expired_token":
                    raise self._ended(SignInError.EXPIRED) from None
                raise SignInError(SignInError.REFUSED, str(exc), f"The sign-in to {self.agent} failed.") from None
            except A2AClientError as exc:  # out of reach: the code may still be approved
                LOG.info("%s: polling for the sign-in failed (%s); polling on", self.agent, exc)

    def _ended(self, reason: str) -> SignInError:
        if reason == SignInError.DENIED:
            return SignInError(reason, f"the sign-in to {self.agent} was denied",
                               f"The sign-in to {self.agent} was declined, so I cannot ask it.")
        return SignInError(reason, f"the sign-in code for {self.agent} expired before it was used",
                           f"The sign-in code for {self.agent} expired. Ask again for a new one.")

    async def refresh(self, http: httpx.AsyncClient, refresh_token: str) -> TokenResponse:
        """New tokens for a refresh token (RFC 6749 §6); ``TokenEndpointError`` when refused."""
        endpoints = await self.endpoints(http)
        return await token_request(http, endpoints.refresh,
                                   self._form(grant_type="refresh_token", refresh_token=refresh_token),
                                   what="the refresh token", auth=self._client_auth())

    async def revoke(self, http: httpx.AsyncClient, token: str, hint: str) -> bool:
        """Revoke ``token`` at the provider (RFC 7009) when it names where; whether it said so."""
        try:
            endpoints = await self.endpoints(http)
            if not endpoints.revocation:
                return False
            response = await http.post(endpoints.revocation, data=self._form(token=token, token_type_hint=hint),
                                       auth=self._client_auth())
        except (A2AClientError, httpx.HTTPError) as exc:
            LOG.info("%s: the token could not be revoked: %s", self.agent, exc)
            return False
        return response.status_code == 200


def _seconds(value, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return default
    return float(value)


class PersonToken:
    """The access token of whoever a request is for (``agent.tokens.person()``), for one sign-in
    scheme of an agent: read from the store, refreshed when it expired, and, when there is none
    (or the refresh was refused), :class:`SignInRequiredError` if the card requires the scheme
    (a scheme it only declares sends nothing then: the agent may ask later, auth-required)."""

    def __init__(self, grant: DeviceGrant, http: Callable[[], httpx.AsyncClient], store: TokenStore,
                 required: bool) -> None:
        """``http``: the HTTP client of the authorization server, when one is needed."""
        self.grant, self.required = grant, required
        self._http, self._store = http, store
        self._refreshing: dict[str, asyncio.Lock] = {}

    def key(self, who: str | None = None) -> str:
        """Where the tokens of ``who`` (the current person) are kept."""
        return f"{person() if who is None else who}\n{self.grant.key}"

    def needed(self) -> SignInRequiredError:
        """The error that asks the current person to sign in."""
        return SignInRequiredError(f"the agent {self.grant.agent!r} needs you to sign in ('{self.grant.scheme}')",
                                   self, (self.grant.scheme,))

    async def authorization(self) -> str | None:
        """``Bearer <token>`` of the current person; refreshed when expired; ``None`` when they have
        none and the scheme is not required (else :class:`SignInRequiredError`)."""
        key = self.key()
        signed = self._store.get(key)
        if signed is not None and signed.fresh(self._store.clock()):
            return f"Bearer {signed.access_token}"
        if signed is not None and signed.refresh_token:
            lock = self._refreshing.setdefault(key, asyncio.Lock())
            async with lock:
                signed = self._store.get(key)
                if signed is not None and signed.fresh(self._store.clock()):
                    return f"Bearer {signed.access_token}"
                if signed is not None and signed.refresh_token:
                    refreshed = await self._refreshed(key, signed)
                    if refreshed is not None:
                        return f"Bearer {refreshed.access_token}"
            self._refreshing.pop(key, None)
        if self.required:
            raise self.needed()
        return None

    async def _refreshed(self, key: str, signed: SignedIn) -> SignedIn | None:
        try:
            response = await self.grant.refresh(self._http(), signed.refresh_token)
        except TokenEndpointError as exc:
            if exc.error not in REFRESH_REFUSED and exc.status not in (400, 401):
                raise
            LOG.info("%s: the refresh token was refused (%s): the person signs in again", self.grant.agent,
                     exc.error or exc.status)
            self._store.forget(key)
            return None
        fresh = signed_in(response, self._store.clock(), keep_refresh=signed.refresh_token)
        self._store.put(key, fresh)
        LOG.info("%s: the access token was refreshed", self.grant.agent)
        return fresh

    def forget(self, refused: str | None) -> None:
        """The agent refused ``refused`` (an ``Authorization`` value): refresh before the next request."""
        key = self.key()
        signed = self._store.get(key)
        if signed is not None and refused == f"Bearer {signed.access_token}":
            self._store.put(key, replace(signed, access_token=""))

    async def renewed(self, refused: str | None) -> bool:
        """The agent refused ``refused``: True when a refreshed token is worth one more try."""
        self.forget(refused)
        try:
            again = await self.authorization()
        except SignInRequiredError:
            return False
        return again is not None and again != refused


def signed_in(response: TokenResponse, now: float, keep_refresh: str | None = None) -> SignedIn:
    """What a token response keeps (a refresh that gives no new refresh token keeps the old one)."""
    return SignedIn(response.access_token, response.refresh_token or keep_refresh, expiry(response.lifetime, now),
                    response.scope)


class SignInUnderWay:
    """One person's sign-in, from the code said to the tokens kept: ``done`` ends with the
    tokens, or with :class:`SignInError`. ``kept`` holds the messages whose turns ended before it
    did, each ``(text, lang)``, to send once it has."""

    def __init__(self, prompt: SignInPrompt, done: "asyncio.Task[SignedIn]") -> None:
        self.prompt, self.done = prompt, done
        self.kept: list[tuple[str, str | None]] = []
        self.delivery: "asyncio.Task | None" = None  # what sends ``kept`` once signed in

    def keep(self, text: str, lang: str | None) -> None:
        """Keep a message to send once signed in (at most :data:`KEPT_MOST`: the oldest go first)."""
        self.kept.append((text, lang))
        if len(self.kept) > KEPT_MOST:
            LOG.warning("%s: %d messages wait for a sign-in; the oldest is let go", self.prompt.agent, len(self.kept))
            del self.kept[0]

    @property
    def over(self) -> bool:
        """Whether it ended and sent all it kept."""
        return self.done.done() and (self.delivery is None or self.delivery.done())


class SignIns:
    """The sign-ins under way of one client, at most one per person and grant (a person who speaks
    again while theirs is awaited joins it; no second code is asked for)."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store
        self._under_way: dict[str, SignInUnderWay] = {}

    def matching(self, prefix: str) -> list[SignInUnderWay]:
        """The sign-ins under way whose keys start with ``prefix`` (a person's, or every person's of an agent)."""
        return [s for key, s in self._under_way.items() if key.startswith(prefix) and not s.done.done()]

    def delivering(self, prefix: str) -> list["asyncio.Task"]:
        """The sendings of kept messages under way, of sign-ins that ended, whose keys start with ``prefix``."""
        return [s.delivery for key, s in self._under_way.items() if key.startswith(prefix) and s.done.done()
                and s.delivery is not None and not s.delivery.done()]

    async def begin(self, token: PersonToken, http: httpx.AsyncClient) -> tuple[SignInUnderWay, bool]:
        """The current person's sign-in for ``token``'s grant: the one under way, or a new one
        (a code asked for, polled on a task of its own); whether it is new."""
        key = token.key()
        under_way = self._under_way.get(key)
        if under_way is not None and not under_way.done.done():
            return under_way, False
        started = await token.grant.start(http)
        under_way = SignInUnderWay(started.prompt, asyncio.ensure_future(self._finish(token, http, started, key)))
        for ended in [k for k, s in self._under_way.items() if s.over]:  # those over are let go
            del self._under_way[ended]
        self._under_way[key] = under_way
        return under_way, True

    async def _finish(self, token: PersonToken, http: httpx.AsyncClient, started: _Started, key: str) -> SignedIn:
        response = await token.grant.poll(http, started)
        signed = signed_in(response, self.store.clock())
        self.store.put(key, signed)
        LOG.info("%s: signed in", token.grant.agent)
        return signed

    def close(self) -> None:
        """Stop every sign-in under way."""
        for under_way in self._under_way.values():
            under_way.done.cancel()
            if under_way.delivery is not None:
                under_way.delivery.cancel()
        self._under_way.clear()
