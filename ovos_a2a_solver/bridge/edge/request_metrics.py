# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Requests counted for ``/metrics`` (``metrics`` on): by binding, A2A version, method and
outcome, on every binding (:class:`RequestMetrics`, a sink of :mod:`.observer`, which says
what each outcome means).

Every label takes one of a few known values whatever the caller sends: a method or a version
the bridge does not know is counted as ``other``, so a caller cannot make series without end.
"""
from __future__ import annotations

from ovos_a2a_solver.bridge.edge.observer import AnsweredRequest
from ovos_a2a_solver.bridge.observe.metrics import Metrics


class RequestMetrics:
    """Counts each request answered in ``metrics``."""

    wants_outcome = True

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def answered(self, request: AnsweredRequest) -> None:
        """Count ``request``."""
        self.metrics.request(request.binding, request.version, request.counted_method, request.outcome)
