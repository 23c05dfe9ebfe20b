# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which HTTP headers carry credentials, for both halves of the package: the bridge drops them
from a request once authentication is done, and the plugin's wire log (``ovos-a2a -v``) shows
``<hidden>`` for their values. A shared leaf module (the standard library only).

A header is credential-like when a part of its name (between ``-`` or ``_``) is
``authorization``, ``cookie``, ``api-key`` (or ``apikey``, ``api_key``), ``token``,
``secret``, ``password`` or ``session``; ``X-API-Key``, ``Proxy-Authorization`` and
``Set-Cookie`` are named too.
"""
from __future__ import annotations

import re

#: the names of credential-like headers (any case; see the module)
CREDENTIAL_HEADER = re.compile(r"(^|[-_])(authorization|cookie|api[-_]?key|token|secret|password|session)([-_]|$)"
                               r"|^x-api-key$|^proxy-authorization$|^set-cookie$", re.I)


def credential_header(name: str) -> bool:
    """Whether the header ``name`` is credential-like (:data:`CREDENTIAL_HEADER`)."""
    return CREDENTIAL_HEADER.search(name) is not None
