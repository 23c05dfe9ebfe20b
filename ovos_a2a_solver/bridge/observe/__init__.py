# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What an operator sees of the bridge at work: its metrics (:mod:`.metrics`, served at
``/metrics`` in the Prometheus text format when ``metrics`` is on), the trace context it
carries from a caller to the persona's turn (:mod:`.tracing`), and a log that callers cannot
write lines into nor fill (:mod:`.log_safety`).

Every other room records through the :class:`~.metrics.Metrics` it is given; this room
imports nothing of the bridge but its settings, and ``prometheus_client`` only when metrics
are on.
"""
