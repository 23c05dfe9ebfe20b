# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge: publish an OVOS persona as a durable, well-behaved A2A agent.

Run it with ``ovos-a2a serve --persona FILE.json`` or ``python -m ovos_a2a_solver.bridge``.
``Bridge`` (in ``app``) is the ASGI application for embedding.
"""
