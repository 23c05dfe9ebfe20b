# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Turning what an agent sends back into the text to say, once.

Agents answer in many shapes: one Message; a Task snapshot; a stream of artifact chunks
(appended), of cumulative artifacts (each the whole text so far), of several artifacts;
or only status messages. :class:`AnswerAssembler` takes the events in order and gives
back only the text not yet given, so nothing is said twice.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

from a2a.types import TaskState

from ovos_a2a_solver.states import WAITING_FOR_USER

ARTIFACT_SEPARATOR = "\n"
_SENTENCE_END = re.compile(r"[.!?…][\"')\]’”»]*$")


def _join_chunk(text: str, chunk: str) -> str:
    """Append a streamed chunk; a sentence that ends right where the next begins gets a space."""
    if text and chunk and _SENTENCE_END.search(text) and chunk[0].isupper():
        return text + " " + chunk
    return text + chunk


def _text(parts: Any) -> str:
    """The text parts, joined the way their chunks were streamed (an SDK server aggregates
    appended chunks into one artifact with a part per chunk)."""
    text = ""
    for part in parts:
        if part.WhichOneof("content") == "text":
            text = _join_chunk(text, part.text)
    return text


class AnswerAssembler:
    """Collects one reply; ``feed`` returns the new text of each event, ``finish`` the rest."""

    def __init__(self, on_update: Callable[["AnswerAssembler"], None] | None = None) -> None:
        self.task_id = ""
        self.context_id = ""
        self.state: int | None = None
        self.status_text = ""
        self.message_reply = False
        self.events = 0
        self.progress = ""  # a "working" status message the latest event carried
        self._on_update = on_update
        self._artifacts: dict[str, str] = {}   # artifact id -> its text as the agent has it now
        self._spoken: dict[str, str] = {}      # artifact id -> the part of it already given out
        self._given: list[str] = []

    @property
    def text(self) -> str:
        """Everything given out so far."""
        return "".join(self._given)

    def feed(self, event: Any) -> list[str]:
        """Take one ``StreamResponse``; return the text it adds."""
        self.events += 1
        self.progress = ""
        try:
            return self._feed(event)
        finally:
            if self._on_update is not None:
                self._on_update(self)

    def _feed(self, event: Any) -> list[str]:
        kind = event.WhichOneof("payload")
        if kind == "message":
            msg = event.message
            self._ids(msg.task_id, msg.context_id)
            self.message_reply = True
            return self._set("message:" + msg.message_id, _text(msg.parts))
        if kind == "task":
            task = event.task
            self._ids(task.id, task.context_id)
            self._status(task.status)
            out: list[str] = []
            for n, artifact in enumerate(task.artifacts):
                out += self._set(artifact.artifact_id or f"#{n}", _text(artifact.parts))
            return out
        if kind == "status_update":
            update = event.status_update
            self._ids(update.task_id, update.context_id)
            self._status(update.status)
            return []
        if kind == "artifact_update":
            update = event.artifact_update
            self._ids(update.task_id, update.context_id)
            artifact_id = update.artifact.artifact_id or "#0"
            chunk = _text(update.artifact.parts)
            if update.append:
                return self._set(artifact_id, _join_chunk(self._artifacts.get(artifact_id, ""), chunk))
            return self._set(artifact_id, chunk)
        return []

    def finish(self) -> list[str]:
        """Text still owed at the end: the status message when it is the answer or a question."""
        text = self.status_text.strip()
        if not text or self.state is None:
            return []
        waiting = self.state in WAITING_FOR_USER
        answered_by_status = self.state == TaskState.TASK_STATE_COMPLETED and not self.text.strip()
        if (waiting and text not in self.text) or answered_by_status:
            return self._set("status", text)
        return []

    # ---- internals ----------------------------------------------------------------

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _status(self, status: Any) -> None:
        if status.state:
            self.state = status.state
        if status.HasField("message"):
            text = _text(status.message.parts)
            if text:
                self.status_text = text
                if status.state == TaskState.TASK_STATE_WORKING:
                    self.progress = text

    def _set(self, key: str, text: str) -> list[str]:
        """The agent's text for ``key`` is now ``text``; return what was not given yet."""
        self._artifacts[key] = text
        spoken = self._spoken.get(key, "")
        if text.startswith(spoken):
            delta = text[len(spoken):]
        elif spoken.startswith(text):
            return []  # shortened: nothing new to say
        else:  # rewritten: say only what differs from what was said
            delta = text[len(os.path.commonprefix([spoken, text])):]
        self._spoken[key] = text
        if not delta:
            return []
        if not spoken and self._given and not self.text.endswith(("\n", " ")):
            delta = ARTIFACT_SEPARATOR + delta.lstrip()
        self._given.append(delta)
        return [delta]
