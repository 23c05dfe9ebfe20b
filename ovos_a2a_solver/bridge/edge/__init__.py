# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The request on the wire, until the a2a-sdk's handler takes it: how many connections and
how long a request may take (:mod:`.connections`), its size (:mod:`.body_limit`), its shape
(:mod:`.wire`, by the rules of :mod:`.json_rules`), the A2A version it speaks
(:mod:`.version_check`, by the rule of :mod:`.versions`), who may call (:mod:`.security`),
errors in each binding's shape (:mod:`.errors`), "busy" in the
status its clients retry (:mod:`.busy`), the agent card (:mod:`.card`) and the gRPC
statuses A2A asks for (:mod:`.grpc_rules`).

It imports only the bridge's settings and the backends' description (for the card).
"""
