# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The access log: one line per request, when the operator turns it on (``--access-log``).

    POST /a2a/ JSON-RPC SendMessage 200 12.4ms owner=token-3f2a9c1d7e0b

The HTTP method and path, the binding, the A2A method, the status (a gRPC code on gRPC), how
long the answer took to its last byte (a stream: until it ended), and who called (the owner
the credentials name, ``anonymous`` without). Never a message's text, a header or a query:
ids in a path are the only values from the request, and the path is the one sent,
percent-encoded, so that ``%0A`` cannot break the line. Written at INFO on the logger
``ovos_a2a_solver.bridge.access``, so it goes wherever the bridge's log goes (stderr).

:class:`AccessLog` is a sink of :mod:`.observer`, which sees each request once it was answered.
"""
from __future__ import annotations

import logging

from ovos_a2a_solver.bridge.config import ACCESS_LOGGER
from ovos_a2a_solver.bridge.edge.observer import AnsweredRequest

LOG = logging.getLogger(ACCESS_LOGGER)


class AccessLog:
    """The access log's line for each request answered, on every binding and the card."""

    wants_outcome = False  # the line says the status itself

    def answered(self, request: AnsweredRequest) -> None:
        """Write ``request``'s line."""
        LOG.info("%s %s %s %s %s %.1fms owner=%s", request.verb, request.target, request.binding, request.method,
                 request.status or "-", request.seconds * 1000, request.owner)
