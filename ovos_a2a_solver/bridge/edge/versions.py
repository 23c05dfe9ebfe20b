# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which A2A protocol version a request speaks (A2A 1.0 §3.6): one rule for every binding.

A client names the version in the ``A2A-Version`` header (HTTP), the ``A2A-Version``
query parameter (HTTP, when there is no header) or the ``a2a-version`` metadata (gRPC).
The version is ``Major.Minor``; a patch number is ignored (``1.0.3`` is 1.0). An absent
or empty value means 0.3. A version the binding does not serve, or a value that is not
a version at all, is VersionNotSupported: JSON-RPC -32009, HTTP 400 and gRPC
``FAILED_PRECONDITION``, each with the ``google.rpc.ErrorInfo`` reason
``VERSION_NOT_SUPPORTED``.

What each binding serves is what the agent card offers (:func:`served_versions`): the
bridge serves 1.0 on every binding and 0.3 on JSON-RPC and HTTP+JSON. Over JSON-RPC the
method names a version too (``SendMessage`` is 1.0, ``message/send`` 0.3), over HTTP+JSON
the path (0.3's begin with ``/v1``): a request whose version is not its method's or path's
is VersionNotSupported as well.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from a2a.utils.errors import VersionNotSupportedError

HEADER = "A2A-Version"
#: what an absent or empty version means (A2A 1.0 §3.6.2)
UNNAMED = "0.3"
_VERSION = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.\d{1,9})?")
_SHOWN = 40  # characters of a bad value repeated in an error


def requested_version(value: str | bytes | None) -> str:
    """The ``Major.Minor`` version ``value`` names (``"1.0"`` for ``" 1.0.3 "``), ``"0.3"``
    for an absent or empty one; VersionNotSupportedError for a value that is not a version."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = (value or "").strip()
    if not text:
        return UNNAMED
    match = _VERSION.fullmatch(text)
    if match is None:
        raise VersionNotSupportedError(
            message=f"A2A version {text[:_SHOWN]!r} is not a version: send Major.Minor, e.g. 1.0")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def negotiate(value: str | bytes | None, served: Iterable[str], where: str) -> str:
    """The version of a request that names ``value``, if ``served`` includes it; else
    VersionNotSupportedError saying what is served ``where`` (e.g. "over gRPC")."""
    version = requested_version(value)
    served = tuple(served)
    if version not in served:
        named = value.decode("latin-1") if isinstance(value, bytes) else value
        shown = f"A2A version {version}" if (named or "").strip() else f"A request without A2A-Version (A2A {version})"
        raise VersionNotSupportedError(message=f"{shown} is not served {where}: send A2A-Version "
                                               f"{' or '.join(served)}")
    return version


def served_versions(interfaces) -> dict[str, tuple[str, ...]]:
    """Binding (``JSONRPC``, ``HTTP+JSON``, ``GRPC``) → the ``Major.Minor`` versions the
    agent card's ``supported_interfaces`` offer on it, in the card's order."""
    served: dict[str, tuple[str, ...]] = {}
    for interface in interfaces:
        version = requested_version(interface.protocol_version)
        if version not in served.get(interface.protocol_binding, ()):
            served[interface.protocol_binding] = (*served.get(interface.protocol_binding, ()), version)
    return served
