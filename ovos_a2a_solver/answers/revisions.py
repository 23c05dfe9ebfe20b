# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A revision of the answer: what the assembling of replies (``answers.assembler``) hands to the
speaking of sentences (``answers.sentences``), a value both know and neither owns."""
from __future__ import annotations


class Revision:
    """One change to one piece of the answer (an artifact, a message reply, the status answer).

    ``append``: ``text`` continues the piece; otherwise the piece now reads ``text``.
    ``last``: the agent said the piece is complete. (A plain class: a dataclass would add
    milliseconds to the import of every process that loads the plugin.)
    """

    __slots__ = ("key", "text", "append", "last")

    def __init__(self, key: str, text: str, append: bool, last: bool = False) -> None:
        self.key, self.text, self.append, self.last = key, text, append, last

    def __repr__(self) -> str:
        return f"Revision({self.key!r}, {self.text!r}, append={self.append}, last={self.last})"
