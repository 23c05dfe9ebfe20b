# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""An answer streamed in "working" status messages, told from progress notes.

Some agents stream their answer as it grows in the message of each "working" status update
and give it as an artifact only at the end: ADK's default executor and strands send each new
chunk ("delta"); others send the whole text so far ("cumulative"). Others again say what they
are doing there ("Searching…", "working..."), which is not the answer. What the agent sent
decides, one status text after the other:

* a text is part of the answer once something later **extends** it: the next status text
  starts with it and goes on (cumulative), or the next one **continues** it (delta): it
  starts with a space, a small letter, a digit or a punctuation mark, or the text before
  it ended in a space. Once a run of texts is answer, each later one is at once;
* a text that ends in an ellipsis ("Searching…", "thinking..."), that is said again
  unchanged, or that the next one neither extends nor continues is a **progress note**:
  never said, only reported as progress.

A text is held until the next event decides it, so the answer is heard one status message
late at most, and a note that looks like a sentence ("Looking it up.") is not said: a new
sentence that starts right after it, with no space, is read as the next note. (An agent
that streams chunks split that way is heard when its answer is complete, not before.)
The final answer (the artifact, or the status message that ends the task) that repeats or
extends the streamed text continues it, so nothing is said twice (``answers.assembler``).

Every step costs time in proportion to the text the event carries.
"""
from __future__ import annotations

_ELLIPSIS = ("...", "…")


def content(text: str) -> str:
    """``text`` without its spaces: spaces alone never tell two texts apart."""
    return "".join(text.split())


def progress_note(text: str) -> bool:
    """Whether ``text`` reads as a progress note whatever follows it: it ends in an ellipsis."""
    return text.rstrip().endswith(_ELLIPSIS)


def _continues(text: str, chunk: str) -> bool:
    """Whether ``chunk`` reads as the next piece of ``text``, not as a new note in its place."""
    end = text.rstrip()
    if end.endswith(_ELLIPSIS):
        return False
    first = chunk[:1]
    return first.isspace() or text[-1:].isspace() or not first.isalpha() or first.islower()


class StatusAnswer:
    """The answer in the "working" status texts so far (see the module's rule).

    :meth:`add` takes each text and says what it changes: ``None`` when the text is not (or
    not yet) answer, else ``(text, append)``: the answer now continues with ``text``, or now
    reads ``text``."""

    __slots__ = ("answer", "_chunks", "_tail", "_length", "_last", "_reading")

    def __init__(self) -> None:
        self.answer = False   # the run of texts was found to be answer
        self._chunks: list[str] = []  # the run's text: the answer so far, or a text not yet decided
        self._tail = ""       # its last characters
        self._length = 0      # its length without spaces
        self._last = ""       # the newest status text, without spaces
        self._reading = ""    # "cumulative" or "delta", once known

    @property
    def text(self) -> str:
        """The run's text: the answer so far, or a text not yet decided."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def add(self, text: str) -> tuple[str, bool] | None:
        """Take the next status text; what it changes of the answer (see the class)."""
        newest = content(text)
        if not newest or (newest == self._last and not (self.answer and self._reading == "delta")):
            return None  # nothing, or the same again
        self._last = newest
        if not self._chunks:
            self._now(text, newest)
            return None
        if len(newest) >= self._length and newest.startswith(content(self.text)):
            # the whole answer so far: a cumulative run, or a run of chunks said again whole
            self._reading = self._reading or "cumulative"
            return self._now(text, newest)
        if self._reading == "delta" or (not self._reading and _continues(self._tail, text)):
            self._reading = "delta"
            self._chunks.append(text)
            self._tail = (self._tail + text)[-16:]
            self._length += len(newest)
            if self.answer:
                return text, True
            self.answer = True
            return self.text, False
        if self._reading == "cumulative":
            return self._now(text, newest)  # the agent rewrote its answer
        self._now(text, newest)  # the text before was a note; this one is not decided yet
        return None

    def _now(self, text: str, newest: str) -> tuple[str, bool]:
        """The run now reads ``text``; answer once the run's reading is known."""
        self._chunks, self._tail, self._length = [text], text[-16:], len(newest)
        self.answer = bool(self._reading)
        return text, False
