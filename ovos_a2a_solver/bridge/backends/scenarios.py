# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The scenarios backend: the A2A conformance kit's test agent, scripted by messageId prefix."""
from __future__ import annotations

import time
from collections.abc import Iterator

from ovos_a2a_solver.bridge.backends.echo import EchoBackend
from ovos_a2a_solver.bridge.backends.protocols import (ArtifactOutput, Capability, Completion, Question, Rejection,
                                                       Reply)


class ScenarioBackend(EchoBackend):
    """The A2A conformance kit's test agent: the messageId's prefix picks a scripted
    scenario (as the kit's reference agent does). Any other message is echoed and the task
    then waits for input, so that a plain message's task can be continued, given a longer
    history, or canceled afterwards (what the 0.3 kit's mandatory tests do with it)."""

    name = "scenarios"
    description = "Follows the A2A conformance kit's scenarios by messageId prefix; echoes the rest (a test backend)."
    RESUBSCRIBE_SECONDS = 4.0

    def answers_with_message(self, message_id: str) -> bool:
        """Whether the answer to this message may be a :class:`Reply` (no task)."""
        return message_id.startswith("tck-message-response")

    def answers_at_once(self, text: str) -> bool:
        """Never: scenarios pick their script by messageId, and some of them wait."""
        return False

    def capabilities(self) -> list[Capability]:
        return [Capability(id="tck", name="TCK scenarios", description="Follows the conformance kit's scenarios."),
                *super().capabilities()]

    def reply_to(self, text: str, message_id: str, session_id: str, lang: str | None = None) -> Iterator[object]:
        from a2a.types import Part
        from google.protobuf import json_format
        from google.protobuf.struct_pb2 import Value

        def starts(prefix: str) -> bool:
            return message_id.startswith(prefix)

        file_part = Part(raw=b"tck", media_type="text/plain", filename="output.txt")
        if starts("tck-stream-artifact-chunked"):
            yield ArtifactOutput(Part(text="chunk-1 "))
            yield ArtifactOutput(Part(text="chunk-2"), append=True, last_chunk=True)
        elif starts("test-resubscribe-message-id"):
            yield "Working on it."
            time.sleep(self.RESUBSCRIBE_SECONDS)
            yield "Done."
        elif starts("tck-stream-artifact-text"):
            yield ArtifactOutput(Part(text="Streamed text content"), last_chunk=True)
        elif starts("tck-stream-artifact-file"):
            yield ArtifactOutput(file_part, last_chunk=True)
        elif starts("tck-stream-ordering-001"):
            yield ArtifactOutput(Part(text="Ordered output"), last_chunk=True)
        elif starts("tck-artifact-file-url"):
            yield ArtifactOutput(Part(url="https://example.com/output.txt", media_type="text/plain",
                                      filename="output.txt"), last_chunk=True)
        elif starts("tck-message-response"):
            yield Reply("Direct message response")
        elif starts("tck-input-required"):
            yield Question("Please provide more input.")
        elif starts("tck-complete-task"):
            yield Completion("Hello from TCK")
        elif starts("tck-artifact-text"):
            yield ArtifactOutput(Part(text="Generated text content"), last_chunk=True)
        elif starts("tck-artifact-file"):
            yield ArtifactOutput(file_part, last_chunk=True)
        elif starts("tck-artifact-data"):
            yield ArtifactOutput(Part(data=json_format.Parse('{"key": "value", "count": 42}', Value())),
                                 last_chunk=True)
        elif starts("tck-reject-task"):
            yield Rejection("Rejected by the scenario.")
        elif starts("tck-stream-001"):
            yield ArtifactOutput(Part(text="Stream hello from TCK"), last_chunk=True)
        elif starts("tck-stream-002"):
            yield Completion("Done.")
        elif starts("tck-stream-003"):
            yield ArtifactOutput(Part(text="Stream task lifecycle"), last_chunk=True)
        else:  # no scenario: echo, and keep the conversation open (a follow-up continues the task)
            asked = False
            for item in self.reply(text, session_id, lang):
                asked = asked or isinstance(item, Question)
                yield item
            if not asked:
                yield Question()
