# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The other processes that share one store: PostgreSQL replicas (:mod:`.replicas`) and
the SQLite workers of one command (:mod:`.siblings`).

It imports :mod:`..storage`, never the other way round.
"""
