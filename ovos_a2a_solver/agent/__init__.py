# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""One remote agent: the connection over the transport its card offers (:mod:`.connection`),
its card and the card's cache (:mod:`.cards`), the card's signature (:mod:`.signatures`), the
credentials and the origins they may go to (:mod:`.credentials`), the form the card's security
schemes ask for (:mod:`.schemes`), httpx transports that make bent replies readable
(:mod:`.readable_transport`) and log the raw exchange (:mod:`.wire_log`), what a failed request
means and whether to try again (:mod:`.request_failures`), and the errors a caller catches
(:mod:`.exceptions`).

It imports nothing else of the plugin but its defaults (``_defaults``) and the shared leaf modules.
"""
