# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What survives a crash: the database (:mod:`.database`), the tasks (:mod:`.tasks`), the
operation log that makes a message idempotent (:mod:`.operations`).

It imports nothing else of the bridge.
"""
