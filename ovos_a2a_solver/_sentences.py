# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Streamed text -> sentences, each given out as soon as it is complete.

``sentence_stream`` finds boundaries inside the text. It waits for the next sentence
to start before it gives one out; an agent that streams a sentence per chunk would then
be spoken a chunk late. So a chunk that itself ends a sentence (and is not an
abbreviation like "Dr." or a number like "3.") is given out at once.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_ENDS_SENTENCE = re.compile(r"(?<![\d.])(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})[.!?…]+[\"')\]’”»]*\s*$")


def stream_sentences(chunks: Iterable[str]) -> Iterator[str]:
    """Yield the sentences of a text stream in order, none empty, as early as possible."""
    from sentence_stream import SentenceBoundaryDetector

    detector = SentenceBoundaryDetector()
    for chunk in chunks:
        yield from detector.add_chunk(chunk)
        if not detector.current_sentence and _ENDS_SENTENCE.search(detector.remaining_text):
            sentence = detector.finish()
            if sentence:
                yield sentence
    rest = detector.finish()
    if rest:
        yield rest
