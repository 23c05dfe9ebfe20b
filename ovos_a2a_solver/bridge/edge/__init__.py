# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The request on the wire, until the a2a-sdk's handler takes it: what the request is, read
once for every layer (:mod:`.classify`), how many connections and how long a request may take
(:mod:`.connections`), its size (:mod:`.body_limit`), its shape (:mod:`.wire`, by the rules of
:mod:`.json_rules`), the A2A version it speaks (:mod:`.versions`), who may call
(:mod:`.security`), errors in each binding's shape (:mod:`.errors`), "busy" in the status its
clients retry (:mod:`.busy`), each request seen once answered (:mod:`.observer`) for the
access log (:mod:`.access_log`) and the metrics (:mod:`.request_metrics`), the agent card
(:mod:`.card`) and the gRPC statuses A2A asks for (:mod:`.grpc_rules`).

It imports only the bridge's settings, the backends' description (for the card) and the
metrics it records in.
"""
