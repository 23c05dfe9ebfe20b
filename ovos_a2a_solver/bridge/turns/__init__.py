# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One message -> one persona turn -> task events: the request handler around the
a2a-sdk's (:mod:`.handler`: admission, replay, honest cancel), the slots and hand-off
(:mod:`.admission`), what is refused before any work (:mod:`.validation`), the executor
(:mod:`.executor`: a message's three outcomes), the turn on its thread (:mod:`.turn`) and
the backend's health (:mod:`.backend_health`: how a turn ended, and the circuit breaker that
tries a failed turn again).

It imports :mod:`..backends`, :mod:`..storage` and the other processes' protocol of :mod:`..cluster`.
"""
