# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Events -> what is said: the one place that decides what the answer is (:mod:`.assembler`),
an answer streamed in status messages told from progress notes (:mod:`.status_answer`), the
revisions of the answer's pieces (:mod:`.revisions`), whole sentences to speak
(:mod:`.sentences`), and a stream read ahead so that its reader can wait a while only
(:mod:`.read_ahead`).

It imports nothing else of the plugin but the shared leaf modules.
"""
