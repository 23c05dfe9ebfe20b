# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Agent cards: a small read-only view for users, and a resolver that caches like HTTP does.

The resolver fetches ``/.well-known/agent-card.json`` (A2A 1.0 and 0.3) and falls back to
``/.well-known/agent.json`` (agents older than 0.3). A card is fetched once and reused;
it is revalidated (``If-None-Match``) only when its ``Cache-Control`` says it expired,
and fetched again after the agent could not be reached. When a signature is required
(see ``agent.signatures``), each card fetched is checked before it is kept: once per card.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ovos_a2a_solver._defaults import MAX_CARD_BYTES, MAX_KEY_SET_BYTES

if TYPE_CHECKING:  # pragma: no cover
    import httpx
    from a2a.types import AgentCard as ProtoAgentCard

    from ovos_a2a_solver.agent.signatures import CustomCheck, SignatureCheck

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"


@dataclass(frozen=True)
class AgentSkill:
    """One skill the agent advertises."""

    id: str
    name: str
    description: str = ""
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentInterface:
    """One way to reach the agent: a binding (JSONRPC, HTTP+JSON, GRPC) at a URL."""

    url: str
    binding: str
    protocol_version: str = ""
    tenant: str = ""


@dataclass(frozen=True)
class AgentCard:
    """What an agent says about itself (a view of the a2a-sdk ``AgentCard``)."""

    name: str
    description: str
    url: str
    version: str
    skills: tuple[AgentSkill, ...] = ()
    streaming: bool = False
    push_notifications: bool = False
    interfaces: tuple[AgentInterface, ...] = ()
    security_schemes: tuple[str, ...] = ()
    proto: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_proto(cls, card: "ProtoAgentCard") -> "AgentCard":
        """Build the view from the SDK's protobuf card."""
        interfaces = tuple(
            AgentInterface(url=i.url, binding=i.protocol_binding,
                           protocol_version=i.protocol_version, tenant=i.tenant)
            for i in card.supported_interfaces
        )
        skills = tuple(
            AgentSkill(id=s.id, name=s.name, description=s.description,
                       tags=tuple(s.tags), examples=tuple(s.examples))
            for s in card.skills
        )
        return cls(
            name=card.name,
            description=card.description,
            url=interfaces[0].url if interfaces else "",
            version=card.version,
            skills=skills,
            streaming=bool(card.capabilities.streaming),
            push_notifications=bool(card.capabilities.push_notifications),
            interfaces=interfaces,
            security_schemes=tuple(sorted(card.security_schemes.keys())),
            proto=card,
        )


_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*\"?(\d+)", re.I)
_NO_CACHE = re.compile(r"(?:^|,)\s*(?:no-cache|no-store)\b", re.I)


def freshness_seconds(cache_control: str | None) -> float | None:
    """How long a response may be reused: ``None`` for "until something goes wrong"."""
    if not cache_control:
        return None
    if _NO_CACHE.search(cache_control):
        return 0.0
    match = _MAX_AGE.search(cache_control)
    return float(match.group(1)) if match else None


def card_urls(agent_url: str) -> list[str]:
    """Where to look for the card of ``agent_url``, best first.

    A URL ending in ``.json`` is the card itself. Otherwise the well-known paths under
    the URL, then (if the URL has a path) under its origin.
    """
    if urlsplit(agent_url).path.endswith(".json"):
        return [agent_url]
    base = agent_url.rstrip("/")
    urls = [base + CARD_PATH, base + LEGACY_CARD_PATH]
    parts = urlsplit(agent_url)
    if parts.path.strip("/"):
        root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        urls += [root + CARD_PATH, root + LEGACY_CARD_PATH]
    return urls


@dataclass
class _Cached:
    card: Any
    url: str
    etag: str | None
    body: bytes
    expires: float | None  # monotonic time; None = no expiry


