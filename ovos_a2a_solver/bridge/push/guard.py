# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Where a webhook may point: never to an address the operator did not allow.

:class:`WebhookGuard` takes only ``http``/``https`` URLs whose host resolves to public
addresses: loopback, private, link-local (cloud metadata), shared (CGNAT), multicast,
reserved, unspecified and IPv6 site-local addresses are refused, an IPv6 address that
carries IPv4 ones (IPv4-mapped, 6to4, Teredo) as those IPv4 addresses (see
:func:`forbidden`), and a host that does not resolve too. ``push_allow`` (host names,
addresses or networks) lets trusted internal receivers through. A URL is checked when it is
registered and again at every delivery, and the delivery connects to the very address that
was checked (TLS still verifies the host name), so DNS cannot change the answer in between.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from a2a.utils.errors import InvalidParamsError

from ovos_a2a_solver.bridge.observe.log_safety import Throttle

LOG = logging.getLogger("ovos_a2a_solver.bridge")
#: a caller may register refused webhooks in a loop: one line per 10 s
REFUSALS = Throttle()


class WebhookRefused(ValueError):
    """A webhook URL the bridge will not call; ``str()`` says why."""


@dataclass(frozen=True)
class Target:
    """Where one delivery goes: the URL as registered, and the address checked for it."""

    url: str
    host: str
    address: str

    @property
    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address (the ``Host`` header keeps the name)."""
        parts = urlsplit(self.url)
        address = f"[{self.address}]" if ":" in self.address else self.address
        netloc = address + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def embedded_ipv4(ip) -> list:
    """The IPv4 addresses an IPv6 address carries to: the one inside an IPv4-mapped
    (``::ffff:0:0/96``) or 6to4 (``2002::/16``) address, the server and the client of a Teredo
    (``2001::/32``) one; nothing for any other address."""
    if ip.version != 6:
        return []
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    return list(ip.teredo) if ip.teredo is not None else []


def forbidden(address: str) -> bool:
    """Whether ``address`` is not a public unicast destination. An IPv6 address that carries
    IPv4 addresses (IPv4-mapped, 6to4, Teredo) is judged by them: it is refused if one of
    them would be, and passes if all are public, as the IPv4 addresses would. Site-local
    (``fec0::/10``, deprecated but still routed by some networks) is refused."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    embedded = embedded_ipv4(ip)
    if embedded:
        return any(forbidden(str(inner)) for inner in embedded)
    return (not ip.is_global or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified or getattr(ip, "is_site_local", False))


class WebhookGuard:
    """Which webhook URLs may be called (see the module's docstring)."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allowed_hosts: set[str] = set()
        self.allowed_networks: list = []
        for entry in (a.strip() for a in allow if a.strip()):
            try:
                self.allowed_networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.allowed_hosts.add(entry.lower().rstrip("."))

    def _allowed(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        return any(ip in network for network in self.allowed_networks if ip.version == network.version)

    async def target(self, url: str) -> Target:
        """The checked address to deliver ``url`` to, or :class:`WebhookRefused`. Of the host's
        addresses the first allowed one is taken (a public one, or one on the allow-list)."""
        parts, host, port = self._parse(url)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:  # no such host, or a name no resolver can encode
            raise WebhookRefused(f"the webhook host {host} does not resolve ({exc})") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        usable = addresses if host in self.allowed_hosts else \
            [a for a in addresses if not forbidden(a) or self._allowed(a)]
        if not usable:
            raise WebhookRefused(f"the webhook host {host} is a private, loopback, link-local or reserved "
                                 f"address, or an IPv6 one that carries such an IPv4 address (6to4, Teredo, "
                                 f"IPv4-mapped) ({', '.join(addresses)}); an operator may allow it with "
                                 f"OVOS_A2A_PUSH_ALLOW")
        return Target(url, host if parts.port is None else f"{host}:{parts.port}", usable[0])

    @staticmethod
    def _parse(url: str):
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise WebhookRefused(f"not a URL: {url!r}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebhookRefused(f"a webhook must be an http(s) URL with a host, not {url!r}")
        return parts, parts.hostname.lower().rstrip("."), port

    async def accepts(self, url: str) -> bool:
        """For the SDK's ``push_url_validator``: True if ``url`` may be registered, else an
        ``InvalidParamsError`` that says why (the SDK's own refusal would not). A host on the
        allow-list by name is taken as it is (it is resolved and checked at delivery)."""
        try:
            if self._parse(url)[1] not in self.allowed_hosts:
                await self.target(url)
            return True
        except WebhookRefused as refusal:
            REFUSALS.warning(LOG, "webhook", "push notification config refused: %s", refusal)
            raise InvalidParamsError(message=f"webhook refused: {refusal}") from None
