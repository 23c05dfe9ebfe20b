# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The sentence splitter as it was before it was made linear, kept unchanged as the
reference: the tests check that the linear one splits every text the same way, and
``bench/bench_sentences.py`` runs it side by side. It rescans the text from its start for
every period, so its cost grows with the square of the text: do not use it on long texts."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ovos_a2a_solver.answers.revisions import Revision

_ENDS_SENTENCE = re.compile(r"(?<![\d.])(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})[.!?…]+[\"')\]’”»]*\s*$")
_BOUNDARY = re.compile(r"[.!?…]+[\"')\]’”»]*(?=\s)|\n")
_WORD_BEFORE = re.compile(r"(\S*)$")
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "etc", "e.g", "i.e", "mt",
                            "no", "fig", "approx"})
_SCAN = re.compile(r"[.!?…\n]")
_PUNCTUATED_END = re.compile(r"[.!?…][\"')\]’”»]*$")


def _abbreviation(text: str, end: int) -> bool:
    """Whether the ``.`` at ``end`` closes an abbreviation or an initial, not a sentence."""
    word = _WORD_BEFORE.search(text, 0, end).group(1).lstrip("\"'(“‘«[")
    if len(word) == 1 and word.isupper():
        return True
    return word.lower() in _ABBREVIATIONS


def split_units(text: str) -> tuple[list[tuple[int, int]], int]:
    """The complete units of ``text`` as (start, end) spans, and where the unfinished rest starts."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group() != "\n" and match.group()[0] == "." and _abbreviation(text, match.start()):
            continue
        end = match.end()
        if text[start:end].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip() and _ENDS_SENTENCE.search(text, start):
        spans.append((start, len(text)))
        start = len(text)
    return spans, start


def sentence_start(text: str, position: int) -> int:
    """Where the unit of ``text`` that holds ``position`` starts."""
    spans, rest = split_units(text)
    for start, end in spans:
        if position < end:
            return _skip_space(text, start)
    return _skip_space(text, rest)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index].isspace():
        index += 1
    return index


def _norm(unit: str) -> str:
    return " ".join(unit.split())


class _Spoken:
    """What was spoken of one piece, and its text since the last spoken unit."""

    __slots__ = ("units", "rest", "tail")

    def __init__(self) -> None:
        self.units: list[str] = []   # spoken units, spaces normalised
        self.rest: list[str] = []    # text after them, in chunks
        self.tail = ""               # the rest's last characters


class SentenceSpeaker:
    """Revisions in, whole units to speak out, in order; nothing said twice, no fragments."""

    def __init__(self) -> None:
        self._pieces: dict[str, _Spoken] = {}

    def add(self, revision: Revision) -> list[str]:
        out: list[str] = []
        piece = self._pieces.get(revision.key)
        if piece is None:
            for other in self._pieces.values():  # a new piece starts a new unit
                out += self._flush(other)
            piece = self._pieces[revision.key] = _Spoken()
            revision = Revision(revision.key, revision.text, False, revision.last)
        if revision.append:
            out += self._append(piece, revision.text)
        else:
            out += self._replace(piece, revision.text)
        if revision.last:
            out += self._flush(piece)
        return out

    def finish(self) -> list[str]:
        """The units still owed at the end of the answer."""
        out: list[str] = []
        for piece in self._pieces.values():
            out += self._flush(piece)
        return out

    # ---- internals ----------------------------------------------------------------

    def _append(self, piece: _Spoken, chunk: str) -> list[str]:
        if not chunk:
            return []
        piece.rest.append(chunk)
        ended = bool(_PUNCTUATED_END.search(piece.tail.rstrip()))
        piece.tail = (piece.tail + chunk)[-16:]
        if not (_SCAN.search(chunk) or (ended and any(c.isspace() for c in chunk))):
            return []  # no unit can have ended: nothing to look at
        return self._speak_complete(piece, "".join(piece.rest))

    def _speak_complete(self, piece: _Spoken, text: str) -> list[str]:
        spans, rest = split_units(text)
        out = [text[s:e].strip() for s, e in spans]
        piece.units += [_norm(u) for u in out]
        piece.rest = [text[rest:]] if rest < len(text) else []
        piece.tail = text[-16:] if piece.rest else ""
        return out

    def _replace(self, piece: _Spoken, text: str) -> list[str]:
        spans, rest = split_units(text)
        units = [text[s:e].strip() for s, e in spans]
        same = 0
        while same < len(piece.units) and same < len(units) and piece.units[same] == _norm(units[same]):
            same += 1
        if same < len(piece.units):
            said = "".join("".join(piece.units).split())
            if said.startswith("".join(text.split())):
                return []  # shortened (or only spaces changed): nothing new to say
        out = units[same:]
        piece.units = piece.units[:same] + [_norm(u) for u in out]
        piece.rest = [text[rest:]] if text[rest:] else []
        piece.tail = text[-16:] if piece.rest else ""
        return out

    def _flush(self, piece: _Spoken) -> list[str]:
        unit = "".join(piece.rest).strip()
        piece.rest, piece.tail = [], ""
        if not unit:
            return []
        piece.units.append(_norm(unit))
        return [unit]


def speak(revisions: Iterable[Revision]) -> Iterator[str]:
    """Yield the units of an answer's revisions in order, each as soon as it is complete."""
    speaker = SentenceSpeaker()
    for revision in revisions:
        yield from speaker.add(revision)
    yield from speaker.finish()