class CardResolver:
    """Resolves and caches one agent's card.

    ``generation`` grows each time the card's content changes, so a caller can rebuild
    what it derived from the card (transports) only then. ``signature_check``, if given,
    must pass for each card fetched (a card revalidated with 304 was checked already).
    ``clock`` gives the seconds a card's freshness (``Cache-Control: max-age``) is measured in
    (``time.monotonic`` unless given).
    """

    def __init__(self, agent_url: str, http: "httpx.AsyncClient",
                 signature_check: "SignatureCheck | CustomCheck | None" = None, *,
                 clock: Callable[[], float] | None = None) -> None:
        self.agent_url = agent_url
        self._clock = clock or time.monotonic
        self.fetches = 0
        self.generation = 0
        self._http = http
        self._signature_check = signature_check
        self._cached: _Cached | None = None
        self._stale = False
        self._lock = asyncio.Lock()

    def _expiry(self, cache_control: str | None) -> float | None:
        """When a card with this ``Cache-Control`` goes stale, on ``clock`` (``None``: never)."""
        seconds = freshness_seconds(cache_control)
        return None if seconds is None else self._clock() + seconds

    def invalidate(self) -> None:
        """Fetch the card again on next use (the agent was unreachable)."""
        self._stale = True

    async def get(self) -> "ProtoAgentCard":
        """The current card, fetched or revalidated only when needed."""
        cached = self._cached
        if cached is not None and not self._stale and (cached.expires is None or self._clock() < cached.expires):
            return cached.card
        async with self._lock:
            cached = self._cached
            if cached is not None and not self._stale and (cached.expires is None or self._clock() < cached.expires):
                return cached.card
            if cached is not None and not self._stale and cached.etag:
                if await self._revalidate(cached):
                    return cached.card
            await self._fetch()
            self._stale = False
            return self._cached.card

    async def _revalidate(self, cached: _Cached) -> bool:
        """Conditional GET; True when the agent says the cached card is still good."""
        from a2a.client import AgentCardResolutionError
        import httpx

        try:
            self.fetches += 1
            response, body, _ = await self._get(cached.url, {"If-None-Match": cached.etag})
        except httpx.HTTPError as exc:
            raise AgentCardResolutionError(f"cannot reach agent card at {cached.url}: {exc}") from exc
        if response.status_code == 304:
            cached.expires = self._expiry(response.headers.get("cache-control"))
            return True
        if response.status_code == 200:
            await self._store(cached.url, response, body)
            return True
        return False

    async def _get(self, url: str, headers: dict | None = None, *, what: str = "agent card",
                   limit: int = MAX_CARD_BYTES) -> tuple["httpx.Response", bytes, str]:
        """GET that follows redirects one hop at a time, so each hop is a new request
        and credentials are decided for its own origin (see ``auth``). Returns the response,
        its body (read as a stream, at most ``limit`` bytes) and the URL it came from."""
        for _ in range(5):
            request = self._http.build_request("GET", url, headers=headers)
            response = await self._http.send(request, stream=True)
            try:
                if not response.is_redirect:
                    body = await _read_capped(response, url, what, limit) if response.status_code == 200 else b""
                    return response, body, url
                url = str(response.next_request.url) if response.next_request else url
            finally:
                await response.aclose()
        return response, b"", url

    async def _read_key_set(self, url: str) -> tuple[int, str, bytes]:
        """A JWK Set for the signature check: (status, the URL it came from, body)."""
        response, body, final_url = await self._get(url, what="key set", limit=MAX_KEY_SET_BYTES)
        return response.status_code, final_url, body

    async def _fetch(self) -> None:
        from a2a.client import AgentCardResolutionError
        import httpx

        tried = []
        for url in card_urls(self.agent_url):
            try:
                self.fetches += 1
                response, body, _ = await self._get(url)
            except httpx.HTTPError as exc:
                raise AgentCardResolutionError(f"cannot reach agent card at {url}: {exc}") from exc
            if response.status_code in (404, 405, 410):
                tried.append(f"{url} (HTTP {response.status_code})")
                continue
            if response.status_code != 200:
                raise AgentCardResolutionError(
                    f"agent card at {url}: HTTP {response.status_code}", status_code=response.status_code)
            await self._store(url, response, body)
            return
        raise AgentCardResolutionError("no agent card found; tried " + ", ".join(tried), status_code=404)

    async def _store(self, url: str, response: "httpx.Response", body: bytes) -> None:
        from a2a.client import AgentCardResolutionError
        from a2a.client.card_resolver import parse_agent_card

        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError("the card is not a JSON object")
            card = parse_agent_card(data)
        except Exception as exc:  # json, protobuf ParseError, legacy-field conversion
            raise AgentCardResolutionError(f"invalid agent card at {url}: {exc}") from exc
        if self._signature_check is not None:
            await self._signature_check.check(card, url, self._read_key_set)
        if self._cached is None or self._cached.body != body:
            self.generation += 1
        self._cached = _Cached(card=card, url=url, etag=response.headers.get("etag"), body=body,
                               expires=self._expiry(response.headers.get("cache-control")))


async def _read_capped(response: "httpx.Response", url: str, what: str = "agent card",
                       limit: int = MAX_CARD_BYTES) -> bytes:
    """The body, read as it streams in; refused as soon as it passes ``limit`` bytes."""
    from a2a.client import AgentCardResolutionError

    def too_large() -> AgentCardResolutionError:
        return AgentCardResolutionError(f"{what} at {url} is larger than {limit // 1024} KiB; refused")

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)
